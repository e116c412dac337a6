// RUN: poot-opt %s -split-input-file -poot-attention-rewrite | FileCheck %s

// The sliding window as poot.attention's `window` (CausalMatch.cpp's
// causalWindowOf): the mask steps together must leave visible exactly the
// keys i + (Lk - Lq) - W < t <= i + (Lk - Lq), read as and / or / negations
// of iota compares, in one condition or several steps. Near misses stay a
// tensor mask.

// transformers' and_masks(causal, sliding_window_overlay(3)): keep
// `kv <= q and q - kv < 3`, one where: the causal kind with window 3.
// CHECK-LABEL: func.func @hf_and_masks
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal window 3 {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @hf_and_masks(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<3> : tensor<i32>
  %causal = poot.compare le, %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %inw = poot.compare lt, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %vis = poot.and %causal, %inw : (tensor<8x8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  %s1 = poot.select %vis, %s0, %ninf : (tensor<8x8xi1>, tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}

// -----

// Hidden = above the diagonal or 4 and more behind it (an or): window 4.
// CHECK-LABEL: func.func @or_of_hidden
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal window 4 {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @or_of_hidden(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<4> : tensor<i32>
  %above = poot.compare gt, %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %far = poot.compare ge, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %hid = poot.or %above, %far : (tensor<8x8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  %s1 = poot.select %hid, %ninf, %s0 : (tensor<8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}

// -----

// The causal where, then the window's: the steps hide the union. Window 2.
// CHECK-LABEL: func.func @two_selects
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal window 2 {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @two_selects(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<2> : tensor<i32>
  %causal = poot.compare le, %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %far = poot.compare ge, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %s1 = poot.select %causal, %s0, %ninf : (tensor<8x8xi1>, tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %s2 = poot.select %far, %ninf, %s1 : (tensor<8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s2, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}

// -----

// Two additive -inf masks (causal, then the window): window 5.
// CHECK-LABEL: func.func @two_additive
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal window 5 {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @two_additive(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<5> : tensor<i32>
  %above = poot.compare gt, %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %far = poot.compare ge, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %m0 = poot.select %above, %ninf, %zero : (tensor<8x8xi1>, tensor<f32>, tensor<f32>) -> tensor<8x8xf32>
  %s1 = poot.add %s0, %m0 : (tensor<1x2x8x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8x8xf32>
  %m1 = poot.select %far, %ninf, %zero : (tensor<8x8xi1>, tensor<f32>, tensor<f32>) -> tensor<8x8xf32>
  %s2 = poot.add %s1, %m1 : (tensor<1x2x8x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s2, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}

// -----

// A chunk of 4 rows after 4 cached keys: t - i <= 4 and t - i >= 1, the
// 4 keys ending at the bottom-right diagonal: window 4.
// CHECK-LABEL: func.func @chunk_bottom_right
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal window 4 {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @chunk_bottom_right(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %row = poot.iota dim = 0 : tensor<4x8xi32>
  %col = poot.iota dim = 1 : tensor<4x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %ahead = poot.sub %col, %row : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  %d = poot.constant dense<4> : tensor<i32>
  %d1 = poot.constant dense<1> : tensor<i32>
  %causal = poot.compare le, %ahead, %d : (tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi1>
  %inw = poot.compare ge, %ahead, %d1 : (tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi1>
  %vis = poot.and %inw, %causal : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  %s1 = poot.select %vis, %s0, %ninf : (tensor<4x8xi1>, tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x4x8xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x4x8xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x8xf32>
  %ex = poot.exp %xs : tensor<1x2x4x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x8xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x8xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Decode (one row over 8 keys): `t >= 5` is the last 3 keys, window 3 (the
// causal bound is every key of the one row).
// CHECK-LABEL: func.func @decode_window_only
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal window 3 {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @decode_window_only(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %row = poot.iota dim = 0 : tensor<1x8xi32>
  %col = poot.iota dim = 1 : tensor<1x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %d = poot.constant dense<5> : tensor<i32>
  %inw = poot.compare ge, %col, %d : (tensor<1x8xi32>, tensor<i32>) -> tensor<1x8xi1>
  %s1 = poot.select %inw, %s0, %ninf : (tensor<1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// A window of 8 over 8 keys hides nothing: plain causal.
// CHECK-LABEL: func.func @window_covers_all
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   window
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @window_covers_all(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<8> : tensor<i32>
  %causal = poot.compare le, %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %inw = poot.compare lt, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %vis = poot.and %causal, %inw : (tensor<8x8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  %s1 = poot.select %vis, %s0, %ninf : (tensor<8x8xi1>, tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}

// -----

// Near miss: `kv < q` (the diagonal itself hidden) and the window: a tensor mask.
// CHECK-LABEL: func.func @near_miss_diagonal
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(
// CHECK-NOT:   causal
func.func @near_miss_diagonal(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<3> : tensor<i32>
  %causal = poot.compare lt, %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %inw = poot.compare lt, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %vis = poot.and %causal, %inw : (tensor<8x8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  %s1 = poot.select %vis, %s0, %ninf : (tensor<8x8xi1>, tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}

// -----

// Near miss: |t - i| < 3 sees keys ahead: a tensor mask.
// CHECK-LABEL: func.func @near_miss_two_sided
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(
// CHECK-NOT:   causal
func.func @near_miss_two_sided(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %ahead = poot.sub %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<3> : tensor<i32>
  %b1 = poot.compare lt, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %b2 = poot.compare lt, %ahead, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %vis = poot.and %b1, %b2 : (tensor<8x8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  %s1 = poot.select %vis, %s0, %ninf : (tensor<8x8xi1>, tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}

// -----

// Near miss: hiding the keys above the diagonal and the one 2 behind (a
// hole, not a band): a tensor mask.
// CHECK-LABEL: func.func @near_miss_hole
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(
// CHECK-NOT:   causal
func.func @near_miss_hole(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s0 = poot.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %row = poot.iota dim = 0 : tensor<8x8xi32>
  %col = poot.iota dim = 1 : tensor<8x8xi32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %back = poot.sub %row, %col : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi32>
  %w = poot.constant dense<2> : tensor<i32>
  %above = poot.compare gt, %col, %row : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %hole = poot.compare eq, %back, %w : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi1>
  %hid = poot.or %hole, %above : (tensor<8x8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  %s1 = poot.select %hid, %ninf, %s0 : (tensor<8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %mx = poot.reduce max %s1 axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %xs = poot.sub %s1, %mx : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %ex = poot.exp %xs : tensor<1x2x8x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %out : tensor<1x2x8x4xf32>
}
