// RUN: poot-opt %s -split-input-file -poot-verify-driver-contract -verify-diagnostics | FileCheck %s

// A well-formed step passes unchanged.
// CHECK-LABEL: func.func @step
// CHECK-SAME: #poot.slot<state "k0">
func.func @step(%k: tensor<4xf32> {poot.slot = #poot.slot<state "k0">},
                %pos: tensor<i32> {poot.slot = #poot.slot<pos>})
    -> (tensor<4xf32> {poot.slot = #poot.slot<state "k0">}) {
  return %k : tensor<4xf32>
}

// -----

// expected-error @+1 {{state 'k0' needs exactly one state result of the same name, found 0}}
func.func @no_state_out(%k: tensor<4xf32> {poot.slot = #poot.slot<state "k0">}) {
  return
}

// -----

// expected-error @+1 {{state 'k0' needs exactly one state result of the same name, found 2}}
func.func @two_state_outs(%k: tensor<4xf32> {poot.slot = #poot.slot<state "k0">})
    -> (tensor<4xf32> {poot.slot = #poot.slot<state "k0">}, tensor<4xf32> {poot.slot = #poot.slot<state "k0">}) {
  return %k, %k : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{state 'k0' is an argument twice}}
func.func @state_twice(%a: tensor<4xf32> {poot.slot = #poot.slot<state "k0">},
                       %b: tensor<4xf32> {poot.slot = #poot.slot<state "k0">})
    -> (tensor<4xf32> {poot.slot = #poot.slot<state "k0">}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{at most one argument may be marked pos, found 2}}
func.func @two_pos(%a: tensor<i32> {poot.slot = #poot.slot<pos>},
                   %b: tensor<i32> {poot.slot = #poot.slot<pos>}) {
  return
}
