// RUN: poot-opt %s -split-input-file -poot-attention-rewrite | FileCheck %s

// The causal mask as an index expression (CausalMatch.cpp): an iota-compare
// chain that is exactly t <= i + (Lk - Lq) becomes poot.attention's `causal`
// kind, every spelling of that set alike; any other set stays a tensor mask.

// The frontend's prefill mask (_causal_mask): hidden = col > row, added as
// select(hidden, lowest, 0): the causal kind, no mask tensor.
// CHECK-LABEL: func.func @frontend_tril
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @frontend_tril(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %hidden = poot.compare gt, %col, %row : (tensor<1x1x1x4xi32>, tensor<1x1x4x1xi32>) -> tensor<1x1x4x4xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Chunked prefill after a cache: k <= q + (Lk - Lq) = q + 2, torch.where(keep, s, -inf).
// CHECK-LABEL: func.func @bottom_right_where
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @bottom_right_where(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %row = poot.iota dim = 0 : tensor<3x1xi32>
  %col = poot.iota dim = 1 : tensor<1x5xi32>
  %off = poot.constant dense<2> : tensor<i32>
  %last = poot.add %row, %off : (tensor<3x1xi32>, tensor<i32>) -> tensor<3x1xi32>
  %keep = poot.compare le, %col, %last : (tensor<1x5xi32>, tensor<3x1xi32>) -> tensor<3x5xi1>
  %fill = poot.constant dense<0xFF800000> : tensor<f32>
  %s2 = poot.select %keep, %s1, %fill : (tensor<3x5xi1>, tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %ex = poot.exp %xs : tensor<1x2x3x5xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %out : tensor<1x2x3x4xf32>
}

// -----

// The same set spelled q + 2 >= k, filled with the lowest finite value.
// CHECK-LABEL: func.func @bottom_right_swapped_ge
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @bottom_right_swapped_ge(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %row = poot.iota dim = 0 : tensor<3x1xi32>
  %col = poot.iota dim = 1 : tensor<1x5xi32>
  %off = poot.constant dense<2> : tensor<i32>
  %last = poot.add %off, %row : (tensor<i32>, tensor<3x1xi32>) -> tensor<3x1xi32>
  %keep = poot.compare ge, %last, %col : (tensor<3x1xi32>, tensor<1x5xi32>) -> tensor<3x5xi1>
  %fill = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %s2 = poot.select %keep, %s1, %fill : (tensor<3x5xi1>, tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %ex = poot.exp %xs : tensor<1x2x3x5xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %out : tensor<1x2x3x4xf32>
}

// -----

// masked_fill(k - q > 2, -inf): the fill on the select's true side.
// CHECK-LABEL: func.func @masked_fill_sub
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @masked_fill_sub(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %row = poot.iota dim = 0 : tensor<3x1xi32>
  %col = poot.iota dim = 1 : tensor<1x5xi32>
  %d = poot.sub %col, %row : (tensor<1x5xi32>, tensor<3x1xi32>) -> tensor<3x5xi32>
  %off = poot.constant dense<2> : tensor<i32>
  %hidden = poot.compare gt, %d, %off : (tensor<3x5xi32>, tensor<i32>) -> tensor<3x5xi1>
  %fill = poot.constant dense<0xFF800000> : tensor<f32>
  %s2 = poot.select %hidden, %fill, %s1 : (tensor<3x5xi1>, tensor<f32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %ex = poot.exp %xs : tensor<1x2x3x5xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %out : tensor<1x2x3x4xf32>
}

// -----

// k < q + 1 (triu(diagonal=1) negated), an additive select(keep, 0, -inf) mask.
// CHECK-LABEL: func.func @strict_lt_plus_one
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @strict_lt_plus_one(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %one = poot.constant dense<1> : tensor<i32>
  %next = poot.add %row, %one : (tensor<1x1x4x1xi32>, tensor<i32>) -> tensor<1x1x4x1xi32>
  %keep = poot.compare lt, %col, %next : (tensor<1x1x1x4xi32>, tensor<1x1x4x1xi32>) -> tensor<1x1x4x4xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %mask = poot.select %keep, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// One query row (decode, GPT-2's mask sliced to Lq = 1): its row iota is the
// constant 0, and k <= 0 + (Lk - 1) is the causal set (every key).
// CHECK-LABEL: func.func @decode_row
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   mask(
// CHECK-NOT:   poot.compare
// CHECK-NOT:   poot.exp
func.func @decode_row(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x1x5xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x1x5xf32>, tensor<f32>) -> tensor<1x2x1x5xf32>
  %row = poot.iota dim = 0 : tensor<1x1xi32>
  %col = poot.iota dim = 1 : tensor<1x5xi32>
  %off = poot.constant dense<4> : tensor<i32>
  %last = poot.add %row, %off : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %keep = poot.compare le, %col, %last : (tensor<1x5xi32>, tensor<1x1xi32>) -> tensor<1x5xi1>
  %fill = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %s2 = poot.select %keep, %s1, %fill : (tensor<1x5xi1>, tensor<1x2x1x5xf32>, tensor<f32>) -> tensor<1x2x1x5xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x5xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x5xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x5xf32>
  %ex = poot.exp %xs : tensor<1x2x1x5xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x5xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x5xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x5xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// Near miss: one row seeing k <= 3 of 5 keys is no causal set.
// CHECK-LABEL: func.func @decode_hides_the_tail
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x1x5xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @decode_hides_the_tail(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x1x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x1x5xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x1x5xf32>, tensor<f32>) -> tensor<1x2x1x5xf32>
  %row = poot.iota dim = 0 : tensor<1x1xi32>
  %col = poot.iota dim = 1 : tensor<1x5xi32>
  %off = poot.constant dense<3> : tensor<i32>
  %last = poot.add %row, %off : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
  %keep = poot.compare le, %col, %last : (tensor<1x5xi32>, tensor<1x1xi32>) -> tensor<1x5xi1>
  %fill = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %s2 = poot.select %keep, %s1, %fill : (tensor<1x5xi1>, tensor<1x2x1x5xf32>, tensor<f32>) -> tensor<1x2x1x5xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x5xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x5xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x5xf32>
  %ex = poot.exp %xs : tensor<1x2x1x5xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x5xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x5xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x5xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// Near miss: k > q with Lk = 5 > Lq = 3 is top-left aligned (torch's is_causal
// for Lq != Lk), not the op's bottom-right causal set: a tensor mask.
// CHECK-LABEL: func.func @top_left_is_not_bottom_right
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x3x5xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @top_left_is_not_bottom_right(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %row = poot.iota dim = 2 : tensor<1x1x3x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x5xi32>
  %hidden = poot.compare gt, %col, %row : (tensor<1x1x1x5xi32>, tensor<1x1x3x1xi32>) -> tensor<1x1x3x5xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x1x3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x5xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x3x5xf32>, tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %ex = poot.exp %xs : tensor<1x2x3x5xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %out : tensor<1x2x3x4xf32>
}

// -----

// Near miss: k >= q also hides the diagonal.
// CHECK-LABEL: func.func @diagonal_hidden_too
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @diagonal_hidden_too(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %hidden = poot.compare ge, %col, %row : (tensor<1x1x1x4xi32>, tensor<1x1x4x1xi32>) -> tensor<1x1x4x4xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: k > 2q is no causal diagonal.
// CHECK-LABEL: func.func @twice_the_row
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @twice_the_row(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %r2 = poot.add %row, %row : (tensor<1x1x4x1xi32>, tensor<1x1x4x1xi32>) -> tensor<1x1x4x1xi32>
  %hidden = poot.compare gt, %col, %r2 : (tensor<1x1x1x4xi32>, tensor<1x1x4x1xi32>) -> tensor<1x1x4x4xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: a -1e4 fill is an additive bias (a hidden score is s - 1e4), not a
// hidden key.
// CHECK-LABEL: func.func @finite_fill_is_a_bias
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @finite_fill_is_a_bias(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %hidden = poot.compare gt, %col, %row : (tensor<1x1x1x4xi32>, tensor<1x1x4x1xi32>) -> tensor<1x1x4x4xi1>
  %low = poot.constant dense<-1.0E+4> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: q - k > 2 hides the keys far behind (a window's lower edge), the
// opposite triangle.
// CHECK-LABEL: func.func @window_is_not_causal
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @window_is_not_causal(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %d = poot.sub %row, %col : (tensor<1x1x4x1xi32>, tensor<1x1x1x4xi32>) -> tensor<1x1x4x4xi32>
  %w = poot.constant dense<2> : tensor<i32>
  %hidden = poot.compare gt, %d, %w : (tensor<1x1x4x4xi32>, tensor<i32>) -> tensor<1x1x4x4xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// Near miss: an iota over the head axis is no query index.
// CHECK-LABEL: func.func @batch_axis_iota
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x2x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @batch_axis_iota(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 1 : tensor<1x2x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %hidden = poot.compare gt, %col, %row : (tensor<1x1x1x4xi32>, tensor<1x2x4x1xi32>) -> tensor<1x2x4x4xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}

// -----

// A causal mask with a padding select besides it: one tensor mask (the causal
// kind excludes a mask operand).
// CHECK-LABEL: func.func @causal_and_padding
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x4x4xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT:   causal
func.func @causal_and_padding(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %row = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %col = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %hidden = poot.compare gt, %col, %row : (tensor<1x1x1x4xi32>, tensor<1x1x4x1xi32>) -> tensor<1x1x4x4xi1>
  %one = poot.constant dense<3> : tensor<i32>
  %pad = poot.compare lt, %col, %one : (tensor<1x1x1x4xi32>, tensor<i32>) -> tensor<1x1x1x4xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %mask = poot.select %hidden, %low, %zero : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s2 = poot.add %s1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s3 = poot.select %pad, %s2, %ninf : (tensor<1x1x1x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = poot.reduce max %s3 axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %xs = poot.sub %s3, %m : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %ex = poot.exp %xs : tensor<1x2x4x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %out : tensor<1x2x4x4xf32>
}
