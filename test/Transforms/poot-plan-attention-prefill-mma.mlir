// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 mma-sm=90" | FileCheck %s
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132" | FileCheck %s --check-prefix=NOMMA
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 mma-sm=75" | FileCheck %s --check-prefix=NOMMA
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=20000 compute-units=132 mma-sm=80" | FileCheck %s --check-prefix=SMALL
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64 mma-sm=90" | FileCheck %s --check-prefix=SPIRV

// The tensor-core prefill (PlanPrefill.cpp planTiledPrefillMma): a two-byte
// prefill on NVVM with mma-sm >= 80 takes 64 query rows a workgroup (4
// warps of 16), 128 threads, and a 64-key tile when its workgroup memory
// C*(Dq/2+4) + C*(Dv/2+4) words fits: 64*68 + 64*68 = 8704 words = 34816
// bytes on 48 KiB. Workgroups: 32 heads x 2048/64 blocks = 1024.
// Without mma-sm (or below sm_80) the FFMA tiled schedule, as for f32.
// With 20000 bytes the 64-key tile (34816) does not fit, 32 keys do
// (32*68 + 32*68 = 4352 words = 17408 bytes). SPIR-V never takes it.
// CHECK-LABEL: func.func @bf16_causal_h128
// CHECK: mask = causal, key_bound = capacity, schedule = tiled_prefill_mma, lanes = 128, splits = 1, chunk = 2048, grid_x = 1024, grid_y = 1, q_block = 64, key_block = 64
// NOMMA-LABEL: func.func @bf16_causal_h128
// NOMMA: schedule = tiled_prefill,
// SMALL-LABEL: func.func @bf16_causal_h128
// SMALL: schedule = tiled_prefill_mma, {{.*}} q_block = 64, key_block = 32
// SPIRV-LABEL: func.func @bf16_causal_h128
// SPIRV: schedule = tiled_prefill,
func.func @bf16_causal_h128(%q: tensor<1x32x2048x128xbf16>, %k: tensor<1x8x2048x128xbf16>, %v: tensor<1x8x2048x128xbf16>) -> tensor<1x32x2048x128xbf16> {
  %o = poot.attention %q, %k, %v causal {scale = 0.088 : f64} : tensor<1x32x2048x128xbf16>, tensor<1x8x2048x128xbf16>, tensor<1x8x2048x128xbf16> -> tensor<1x32x2048x128xbf16>
  return %o : tensor<1x32x2048x128xbf16>
}

// -----

// f16 the same; a tensor mask and a live length ride along (read per score).
// CHECK-LABEL: func.func @f16_masked_live
// CHECK: mask = shared, key_bound = live, schedule = tiled_prefill_mma, lanes = 128, splits = 1, chunk = 512, grid_x = 32, grid_y = 1, q_block = 64, key_block = 64
// NOMMA-LABEL: func.func @f16_masked_live
// NOMMA: schedule = tiled_prefill,
func.func @f16_masked_live(%q: tensor<1x4x500x64xf16>, %k: tensor<1x2x512x64xf16>, %v: tensor<1x2x512x64xf16>, %m: tensor<1x1x500x512xf32>, %len: tensor<1xi32>) -> tensor<1x4x500x64xf16> {
  %o = poot.attention %q, %k, %v mask(%m : tensor<1x1x500x512xf32>) len(%len : tensor<1xi32>) {scale = 0.125 : f64} : tensor<1x4x500x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16> -> tensor<1x4x500x64xf16>
  return %o : tensor<1x4x500x64xf16>
}

// -----

// Paged keys (rows gathered from a pool through `read`) and the split key
// (MLA's per-head part, then the part every head shares) take the tensor
// cores too: the rows are staged as 16-byte chunks of each part.
// CHECK-LABEL: func.func @bf16_paged
// CHECK: key_bound = paged, schedule = tiled_prefill_mma, {{.*}} q_block = 64, key_block = 64
func.func @bf16_paged(%q: tensor<2x8x96x64xbf16>, %k: tensor<700x2x64xbf16>, %v: tensor<700x2x64xbf16>, %r: tensor<2x300xi32>) -> tensor<2x8x96x64xbf16> {
  %o = poot.attention %q, %k, %v read(%r : tensor<2x300xi32>) causal {scale = 0.125 : f64} : tensor<2x8x96x64xbf16>, tensor<700x2x64xbf16>, tensor<700x2x64xbf16> -> tensor<2x8x96x64xbf16>
  return %o : tensor<2x8x96x64xbf16>
}

