// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132" | FileCheck %s --check-prefix=NVVM
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64" | FileCheck %s --check-prefix=SPIRV
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=cpu workgroup-memory=32768 compute-units=4 vector-width=8" | FileCheck %s --check-prefix=CPU

// The tiled prefill (PlanPrefill.cpp): Lq >= 16 on a GPU target. Candidates
// (q_block, key_block) best first: (64, 32) (32, 32) (32, 16) (16, 32)
// (16, 16) (8, 16) (8, 8); the first whose workgroup memory
// R*(Dq+1) + C*(Dq+1) + C*Dv + R*(C+1) + 3R floats fits, whose threads (128; 64
// on SPIR-V) split R*C and R*Dv evenly and hold <= 32 scores, <= 64 outputs.
// Dq = Dv = 128 on 48 KiB: (64, 32) needs 75136 bytes, (32, 32) 54016, (32, 16)
// 35520: 32 rows a block, 16-key tiles, 32 * 64 = 2048 workgroups.
// NVVM-LABEL: func.func @prefill_h128
// NVVM: mask = causal, key_bound = capacity, schedule = tiled_prefill, lanes = 128, splits = 1, chunk = 2048, grid_x = 2048, grid_y = 1, q_block = 32, key_block = 16
// SPIRV-LABEL: func.func @prefill_h128
// SPIRV: schedule = tiled_prefill, lanes = 64, splits = 1, chunk = 2048, grid_x = 4096, grid_y = 1, q_block = 16, key_block = 16
// CPU-LABEL: func.func @prefill_h128
// CPU: schedule = cpu_tiled
func.func @prefill_h128(%q: tensor<1x32x2048x128xf32>, %k: tensor<1x8x2048x128xf32>, %v: tensor<1x8x2048x128xf32>) -> tensor<1x32x2048x128xf32> {
  %o = poot.attention %q, %k, %v causal {scale = 0.088 : f64} : tensor<1x32x2048x128xf32>, tensor<1x8x2048x128xf32>, tensor<1x8x2048x128xf32> -> tensor<1x32x2048x128xf32>
  return %o : tensor<1x32x2048x128xf32>
}

// -----

// Dq = Dv = 64 on SPIR-V's 32 KiB: (64, 32) needs 42368 bytes, (32, 32) 29440; NVVM fits (64, 32) in 48 KiB.
// A tensor mask and a live length ride along (read per score, clamped).
// SPIRV-LABEL: func.func @prefill_h64_masked
// SPIRV: mask = shared, key_bound = live, schedule = tiled_prefill, lanes = 64, splits = 1, chunk = 512, grid_x = 64, grid_y = 1, q_block = 32, key_block = 32
// NVVM-LABEL: func.func @prefill_h64_masked
// NVVM: schedule = tiled_prefill, lanes = 128, {{.*}} q_block = 64, key_block = 32
func.func @prefill_h64_masked(%q: tensor<1x4x500x64xf32>, %k: tensor<1x2x512x64xf32>, %v: tensor<1x2x512x64xf32>, %m: tensor<1x1x500x512xf32>, %len: tensor<1xi32>) -> tensor<1x4x500x64xf32> {
  %o = poot.attention %q, %k, %v mask(%m : tensor<1x1x500x512xf32>) len(%len : tensor<1xi32>) {scale = 0.125 : f64} : tensor<1x4x500x64xf32>, tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32> -> tensor<1x4x500x64xf32>
  return %o : tensor<1x4x500x64xf32>
}

// -----

// A block is never longer than the query: Lq = 20 takes 16-row blocks.
// SPIRV-LABEL: func.func @short_prefill
// SPIRV: schedule = tiled_prefill, lanes = 64, {{.*}} grid_x = 4, grid_y = 1, q_block = 16, key_block = 32
func.func @short_prefill(%q: tensor<1x2x20x64xf32>, %k: tensor<1x2x100x64xf32>, %v: tensor<1x2x100x64xf32>) -> tensor<1x2x20x64xf32> {
  %o = poot.attention %q, %k, %v causal {scale = 0.125 : f64} : tensor<1x2x20x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32> -> tensor<1x2x20x64xf32>
  return %o : tensor<1x2x20x64xf32>
}

// -----

// Below 16 query rows: the seed's streaming schedule.
// SPIRV-LABEL: func.func @below_threshold
// SPIRV: schedule = streaming
// NVVM-LABEL: func.func @below_threshold
// NVVM: schedule = streaming
func.func @below_threshold(%q: tensor<1x2x15x64xf32>, %k: tensor<1x2x15x64xf32>, %v: tensor<1x2x15x64xf32>) -> tensor<1x2x15x64xf32> {
  %o = poot.attention %q, %k, %v causal {scale = 0.125 : f64} : tensor<1x2x15x64xf32>, tensor<1x2x15x64xf32>, tensor<1x2x15x64xf32> -> tensor<1x2x15x64xf32>
  return %o : tensor<1x2x15x64xf32>
}

// -----

// No tiling fits (Dq = Dv = 1024: even 8 x 8 needs 98752 bytes): the
// streaming schedule, whose lanes fit on their own (4 x 4104 bytes).
// SPIRV-LABEL: func.func @too_wide_to_tile
// SPIRV: schedule = streaming, lanes = 4
func.func @too_wide_to_tile(%q: tensor<1x1x32x1024xf32>, %k: tensor<1x1x32x1024xf32>, %v: tensor<1x1x32x1024xf32>) -> tensor<1x1x32x1024xf32> {
  %o = poot.attention %q, %k, %v causal {scale = 0.03 : f64} : tensor<1x1x32x1024xf32>, tensor<1x1x32x1024xf32>, tensor<1x1x32x1024xf32> -> tensor<1x1x32x1024xf32>
  return %o : tensor<1x1x32x1024xf32>
}
