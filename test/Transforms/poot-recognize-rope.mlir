// RUN: poot-opt %s -split-input-file -poot-recognize-rope | FileCheck %s

// The frontend's rope chain (composites.rope): a = x * cos, halves sliced on
// the last axis, r = concat(-x2, x1), out = a + r * sin.
// CHECK-LABEL: func.func @rotate_half
// CHECK-NEXT:  %[[R:.*]] = poot.rope %arg0, %arg1, %arg2 : tensor<1x4x2x8xf32>, tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32> -> tensor<1x4x2x8xf32>
// CHECK-NEXT:  return %[[R]]
func.func @rotate_half(%x: tensor<1x4x2x8xf32>, %cos: tensor<1x1x2x8xf32>, %sin: tensor<1x1x2x8xf32>) -> tensor<1x4x2x8xf32> {
  %a = poot.mul %x, %cos : (tensor<1x4x2x8xf32>, tensor<1x1x2x8xf32>) -> tensor<1x4x2x8xf32>
  %x1 = poot.slice %x [0, 0, 0, 0] to [1, 4, 2, 4] step [1, 1, 1, 1] : tensor<1x4x2x8xf32> -> tensor<1x4x2x4xf32>
  %x2 = poot.slice %x [0, 0, 0, 4] to [1, 4, 2, 8] step [1, 1, 1, 1] : tensor<1x4x2x8xf32> -> tensor<1x4x2x4xf32>
  %n = poot.neg %x2 : tensor<1x4x2x4xf32>
  %r = poot.concat %n, %x1 axis = 3 : (tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>) -> tensor<1x4x2x8xf32>
  %b = poot.mul %r, %sin : (tensor<1x4x2x8xf32>, tensor<1x1x2x8xf32>) -> tensor<1x4x2x8xf32>
  %y = poot.add %a, %b : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  return %y : tensor<1x4x2x8xf32>
}

// -----

// Operands of add and mul in the other order; tables of lower rank.
// CHECK-LABEL: func.func @commuted
// CHECK-NEXT:  %[[R:.*]] = poot.rope %arg0, %arg1, %arg2 : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:  return %[[R]]
func.func @commuted(%x: tensor<2x8xf32>, %cos: tensor<8xf32>, %sin: tensor<8xf32>) -> tensor<2x8xf32> {
  %x1 = poot.slice %x [0, 0] to [2, 4] step [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
  %x2 = poot.slice %x [0, 4] to [2, 8] step [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = poot.neg %x2 : tensor<2x4xf32>
  %r = poot.concat %n, %x1 axis = 1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b = poot.mul %sin, %r : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %a = poot.mul %cos, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = poot.add %b, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Not RoPE: the halves are swapped without the negation on the second half.
// CHECK-LABEL: func.func @wrong_sign
// CHECK-NOT:   poot.rope
func.func @wrong_sign(%x: tensor<2x8xf32>, %cos: tensor<8xf32>, %sin: tensor<8xf32>) -> tensor<2x8xf32> {
  %a = poot.mul %x, %cos : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %x1 = poot.slice %x [0, 0] to [2, 4] step [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
  %x2 = poot.slice %x [0, 4] to [2, 8] step [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = poot.neg %x1 : tensor<2x4xf32>
  %r = poot.concat %x2, %n axis = 1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b = poot.mul %r, %sin : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %y = poot.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Not RoPE: the tables widen the result beyond x's shape.
// CHECK-LABEL: func.func @tables_widen
// CHECK-NOT:   poot.rope
func.func @tables_widen(%x: tensor<1x8xf32>, %cos: tensor<3x8xf32>, %sin: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %a = poot.mul %x, %cos : (tensor<1x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %x1 = poot.slice %x [0, 0] to [1, 4] step [1, 1] : tensor<1x8xf32> -> tensor<1x4xf32>
  %x2 = poot.slice %x [0, 4] to [1, 8] step [1, 1] : tensor<1x8xf32> -> tensor<1x4xf32>
  %n = poot.neg %x2 : tensor<1x4xf32>
  %r = poot.concat %n, %x1 axis = 1 : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  %b = poot.mul %r, %sin : (tensor<1x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y = poot.add %a, %b : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// Only the matched chain changes: a strided slice elsewhere stays.
// CHECK-LABEL: func.func @strided_half
// CHECK-NOT:   poot.rope
func.func @strided_half(%x: tensor<2x8xf32>, %cos: tensor<8xf32>, %sin: tensor<8xf32>) -> tensor<2x8xf32> {
  %a = poot.mul %x, %cos : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %x1 = poot.slice %x [0, 0] to [2, 8] step [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
  %x2 = poot.slice %x [0, 1] to [2, 8] step [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = poot.neg %x2 : tensor<2x4xf32>
  %r = poot.concat %n, %x1 axis = 1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b = poot.mul %r, %sin : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %y = poot.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
