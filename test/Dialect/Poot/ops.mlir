// RUN: poot-opt %s | poot-opt | FileCheck %s
// RUN: poot-opt %s --mlir-print-op-generic | poot-opt | FileCheck %s
// RUN: poot-opt %s --verify-roundtrip | FileCheck %s

// Every poot op, printed and parsed back: custom form, generic form, and the
// bytecode round trip that --verify-roundtrip adds.

// CHECK-LABEL: func.func @primitives
func.func @primitives(%k: tensor<1x8x16x4xf32> {poot.slot = #poot.slot<state "k0">},
                      %knew: tensor<1x8x1x4xf32>,
                      %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 15>},
                      %q: tensor<1x32x1x4xf32>)
    -> (tensor<1x8x16x4xf32> {poot.slot = #poot.slot<state "k0">}, tensor<1x32x1x4xf32>) {
  // CHECK: poot.constant dense<5.000000e-01> : tensor<f32>
  %half = poot.constant dense<0.5> : tensor<f32>
  // CHECK: poot.iota dim = 3 : tensor<1x1x1x16xi32>
  %iota = poot.iota dim = 3 : tensor<1x1x1x16xi32>
  // CHECK: poot.dynamic_update_slice %{{.*}}, %{{.*}}, %{{.*}} axis = 2 : tensor<1x8x16x4xf32>, tensor<1x8x1x4xf32>, tensor<i32>
  %k1 = poot.dynamic_update_slice %k, %knew, %pos axis = 2 : tensor<1x8x16x4xf32>, tensor<1x8x1x4xf32>, tensor<i32>
  // CHECK: poot.reshape %{{.*}} : tensor<1x8x16x4xf32> -> tensor<1x8x1x16x4xf32>
  %r0 = poot.reshape %k1 : tensor<1x8x16x4xf32> -> tensor<1x8x1x16x4xf32>
  // CHECK: poot.broadcast %{{.*}} : tensor<1x8x1x16x4xf32> -> tensor<1x8x4x16x4xf32>
  %b0 = poot.broadcast %r0 : tensor<1x8x1x16x4xf32> -> tensor<1x8x4x16x4xf32>
  %kx = poot.reshape %b0 : tensor<1x8x4x16x4xf32> -> tensor<1x32x16x4xf32>
  // CHECK: poot.transpose %{{.*}} perm = [0, 1, 3, 2] : tensor<1x32x16x4xf32> -> tensor<1x32x4x16xf32>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x32x16x4xf32> -> tensor<1x32x4x16xf32>
  // CHECK: poot.matmul %{{.*}}, %{{.*}} : (tensor<1x32x1x4xf32>, tensor<1x32x4x16xf32>) -> tensor<1x32x1x16xf32>
  %s = poot.matmul %q, %kt : (tensor<1x32x1x4xf32>, tensor<1x32x4x16xf32>) -> tensor<1x32x1x16xf32>
  // CHECK: poot.mul %{{.*}}, %{{.*}} : (tensor<1x32x1x16xf32>, tensor<f32>) -> tensor<1x32x1x16xf32>
  %s1 = poot.mul %s, %half : (tensor<1x32x1x16xf32>, tensor<f32>) -> tensor<1x32x1x16xf32>
  // CHECK: poot.compare gt, %{{.*}}, %{{.*}} : (tensor<1x1x1x16xi32>, tensor<i32>) -> tensor<1x1x1x16xi1>
  %future = poot.compare gt, %iota, %pos : (tensor<1x1x1x16xi32>, tensor<i32>) -> tensor<1x1x1x16xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  // CHECK: poot.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x1x1x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x16xf32>
  %mask = poot.select %future, %ninf, %zero : (tensor<1x1x1x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x16xf32>
  // CHECK: poot.add
  %s2 = poot.add %s1, %mask : (tensor<1x32x1x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x32x1x16xf32>
  // CHECK: poot.reduce max %{{.*}} axis = 3 keepdim : tensor<1x32x1x16xf32> -> tensor<1x32x1x1xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x32x1x16xf32> -> tensor<1x32x1x1xf32>
  // CHECK: poot.sub
  %xs = poot.sub %s2, %m : (tensor<1x32x1x16xf32>, tensor<1x32x1x1xf32>) -> tensor<1x32x1x16xf32>
  // CHECK: poot.exp %{{.*}} : tensor<1x32x1x16xf32>
  %ex = poot.exp %xs : tensor<1x32x1x16xf32>
  // CHECK: poot.reduce sum %{{.*}} axis = 3 keepdim
  %sum = poot.reduce sum %ex axis = 3 keepdim : tensor<1x32x1x16xf32> -> tensor<1x32x1x1xf32>
  // CHECK: poot.reduce min %{{.*}} axis = 3 : tensor<1x32x1x16xf32> -> tensor<1x32x1xf32>
  %mn = poot.reduce min %ex axis = 3 : tensor<1x32x1x16xf32> -> tensor<1x32x1xf32>
  // CHECK: poot.div
  %p = poot.div %ex, %sum : (tensor<1x32x1x16xf32>, tensor<1x32x1x1xf32>) -> tensor<1x32x1x16xf32>
  %out = poot.matmul %p, %kx : (tensor<1x32x1x16xf32>, tensor<1x32x16x4xf32>) -> tensor<1x32x1x4xf32>
  // CHECK: poot.max
  %mx = poot.max %out, %q : (tensor<1x32x1x4xf32>, tensor<1x32x1x4xf32>) -> tensor<1x32x1x4xf32>
  // CHECK: poot.min
  %mi = poot.min %mx, %q : (tensor<1x32x1x4xf32>, tensor<1x32x1x4xf32>) -> tensor<1x32x1x4xf32>
  // CHECK: poot.tanh
  %u0 = poot.tanh %mi : tensor<1x32x1x4xf32>
  // CHECK: poot.log
  %u1 = poot.log %u0 : tensor<1x32x1x4xf32>
  // CHECK: poot.logistic
  %u2 = poot.logistic %u1 : tensor<1x32x1x4xf32>
  // CHECK: poot.sqrt
  %u3 = poot.sqrt %u2 : tensor<1x32x1x4xf32>
  // CHECK: poot.rsqrt
  %u4 = poot.rsqrt %u3 : tensor<1x32x1x4xf32>
  // CHECK: poot.sin
  %u5 = poot.sin %u4 : tensor<1x32x1x4xf32>
  // CHECK: poot.cos
  %u6 = poot.cos %u5 : tensor<1x32x1x4xf32>
  // CHECK: poot.neg
  %u7 = poot.neg %u6 : tensor<1x32x1x4xf32>
  // CHECK: poot.abs
  %u8 = poot.abs %u7 : tensor<1x32x1x4xf32>
  return %k1, %u8 : tensor<1x8x16x4xf32>, tensor<1x32x1x4xf32>
}

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<2x8xf32>, %y: tensor<2x4xf32>, %pool: tensor<16x2x4xf32>,
                    %read: tensor<1x6xi32> {poot.slot = #poot.slot<slot_map>, poot.range = #poot.range<0, 15>},
                    %write: tensor<3xi32> {poot.slot = #poot.slot<write_map>},
                    %rows: tensor<3x2x4xf32>, %flags: tensor<2x8xi1>, %ints: tensor<2x8xi32>)
    -> (tensor<2x12xf32>, tensor<2x4xf32>, tensor<1x6x2x4xf32>, tensor<16x2x4xf32>) {
  // CHECK: poot.concat %{{.*}}, %{{.*}} axis = 1 : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
  %c = poot.concat %x, %y axis = 1 : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
  // CHECK: poot.slice %{{.*}} [0, 0] to [2, 8] step [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
  %sl = poot.slice %x [0, 0] to [2, 8] step [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
  // CHECK: poot.gather %{{.*}}[%{{.*}}] axis = 0 : (tensor<16x2x4xf32>, tensor<1x6xi32>) -> tensor<1x6x2x4xf32>
  %g = poot.gather %pool[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<1x6xi32>) -> tensor<1x6x2x4xf32>
  // CHECK: poot.scatter_update %{{.*}}[%{{.*}}], %{{.*}} : tensor<16x2x4xf32>, tensor<3xi32>, tensor<3x2x4xf32>
  %pool1 = poot.scatter_update %pool[%write], %rows : tensor<16x2x4xf32>, tensor<3xi32>, tensor<3x2x4xf32>
  // CHECK: poot.convert %{{.*}} : tensor<2x8xi32> -> tensor<2x8xf32>
  %cv = poot.convert %ints : tensor<2x8xi32> -> tensor<2x8xf32>
  // CHECK: poot.and
  %a = poot.and %flags, %flags : (tensor<2x8xi1>, tensor<2x8xi1>) -> tensor<2x8xi1>
  // CHECK: poot.or
  %o = poot.or %a, %flags : (tensor<2x8xi1>, tensor<2x8xi1>) -> tensor<2x8xi1>
  // CHECK: poot.top_k %{{.*}} k = 3 : tensor<2x8xf32> -> tensor<2x3xf32>, tensor<2x3xi32>
  %tv, %ti = poot.top_k %cv k = 3 : tensor<2x8xf32> -> tensor<2x3xf32>, tensor<2x3xi32>
  return %c, %sl, %g, %pool1 : tensor<2x12xf32>, tensor<2x4xf32>, tensor<1x6x2x4xf32>, tensor<16x2x4xf32>
}

// CHECK-LABEL: func.func @guard
// CHECK-SAME: poot.name = "raw"
func.func @guard(%raw: tensor<2xi32> {poot.name = "raw"}) -> (tensor<2xi32> {poot.name = "len"}, tensor<i1> {poot.slot = #poot.slot<validation>}) {
  // CHECK: %{{.*}}, %{{.*}} = poot.index_guard %{{.*}} min = 1 max = 64 : tensor<2xi32>
  %len, %ok = poot.index_guard %raw min = 1 max = 64 : tensor<2xi32>
  // CHECK: poot.index_guard %{{.*}} min = -1 max = 63 : tensor<2xi32>
  %w, %wok = poot.index_guard %raw min = -1 max = 63 : tensor<2xi32>
  return %len, %ok : tensor<2xi32>, tensor<i1>
}

// CHECK-LABEL: func.func @attention_forms
func.func @attention_forms(%q: tensor<2x8x3x16xf32>, %k: tensor<2x2x32x16xf32>,
                           %v: tensor<2x2x32x8xf32>, %m: tensor<1x8x3x32xf32>,
                           %knope: tensor<2x2x32x12xf32>, %kpe: tensor<2x1x32x4xf32>,
                           %kpool: tensor<64x2x16xf32>, %vpool: tensor<64x2x8xf32>,
                           %read: tensor<2x32xi32>, %len: tensor<2xi32>) {
  // CHECK: poot.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<1x8x3x32xf32>) {scale = 2.500000e-01 : f64, softcap = 3.000000e+01 : f64} : tensor<2x8x3x16xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x8xf32> -> tensor<2x8x3x8xf32>
  %0 = poot.attention %q, %k, %v mask(%m : tensor<1x8x3x32xf32>) {scale = 0.25 : f64, softcap = 30.0 : f64}
      : tensor<2x8x3x16xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x8xf32> -> tensor<2x8x3x8xf32>
  // CHECK: poot.attention %{{.*}}, %{{.*}}, %{{.*}} key_shared(%{{.*}} : tensor<2x1x32x4xf32>)
  %1 = poot.attention %q, %knope, %v key_shared(%kpe : tensor<2x1x32x4xf32>) {scale = 0.25 : f64}
      : tensor<2x8x3x16xf32>, tensor<2x2x32x12xf32>, tensor<2x2x32x8xf32> -> tensor<2x8x3x8xf32>
  // CHECK: poot.attention %{{.*}}, %{{.*}}, %{{.*}} read(%{{.*}} : tensor<2x32xi32>) len(%{{.*}} : tensor<2xi32>)
  %2 = poot.attention %q, %kpool, %vpool read(%read : tensor<2x32xi32>) len(%len : tensor<2xi32>) {scale = 0.25 : f64}
      : tensor<2x8x3x16xf32>, tensor<64x2x16xf32>, tensor<64x2x8xf32> -> tensor<2x8x3x8xf32>
  // CHECK: poot.attention %{{.*}}, %{{.*}}, %{{.*}} len(%{{.*}} : tensor<2xi32>) {scale
  %3 = poot.attention %q, %k, %v len(%len : tensor<2xi32>) {scale = 0.25 : f64}
      : tensor<2x8x3x16xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x8xf32> -> tensor<2x8x3x8xf32>
  // CHECK: poot.attention %{{.*}}, %{{.*}}, %{{.*}} causal window 16 {scale = 2.500000e-01 : f64}
  %4 = poot.attention %q, %k, %v causal window 16 {scale = 0.25 : f64}
      : tensor<2x8x3x16xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x8xf32> -> tensor<2x8x3x8xf32>
  return
}

// CHECK-LABEL: func.func @sparse
func.func @sparse(%scores: tensor<1x8x4xf32>, %qpos: tensor<1x8xi32>,
                  %q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // CHECK: poot.block_topk %{{.*}}, %{{.*}} k = 2 block_size = 8 : tensor<1x8x4xf32>, tensor<1x8xi32> -> tensor<1x8x2xi32>
  %ids = poot.block_topk %scores, %qpos k = 2 block_size = 8 : tensor<1x8x4xf32>, tensor<1x8xi32> -> tensor<1x8x2xi32>
  // CHECK: poot.selected_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} block_size = 8 {scale = 2.500000e-01 : f64}
  %o = poot.selected_attention %q, %k, %v, %ids, %qpos block_size = 8 {scale = 0.25 : f64}
      : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// CHECK-LABEL: func.func @dtypes
func.func @dtypes(%a: tensor<4xbf16>, %b: tensor<4xf16>, %c: tensor<4xf64>) -> (tensor<4xbf16>, tensor<4xf16>, tensor<4xf64>) {
  // CHECK: poot.exp %{{.*}} : tensor<4xbf16>
  %0 = poot.exp %a : tensor<4xbf16>
  %1 = poot.exp %b : tensor<4xf16>
  // CHECK: poot.convert %{{.*}} : tensor<4xf64> -> tensor<4xf16>
  %2 = poot.convert %c : tensor<4xf64> -> tensor<4xf16>
  %3 = poot.add %1, %2 : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %0, %3, %c : tensor<4xbf16>, tensor<4xf16>, tensor<4xf64>
}

// CHECK-LABEL: func.func @rope
func.func @rope(%x: tensor<1x4x2x8xf32>, %cos: tensor<1x1x2x8xf32>, %sin: tensor<2x8xf32>) -> tensor<1x4x2x8xf32> {
  // CHECK: poot.rope %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x2x8xf32>, tensor<1x1x2x8xf32>, tensor<2x8xf32> -> tensor<1x4x2x8xf32>
  %0 = poot.rope %x, %cos, %sin : tensor<1x4x2x8xf32>, tensor<1x1x2x8xf32>, tensor<2x8xf32> -> tensor<1x4x2x8xf32>
  return %0 : tensor<1x4x2x8xf32>
}

// A per-row position: one i32 per batch row (continuous batching).
// CHECK-LABEL: func.func @pos_per_row
// CHECK-SAME: tensor<4xi32> {poot.range = #poot.range<0, 15>, poot.slot = #poot.slot<pos>}
func.func @pos_per_row(%pos: tensor<4xi32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 15>}) -> tensor<4xi32> {
  return %pos : tensor<4xi32>
}
