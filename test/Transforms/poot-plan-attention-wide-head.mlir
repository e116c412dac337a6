// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-grid-x=2147483647 max-buffer-bytes=1073741824" | FileCheck %s --check-prefix=NVVM
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=32 max-buffer-bytes=1073741824" | FileCheck %s --check-prefix=SPIRV
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=rocdl workgroup-memory=65536 compute-units=304 max-grid-x=2147483647 max-buffer-bytes=1073741824" | FileCheck %s --check-prefix=ROCDL
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=cpu workgroup-memory=32768 compute-units=4 vector-width=8" | FileCheck %s --check-prefix=CPU
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=4096 compute-units=32 max-buffer-bytes=1073741824" | FileCheck %s --check-prefix=SMALL

// The wide-head decode (PlanPrefill.cpp planWideHead): a GPU decode (Lq < 16)
// of a KV group of n_rep >= 8 heads (on NVVM when warp_decode does not fit)
// packs the group's n_rep * Lq rows into blocks of q_block rows. Candidates
// (R, C): (32,16) (16,16) (32,8) (16,8) (8,16) (8,8) (16,4) (4,16) (8,4) (4,8)
// (4,4); the first with R <= bit_ceil(n_rep * Lq), <= 64 outputs and <= 32
// scores a thread (128 threads; 64 on SPIR-V) and workgroup memory
// R(Dq+1) + C max(Dq+1, Dv) + R(C+1) + 3R floats, plus S (R C + 1) for the
// S step's S = lanes / R width slices (PlanCommon.h wideHeadSlices), that fits.
//
// DeepSeek-V3 absorbed MLA, Hq 128 on one KV head, Dq = 512 + 64, Dv = 512:
// NVVM (48 KiB): (16,16) needs 83360 bytes, (16,8) 60288, (8,16) 64288,
// (8,8) 41472: 16 blocks of 8 heads; splits = ceil(4 * 132 / 16) = 33,
// chunk = align(ceil(32768 / 33), 8) = 1000 keys, 33 * 16 = 528 workgroups.
// SPIR-V (32 KiB, 64 threads): (8,8) 39392 does not fit, (16,4) holds 128
// outputs a thread, (4,16) needs 50640 bytes, (8,4) 29008: 16 blocks,
// splits = ceil(4 * 32 / 16) = 8, chunk = 4096 keys.
// ROCDL (64 KiB): (16,8) 60288 bytes: 8 blocks, splits = ceil(4 * 304 / 8)
// = 152 -> 128 (the bound), chunk = 256.
// NVVM-LABEL: func.func @deepseek_b1_32k
// NVVM: key_width = 512, shared_width = 64, value_width = 512, transform = scale, mask = none, key_bound = capacity, schedule = wide_head, lanes = 128, splits = 33, chunk = 1000, grid_x = 528, grid_y = 1, q_block = 8, key_block = 8
// SPIRV-LABEL: func.func @deepseek_b1_32k
// SPIRV: schedule = wide_head, lanes = 64, splits = 8, chunk = 4096, grid_x = 128, grid_y = 1, q_block = 8, key_block = 4
// ROCDL-LABEL: func.func @deepseek_b1_32k
// ROCDL: schedule = wide_head, lanes = 128, splits = 128, chunk = 256, grid_x = 1024, grid_y = 1, q_block = 16, key_block = 8
// The CPU keeps its own schedule (one item per KV group already).
// CPU-LABEL: func.func @deepseek_b1_32k
// CPU: schedule = cpu_tiled
func.func @deepseek_b1_32k(%q: tensor<1x128x1x576xf32>, %k: tensor<1x1x32768x512xf32>, %v: tensor<1x1x32768x512xf32>, %ks: tensor<1x1x32768x64xf32>) -> tensor<1x128x1x512xf32> {
  %o = poot.attention %q, %k, %v key_shared(%ks : tensor<1x1x32768x64xf32>) {scale = 0.0416 : f64} : tensor<1x128x1x576xf32>, tensor<1x1x32768x512xf32>, tensor<1x1x32768x512xf32> -> tensor<1x128x1x512xf32>
  return %o : tensor<1x128x1x512xf32>
}

// -----

