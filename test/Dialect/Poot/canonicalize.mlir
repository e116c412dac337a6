// RUN: poot-opt %s -split-input-file -canonicalize | FileCheck %s

// The canonical form the attention matcher reads. Every rewrite here is
// exact: the program computes the same bits.

// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-NEXT:  %[[T:.*]] = poot.transpose %arg0 perm = [0, 2, 3, 1] : tensor<1x8x4x16xf32> -> tensor<1x4x16x8xf32>
// CHECK-NEXT:  return %[[T]]
func.func @transpose_of_transpose(%k: tensor<1x8x4x16xf32>) -> tensor<1x4x16x8xf32> {
  %0 = poot.transpose %k perm = [0, 2, 1, 3] : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
  %1 = poot.transpose %0 perm = [0, 1, 3, 2] : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
  return %1 : tensor<1x4x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @transposes_cancel
// CHECK-NEXT:  return %arg0
func.func @transposes_cancel(%k: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = poot.transpose %k perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = poot.transpose %0 perm = [1, 2, 0] : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-NEXT:  %[[R:.*]] = poot.reshape %arg0 : tensor<2x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:  return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x8xf32>) -> tensor<4x4xf32> {
  %0 = poot.reshape %x : tensor<2x8xf32> -> tensor<16xf32>
  %1 = poot.reshape %0 : tensor<16xf32> -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @reshapes_cancel
// CHECK-NEXT:  return %arg0
func.func @reshapes_cancel(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = poot.reshape %x : tensor<2x8xf32> -> tensor<16xf32>
  %1 = poot.reshape %0 : tensor<16xf32> -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_of_broadcast
// CHECK-NEXT:  %[[B:.*]] = poot.broadcast %arg0 : tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:  return %[[B]]
func.func @broadcast_of_broadcast(%x: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = poot.broadcast %x : tensor<8xf32> -> tensor<4x8xf32>
  %1 = poot.broadcast %0 : tensor<4x8xf32> -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// -----

// Broadcasts and reshapes of splat constants become splat constants.
// CHECK-LABEL: func.func @broadcast_splat
// CHECK-NEXT:  %[[C:.*]] = poot.constant dense<-3.40282347E+38> : tensor<1x1x4x8xf32>
// CHECK-NEXT:  return %[[C]]
func.func @broadcast_splat() -> tensor<1x1x4x8xf32> {
  %c = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %0 = poot.reshape %c : tensor<f32> -> tensor<1x1x1x1xf32>
  %1 = poot.broadcast %0 : tensor<1x1x1x1xf32> -> tensor<1x1x4x8xf32>
  return %1 : tensor<1x1x4x8xf32>
}

// -----

// Explicit broadcasts (and unit-axis reshapes) feeding an implicitly
// broadcasting op are dropped when the result shape stays the same.
// CHECK-LABEL: func.func @implicit_broadcast
// CHECK-NEXT:  %[[M:.*]] = poot.reduce max %arg0 axis = 3 keepdim
// CHECK-NEXT:  %[[S:.*]] = poot.sub %arg0, %[[M]] : (tensor<1x4x2x8xf32>, tensor<1x4x2x1xf32>) -> tensor<1x4x2x8xf32>
// CHECK-NEXT:  %[[A:.*]] = poot.add %[[S]], %arg1 : (tensor<1x4x2x8xf32>, tensor<2x8xf32>) -> tensor<1x4x2x8xf32>
// CHECK-NEXT:  %[[C:.*]] = poot.compare lt, %arg2, %arg3 : (tensor<8xi32>, tensor<i32>) -> tensor<8xi1>
// CHECK-NEXT:  return %[[A]], %[[C]]
func.func @implicit_broadcast(%s: tensor<1x4x2x8xf32>, %mask: tensor<2x8xf32>, %t: tensor<8xi32>, %len: tensor<i32>)
    -> (tensor<1x4x2x8xf32>, tensor<8xi1>) {
  %m = poot.reduce max %s axis = 3 keepdim : tensor<1x4x2x8xf32> -> tensor<1x4x2x1xf32>
  %mb = poot.broadcast %m : tensor<1x4x2x1xf32> -> tensor<1x4x2x8xf32>
  %x = poot.sub %s, %mb : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  %m4 = poot.reshape %mask : tensor<2x8xf32> -> tensor<1x1x2x8xf32>
  %y = poot.add %x, %m4 : (tensor<1x4x2x8xf32>, tensor<1x1x2x8xf32>) -> tensor<1x4x2x8xf32>
  %lb = poot.broadcast %len : tensor<i32> -> tensor<8xi32>
  %c = poot.compare lt, %t, %lb : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  return %y, %c : tensor<1x4x2x8xf32>, tensor<8xi1>
}

// -----

// An explicit broadcast that widens the result is kept.
// CHECK-LABEL: func.func @widening_broadcast
// CHECK:       poot.broadcast
func.func @widening_broadcast(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %ab = poot.broadcast %a : tensor<8xf32> -> tensor<4x8xf32>
  %0 = poot.add %ab, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A reduction without keepdim followed by a reshape that restores the axis
// is the keepdim reduction.
// CHECK-LABEL: func.func @keepdim_reduce
// CHECK-NEXT:  %[[M:.*]] = poot.reduce sum %arg0 axis = 3 keepdim : tensor<1x4x1x8xf32> -> tensor<1x4x1x1xf32>
// CHECK-NEXT:  return %[[M]]
func.func @keepdim_reduce(%s: tensor<1x4x1x8xf32>) -> tensor<1x4x1x1xf32> {
  %m = poot.reduce sum %s axis = 3 : tensor<1x4x1x8xf32> -> tensor<1x4x1xf32>
  %r = poot.reshape %m : tensor<1x4x1xf32> -> tensor<1x4x1x1xf32>
  return %r : tensor<1x4x1x1xf32>
}

// -----

// Division by a power of two is multiplication by its (exact) reciprocal;
// division by 3 is left alone (1/3 would round differently).
// CHECK-LABEL: func.func @div_by_constant
// CHECK-DAG:   %[[EIGHTH:.*]] = poot.constant dense<1.250000e-01> : tensor<f32>
// CHECK-DAG:   %[[THREE:.*]] = poot.constant dense<3.000000e+00> : tensor<f32>
// CHECK:       %[[A:.*]] = poot.mul %arg0, %[[EIGHTH]]
// CHECK:       %[[B:.*]] = poot.div %arg0, %[[THREE]]
// CHECK:       return %[[A]], %[[B]]
func.func @div_by_constant(%s: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %eight = poot.constant dense<8.0> : tensor<f32>
  %three = poot.constant dense<3.0> : tensor<f32>
  %a = poot.div %s, %eight : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = poot.div %s, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Constants go to the right of commutative ops; multiplying by one vanishes
// unless it widens the result.
// CHECK-LABEL: func.func @mul_constants
// CHECK-DAG:   %[[ONES:.*]] = poot.constant dense<1.000000e+00> : tensor<2x4xf32>
// CHECK-DAG:   %[[HALF:.*]] = poot.constant dense<5.000000e-01> : tensor<f32>
// CHECK:       %[[A:.*]] = poot.mul %arg0, %[[HALF]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK:       %[[W:.*]] = poot.mul %arg0, %[[ONES]] : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:       return %[[A]], %arg0, %[[W]]
func.func @mul_constants(%s: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
  %half = poot.constant dense<0.5> : tensor<f32>
  %one = poot.constant dense<1.0> : tensor<f32>
  %ones = poot.constant dense<1.0> : tensor<2x4xf32>
  %a = poot.mul %half, %s : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %b = poot.mul %one, %s : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %w = poot.mul %s, %ones : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %a, %b, %w : tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @neg_neg
// CHECK-NEXT:  return %arg0
func.func @neg_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = poot.neg %x : tensor<4xf32>
  %1 = poot.neg %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
