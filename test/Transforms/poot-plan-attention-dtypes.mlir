// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=cpu workgroup-memory=49152 compute-units=2 vector-width=16" | FileCheck %s --check-prefix=CPU
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132" | FileCheck %s --check-prefix=NVVM

// Two-byte attention (docs/two-byte-attention.md): f16/bf16 operands, f32
// running state. The CPU key block holds K/V rows in their own type, so a
// bf16 row of 128 + 128 channels is 512 B and 64 keys fit the 48 KiB L1
// where f32 fits 32 (poot-plan-attention-cpu.mlir @decode_groups); the lane
// state, the split scratch and the warp states stay f32 -- the same plans
// as f32 on the GPUs.

// CPU-LABEL: func.func @bf16_decode
// CPU: schedule = cpu_tiled, lanes = 16, splits = 1, chunk = 4096, grid_x = 8, grid_y = 2, q_block = 1, key_block = 64
// NVVM-LABEL: func.func @bf16_decode
// NVVM: schedule = warp_decode, lanes = 128, splits = 32, chunk = 128, grid_x = 256, grid_y = 1
func.func @bf16_decode(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x4096x128xbf16>, %v: tensor<1x8x4096x128xbf16>) -> tensor<1x32x1x128xbf16> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16> -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}

// -----

// f16 with an f32 mask (the mask as given). SPIR-V: see
// poot-plan-attention-dtypes-spirv.mlir.
// CPU-LABEL: func.func @f16_masked
// CPU: schedule = cpu_tiled, lanes = 16, splits = 1, chunk = 512, grid_x = 2, grid_y = 2, q_block = 1, key_block = 128
// NVVM-LABEL: func.func @f16_masked
// NVVM: schedule = warp_decode, lanes = 128, splits = 4
func.func @f16_masked(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x512x64xf16>, %v: tensor<1x2x512x64xf16>, %m: tensor<1x8x1x512xf32>) -> tensor<1x8x1x64xf16> {
  %o = poot.attention %q, %k, %v mask(%m : tensor<1x8x1x512xf32>) {scale = 0.125 : f64} : tensor<1x8x1x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
