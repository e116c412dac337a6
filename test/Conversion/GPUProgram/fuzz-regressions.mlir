// RUN: not poot-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(poot-gpu-host-to-parallel{threads=0}))' 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(poot-step-to-spirv)' | FileCheck %s --check-prefix=STEP
// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(poot-gpu-split-reductions{min-threads=4611686018427387904}))' | FileCheck %s --check-prefix=SPLIT
// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(poot-gpu-split-reductions{min-chunk=4611686018427387904}))' | FileCheck %s --check-prefix=SPLIT

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

// -----

// Found by the 2026-12-06 long campaign: an empty GEMV (zero rows) has zero
// threads, and the split ratio divided by them; an empty op is left whole
// (as is any op with a huge `min-chunk`: no shift by a negative log).
// SPLIT-LABEL: func.func @empty_gemv
// SPLIT-NOT: linalg.generic
// SPLIT: linalg.matmul
// SPLIT-NOT: linalg.generic
func.func @empty_gemv(%x: tensor<0x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<0x1024xf32> {
  %e = tensor.empty() : tensor<0x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<0x1024xf32>) -> tensor<0x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<0x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<0x1024xf32>) -> tensor<0x1024xf32>
  return %o : tensor<0x1024xf32>
}