// MQA, 32 heads of width 128 on one KV head, B = 16: (32,16) needs
// 32*129 + 16*129 + 32*17 + 96 + 4*513 floats = 35536 bytes: one block a group, 16
// workgroups a split; NVVM splits = ceil(528 / 16) = 33, chunk =
// align(993, 16) = 1008 -> 33 splits, 528 workgroups (warp_decode does not
// fit: 32 x (4 + 4 + 2) registers > 128); SPIR-V ceil(128 / 16) = 8.
// NVVM-LABEL: func.func @mqa_b16_32k
// NVVM: schedule = wide_head, lanes = 128, splits = 33, chunk = 1008, grid_x = 528, grid_y = 1, q_block = 32, key_block = 16
// SPIRV-LABEL: func.func @mqa_b16_32k
// SPIRV: schedule = wide_head, lanes = 64, splits = 8, chunk = 4096, grid_x = 128, grid_y = 1, q_block = 32, key_block = 16
func.func @mqa_b16_32k(%q: tensor<16x32x1x128xf32>, %k: tensor<16x1x32768x128xf32>, %v: tensor<16x1x32768x128xf32>) -> tensor<16x32x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<16x32x1x128xf32>, tensor<16x1x32768x128xf32>, tensor<16x1x32768x128xf32> -> tensor<16x32x1x128xf32>
  return %o : tensor<16x32x1x128xf32>
}

// -----

// Several query rows (speculative decode, Lq = 3) of 8 heads: 24 packed rows,
// blocks of up to 32 (bit_ceil(24)); masks, softcap, paged live keys ride
// along as in the other schedules.
// SPIRV-LABEL: func.func @packed_q3_paged_live
// SPIRV: transform = scale_softcap, mask = per_head, key_bound = paged_live, schedule = wide_head, lanes = 64, {{.*}} q_block = 32, key_block = 16
func.func @packed_q3_paged_live(%q: tensor<2x8x3x32xf32>, %k: tensor<500x1x32xf32>, %v: tensor<500x1x32xf32>, %m: tensor<1x8x3x256xf32>, %read: tensor<2x256xi32> {poot.range = #poot.range<0, 499>}, %len: tensor<2xi32>) -> tensor<2x8x3x32xf32> {
  %o = poot.attention %q, %k, %v mask(%m : tensor<1x8x3x256xf32>) read(%read : tensor<2x256xi32>) len(%len : tensor<2xi32>) {scale = 0.17 : f64, softcap = 30.0 : f64} : tensor<2x8x3x32xf32>, tensor<500x1x32xf32>, tensor<500x1x32xf32> -> tensor<2x8x3x32xf32>
  return %o : tensor<2x8x3x32xf32>
}

// -----

// A narrow group (n_rep 8, width 128) fits warp_decode on NVIDIA, which keeps it;
// SPIR-V plans the wide head.
// NVVM-LABEL: func.func @gqa_rep8
// NVVM: schedule = warp_decode
// SPIRV-LABEL: func.func @gqa_rep8
// SPIRV: schedule = wide_head
func.func @gqa_rep8(%q: tensor<1x16x1x128xf32>, %k: tensor<1x2x4096x128xf32>, %v: tensor<1x2x4096x128xf32>) -> tensor<1x16x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x16x1x128xf32>, tensor<1x2x4096x128xf32>, tensor<1x2x4096x128xf32> -> tensor<1x16x1x128xf32>
  return %o : tensor<1x16x1x128xf32>
}

// -----

// Below 8 heads a group: the seed's split-KV decode on SPIR-V.
// SPIRV-LABEL: func.func @gqa_rep4
// SPIRV: schedule = split_kv
func.func @gqa_rep4(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x4096x64xf32>, %v: tensor<1x2x4096x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x8x1x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32> -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// Lq = 16 is a prefill: the tiled prefill, one head a block.
// SPIRV-LABEL: func.func @mqa_prefill
// SPIRV: schedule = tiled_prefill
func.func @mqa_prefill(%q: tensor<1x16x16x32xf32>, %k: tensor<1x1x64x32xf32>, %v: tensor<1x1x64x32xf32>) -> tensor<1x16x16x32xf32> {
  %o = poot.attention %q, %k, %v causal {scale = 0.17 : f64} : tensor<1x16x16x32xf32>, tensor<1x1x64x32xf32>, tensor<1x1x64x32xf32> -> tensor<1x16x16x32xf32>
  return %o : tensor<1x16x16x32xf32>
}

// -----

// No tiling fits 4 KiB with width 128 ((4,4) needs 4*129*2 + 20 + 12 floats
// = 4256 bytes): the streaming rules, whose lanes fit (7 lanes' state -> 4).
// SMALL-LABEL: func.func @no_tiling_fits
// SMALL: schedule = split_kv, lanes = 4
func.func @no_tiling_fits(%q: tensor<1x16x1x128xf32>, %k: tensor<1x1x4096x128xf32>, %v: tensor<1x1x4096x128xf32>) -> tensor<1x16x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x16x1x128xf32>, tensor<1x1x4096x128xf32>, tensor<1x1x4096x128xf32> -> tensor<1x16x1x128xf32>
  return %o : tensor<1x16x1x128xf32>
}
