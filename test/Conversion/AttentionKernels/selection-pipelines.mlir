// RUN: poot-opt %s --poot-to-spirv="compute-units=64" | FileCheck %s --check-prefix=SPIRV
// RUN: poot-opt %s --poot-to-nvvm="workgroup-memory=49152 compute-units=132 chip=sm_90" | FileCheck %s --check-prefix=NVVM
// RUN: poot-opt %s --poot-to-rocdl="workgroup-memory=65536 compute-units=304" | FileCheck %s --check-prefix=ROCDL
// RUN: poot-opt %s --poot-to-llvm-cpu="entry=step" | FileCheck %s --check-prefix=CPU

// Block top-k feeding selected attention through every target pipeline:
// SPIR-V modules with one entry point per kernel, PTX for sm_90 (warp
// decode with xor shuffles for the selected attention), ROCDL kernels in
// the LLVM dialect, and the CPU step with both ops as loops (no poot op
// left, no bufferization error).
// SPIRV: spirv.module @__spv__poot_block_topk_0
// SPIRV: spirv.ControlBarrier
// SPIRV: spirv.EntryPoint "GLCompute" @topk
// SPIRV: spirv.module @__spv__poot_selected_attention_0
// SPIRV: spirv.EntryPoint "GLCompute" @partials
// SPIRV: spirv.EntryPoint "GLCompute" @combine
// NVVM: gpu.binary @poot_block_topk_0
// NVVM-SAME: .visible .entry topk(
// NVVM-SAME: bar.sync
// NVVM: gpu.binary @poot_selected_attention_0
// NVVM-SAME: .visible .entry warp(
// NVVM-SAME: shfl.sync.bfly.b32
// NVVM-SAME: .visible .entry combine(
// ROCDL: gpu.module @poot_block_topk_0
// ROCDL: llvm.func @topk
// ROCDL: rocdl.barrier
// ROCDL: gpu.module @poot_selected_attention_0
// ROCDL: llvm.func @partials
// ROCDL: llvm.func @combine
// CPU-NOT: poot.block_topk
// CPU-NOT: poot.selected_attention
// CPU: llvm.func @step
// CPU-NOT: poot.block_topk
// CPU-NOT: poot.selected_attention
// CPU: llvm.func @_mlir_ciface_step
func.func @step(%q: tensor<1x4x1x32xf32>, %k: tensor<1x2x256x32xf32>, %v: tensor<1x2x256x32xf32>,
                %s: tensor<1x1x8xf32>, %p: tensor<1x1xi32>) -> (tensor<1x4x1x32xf32>, tensor<1x1x7xi32>) {
  %ids = poot.block_topk %s, %p k = 7 block_size = 32 : tensor<1x1x8xf32>, tensor<1x1xi32> -> tensor<1x1x7xi32>
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 32 {scale = 0.125 : f64}
      : tensor<1x4x1x32xf32>, tensor<1x2x256x32xf32>, tensor<1x2x256x32xf32>, tensor<1x1x7xi32>, tensor<1x1xi32> -> tensor<1x4x1x32xf32>
  return %o, %ids : tensor<1x4x1x32xf32>, tensor<1x1x7xi32>
}
