// RUN: poot-opt %s --poot-split-validation --split-input-file | FileCheck %s

// A step that writes state and has a validation output gets a prologue with
// the same arguments, only the validation result, and only the ops it needs.

// CHECK-LABEL: func.func @step(
// CHECK: poot.dynamic_update_slice
// CHECK-LABEL: func.func @step_validate(
// CHECK-SAME: %{{.*}}: tensor<8x4xf32> {poot.slot = #poot.slot<state "k">}
// CHECK-SAME: -> (tensor<i1> {poot.slot = #poot.slot<validation>})
// CHECK-SAME: attributes {poot.validation_of = "step"}
// CHECK-NOT: poot.dynamic_update_slice
// CHECK: %{{.*}}, %[[OK:.*]] = poot.index_guard
// CHECK-NEXT: return %[[OK]] : tensor<i1>
func.func @step(%k: tensor<8x4xf32> {poot.slot = #poot.slot<state "k">},
                %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>},
                %u: tensor<1x4xf32>, %n: tensor<2xi32>)
    -> (tensor<8x4xf32> {poot.slot = #poot.slot<state "k">},
        tensor<2xi32>, tensor<i1> {poot.slot = #poot.slot<validation>}) {
  %k1 = poot.dynamic_update_slice %k, %u, %pos axis = 0 : tensor<8x4xf32>, tensor<1x4xf32>, tensor<i32>
  %len, %ok = poot.index_guard %n min = 1 max = 8 : tensor<2xi32>
  return %k1, %len, %ok : tensor<8x4xf32>, tensor<2xi32>, tensor<i1>
}

// -----

// No state written: nothing to protect, no prologue.

// CHECK-LABEL: func.func @pure(
// CHECK-NOT: func.func @pure_validate
func.func @pure(%n: tensor<2xi32>) -> (tensor<2xi32>, tensor<i1> {poot.slot = #poot.slot<validation>}) {
  %len, %ok = poot.index_guard %n min = 1 max = 8 : tensor<2xi32>
  return %len, %ok : tensor<2xi32>, tensor<i1>
}
