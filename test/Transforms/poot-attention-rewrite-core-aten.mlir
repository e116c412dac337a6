// RUN: poot-opt %s -split-input-file -poot-attention-rewrite="remarks=true" -verify-diagnostics | FileCheck %s

// F.scaled_dot_product_attention after `ExportedProgram.run_decompositions()`
// (core ATen, torch 2.13 and 2.14), imported by frontend/torch_export.py and
// canonicalized: the heads folded into bmm, the scale split as sqrt(scale)
// on q and on k^T, repeat_kv as unsqueeze/expand/clone/view composed with
// the bmm operand's fold, and the softmax guarded by
// where(!any(s != -inf), 0, p). B = 1, Hq = 2, Lq = 2, Lk = 4, D = 2.

// enable_gqa (Hkv = 1) with a bool attn_mask: the op reads the one KV head
// and the 4-D q directly, and the guard zeroes the rows the mask hides.
// CHECK-LABEL: func.func @sdpa_gqa_bool_mask
// CHECK:       %[[M:.*]] = poot.select %arg3, %{{.*}}, %{{.*}} : (tensor<1x1x2x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x2x4xf32>
// CHECK:       %[[A:.*]] = poot.attention %arg0, %arg1, %arg2 mask(%[[M]] : tensor<1x1x2x4xf32>) {scale = 0.70710680200321363 : f64} : tensor<1x2x2x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x2x2x2xf32>
// CHECK:       %[[P:.*]] = poot.reduce max %[[M]] axis = 3 keepdim
// CHECK:       %[[H:.*]] = poot.compare eq, %[[P]], %{{.*}}
// CHECK:       %[[G:.*]] = poot.select %[[H]], %{{.*}}, %[[A]]
// CHECK-NEXT:  return %[[G]]
// CHECK-NOT:   poot.matmul
func.func @sdpa_gqa_bool_mask(%arg0: tensor<1x2x2x2xf32>, %arg1: tensor<1x1x4x2xf32>, %arg2: tensor<1x1x4x2xf32>, %arg3: tensor<1x1x2x4xi1>) -> (tensor<1x2x2x2xf32>) {
  %0 = poot.constant dense<0.000000e+00> : tensor<1x2x2x4xf32>
  %1 = poot.constant dense<0> : tensor<i32>
  %2 = poot.constant dense<false> : tensor<i1>
  %3 = poot.constant dense<0.840896427> : tensor<f32>
  %4 = poot.constant dense<0xFF800000> : tensor<f32>
  %5 = poot.constant dense<0.000000e+00> : tensor<f32>
  %6 = poot.select %arg3, %5, %4 : (tensor<1x1x2x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x2x4xf32>
  %7 = poot.mul %arg0, %3 : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %8 = poot.reshape %arg1 : tensor<1x1x4x2xf32> -> tensor<1x1x1x4x2xf32>
  %9 = poot.broadcast %8 : tensor<1x1x1x4x2xf32> -> tensor<1x1x2x4x2xf32>
  %10 = poot.reshape %9 : tensor<1x1x2x4x2xf32> -> tensor<1x2x4x2xf32>
  %11 = poot.reshape %arg2 : tensor<1x1x4x2xf32> -> tensor<1x1x1x4x2xf32>
  %12 = poot.broadcast %11 : tensor<1x1x1x4x2xf32> -> tensor<1x1x2x4x2xf32>
  %13 = poot.transpose %10 perm = [0, 1, 3, 2] : tensor<1x2x4x2xf32> -> tensor<1x2x2x4xf32>
  %14 = poot.mul %13, %3 : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %15 = poot.reshape %7 : tensor<1x2x2x2xf32> -> tensor<2x2x2xf32>
  %16 = poot.reshape %14 : tensor<1x2x2x4xf32> -> tensor<2x2x4xf32>
  %17 = poot.matmul %15, %16 : (tensor<2x2x2xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %18 = poot.add %17, %6 : (tensor<2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %19 = poot.reduce max %18 axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %20 = poot.sub %18, %19 : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %21 = poot.exp %20 : tensor<1x2x2x4xf32>
  %22 = poot.reduce sum %21 axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %23 = poot.div %21, %22 : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %24 = poot.compare eq, %18, %4 : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xi1>
  %25 = poot.compare eq, %24, %2 : (tensor<1x2x2x4xi1>, tensor<i1>) -> tensor<1x2x2x4xi1>
  %26 = poot.convert %25 : tensor<1x2x2x4xi1> -> tensor<1x2x2x4xi32>
  %27 = poot.reduce max %26 axis = 3 keepdim : tensor<1x2x2x4xi32> -> tensor<1x2x2x1xi32>
  %28 = poot.compare gt, %27, %1 : (tensor<1x2x2x1xi32>, tensor<i32>) -> tensor<1x2x2x1xi1>
  %29 = poot.compare eq, %28, %2 : (tensor<1x2x2x1xi1>, tensor<i1>) -> tensor<1x2x2x1xi1>
  %30 = poot.select %29, %0, %23 : (tensor<1x2x2x1xi1>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %31 = poot.reshape %30 : tensor<1x2x2x4xf32> -> tensor<2x2x4xf32>
  %32 = poot.reshape %12 : tensor<1x1x2x4x2xf32> -> tensor<2x4x2xf32>
  %33 = poot.matmul %31, %32 : (tensor<2x2x4xf32>, tensor<2x4x2xf32>) -> tensor<2x2x2xf32>
  %34 = poot.reshape %33 : tensor<2x2x2xf32> -> tensor<1x2x2x2xf32>
  return %34 : tensor<1x2x2x2xf32>
}

// -----

// is_causal: arange compares of index vectors unsqueezed to a row and a
// column, and-ed with full(True): the op's causal kind (Lq = Lk), no guard.
// CHECK-LABEL: func.func @sdpa_is_causal
// CHECK:       %[[A:.*]] = poot.attention %arg0, %arg1, %arg2 causal {scale = 0.70710680200321363 : f64}
// CHECK-NEXT:  return %[[A]]
func.func @sdpa_is_causal(%arg0: tensor<1x2x2x2xf32>, %arg1: tensor<1x2x2x2xf32>, %arg2: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x2xf32>) {
  %0 = poot.constant dense<0.000000e+00> : tensor<1x2x2x2xf32>
  %1 = poot.constant dense<false> : tensor<i1>
  %2 = poot.constant dense<0.000000e+00> : tensor<f32>
  %3 = poot.constant dense<0xFF800000> : tensor<f32>
  %4 = poot.constant dense<0> : tensor<i32>
  %5 = poot.constant dense<true> : tensor<2x2xi1>
  %6 = poot.constant dense<0.840896427> : tensor<f32>
  %7 = poot.mul %arg0, %6 : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %8 = poot.iota dim = 0 : tensor<2xi32>
  %9 = poot.iota dim = 0 : tensor<2xi32>
  %10 = poot.reshape %9 : tensor<2xi32> -> tensor<2x1xi32>
  %11 = poot.sub %8, %10 : (tensor<2xi32>, tensor<2x1xi32>) -> tensor<2x2xi32>
  %12 = poot.compare le, %11, %4 : (tensor<2x2xi32>, tensor<i32>) -> tensor<2x2xi1>
  %13 = poot.and %12, %5 : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  %14 = poot.select %13, %2, %3 : (tensor<2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
  %15 = poot.transpose %arg1 perm = [0, 1, 3, 2] : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %16 = poot.mul %15, %6 : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %17 = poot.reshape %7 : tensor<1x2x2x2xf32> -> tensor<2x2x2xf32>
  %18 = poot.reshape %16 : tensor<1x2x2x2xf32> -> tensor<2x2x2xf32>
  %19 = poot.matmul %17, %18 : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %20 = poot.reshape %19 : tensor<2x2x2xf32> -> tensor<1x2x2x2xf32>
  %21 = poot.add %20, %14 : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %22 = poot.reduce max %21 axis = 3 keepdim : tensor<1x2x2x2xf32> -> tensor<1x2x2x1xf32>
  %23 = poot.sub %21, %22 : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32>
  %24 = poot.exp %23 : tensor<1x2x2x2xf32>
  %25 = poot.reduce sum %24 axis = 3 keepdim : tensor<1x2x2x2xf32> -> tensor<1x2x2x1xf32>
  %26 = poot.div %24, %25 : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32>
  %27 = poot.compare eq, %21, %3 : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xi1>
  %28 = poot.compare eq, %27, %1 : (tensor<1x2x2x2xi1>, tensor<i1>) -> tensor<1x2x2x2xi1>
  %29 = poot.convert %28 : tensor<1x2x2x2xi1> -> tensor<1x2x2x2xi32>
  %30 = poot.reduce max %29 axis = 3 keepdim : tensor<1x2x2x2xi32> -> tensor<1x2x2x1xi32>
  %31 = poot.compare gt, %30, %4 : (tensor<1x2x2x1xi32>, tensor<i32>) -> tensor<1x2x2x1xi1>
  %32 = poot.compare eq, %31, %1 : (tensor<1x2x2x1xi1>, tensor<i1>) -> tensor<1x2x2x1xi1>
  %33 = poot.select %32, %0, %26 : (tensor<1x2x2x1xi1>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %34 = poot.reshape %33 : tensor<1x2x2x2xf32> -> tensor<2x2x2xf32>
  %35 = poot.reshape %arg2 : tensor<1x2x2x2xf32> -> tensor<2x2x2xf32>
  %36 = poot.matmul %34, %35 : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %37 = poot.reshape %36 : tensor<2x2x2xf32> -> tensor<1x2x2x2xf32>
  return %37 : tensor<1x2x2x2xf32>
}

// -----

// bf16 with enable_gqa and no mask: Q, K and V widened to f32, the output
// rounded back after the bmm's unfold (two-byte attention); the shift reads
// the bmm's folded scores while the max and the guard read their 4-D view.
// CHECK-LABEL: func.func @sdpa_bf16_gqa
// CHECK:       %[[A:.*]] = poot.attention %arg0, %arg1, %arg2 {scale = 0.70710680200321363 : f64} : tensor<1x2x2x2xbf16>, tensor<1x1x4x2xbf16>, tensor<1x1x4x2xbf16> -> tensor<1x2x2x2xbf16>
// CHECK-NEXT:  return %[[A]]
func.func @sdpa_bf16_gqa(%arg0: tensor<1x2x2x2xbf16>, %arg1: tensor<1x1x4x2xbf16>, %arg2: tensor<1x1x4x2xbf16>) -> (tensor<1x2x2x2xbf16>) {
  %0 = poot.constant dense<0.000000e+00> : tensor<1x2x2x4xf32>
  %1 = poot.constant dense<0> : tensor<i32>
  %2 = poot.constant dense<false> : tensor<i1>
  %3 = poot.constant dense<0xFF800000> : tensor<f32>
  %4 = poot.constant dense<0.840896427> : tensor<f32>
  %5 = poot.convert %arg0 : tensor<1x2x2x2xbf16> -> tensor<1x2x2x2xf32>
  %6 = poot.convert %arg1 : tensor<1x1x4x2xbf16> -> tensor<1x1x4x2xf32>
  %7 = poot.convert %arg2 : tensor<1x1x4x2xbf16> -> tensor<1x1x4x2xf32>
  %8 = poot.mul %5, %4 : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %9 = poot.reshape %6 : tensor<1x1x4x2xf32> -> tensor<1x1x1x4x2xf32>
  %10 = poot.broadcast %9 : tensor<1x1x1x4x2xf32> -> tensor<1x1x2x4x2xf32>
  %11 = poot.reshape %10 : tensor<1x1x2x4x2xf32> -> tensor<1x2x4x2xf32>
  %12 = poot.reshape %7 : tensor<1x1x4x2xf32> -> tensor<1x1x1x4x2xf32>
  %13 = poot.broadcast %12 : tensor<1x1x1x4x2xf32> -> tensor<1x1x2x4x2xf32>
  %14 = poot.transpose %11 perm = [0, 1, 3, 2] : tensor<1x2x4x2xf32> -> tensor<1x2x2x4xf32>
  %15 = poot.mul %14, %4 : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %16 = poot.reshape %8 : tensor<1x2x2x2xf32> -> tensor<2x2x2xf32>
  %17 = poot.reshape %15 : tensor<1x2x2x4xf32> -> tensor<2x2x4xf32>
  %18 = poot.matmul %16, %17 : (tensor<2x2x2xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %19 = poot.reshape %18 : tensor<2x2x4xf32> -> tensor<1x2x2x4xf32>
  %20 = poot.reduce max %19 axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %21 = poot.sub %18, %20 : (tensor<2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %22 = poot.exp %21 : tensor<1x2x2x4xf32>
  %23 = poot.reduce sum %22 axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %24 = poot.div %22, %23 : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %25 = poot.compare eq, %19, %3 : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xi1>
  %26 = poot.compare eq, %25, %2 : (tensor<1x2x2x4xi1>, tensor<i1>) -> tensor<1x2x2x4xi1>
  %27 = poot.convert %26 : tensor<1x2x2x4xi1> -> tensor<1x2x2x4xi32>
  %28 = poot.reduce max %27 axis = 3 keepdim : tensor<1x2x2x4xi32> -> tensor<1x2x2x1xi32>
  %29 = poot.compare gt, %28, %1 : (tensor<1x2x2x1xi32>, tensor<i32>) -> tensor<1x2x2x1xi1>
  %30 = poot.compare eq, %29, %2 : (tensor<1x2x2x1xi1>, tensor<i1>) -> tensor<1x2x2x1xi1>
  %31 = poot.select %30, %0, %24 : (tensor<1x2x2x1xi1>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %32 = poot.reshape %31 : tensor<1x2x2x4xf32> -> tensor<2x2x4xf32>
  %33 = poot.reshape %13 : tensor<1x1x2x4x2xf32> -> tensor<2x4x2xf32>
  %34 = poot.matmul %32, %33 : (tensor<2x2x4xf32>, tensor<2x4x2xf32>) -> tensor<2x2x2xf32>
  %35 = poot.reshape %34 : tensor<2x2x2xf32> -> tensor<1x2x2x2xf32>
  %36 = poot.convert %35 : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xbf16>
  return %36 : tensor<1x2x2x2xbf16>
}
