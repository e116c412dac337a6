// RUN: poot-opt %s -split-input-file -poot-attention-rewrite="remarks=true" -verify-diagnostics | FileCheck %s

// The fully-masked-row guard torch's core-ATen scaled_dot_product_attention
// puts between the softmax and P.V (`_safe_softmax`: a row whose scores are
// all -inf gets 0, not 0/0), in the spellings RowGuardMatch.cpp reads, and
// the look-alikes that decline. B = H = 1, Lq = 2, Lk = 4, D = 2; scale 1.

// torch's spelling (core-ATen SDPA, `_safe_softmax`) without a mask: no
// row is hidden entirely, the guard is a no-op and goes with the chain.
// CHECK-LABEL: func.func @torch_guard_no_mask
// CHECK:       %[[A:.*]] = poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NEXT:  return %[[A]]
func.func @torch_guard_no_mask(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %isinf = poot.compare eq, %s, %ninf : (tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xi1>
  %vis = poot.compare eq, %isinf, %false : (tensor<1x1x2x4xi1>, tensor<i1>) -> tensor<1x1x2x4xi1>
  %vis32 = poot.convert %vis : tensor<1x1x2x4xi1> -> tensor<1x1x2x4xi32>
  %any = poot.reduce max %vis32 axis = 3 keepdim : tensor<1x1x2x4xi32> -> tensor<1x1x2x1xi32>
  %anyb = poot.compare gt, %any, %zi : (tensor<1x1x2x1xi32>, tensor<i32>) -> tensor<1x1x2x1xi1>
  %hidden = poot.compare eq, %anyb, %false : (tensor<1x1x2x1xi1>, tensor<i1>) -> tensor<1x1x2x1xi1>
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// With an additive mask: the op keeps its own fully masked row (0/0) and the
// rewrite zeroes the rows whose mask is all -inf after it.
// CHECK-LABEL: func.func @torch_guard_mask
// CHECK:       %[[A:.*]] = poot.attention %arg0, %arg1, %arg2 mask(%arg3 : tensor<1x1x2x4xf32>) {scale = 1.000000e+00 : f64}
// CHECK:       %[[M:.*]] = poot.reduce max %arg3 axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
// CHECK:       %[[H:.*]] = poot.compare eq, %[[M]], %{{.*}} : (tensor<1x1x2x1xf32>, tensor<f32>) -> tensor<1x1x2x1xi1>
// CHECK:       %[[G:.*]] = poot.select %[[H]], %{{.*}}, %[[A]] : (tensor<1x1x2x1xi1>, tensor<f32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
// CHECK-NEXT:  return %[[G]]
// CHECK-NOT:   poot.exp
func.func @torch_guard_mask(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %mask: tensor<1x1x2x4xf32>) -> tensor<1x1x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %s = poot.add %s0, %mask : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %isinf = poot.compare eq, %s, %ninf : (tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xi1>
  %vis = poot.compare eq, %isinf, %false : (tensor<1x1x2x4xi1>, tensor<i1>) -> tensor<1x1x2x4xi1>
  %vis32 = poot.convert %vis : tensor<1x1x2x4xi1> -> tensor<1x1x2x4xi32>
  %any = poot.reduce max %vis32 axis = 3 keepdim : tensor<1x1x2x4xi32> -> tensor<1x1x2x1xi32>
  %anyb = poot.compare gt, %any, %zi : (tensor<1x1x2x1xi32>, tensor<i32>) -> tensor<1x1x2x1xi1>
  %hidden = poot.compare eq, %anyb, %false : (tensor<1x1x2x1xi1>, tensor<i1>) -> tensor<1x1x2x1xi1>
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// all(s == -inf), spelled as a min of the 0/1 words, and the select's arms
// swapped (p where some key is visible).
// CHECK-LABEL: func.func @all_hidden_swapped
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%arg3
// CHECK:       poot.select
// CHECK-NOT:   poot.exp
func.func @all_hidden_swapped(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %mask: tensor<1x1x2x4xf32>) -> tensor<1x1x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %s = poot.add %s0, %mask : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %isinf = poot.compare eq, %s, %ninf : (tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xi1>
  %w = poot.convert %isinf : tensor<1x1x2x4xi1> -> tensor<1x1x2x4xi32>
  %all = poot.reduce min %w axis = 3 keepdim : tensor<1x1x2x4xi32> -> tensor<1x1x2x1xi32>
  %some = poot.compare eq, %all, %zi : (tensor<1x1x2x1xi32>, tensor<i32>) -> tensor<1x1x2x1xi1>
  %g = poot.select %some, %p, %zero : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// max(s) == -inf with the softmax's own max (the max has a second reader).
// CHECK-LABEL: func.func @own_max
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%arg3
// CHECK:       poot.select
// CHECK-NOT:   poot.exp
func.func @own_max(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %mask: tensor<1x1x2x4xf32>) -> tensor<1x1x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %s = poot.add %s0, %mask : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %hidden = poot.compare eq, %m, %ninf : (tensor<1x1x2x1xf32>, tensor<f32>) -> tensor<1x1x2x1xi1>
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// max(s) == -inf with a max of its own (the importer's pre-dispatch SDPA
// with an attn_mask), and a bool mask applied by a select.
// CHECK-LABEL: func.func @second_max_bool_mask
// CHECK:       %[[K:.*]] = poot.select %arg3, %{{.*}}, %{{.*}} : (tensor<1x1x2x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x2x4xf32>
// CHECK:       %[[A:.*]] = poot.attention %arg0, %arg1, %arg2 mask(%[[K]]
// CHECK:       poot.reduce max %[[K]]
// CHECK:       poot.select
// CHECK-NOT:   poot.exp
func.func @second_max_bool_mask(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %keep: tensor<1x1x2x4xi1>) -> tensor<1x1x2x2xf32> {
  %ninf0 = poot.constant dense<0xFF800000> : tensor<f32>
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %s = poot.select %keep, %s0, %ninf0 : (tensor<1x1x2x4xi1>, tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %m2 = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %hidden = poot.compare eq, %m2, %ninf : (tensor<1x1x2x1xf32>, tensor<f32>) -> tensor<1x1x2x1xi1>
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// A causal mask (the op's causal kind, Lk >= Lq): every row sees key 0, so
// the guard is a no-op.
// CHECK-LABEL: func.func @guard_causal
// CHECK:       %[[A:.*]] = poot.attention %arg0, %arg1, %arg2 causal {scale = 1.000000e+00 : f64}
// CHECK-NEXT:  return %[[A]]
func.func @guard_causal(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %row = poot.iota dim = 0 : tensor<2x4xi32>
  %col = poot.iota dim = 1 : tensor<2x4xi32>
  %two = poot.constant dense<2> : tensor<i32>
  %diag = poot.add %row, %two : (tensor<2x4xi32>, tensor<i32>) -> tensor<2x4xi32>
  %seen = poot.compare le, %col, %diag : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
  %ninf0 = poot.constant dense<0xFF800000> : tensor<f32>
  %s = poot.select %seen, %s0, %ninf0 : (tensor<2x4xi1>, tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %isinf = poot.compare eq, %s, %ninf : (tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xi1>
  %vis = poot.compare eq, %isinf, %false : (tensor<1x1x2x4xi1>, tensor<i1>) -> tensor<1x1x2x4xi1>
  %vis32 = poot.convert %vis : tensor<1x1x2x4xi1> -> tensor<1x1x2x4xi32>
  %any = poot.reduce max %vis32 axis = 3 keepdim : tensor<1x1x2x4xi32> -> tensor<1x1x2x1xi32>
  %anyb = poot.compare gt, %any, %zi : (tensor<1x1x2x1xi32>, tensor<i32>) -> tensor<1x1x2x1xi1>
  %hidden = poot.compare eq, %anyb, %false : (tensor<1x1x2x1xi1>, tensor<i1>) -> tensor<1x1x2x1xi1>
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// any(s == -inf) -- some key hidden -- is not the guard: a select after the
// softmax that is not part of attention.
// CHECK-LABEL: func.func @some_hidden_is_not_the_guard
// CHECK-NOT:   poot.attention
func.func @some_hidden_is_not_the_guard(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %isinf = poot.compare eq, %s, %ninf : (tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xi1>
  %w = poot.convert %isinf : tensor<1x1x2x4xi1> -> tensor<1x1x2x4xi32>
  %any = poot.reduce max %w axis = 3 keepdim : tensor<1x1x2x4xi32> -> tensor<1x1x2x1xi32>
  %hidden = poot.compare gt, %any, %zi : (tensor<1x1x2x1xi32>, tensor<i32>) -> tensor<1x1x2x1xi1>
  // expected-remark @+1 {{attention not fused: 'poot.select' after the softmax is not the fully-masked-row guard (zeroing exactly the rows whose scores are all -inf, as torch's decomposed scaled_dot_product_attention does): it is not part of attention}}
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// The guard over a max of other values is not the guard either.
// CHECK-LABEL: func.func @guard_of_other_scores
// CHECK-NOT:   poot.attention
func.func @guard_of_other_scores(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %other: tensor<1x1x2x4xf32>) -> tensor<1x1x2x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %m2 = poot.reduce max %other axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %hidden = poot.compare eq, %m2, %ninf : (tensor<1x1x2x1xf32>, tensor<f32>) -> tensor<1x1x2x1xi1>
  // expected-remark @+1 {{attention not fused: 'poot.select' after the softmax is not the fully-masked-row guard}}
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out : tensor<1x1x2x2xf32>
}

// -----

// The guard's condition is also returned: it cannot die with the chain.
// CHECK-LABEL: func.func @guard_condition_escapes
// CHECK-NOT:   poot.attention
func.func @guard_condition_escapes(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x1xi32>) {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ex = poot.exp %xs : tensor<1x1x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x2x4xf32> -> tensor<1x1x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x2x4xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %false = poot.constant dense<false> : tensor<i1>
  %zi = poot.constant dense<0> : tensor<i32>
  %zero = poot.constant dense<0.0> : tensor<1x1x2x4xf32>
  %isinf = poot.compare eq, %s, %ninf : (tensor<1x1x2x4xf32>, tensor<f32>) -> tensor<1x1x2x4xi1>
  %w = poot.convert %isinf : tensor<1x1x2x4xi1> -> tensor<1x1x2x4xi32>
  // expected-remark @+1 {{attention not fused: the fully-masked-row guard's condition ('poot.reduce') is also used outside the attention chain}}
  %all = poot.reduce min %w axis = 3 keepdim : tensor<1x1x2x4xi32> -> tensor<1x1x2x1xi32>
  %hidden = poot.compare ne, %all, %zi : (tensor<1x1x2x1xi32>, tensor<i32>) -> tensor<1x1x2x1xi1>
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x2x1xi1>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %out = poot.matmul %g, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  return %out, %all : tensor<1x1x2x2xf32>, tensor<1x1x2x1xi32>
}

// -----

// A live length with a mask: a row may be hidden by the two together, which
// the op cannot tell from the mask alone, so the guarded chain declines.
// CHECK-LABEL: func.func @guard_live_and_mask
// CHECK-NOT:   poot.attention
func.func @guard_live_and_mask(%q: tensor<1x1x1x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>,
                               %mask: tensor<1x1x1x8xf32>,
                               %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>})
    -> tensor<1x1x1x4xf32> {
  %one = poot.constant dense<1> : tensor<i32>
  %lp = poot.add %pos, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %len4 = poot.reshape %lp : tensor<i32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x8x1xi32>
  %krow = poot.compare ge, %tr, %len4 : (tensor<1x1x8x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x8x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %zero, %k : (tensor<1x1x8x1xi1>, tensor<f32>, tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32>
  %vl = poot.select %krow, %zero, %v : (tensor<1x1x8x1xi1>, tensor<f32>, tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare gt, %len4, %tc : (tensor<1x1x1x1xi32>, tensor<1x1x1x8xi32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x8x4xf32> -> tensor<1x1x4x8xf32>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x1x8xf32>
  %s1 = poot.add %s0, %mask : (tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s = poot.select %keep, %s1, %ninf : (tensor<1x1x1x8xi1>, tensor<1x1x1x8xf32>, tensor<f32>) -> tensor<1x1x1x8xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x8xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x8xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x8xf32>
  %ex = poot.exp %xs : tensor<1x1x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x8xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x8xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x8xf32>
  %hidden = poot.compare eq, %m, %ninf : (tensor<1x1x1x1xf32>, tensor<f32>) -> tensor<1x1x1x1xi1>
  // expected-remark @+1 {{attention not fused: the fully-masked-row guard ('poot.select' zeroing rows whose scores are all -inf) of a live-length chain with a mask: the op cannot tell the rows the mask and the live length hide together, so the chain stays primitive}}
  %g = poot.select %hidden, %zero, %p : (tensor<1x1x1x1xi1>, tensor<f32>, tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %out = poot.matmul %g, %vl : (tensor<1x1x1x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x1x4xf32>
  return %out : tensor<1x1x1x4xf32>
}
