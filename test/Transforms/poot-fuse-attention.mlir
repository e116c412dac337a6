// RUN: poot-opt %s -split-input-file -poot-fuse-attention="remarks=true" -verify-diagnostics | FileCheck %s

// The pipeline (canonicalize, poot-recognize-rope, poot-attention-rewrite,
// cse) on chains that only match after canonicalization.

// Keys cached as [B, Lk, H, D] and transposed twice; the scale written as a
// division (by a power of two: canonicalized into a multiplication); the
// softmax written with plain reductions, reshapes back to keepdim and an
// explicit broadcast of the max; the scale constant on the left.
// CHECK-LABEL: func.func @variants
// CHECK:       %[[K:.*]] = poot.transpose %arg1 perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
// CHECK:       %[[O:.*]] = poot.attention %arg0, %[[K]], %arg2 mask(%arg3 : tensor<1x1x1x8xf32>) {scale = 2.500000e-01 : f64}
// CHECK-NEXT:  return %[[O]]
func.func @variants(%q: tensor<1x2x1x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x2x8x4xf32>,
                    %mask: tensor<1x1x1x8xf32>) -> tensor<1x2x1x4xf32> {
  %kh = poot.transpose %k perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kh perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %four = poot.constant dense<4.0> : tensor<f32>
  %s1 = poot.div %s, %four : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %s2 = poot.add %mask, %s1 : (tensor<1x1x1x8xf32>, tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 : tensor<1x2x1x8xf32> -> tensor<1x2x1xf32>
  %mk = poot.reshape %m : tensor<1x2x1xf32> -> tensor<1x2x1x1xf32>
  %mb = poot.broadcast %mk : tensor<1x2x1x1xf32> -> tensor<1x2x1x8xf32>
  %xs = poot.sub %s2, %mb : (tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 : tensor<1x2x1x8xf32> -> tensor<1x2x1xf32>
  %dk = poot.reshape %den : tensor<1x2x1xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %dk : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// RoPE on q and k, then attention: both are recognized; nothing else moves.
// CHECK-LABEL: func.func @rope_then_attention
// CHECK-DAG:   %[[QR:.*]] = poot.rope %arg0, %arg3, %arg4
// CHECK-DAG:   %[[KR:.*]] = poot.rope %arg1, %arg3, %arg4
// CHECK:       %[[O:.*]] = poot.attention %[[QR]], %[[KR]], %arg2 {scale = 5.000000e-01 : f64}
// CHECK-NEXT:  return %[[O]]
func.func @rope_then_attention(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                               %cos: tensor<4xf32>, %sin: tensor<4xf32>) -> tensor<1x2x1x4xf32> {
  %qa = poot.mul %q, %cos : (tensor<1x2x1x4xf32>, tensor<4xf32>) -> tensor<1x2x1x4xf32>
  %q1 = poot.slice %q [0, 0, 0, 0] to [1, 2, 1, 2] step [1, 1, 1, 1] : tensor<1x2x1x4xf32> -> tensor<1x2x1x2xf32>
  %q2 = poot.slice %q [0, 0, 0, 2] to [1, 2, 1, 4] step [1, 1, 1, 1] : tensor<1x2x1x4xf32> -> tensor<1x2x1x2xf32>
  %qn = poot.neg %q2 : tensor<1x2x1x2xf32>
  %qc = poot.concat %qn, %q1 axis = 3 : (tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>) -> tensor<1x2x1x4xf32>
  %qb = poot.mul %qc, %sin : (tensor<1x2x1x4xf32>, tensor<4xf32>) -> tensor<1x2x1x4xf32>
  %qr = poot.add %qa, %qb : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %ka = poot.mul %k, %cos : (tensor<1x2x8x4xf32>, tensor<4xf32>) -> tensor<1x2x8x4xf32>
  %k1 = poot.slice %k [0, 0, 0, 0] to [1, 2, 8, 2] step [1, 1, 1, 1] : tensor<1x2x8x4xf32> -> tensor<1x2x8x2xf32>
  %k2 = poot.slice %k [0, 0, 0, 2] to [1, 2, 8, 4] step [1, 1, 1, 1] : tensor<1x2x8x4xf32> -> tensor<1x2x8x2xf32>
  %kn = poot.neg %k2 : tensor<1x2x8x2xf32>
  %kc = poot.concat %kn, %k1 axis = 3 : (tensor<1x2x8x2xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x4xf32>
  %kb = poot.mul %kc, %sin : (tensor<1x2x8x4xf32>, tensor<4xf32>) -> tensor<1x2x8x4xf32>
  %kr = poot.add %ka, %kb : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %kt = poot.transpose %kr perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %qr, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// A declined chain keeps its (canonical) primitive form, and says why.
// CHECK-LABEL: func.func @declined
// CHECK-NOT:   poot.attention
// CHECK:       poot.exp
func.func @declined(%q: tensor<1x2x1x4xf64>, %k: tensor<1x2x8x4xf64>, %v: tensor<1x2x8x4xf64>) -> tensor<1x2x1x4xf64> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf64> -> tensor<1x2x4x8xf64>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf64>, tensor<1x2x4x8xf64>) -> tensor<1x2x1x8xf64>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x2x1x8xf64> -> tensor<1x2x1x1xf64>
  %xs = poot.sub %s, %m : (tensor<1x2x1x8xf64>, tensor<1x2x1x1xf64>) -> tensor<1x2x1x8xf64>
  // expected-remark @+1 {{attention not fused: element type f64 is not f32, f16 or bf16}}
  %ex = poot.exp %xs : tensor<1x2x1x8xf64>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf64> -> tensor<1x2x1x1xf64>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf64>, tensor<1x2x1x1xf64>) -> tensor<1x2x1x8xf64>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf64>, tensor<1x2x8x4xf64>) -> tensor<1x2x1x4xf64>
  return %out : tensor<1x2x1x4xf64>
}

// -----

// The sparse indexer's decode exactly as the tracer emits it
// (ops.sparse_selected_attention: B = 2, GQA 2, softcap 5, K = 2 blocks of 4).
// The attention rewrite leaves it to the selection pass, which forms
// poot.block_topk over the block scores (the index matmul and the block max
// stay) and poot.selected_attention; no remark.
// CHECK-LABEL: func.func @sparse_decode
// CHECK:       poot.matmul %arg3
// CHECK:       %[[BLK:.*]] = poot.reduce max
// CHECK:       %[[IDS:.*]] = poot.block_topk %[[BLK]], %arg5 k = 2 block_size = 4 : tensor<2x1x4xf32>, tensor<2x1xi32> -> tensor<2x1x2xi32>
// CHECK:       %[[O:.*]] = poot.selected_attention %arg0, %arg1, %arg2, %[[IDS]], %arg5 block_size = 4 {scale = 0.35355{{[0-9]*}} : f64, softcap = 5.000000e+00 : f64}
// CHECK-NOT:   poot.top_k
// CHECK-NOT:   poot.exp
// CHECK:       return %[[O]]
func.func @sparse_decode(%arg0: tensor<2x4x1x8xf32> {poot.name = "q"}, %arg1: tensor<2x2x16x8xf32> {poot.name = "k"}, %arg2: tensor<2x2x16x8xf32> {poot.name = "v"}, %arg3: tensor<2x1x4xf32> {poot.name = "q_idx"}, %arg4: tensor<2x16x4xf32> {poot.name = "k_idx"}, %arg5: tensor<2x1xi32> {poot.name = "q_pos", poot.range = #poot.range<0, 15>}) -> (tensor<2x4x1x8xf32> {poot.name = "out"}) {
  %0 = poot.transpose %arg4 perm = [0, 2, 1] : tensor<2x16x4xf32> -> tensor<2x4x16xf32>
  %1 = poot.matmul %arg3, %0 : (tensor<2x1x4xf32>, tensor<2x4x16xf32>) -> tensor<2x1x16xf32>
  %2 = poot.constant dense<4> : tensor<i32>
  %3 = poot.div %arg5, %2 : (tensor<2x1xi32>, tensor<i32>) -> tensor<2x1xi32>
  %4 = poot.reshape %3 : tensor<2x1xi32> -> tensor<2x1x1xi32>
  %5 = poot.reshape %1 : tensor<2x1x16xf32> -> tensor<2x1x4x4xf32>
  %6 = poot.reduce  max %5 axis = 3 : tensor<2x1x4x4xf32> -> tensor<2x1x4xf32>
  %7 = poot.iota dim = 2 : tensor<1x1x4xi32>
  %8 = poot.compare  lt, %7, %4 : (tensor<1x1x4xi32>, tensor<2x1x1xi32>) -> tensor<2x1x4xi1>
  %9 = poot.constant dense<0xFF800000> : tensor<f32>
  %10 = poot.select %8, %6, %9 : (tensor<2x1x4xi1>, tensor<2x1x4xf32>, tensor<f32>) -> tensor<2x1x4xf32>
  %values, %indices = poot.top_k %10 k = 2 : tensor<2x1x4xf32> -> tensor<2x1x2xf32>, tensor<2x1x2xi32>
  %11 = poot.compare  lt, %indices, %4 : (tensor<2x1x2xi32>, tensor<2x1x1xi32>) -> tensor<2x1x2xi1>
  %12 = poot.constant dense<-1> : tensor<i32>
  %13 = poot.select %11, %indices, %12 : (tensor<2x1x2xi1>, tensor<2x1x2xi32>, tensor<i32>) -> tensor<2x1x2xi32>
  %14 = poot.iota dim = 2 : tensor<1x1x16xi32>
  %15 = poot.div %14, %2 : (tensor<1x1x16xi32>, tensor<i32>) -> tensor<1x1x16xi32>
  %16 = poot.reshape %13 : tensor<2x1x2xi32> -> tensor<2x1x2x1xi32>
  %17 = poot.compare  eq, %16, %15 : (tensor<2x1x2x1xi32>, tensor<1x1x16xi32>) -> tensor<2x1x2x16xi1>
  %18 = poot.convert %17 : tensor<2x1x2x16xi1> -> tensor<2x1x2x16xi32>
  %19 = poot.reduce  max %18 axis = 2 : tensor<2x1x2x16xi32> -> tensor<2x1x16xi32>
  %20 = poot.constant dense<0> : tensor<i32>
  %21 = poot.compare  gt, %19, %20 : (tensor<2x1x16xi32>, tensor<i32>) -> tensor<2x1x16xi1>
  %22 = poot.compare  eq, %15, %4 : (tensor<1x1x16xi32>, tensor<2x1x1xi32>) -> tensor<2x1x16xi1>
  %23 = poot.reshape %arg5 : tensor<2x1xi32> -> tensor<2x1x1xi32>
  %24 = poot.compare  le, %14, %23 : (tensor<1x1x16xi32>, tensor<2x1x1xi32>) -> tensor<2x1x16xi1>
  %25 = poot.or %21, %22 : (tensor<2x1x16xi1>, tensor<2x1x16xi1>) -> tensor<2x1x16xi1>
  %26 = poot.and %25, %24 : (tensor<2x1x16xi1>, tensor<2x1x16xi1>) -> tensor<2x1x16xi1>
  %27 = poot.reshape %26 : tensor<2x1x16xi1> -> tensor<2x1x1x16xi1>
  %28 = poot.reshape %arg1 : tensor<2x2x16x8xf32> -> tensor<2x2x1x16x8xf32>
  %29 = poot.broadcast %28 : tensor<2x2x1x16x8xf32> -> tensor<2x2x2x16x8xf32>
  %30 = poot.reshape %29 : tensor<2x2x2x16x8xf32> -> tensor<2x4x16x8xf32>
  %31 = poot.reshape %arg2 : tensor<2x2x16x8xf32> -> tensor<2x2x1x16x8xf32>
  %32 = poot.broadcast %31 : tensor<2x2x1x16x8xf32> -> tensor<2x2x2x16x8xf32>
  %33 = poot.reshape %32 : tensor<2x2x2x16x8xf32> -> tensor<2x4x16x8xf32>
  %34 = poot.transpose %30 perm = [0, 1, 3, 2] : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
  %35 = poot.matmul %arg0, %34 : (tensor<2x4x1x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x1x16xf32>
  %36 = poot.constant dense<0.353553385> : tensor<f32>
  %37 = poot.mul %35, %36 : (tensor<2x4x1x16xf32>, tensor<f32>) -> tensor<2x4x1x16xf32>
  %38 = poot.constant dense<5.000000e+00> : tensor<f32>
  %39 = poot.div %37, %38 : (tensor<2x4x1x16xf32>, tensor<f32>) -> tensor<2x4x1x16xf32>
  %40 = poot.tanh %39 : tensor<2x4x1x16xf32>
  %41 = poot.mul %40, %38 : (tensor<2x4x1x16xf32>, tensor<f32>) -> tensor<2x4x1x16xf32>
  %42 = poot.constant dense<0xFF800000> : tensor<f32>
  %43 = poot.select %27, %41, %42 : (tensor<2x1x1x16xi1>, tensor<2x4x1x16xf32>, tensor<f32>) -> tensor<2x4x1x16xf32>
  %44 = poot.reduce  max %43 axis = 3 keepdim : tensor<2x4x1x16xf32> -> tensor<2x4x1x1xf32>
  %45 = poot.sub %43, %44 : (tensor<2x4x1x16xf32>, tensor<2x4x1x1xf32>) -> tensor<2x4x1x16xf32>
  %46 = poot.exp %45 : tensor<2x4x1x16xf32>
  %47 = poot.reduce  sum %46 axis = 3 keepdim : tensor<2x4x1x16xf32> -> tensor<2x4x1x1xf32>
  %48 = poot.div %46, %47 : (tensor<2x4x1x16xf32>, tensor<2x4x1x1xf32>) -> tensor<2x4x1x16xf32>
  %49 = poot.matmul %48, %33 : (tensor<2x4x1x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32>
  return %49 : tensor<2x4x1x8xf32>
}
