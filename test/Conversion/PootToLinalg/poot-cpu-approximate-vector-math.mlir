// RUN: poot-opt %s --poot-cpu-approximate-vector-math | FileCheck %s

// Vector exp/tanh become polynomials; scalar math keeps its libm call.
// CHECK-LABEL: func.func @math
// CHECK-NOT: math.exp %arg0
// CHECK-NOT: math.tanh %arg0
// CHECK: math.exp %arg1 : f32
// CHECK: math.tanh %arg1 : f32
func.func @math(%x: vector<16xf32>, %y: f32) -> (vector<16xf32>, vector<16xf32>, f32, f32) {
  %e = math.exp %x : vector<16xf32>
  %t = math.tanh %x : vector<16xf32>
  %s = math.exp %y : f32
  %u = math.tanh %y : f32
  return %e, %t, %s, %u : vector<16xf32>, vector<16xf32>, f32, f32
}
