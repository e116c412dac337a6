// RUN: poot-opt %s -poot-expand-rope | FileCheck %s
// RUN: poot-opt %s -poot-expand-rope -poot-recognize-rope | FileCheck %s --check-prefix=ROUND

// poot.rope back to the tracer's chain; recognizing it again gives the op back.
// CHECK-LABEL: func.func @rope
// CHECK:       %[[A:.*]] = poot.mul %arg0, %arg1 : (tensor<1x2x3x8xf32>, tensor<3x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK:       %[[X1:.*]] = poot.slice %arg0 [0, 0, 0, 0] to [1, 2, 3, 4] step [1, 1, 1, 1]
// CHECK:       %[[X2:.*]] = poot.slice %arg0 [0, 0, 0, 4] to [1, 2, 3, 8] step [1, 1, 1, 1]
// CHECK:       %[[N:.*]] = poot.neg %[[X2]]
// CHECK:       %[[R:.*]] = poot.concat %[[N]], %[[X1]] axis = 3
// CHECK:       %[[B:.*]] = poot.mul %[[R]], %arg2
// CHECK:       %[[Y:.*]] = poot.add %[[A]], %[[B]]
// CHECK:       return %[[Y]]
// ROUND-LABEL: func.func @rope
// ROUND-NEXT:  poot.rope %arg0, %arg1, %arg2
// ROUND-NEXT:  return
func.func @rope(%x: tensor<1x2x3x8xf32>, %cos: tensor<3x8xf32>, %sin: tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %y = poot.rope %x, %cos, %sin : tensor<1x2x3x8xf32>, tensor<3x8xf32>, tensor<1x1x3x8xf32> -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}
