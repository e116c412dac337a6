// RUN: not poot-opt %s --poot-to-llvm-cpu 2>&1 | FileCheck %s
// RUN: not poot-opt %s --poot-step-to-spirv 2>&1 | FileCheck %s
// RUN: not poot-opt %s --poot-step-to-nvvm 2>&1 | FileCheck %s

// Every step pipeline checks the slot contract as a whole first
// (poot-verify-driver-contract, issue 28): a state argument without its
// state result is refused before anything is lowered.
// CHECK: state 'k0' needs exactly one state result of the same name, found 0
func.func @no_state_out(%k: tensor<4xf32> {poot.slot = #poot.slot<state "k0">}) {
  return
}
