// RUN: poot-opt %s -split-input-file -poot-attention-rewrite | FileCheck %s

// The causal mask spelled with booleans, as PyTorch does (CausalMatch.cpp's
// readBoolView): tril of a bool ones is select(c, true, false), `~` and
// logical_not are eq(x, false); the matcher sees through these identities
// (and ne(x, true), select(c, false, true), and/or with the neutral splat,
// double negation) to the iota compare. Anything else stays a tensor mask.

// The importer's `scores.masked_fill(~tril(ones(L, L, dtype=bool)), -inf)`:
// tril of a bool ones is select(col - row <= 0, true, false), `~` is
// eq(x, false): the causal kind.
// CHECK-LABEL: func.func @masked_fill_not_tril
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @masked_fill_not_tril(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %hide = poot.compare eq, %tri, %false : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %hide, %ninf, %s1 : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// `torch.where(tril(ones) & True, scores, -inf)`: and with all-true is the mask.
// CHECK-LABEL: func.func @where_tril_and_true
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @where_tril_and_true(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %vis = poot.and %tri, %true : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Chunked prefill: `~tril(ones(Lq, Lk, dtype=bool), diagonal=Lk - Lq)`, bottom-right.
// CHECK-LABEL: func.func @bottom_right_tril_diagonal
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @bottom_right_tril_diagonal(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %row = poot.iota dim = 0 : tensor<3x5xi32>
  %col = poot.iota dim = 1 : tensor<3x5xi32>
  %off = poot.sub %col, %row : (tensor<3x5xi32>, tensor<3x5xi32>) -> tensor<3x5xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<3x5xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<2> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<3x5xi32>, tensor<i32>) -> tensor<3x5xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<3x5xi1>, tensor<3x5xi1>, tensor<i1>) -> tensor<3x5xi1>
  %hide = poot.compare eq, %tri, %false : (tensor<3x5xi1>, tensor<i1>) -> tensor<3x5xi1>
  %s2 = poot.select %hide, %ninf, %s1 : (tensor<3x5xi1>, tensor<f32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %ex = poot.exp %xs : tensor<1x2x3x5xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %out : tensor<1x2x3x4xf32>
}

// -----

// select(keep, false, true) is ~keep.
// CHECK-LABEL: func.func @select_false_true_is_not
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @select_false_true_is_not(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %hide = poot.select %keep, %false, %true : (tensor<4x4xi1>, tensor<i1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %hide, %ninf, %s1 : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Negations nest: ne(or(false, eq(false, ~tril)), true) hides what ~tril hides.
// CHECK-LABEL: func.func @double_negation_ne_or
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @double_negation_ne_or(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %hide = poot.compare eq, %tri, %false : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %nn = poot.compare eq, %false, %hide : (tensor<i1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %or = poot.or %false, %nn : (tensor<i1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %hide2 = poot.compare ne, %or, %true : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %hide2, %ninf, %s1 : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// The same condition as an additive bias: s + select(~tril, -inf, 0).
// CHECK-LABEL: func.func @additive_not_tril
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @additive_not_tril(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %hide = poot.compare eq, %tri, %false : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %bias = poot.select %hide, %ninf, %zero : (tensor<4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<4x4xf32>
  %s2 = poot.add %s1, %bias : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: select(keep, true, true) keeps every key: a tensor mask.
// CHECK-LABEL: func.func @select_true_true
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @select_true_true(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %vis = poot.select %keep, %true, %ones : (tensor<4x4xi1>, tensor<i1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: select(keep, pad, false) is keep & pad, not causal.
// CHECK-LABEL: func.func @select_arm_not_constant
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @select_arm_not_constant(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>, %pad: tensor<4x4xi1>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %vis = poot.select %keep, %pad, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: ~tril(ones, diagonal=1) with Lq = Lk also shows the next key.
// CHECK-LABEL: func.func @tril_offset_not_causal
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @tril_offset_not_causal(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<1> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %hide = poot.compare eq, %tri, %false : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %hide, %ninf, %s1 : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: masked_fill(tril, -inf) (the `~` forgotten) hides the visible set.
// CHECK-LABEL: func.func @tril_not_negated
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @tril_not_negated(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %tri, %ninf, %s1 : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: where(triu(ones) != false, s, -inf) keeps the other triangle.
// CHECK-LABEL: func.func @triu_kept
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @triu_kept(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare ge, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %vis = poot.compare ne, %tri, %false : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: and with all-false is no identity.
// CHECK-LABEL: func.func @and_false
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @and_false(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %vis = poot.and %tri, %false : (tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %s2 = poot.select %vis, %s1, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: eq of two non-constant conditions is no negation.
// CHECK-LABEL: func.func @eq_of_two_masks
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @eq_of_two_masks(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>, %pad: tensor<4x4xi1>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 0 : tensor<4x4xi32>
  %col = poot.iota dim = 1 : tensor<4x4xi32>
  %off = poot.sub %col, %row : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %true = poot.constant dense<true> : tensor<i1>
  %false = poot.constant dense<false> : tensor<i1>
  %ones = poot.constant dense<true> : tensor<4x4xi1>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %diag = poot.constant dense<0> : tensor<i32>
  %keep = poot.compare le, %off, %diag : (tensor<4x4xi32>, tensor<i32>) -> tensor<4x4xi1>
  %tri = poot.select %keep, %ones, %false : (tensor<4x4xi1>, tensor<4x4xi1>, tensor<i1>) -> tensor<4x4xi1>
  %hide = poot.compare eq, %tri, %pad : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %s2 = poot.select %hide, %ninf, %s1 : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}
