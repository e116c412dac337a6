// RUN: poot-opt %s -split-input-file -poot-attention-rewrite="remarks=true" -verify-diagnostics | FileCheck %s

// The softmax around the exp: the normalization spellings that fuse, and
// one case per check that declines (each remark at the op it stopped at).
// Minimal chains: B = H = Lq = 1, Lk = 4, D = 2; no scale op (scale 1).

// The normalization as a product with the reciprocal of the sum.
// CHECK-LABEL: func.func @reciprocal
// CHECK:       poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NOT:   poot.exp
// CHECK-NOT:   poot.div
func.func @reciprocal(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %one = poot.constant dense<1.0> : tensor<f32>
  %r = poot.div %one, %den : (tensor<f32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %p = poot.mul %ex, %r : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Plain reductions (no keepdim), reshaped back and broadcast explicitly, as the
// pass sees them without canonicalization.
// CHECK-LABEL: func.func @plain_reductions
// CHECK:       poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NOT:   poot.exp
// CHECK-NOT:   poot.div
func.func @plain_reductions(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m0 = poot.reduce max %s axis = 3 : tensor<1x1x1x4xf32> -> tensor<1x1x1xf32>
  %m1 = poot.reshape %m0 : tensor<1x1x1xf32> -> tensor<1x1x1x1xf32>
  %m = poot.broadcast %m1 : tensor<1x1x1x1xf32> -> tensor<1x1x1x4xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %z0 = poot.reduce sum %ex axis = 3 : tensor<1x1x1x4xf32> -> tensor<1x1x1xf32>
  %z1 = poot.reshape %z0 : tensor<1x1x1xf32> -> tensor<1x1x1x1xf32>
  %z = poot.broadcast %z1 : tensor<1x1x1x1xf32> -> tensor<1x1x1x4xf32>
  %p = poot.div %ex, %z : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The negated max added instead of subtracted (either side).
// CHECK-LABEL: func.func @negated_max
// CHECK:       poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NOT:   poot.exp
// CHECK-NOT:   poot.div
func.func @negated_max(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %nm = poot.neg %m : tensor<1x1x1x1xf32>
  %xs = poot.add %nm, %s : (tensor<1x1x1x1xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The division by the sum applied after the P.V matmul.
// CHECK-LABEL: func.func @divide_after_pv
// CHECK:       %[[O:.*]] = poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NOT:   poot.div
// CHECK:       return %[[O]]
func.func @divide_after_pv(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %u = poot.matmul %ex, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  %out = poot.div %u, %den : (tensor<1x1x1x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The P.V product multiplied by the reciprocal of the sum.
// CHECK-LABEL: func.func @reciprocal_after_pv
// CHECK:       %[[O:.*]] = poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NOT:   poot.mul
// CHECK:       return %[[O]]
func.func @reciprocal_after_pv(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %one = poot.constant dense<1.0> : tensor<f32>
  %r = poot.div %one, %den : (tensor<f32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %u = poot.matmul %ex, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  %out = poot.mul %r, %u : (tensor<1x1x1x1xf32>, tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The exp of the scores themselves: no max subtracted.
// CHECK-LABEL: func.func @exp_without_max
// CHECK-NOT:   poot.attention
func.func @exp_without_max(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the exp reads 'poot.matmul', not the scores minus their max (a softmax's exp(s - max(s)))}}
  %ex = poot.exp %s : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Something other than a reduction subtracted.
// CHECK-LABEL: func.func @subtract_not_a_reduce
// CHECK-NOT:   poot.attention
func.func @subtract_not_a_reduce(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %c = poot.constant dense<1.0> : tensor<1x1x1x1xf32>
  // expected-remark @+1 {{attention not fused: the value the softmax subtracts before the exp ('poot.constant') is not a reduce max of the scores}}
  %xs = poot.sub %s, %c : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The min subtracted instead of the max.
// CHECK-LABEL: func.func @subtract_min
// CHECK-NOT:   poot.attention
func.func @subtract_min(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.reduce' before the exp takes the min of the scores, not their max}}
  %m = poot.reduce min %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A max taken from another tensor.
// CHECK-LABEL: func.func @max_of_other
// CHECK-NOT:   poot.attention
func.func @max_of_other(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %o: tensor<1x1x1x4xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the max the softmax subtracts ('poot.reduce') is taken over argument #3, not over the scores the exp reads ('poot.matmul')}}
  %m = poot.reduce max %o axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The softmax over the wrong axis (the max over the query rows).
// CHECK-LABEL: func.func @max_wrong_axis
// CHECK-NOT:   poot.attention
func.func @max_wrong_axis(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.reduce' takes the softmax max over axis 2, not the last (key) axis 3}}
  %m = poot.reduce max %s axis = 2 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The P.V matmul reads the unnormalized exp: no sum at all.
// CHECK-LABEL: func.func @unnormalized
// CHECK-NOT:   poot.attention
func.func @unnormalized(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the P.V matmul reads the unnormalized exp: no reduce sum of the exp divides it}}
  %out = poot.matmul %ex, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The exp feeds no sum and no matmul.
// CHECK-LABEL: func.func @not_normalized
// CHECK-NOT:   poot.attention
func.func @not_normalized(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the exp is not normalized by a reduce sum of it (not a softmax)}}
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  return %ex : tensor<1x1x1x4xf32>
}

// -----

// The sum over the wrong axis.
// CHECK-LABEL: func.func @sum_wrong_axis
// CHECK-NOT:   poot.attention
func.func @sum_wrong_axis(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.reduce' sums the softmax over axis 2, not the last (key) axis 3}}
  %den = poot.reduce sum %ex axis = 2 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// log-sum-exp: the exp is summed, never divided.
// CHECK-LABEL: func.func @only_summed
// CHECK-NOT:   poot.attention
func.func @only_summed(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x1xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the exp is only summed, never divided by its sum (not a softmax)}}
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %l = poot.log %den : tensor<1x1x1x1xf32>
  return %l : tensor<1x1x1x1xf32>
}

// -----

// The exp divided by something other than its sum.
// CHECK-LABEL: func.func @divide_by_other
// CHECK-NOT:   poot.attention
func.func @divide_by_other(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %z: tensor<1x1x1x1xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  // expected-remark @+1 {{attention not fused: 'poot.div' divides the exp by argument #3, not by its softmax sum}}
  %p = poot.div %ex, %z : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The exp multiplied by something other than the reciprocal of its sum.
// CHECK-LABEL: func.func @multiply_by_other
// CHECK-NOT:   poot.attention
func.func @multiply_by_other(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %z: tensor<1x1x1x1xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  // expected-remark @+1 {{attention not fused: 'poot.mul' multiplies the exp by argument #3, not by the reciprocal 1 / sum of its softmax sum}}
  %p = poot.mul %ex, %z : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The exp feeds an op that is neither a division nor the P.V matmul.
// CHECK-LABEL: func.func @exp_feeds_other
// CHECK-NOT:   poot.attention
func.func @exp_feeds_other(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  // expected-remark @+1 {{attention not fused: the exp feeds 'poot.add', not a division by its sum (nor a P.V matmul divided by it afterwards)}}
  %p = poot.add %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The unnormalized P.V product divided by something else.
// CHECK-LABEL: func.func @pv_divided_by_other
// CHECK-NOT:   poot.attention
func.func @pv_divided_by_other(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %z: tensor<1x1x1x1xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %u = poot.matmul %ex, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  // expected-remark @+1 {{attention not fused: the P.V matmul reads the unnormalized exp and its product is not divided by the softmax sum ('poot.reduce') afterwards}}
  %out = poot.div %u, %z : (tensor<1x1x1x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x2xf32>
  %d2 = poot.add %out, %den : (tensor<1x1x1x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x2xf32>
  return %d2 : tensor<1x1x1x2xf32>
}

// -----

// A mask added after the softmax.
// CHECK-LABEL: func.func @mask_after_softmax
// CHECK-NOT:   poot.attention
func.func @mask_after_softmax(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the softmax probabilities feed 'poot.add', not the P.V matmul (a mask, scale or other op applied after the softmax is not part of attention)}}
  %p2 = poot.add %p, %mask : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p2, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A scale applied after the softmax.
// CHECK-LABEL: func.func @scale_after_softmax
// CHECK-NOT:   poot.attention
func.func @scale_after_softmax(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %c = poot.constant dense<2.0> : tensor<f32>
  // expected-remark @+1 {{attention not fused: the softmax probabilities feed 'poot.mul', not the P.V matmul}}
  %p2 = poot.mul %p, %c : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p2, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// The probabilities on the right of the matmul.
// CHECK-LABEL: func.func @probs_on_the_right
// CHECK-NOT:   poot.attention
func.func @probs_on_the_right(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %w: tensor<1x1x2x1xf32>) -> tensor<1x1x2x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the softmax probabilities are the right operand of 'poot.matmul': attention multiplies them by V as P.V}}
  %out = poot.matmul %w, %p : (tensor<1x1x2x1xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x2x4xf32>
  return %out : tensor<1x1x2x4xf32>
}

// -----

// The max reduced without keepdim and subtracted as it is: numpy broadcasting
// then subtracts row j's max from column j (Lq = Lk = 4), not a softmax.
// CHECK-LABEL: func.func @max_without_keepdim
// CHECK-NOT:   poot.attention
func.func @max_without_keepdim(%q: tensor<1x1x4x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x4x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x4x4xf32>
  // expected-remark @+1 {{attention not fused: the max the softmax subtracts is laid out as tensor<1x1x4xf32>, not one value per row of the scores tensor<1x1x4x4xf32>}}
  %m = poot.reduce max %s axis = 3 : tensor<1x1x4x4xf32> -> tensor<1x1x4xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x4x4xf32>, tensor<1x1x4xf32>) -> tensor<1x1x4x4xf32>
  %ex = poot.exp %xs : tensor<1x1x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x4x4xf32> -> tensor<1x1x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x4x4xf32>, tensor<1x1x4x1xf32>) -> tensor<1x1x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  return %out : tensor<1x1x4x2xf32>
}

// -----

// Hugging Face's `softmax(w, dtype=torch.float32).to(q.dtype)`: the softmax in
// f32 between converts from and to f16. Two-byte attention: the op computes
// scores, softmax and P.V in f32 and rounds its output once, so both converts
// go with the chain.
// CHECK-LABEL: func.func @f32_softmax_around_f16
// CHECK:       poot.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64} : tensor<1x1x1x2xf16>, tensor<1x1x4x2xf16>, tensor<1x1x4x2xf16> -> tensor<1x1x1x2xf16>
// CHECK-NOT:   poot.convert
// CHECK-NOT:   poot.exp
func.func @f32_softmax_around_f16(%q: tensor<1x1x1x2xf16>, %k: tensor<1x1x4x2xf16>, %v: tensor<1x1x4x2xf16>) -> tensor<1x1x1x2xf16> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf16> -> tensor<1x1x2x4xf16>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf16>, tensor<1x1x2x4xf16>) -> tensor<1x1x1x4xf16>
  %s32 = poot.convert %s : tensor<1x1x1x4xf16> -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s32 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s32, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %p16 = poot.convert %p : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xf16>
  %out = poot.matmul %p16, %v : (tensor<1x1x1x4xf16>, tensor<1x1x4x2xf16>) -> tensor<1x1x1x2xf16>
  return %out : tensor<1x1x1x2xf16>
}

// -----

// Q, K and V widened before the matmuls, an f32 mask on the f32 scores, the
// f32 output rounded back: the converts are read through, the mask stays f32.
// CHECK-LABEL: func.func @upcast_operands_bf16
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%arg3 : tensor<1x1x1x4xf32>) {scale = 1.000000e+00 : f64} : tensor<1x1x1x2xbf16>, tensor<1x1x4x2xbf16>, tensor<1x1x4x2xbf16> -> tensor<1x1x1x2xbf16>
// CHECK-NOT:   poot.convert
func.func @upcast_operands_bf16(%q: tensor<1x1x1x2xbf16>, %k: tensor<1x1x4x2xbf16>, %v: tensor<1x1x4x2xbf16>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x1x1x2xbf16> {
  %q32 = poot.convert %q : tensor<1x1x1x2xbf16> -> tensor<1x1x1x2xf32>
  %k32 = poot.convert %k : tensor<1x1x4x2xbf16> -> tensor<1x1x4x2xf32>
  %v32 = poot.convert %v : tensor<1x1x4x2xbf16> -> tensor<1x1x4x2xf32>
  %kt = poot.transpose %k32 perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s0 = poot.matmul %q32, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %s = poot.add %s0, %mask : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %o32 = poot.matmul %p, %v32 : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  %out = poot.convert %o32 : tensor<1x1x1x2xf32> -> tensor<1x1x1x2xbf16>
  return %out : tensor<1x1x1x2xbf16>
}

// -----

// Scores computed in bf16 and widened for an f32 softmax, but V is f32: not
// one element type for Q, K and V.
// CHECK-LABEL: func.func @f32_softmax_of_bf16_scores
// CHECK-NOT:   poot.attention
func.func @f32_softmax_of_bf16_scores(%q: tensor<1x1x1x2xbf16>, %k: tensor<1x1x4x2xbf16>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xbf16> -> tensor<1x1x2x4xbf16>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xbf16>, tensor<1x1x2x4xbf16>) -> tensor<1x1x1x4xbf16>
  %s32 = poot.convert %s : tensor<1x1x1x4xbf16> -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s32 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s32, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: Q is bf16, K bf16 and V f32: poot.attention reads Q, K and V in one element type, so the chain stays primitive}}
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// bf16 Q, K and V widened, the f32 output kept f32: the op's result would be
// rounded to bf16, which this chain never does.
// CHECK-LABEL: func.func @f32_output_of_bf16
// CHECK-NOT:   poot.attention
func.func @f32_output_of_bf16(%q: tensor<1x1x1x2xbf16>, %k: tensor<1x1x4x2xbf16>, %v: tensor<1x1x4x2xbf16>) -> tensor<1x1x1x2xf32> {
  %q32 = poot.convert %q : tensor<1x1x1x2xbf16> -> tensor<1x1x1x2xf32>
  %k32 = poot.convert %k : tensor<1x1x4x2xbf16> -> tensor<1x1x4x2xf32>
  %v32 = poot.convert %v : tensor<1x1x4x2xbf16> -> tensor<1x1x4x2xf32>
  %kt = poot.transpose %k32 perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q32, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: the attention output is f32 while Q, K and V are bf16: two-byte attention rounds its output once to bf16 (an f32 output is not in its contract), so the chain stays primitive}}
  %out = poot.matmul %p, %v32 : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// f32 scores narrowed to f16 for the softmax: two-byte attention only widens.
// CHECK-LABEL: func.func @scores_narrowed
// CHECK-NOT:   poot.attention
func.func @scores_narrowed(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf16>) -> tensor<1x1x1x2xf16> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.convert' in the score chain turns f32 scores into f16: two-byte attention widens f16/bf16 to f32, nothing else}}
  %s16 = poot.convert %s : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xf16>
  %m = poot.reduce max %s16 axis = 3 keepdim : tensor<1x1x1x4xf16> -> tensor<1x1x1x1xf16>
  %xs = poot.sub %s16, %m : (tensor<1x1x1x4xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x1x4xf16>
  %ex = poot.exp %xs : tensor<1x1x1x4xf16>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf16> -> tensor<1x1x1x1xf16>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x1x4xf16>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf16>, tensor<1x1x4x2xf16>) -> tensor<1x1x1x2xf16>
  return %out : tensor<1x1x1x2xf16>
}

// -----

// A bf16 mask before the scores' widening and an f32 one after: the op takes
// one mask, in one type.
// CHECK-LABEL: func.func @masks_on_both_sides
// CHECK-NOT:   poot.attention
func.func @masks_on_both_sides(%q: tensor<1x1x1x2xbf16>, %k: tensor<1x1x4x2xbf16>, %v: tensor<1x1x4x2xbf16>, %m16: tensor<1x1x1x4xbf16>, %m32: tensor<1x1x1x4xf32>) -> tensor<1x1x1x2xbf16> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xbf16> -> tensor<1x1x2x4xbf16>
  %s0 = poot.matmul %q, %kt : (tensor<1x1x1x2xbf16>, tensor<1x1x2x4xbf16>) -> tensor<1x1x1x4xbf16>
  %s1 = poot.add %s0, %m16 : (tensor<1x1x1x4xbf16>, tensor<1x1x1x4xbf16>) -> tensor<1x1x1x4xbf16>
  %s2 = poot.convert %s1 : tensor<1x1x1x4xbf16> -> tensor<1x1x1x4xf32>
  %s = poot.add %s2, %m32 : (tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %p16 = poot.convert %p : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xbf16>
  // expected-remark @+1 {{attention not fused: the masks are added in both bf16 and f32 (on both sides of the scores' 'poot.convert'): the op takes one mask}}
  %out = poot.matmul %p16, %v : (tensor<1x1x1x4xbf16>, tensor<1x1x4x2xbf16>) -> tensor<1x1x1x2xbf16>
  return %out : tensor<1x1x1x2xbf16>
}

// -----

// A softmax computed in f16 whose probabilities are widened to f32 for an
// f32 P.V: two-byte attention rounds nothing but its output.
// CHECK-LABEL: func.func @probabilities_widened
// CHECK-NOT:   poot.attention
func.func @probabilities_widened(%q: tensor<1x1x1x2xf16>, %k: tensor<1x1x4x2xf16>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf16> -> tensor<1x1x2x4xf16>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf16>, tensor<1x1x2x4xf16>) -> tensor<1x1x1x4xf16>
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x1x1x4xf16> -> tensor<1x1x1x1xf16>
  %xs = poot.sub %s, %m : (tensor<1x1x1x4xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x1x4xf16>
  %ex = poot.exp %xs : tensor<1x1x1x4xf16>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf16> -> tensor<1x1x1x1xf16>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x1x4xf16>
  // expected-remark @+1 {{attention not fused: 'poot.convert' turns the f16 softmax probabilities into f32: two-byte attention widens f16/bf16 to f32, nothing else}}
  %p32 = poot.convert %p : tensor<1x1x1x4xf16> -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p32, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// Probabilities rounded to bf16 and then scaled before the P.V matmul: an op
// after the softmax is not part of attention.
// CHECK-LABEL: func.func @rounded_probabilities_scaled
// CHECK-NOT:   poot.attention
func.func @rounded_probabilities_scaled(%q: tensor<1x1x1x2xbf16>, %k: tensor<1x1x4x2xbf16>, %v: tensor<1x1x4x2xbf16>) -> tensor<1x1x1x2xbf16> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xbf16> -> tensor<1x1x2x4xbf16>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xbf16>, tensor<1x1x2x4xbf16>) -> tensor<1x1x1x4xbf16>
  %s32 = poot.convert %s : tensor<1x1x1x4xbf16> -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s32 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s32, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %p16 = poot.convert %p : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xbf16>
  %two = poot.constant dense<2.0> : tensor<bf16>
  // expected-remark @+1 {{attention not fused: the probabilities 'poot.convert' rounds to bf16 feed 'poot.mul', not the P.V matmul as its left operand}}
  %p2 = poot.mul %p16, %two : (tensor<1x1x1x4xbf16>, tensor<bf16>) -> tensor<1x1x1x4xbf16>
  %out = poot.matmul %p2, %v : (tensor<1x1x1x4xbf16>, tensor<1x1x4x2xbf16>) -> tensor<1x1x1x2xbf16>
  return %out : tensor<1x1x1x2xbf16>
}

// -----

// Scores of one head broadcast over two by the mask they are added to: the
// chain changes type at the score matmul.
// CHECK-LABEL: func.func @scores_change_type
// CHECK-NOT:   poot.attention
func.func @scores_change_type(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %mask: tensor<1x2x1x4xf32>) -> tensor<1x2x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  // expected-remark @+1 {{attention not fused: the score chain changes type at 'poot.matmul'}}
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %s1 = poot.add %s, %mask : (tensor<1x1x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x1x4xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x2x1x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x4xf32>
  %ex = poot.exp %xs : tensor<1x2x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x4xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x1x2xf32>
  return %out : tensor<1x2x1x2xf32>
}
