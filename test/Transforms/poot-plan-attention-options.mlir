// RUN: not poot-opt %s --poot-plan-attention="target=cpu max-grid-x=0" 2>&1 | FileCheck %s --check-prefix=GRIDX
// RUN: not poot-opt %s --poot-plan-attention="target=nvvm max-grid-y=-1" 2>&1 | FileCheck %s --check-prefix=GRIDY
// RUN: not poot-opt %s --poot-to-llvm-cpu=max-grid-x=0 2>&1 | FileCheck %s --check-prefix=GRIDX
// RUN: not poot-opt %s --poot-to-nvvm=max-grid-x=0 2>&1 | FileCheck %s --check-prefix=GRIDX
// RUN: not poot-opt %s --poot-plan-attention="target=gpu" 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: poot-opt %s --poot-plan-attention="target=cpu compute-units=4611686018427387904" | FileCheck %s --check-prefix=HUGE
// RUN: poot-opt %s --poot-plan-attention="target=cpu compute-units=64 max-splits=1" | FileCheck %s --check-prefix=NOSPLIT
// RUN: poot-opt %s --poot-plan-attention="target=nvvm compute-units=132 workgroup-memory=49152 max-splits=1" | FileCheck %s --check-prefix=NOSPLIT
// RUN: poot-opt %s --poot-plan-attention="target=nvvm compute-units=132 workgroup-memory=49152 max-splits=2" | FileCheck %s --check-prefix=TWO
// RUN: not poot-opt %s --poot-plan-attention="target=cpu max-splits=0" 2>&1 | FileCheck %s --check-prefix=SPLITS

// The device description is checked before any op is planned: a grid limit
// below 1 divided the workgroup count by zero (an abort). The target is an
// enum the option parser checks.

// GRIDX: poot-plan-attention: max-grid-x must be >= 1, got 0
// GRIDY: poot-plan-attention: max-grid-y must be >= 1, got -1
// SPLITS: poot-plan-attention: max-splits must be >= 1, got 0
// TARGET: for the --target option: Cannot find option named 'gpu'!
// A compute-unit count whose split arithmetic overflows int64 plans as usual.
// HUGE: schedule = split_kv
// max-splits bounds every schedule's split count (1: the unsplit ones).
// NOSPLIT: splits = 1,
// TWO: schedule = split_kv, lanes = 64, splits = 2,
func.func @step(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x512x16xf32>, %v: tensor<1x2x512x16xf32>) -> tensor<1x4x1x16xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x16xf32>, tensor<1x2x512x16xf32>, tensor<1x2x512x16xf32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}
