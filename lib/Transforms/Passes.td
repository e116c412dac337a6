//===- Passes.td - poot -> poot passes ---------------------*- tablegen -*-===//
#ifndef POOT_TRANSFORMS_PASSES_TD
#define POOT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PootVerifyDriverContract : Pass<"poot-verify-driver-contract", "::mlir::ModuleOp"> {
  let summary = "Check the step function's slot contract as a whole";
  let description = [{
    Per-argument markers are checked by the dialect's attribute verifiers;
    this pass checks what only the whole function shows: every state
    argument has exactly one state result of the same name (state in ->
    state out), and at most one argument is marked `pos`. It changes
    nothing.

    Before and after (unchanged):
    ```mlir
    func.func @step(%k: tensor<1x8x128x64xf32> {poot.slot = #poot.slot<state "k0">},
                    %pos: tensor<i32> {poot.slot = #poot.slot<pos>})
        -> (tensor<1x8x128x64xf32> {poot.slot = #poot.slot<state "k0">})
    ```
    A state argument `"k0"` without a `"k0"` result is an error.
  }];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

#endif // POOT_TRANSFORMS_PASSES_TD
