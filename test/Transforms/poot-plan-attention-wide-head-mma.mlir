// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-grid-x=2147483647 mma-sm=90 wide-head-mma=1" | FileCheck %s --check-prefix=MMA
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-grid-x=2147483647 mma-sm=90 max-buffer-bytes=1073741824 wide-head-mma=0" | FileCheck %s --check-prefix=OFF
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-grid-x=2147483647 mma-sm=75 wide-head-mma=1" | FileCheck %s --check-prefix=OFF
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=49152 compute-units=32 mma-sm=90 wide-head-mma=1" | FileCheck %s --check-prefix=OFF
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=rocdl workgroup-memory=65536 compute-units=304 max-grid-x=2147483647 mma-sm=90 wide-head-mma=1" | FileCheck %s --check-prefix=OFF
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=16384 compute-units=132 max-grid-x=2147483647 mma-sm=90 wide-head-mma=1" | FileCheck %s --check-prefix=SMALL

// The wide-head decode's tensor-core form (PlanPrefill.cpp planWideHeadMma):
// a two-byte wide-group decode on NVVM with mma-sm >= 80 and wide-head-mma
// (opt-in; the OFF runs, without it, below sm_80, on SPIR-V or ROCDL: the FFMA
// wide_head).
// W = 4 warps a 16-row m tile when Dq % 64 == 0 and Dv % 32 == 0; lanes =
// 2 W q_block. Candidates (R, C): (32,32) (32,16) (16,32) (16,16), R <= the
// packed rows rounded up to 16, workgroup memory max(C (Dq/2 + 4),
// Dv (C/2 + 4)) + W R C words.
//
// DeepSeek-V3 absorbed MLA, Hq 128 on one KV head, Dq 512 + 64, Dv 512:
// (32,32) needs (10240 + 4096) x 4 = 57344 bytes > 48 KiB; (32,16)
// (6144 + 2048) x 4 = 32768: 256 threads, 4 blocks of 32 heads; splits =
// min(ceil(4 x 132 / 4), 32768 / 128, 128) = 128, chunk 256, 512 workgroups.
// The SMALL run (16 KiB): (16,16) needs (6144 + 1024) x 4 = 28672 bytes: no
// tiling fits the tensor-core form, nor the FFMA wide_head: the streaming
// rules (split_kv of 4 lanes).
// MMA-LABEL: func.func @deepseek_b1_32k
// MMA: key_width = 512, shared_width = 64, value_width = 512, transform = scale, mask = none, key_bound = capacity, schedule = wide_head_mma, lanes = 256, splits = 128, chunk = 256, grid_x = 512, grid_y = 1, q_block = 32, key_block = 16
// OFF-LABEL: func.func @deepseek_b1_32k
// OFF: schedule = wide_head,
// SMALL-LABEL: func.func @deepseek_b1_32k
// SMALL: schedule = split_kv, lanes = 4,
func.func @deepseek_b1_32k(%q: tensor<1x128x1x576xbf16>, %k: tensor<1x1x32768x512xbf16>, %v: tensor<1x1x32768x512xbf16>, %ks: tensor<1x1x32768x64xbf16>) -> tensor<1x128x1x512xbf16> {
  %o = poot.attention %q, %k, %v key_shared(%ks : tensor<1x1x32768x64xbf16>) {scale = 0.0416 : f64} : tensor<1x128x1x576xbf16>, tensor<1x1x32768x512xbf16>, tensor<1x1x32768x512xbf16> -> tensor<1x128x1x512xbf16>
  return %o : tensor<1x128x1x512xbf16>
}

// -----

// MQA f16, 32 heads of width 128 on one KV head, B = 16: (32,32) needs
// (max(32 x 68, 128 x 20) + 4 x 32 x 32) x 4 = 26624 bytes: one block a
// group, 16 workgroups a split; splits = ceil(528 / 16) = 33, chunk =
// align(993, 32) = 1024 -> 32 splits, 512 workgroups.
// The SMALL run: (32,16) needs (max(16 x 68, 128 x 12) + 2048) x 4 = 14336
// bytes; chunk = align(993, 16) = 1008 -> 33 splits.
// MMA-LABEL: func.func @mqa_b16_32k
// MMA: schedule = wide_head_mma, lanes = 256, splits = 32, chunk = 1024, grid_x = 512, grid_y = 1, q_block = 32, key_block = 32
// OFF-LABEL: func.func @mqa_b16_32k
// OFF: schedule = wide_head,
// SMALL-LABEL: func.func @mqa_b16_32k
// SMALL: schedule = wide_head_mma, lanes = 256, splits = 33, chunk = 1008, grid_x = 528, grid_y = 1, q_block = 32, key_block = 16
func.func @mqa_b16_32k(%q: tensor<16x32x1x128xf16>, %k: tensor<16x1x32768x128xf16>, %v: tensor<16x1x32768x128xf16>) -> tensor<16x32x1x128xf16> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<16x32x1x128xf16>, tensor<16x1x32768x128xf16>, tensor<16x1x32768x128xf16> -> tensor<16x32x1x128xf16>
  return %o : tensor<16x32x1x128xf16>
}

// -----

// A group of 8 heads (R rounded up to one m tile of 16, half of it empty),
// Dq 48 + 16 = 64 and Dv 24: W = 1 (Dv % 16 != 0); lanes = 32.
// MMA-LABEL: func.func @rep8_narrow
// MMA: schedule = wide_head_mma, lanes = 32, splits = 1, chunk = 100, grid_x = 2, grid_y = 1, q_block = 16, key_block = 32
func.func @rep8_narrow(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x1x100x48xbf16>, %v: tensor<2x1x100x24xbf16>, %ks: tensor<2x1x100x16xbf16>) -> tensor<2x8x1x24xbf16> {
  %o = poot.attention %q, %k, %v key_shared(%ks : tensor<2x1x100x16xbf16>) {scale = 0.125 : f64} : tensor<2x8x1x64xbf16>, tensor<2x1x100x48xbf16>, tensor<2x1x100x24xbf16> -> tensor<2x8x1x24xbf16>
  return %o : tensor<2x8x1x24xbf16>
}

// -----

// What the tensor-core form does not take plans the FFMA wide_head: f32,
// and head widths that are not whole 16-byte vectors (Dk 60).
// MMA-LABEL: func.func @f32_group
// MMA: schedule = wide_head,
func.func @f32_group(%q: tensor<1x16x1x128xf32>, %k: tensor<1x1x512x128xf32>, %v: tensor<1x1x512x128xf32>) -> tensor<1x16x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x16x1x128xf32>, tensor<1x1x512x128xf32>, tensor<1x1x512x128xf32> -> tensor<1x16x1x128xf32>
  return %o : tensor<1x16x1x128xf32>
}
// MMA-LABEL: func.func @odd_width
// MMA: schedule = wide_head,
func.func @odd_width(%q: tensor<1x16x1x60xbf16>, %k: tensor<1x1x512x60xbf16>, %v: tensor<1x1x512x64xbf16>) -> tensor<1x16x1x64xbf16> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x16x1x60xbf16>, tensor<1x1x512x60xbf16>, tensor<1x1x512x64xbf16> -> tensor<1x16x1x64xbf16>
  return %o : tensor<1x16x1x64xbf16>
}
