// The pipelines' options are typed: an enum value the option parser does not
// know, or a chip name that is not one, is a diagnostic where the pipeline is
// parsed (it used to abort poot-opt while the pipeline text was assembled, or
// to be accepted silently); --help lists the enum values.

// RUN: not poot-opt %s --poot-to-nvvm="chip=sm_90}" 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: poot-to-nvvm: chip 'sm_90}' is not a valid name (sm_90, sm_90a, sm_100f)
// CHIP-NOT: PLEASE submit a bug report
// RUN: not poot-opt %s --poot-to-rocdl="chip=sm_90" 2>&1 | FileCheck %s --check-prefix=ROCDLCHIP
// ROCDLCHIP: poot-to-rocdl: chip 'sm_90' is not a valid name (gfx90a, gfx942, gfx1100)
// RUN: not poot-opt %s --poot-step-to-nvvm="chip=sm_80 dependent-launch=1" 2>&1 | FileCheck %s --check-prefix=PDL
// PDL: poot-step-to-nvvm: dependent-launch needs sm_90 or newer (griddepcontrol), not 'sm_80'
// A CPU vector of thousands of lanes is refused, not lowered for minutes (fuzz).
// RUN: not poot-opt %s --poot-to-llvm-cpu="vector-width=65535" 2>&1 | FileCheck %s --check-prefix=WIDTH
// WIDTH: vector-width must be in [0, 64], got 65535
// RUN: not poot-opt %s --poot-to-llvm-cpu="attention=gpu" 2>&1 | FileCheck %s --check-prefix=ATTN
// ATTN: Cannot find option named 'gpu'!
// RUN: not poot-opt %s --poot-to-nvvm="format=elf" 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: Cannot find option named 'elf'!
// RUN: not poot-opt %s --poot-generate-attention-kernels="target=cpu" 2>&1 | FileCheck %s --check-prefix=GEN
// GEN: Cannot find option named 'cpu'!
// RUN: not poot-opt %s --poot-to-spirv="chip=sm_90" 2>&1 | FileCheck %s --check-prefix=SPIRV
// SPIRV: no such option chip
// RUN: not poot-opt %s --pass-pipeline="builtin.module(poot-to-nvvm{chip=sm_90}})" 2>&1 | FileCheck %s --check-prefix=TEXT
// TEXT: error
// TEXT-NOT: PLEASE submit a bug report

// RUN: poot-opt --help | FileCheck %s --check-prefix=HELP
// HELP: --poot-plan-attention
// HELP: --target=<value>
// HELP-NEXT: =cpu
// HELP-NEXT: =spirv
// HELP-NEXT: =nvvm
// HELP-NEXT: =rocdl
// HELP: --poot-to-llvm-cpu
// HELP: --attention=<value>
// HELP-NEXT: =loops
// HELP-NEXT: =offload
// HELP: --poot-to-nvvm
// HELP: --format=<value>
// HELP-NEXT: =isa
// HELP-NEXT: =bin

func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
