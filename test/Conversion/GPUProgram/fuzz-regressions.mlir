// RUN: not poot-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(poot-gpu-host-to-parallel{threads=0}))' 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(poot-step-to-spirv)' | FileCheck %s --check-prefix=STEP

// Found by fuzzing the whole-step passes: a zero thread count divided by
// zero when mapping a loop; it is refused.
// THREADS: poot-gpu-host-to-parallel: threads must be >= 1, got 0
func.func @ew(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = poot.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Bufferizing a whole step asks tensor ops for their reified shapes (the
// tensor dialect's external models must be registered, else LLVM ERROR).
// STEP: poot.programs
func.func @step(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = poot.add %a, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = poot.reshape %0 : tensor<2x4xf32> -> tensor<8xf32>
  %2 = poot.reshape %1 : tensor<8xf32> -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// -----

// A one-word scatter into a pool that is not carried state: its bounds
// check once bufferized to a buffer picked on the host ("a value the host
// would compute is used by the host"). One index now writes a select of
// the update and the row already there, no branch.
// STEP: poot.programs
func.func @step(%pool: tensor<4x1x8xf32> {poot.name = "pool"}, %slot: tensor<1xi32> {poot.name = "write", poot.slot = #poot.slot<write_map>, poot.range = #poot.range<0, 3>}, %new: tensor<1x1x8xf32> {poot.name = "new"}) -> (tensor<4x1x8xf32> {poot.name = "out"}) {
  %0 = poot.scatter_update %pool[%slot], %new : tensor<4x1x8xf32>, tensor<1xi32>, tensor<1x1x8xf32>
  return %0 : tensor<4x1x8xf32>
}
