// RUN: poot-opt %s --poot-cpu-entry-abi | FileCheck %s
// RUN: poot-opt %s --poot-cpu-entry-abi=entry=other | FileCheck %s --check-prefix=NAMED
// RUN: not poot-opt %s --poot-cpu-entry-abi=entry=missing 2>&1 | FileCheck %s --check-prefix=MISSING

// The entry gets the C interface; a state it returns is donated (writable:
// written in place), every other argument is read-only; the poot markers
// (already in the artifact manifest) are dropped, other attributes stay.

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32> {bufferization.writable = true}, %{{.*}}: tensor<i32> {bufferization.writable = false, keep.me})
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-NOT: poot.
// NAMED-LABEL: func.func @step
// NAMED-NOT: llvm.emit_c_interface
// NAMED: poot.slot
// MISSING: no function named 'missing' with a body
func.func @step(%k: tensor<4x8xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">},
                %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 3>, keep.me})
    -> (tensor<4x8xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">}) {
  return %k : tensor<4x8xf32>
}

// A private helper is not an entry.
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%{{.*}}: tensor<4xf32>) -> tensor<4xf32> {
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// NAMED-LABEL: func.func @other
// NAMED-SAME: {bufferization.writable = false}
// NAMED-SAME: attributes {llvm.emit_c_interface}
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// A state argument whose state is not returned stays read-only, and the
// validation prologue of the named entry gets the C interface too.
// NAMED-LABEL: func.func @other_validate
// NAMED-SAME: {bufferization.writable = false}
// NAMED-SAME: attributes {llvm.emit_c_interface, poot.validation_of = "other"}
func.func @other_validate(%x: tensor<4xf32> {poot.slot = #poot.slot<state "x">}) -> tensor<4xf32> attributes {poot.validation_of = "other"} {
  return %x : tensor<4xf32>
}

// A value returned twice gets a copy for the repeat (upstream
// buffer-results-to-out-params erases a twice-returned allocation twice).
// CHECK-LABEL: func.func @twice
// CHECK: %[[Y:.*]] = poot.exp
// CHECK: %[[C1:.*]] = bufferization.alloc_tensor() copy(%[[Y]]) : tensor<4xf32>
// CHECK: %[[C2:.*]] = bufferization.alloc_tensor() copy(%[[Y]]) : tensor<4xf32>
// CHECK: return %[[Y]], %[[C1]], %{{.*}}, %[[C2]] :
func.func @twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y = poot.exp %x : tensor<4xf32>
  return %y, %y, %x, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