// -----

// CHECK-LABEL: func.func @bf16_split_key
// CHECK: schedule = tiled_prefill_mma, {{.*}} q_block = 64, key_block = 64
// A per-head part that is not whole 16-byte chunks (Dk 20) keeps FFMA.
// CHECK-LABEL: func.func @bf16_split_key_odd
// CHECK: schedule = tiled_prefill,
func.func @bf16_split_key(%q: tensor<2x8x80x192xbf16>, %k: tensor<2x2x260x128xbf16>, %ks: tensor<2x1x260x64xbf16>, %v: tensor<2x2x260x128xbf16>) -> tensor<2x8x80x128xbf16> {
  %o = poot.attention %q, %k, %v key_shared(%ks : tensor<2x1x260x64xbf16>) causal {scale = 0.07 : f64} : tensor<2x8x80x192xbf16>, tensor<2x2x260x128xbf16>, tensor<2x2x260x128xbf16> -> tensor<2x8x80x128xbf16>
  return %o : tensor<2x8x80x128xbf16>
}
func.func @bf16_split_key_odd(%q: tensor<1x4x64x32xbf16>, %k: tensor<1x1x64x20xbf16>, %ks: tensor<1x1x64x12xbf16>, %v: tensor<1x1x64x16xbf16>) -> tensor<1x4x64x16xbf16> {
  %o = poot.attention %q, %k, %v key_shared(%ks : tensor<1x1x64x12xbf16>) causal {scale = 0.17 : f64} : tensor<1x4x64x32xbf16>, tensor<1x1x64x20xbf16>, tensor<1x1x64x16xbf16> -> tensor<1x4x64x16xbf16>
  return %o : tensor<1x4x64x16xbf16>
}

// -----

// F32 stays on FFMA (TF32 would break the F32 tolerance).
// CHECK-LABEL: func.func @f32_stays_ffma
// CHECK: schedule = tiled_prefill,
func.func @f32_stays_ffma(%q: tensor<1x8x256x64xf32>, %k: tensor<1x8x256x64xf32>, %v: tensor<1x8x256x64xf32>) -> tensor<1x8x256x64xf32> {
  %o = poot.attention %q, %k, %v causal {scale = 0.125 : f64} : tensor<1x8x256x64xf32>, tensor<1x8x256x64xf32>, tensor<1x8x256x64xf32> -> tensor<1x8x256x64xf32>
  return %o : tensor<1x8x256x64xf32>
}

// -----

// Shapes the mma tiles do not take keep the FFMA tiled schedule: fewer than
// 64 query rows, Dq not a multiple of 16 (the mma's k), Dv past 128 (the O
// fragments would not stay in registers).
// CHECK-LABEL: func.func @short
// CHECK: schedule = tiled_prefill,
func.func @short(%q: tensor<1x8x32x64xbf16>, %k: tensor<1x8x32x64xbf16>, %v: tensor<1x8x32x64xbf16>) -> tensor<1x8x32x64xbf16> {
  %o = poot.attention %q, %k, %v causal {scale = 0.125 : f64} : tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16> -> tensor<1x8x32x64xbf16>
  return %o : tensor<1x8x32x64xbf16>
}

// -----

// CHECK-LABEL: func.func @odd_width
// CHECK: schedule = tiled_prefill,
func.func @odd_width(%q: tensor<1x8x256x72xbf16>, %k: tensor<1x8x256x72xbf16>, %v: tensor<1x8x256x72xbf16>) -> tensor<1x8x256x72xbf16> {
  %o = poot.attention %q, %k, %v causal {scale = 0.125 : f64} : tensor<1x8x256x72xbf16>, tensor<1x8x256x72xbf16>, tensor<1x8x256x72xbf16> -> tensor<1x8x256x72xbf16>
  return %o : tensor<1x8x256x72xbf16>
}

// -----

// CHECK-LABEL: func.func @wide_value
// CHECK: schedule = tiled_prefill,
func.func @wide_value(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x8x256x64xbf16>, %v: tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16> {
  %o = poot.attention %q, %k, %v causal {scale = 0.125 : f64} : tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>, tensor<1x8x256x256xbf16> -> tensor<1x8x256x256xbf16>
  return %o : tensor<1x8x256x256xbf16>
}
