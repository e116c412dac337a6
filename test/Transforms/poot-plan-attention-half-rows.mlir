// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-keys-per-load=2 max-unroll=4" | FileCheck %s
// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-keys-per-load=2 max-unroll=0" | FileCheck %s --check-prefix=ONE
// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-unroll=4 max-keys-per-load=1" | FileCheck %s --check-prefix=WHOLE
// RUN: not poot-opt %s --poot-plan-attention="target=nvvm max-keys-per-load=0" 2>&1 | FileCheck %s --check-prefix=BAD

// max-keys-per-load (default 2; 1: a whole warp reads each key row) lets a row
// that a whole warp would read in 8-byte vectors (bf16/f16 D = 128: 32 x 4)
// take 16 lanes of 16-byte vectors (16 x 8): `row_lanes = 16`, two keys a
// warp-wide load (dialect/PootAttrs.td warpRowLanes), for two-byte keys
// only (f32 keeps whole-warp rows); it must be >= 1.
// BAD: poot-plan-attention: max-keys-per-load must be >= 1, got 0
// WHOLE-NOT: row_lanes

// bf16 D = 128, n_rep 4: a lane holds 8 channels of q and o per head, the
// state 4 x (8 + 8 + 2) = 72 registers (<= 128), the LDS 4 warps x 2 keys x
// 4 heads x 130 floats; 4 loads a step of 16 elements each stay within 160
// registers (72 + 64): unroll 4, 8 keys a warp step.
// CHECK-LABEL: func.func @bf16_d128
// CHECK: schedule = warp_decode, lanes = 128, splits = 32, chunk = 128, grid_x = 256, grid_y = 1, unroll = 4, row_lanes = 16>
// With max-unroll=0 the half-warp rows still read vectors: one load a step.
// ONE-LABEL: func.func @bf16_d128
// ONE: schedule = warp_decode, {{.*}}, unroll = 1, row_lanes = 16>
// WHOLE-LABEL: func.func @bf16_d128
// WHOLE: schedule = warp_decode, {{.*}}, unroll = 4>
func.func @bf16_d128(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x4096x128xbf16>, %v: tensor<1x8x4096x128xbf16>) -> tensor<1x32x1x128xbf16> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16> -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}

// f16 the same.
// CHECK-LABEL: func.func @f16_d128
// CHECK: unroll = 4, row_lanes = 16>
func.func @f16_d128(%q: tensor<1x32x1x128xf16>, %k: tensor<1x8x4096x128xf16>, %v: tensor<1x8x4096x128xf16>) -> tensor<1x32x1x128xf16> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xf16>, tensor<1x8x4096x128xf16>, tensor<1x8x4096x128xf16> -> tensor<1x32x1x128xf16>
  return %o : tensor<1x32x1x128xf16>
}

// Rows a whole warp already reads in 16-byte vectors keep whole-warp rows:
// f32 D = 128 (32 x 4), bf16 D = 256 (32 x 8).
// CHECK-LABEL: func.func @whole_rows
// CHECK-NOT: row_lanes
// CHECK: unroll = 4>
// CHECK-NOT: row_lanes
// CHECK: unroll = {{[0-9]}}>
// CHECK-NOT: row_lanes
func.func @whole_rows(%q: tensor<1x32x1x128xf32>, %k: tensor<1x8x4096x128xf32>, %v: tensor<1x8x4096x128xf32>,
                      %q2: tensor<1x4x1x256xbf16>, %k2: tensor<1x1x4096x256xbf16>, %v2: tensor<1x1x4096x256xbf16>) -> (tensor<1x32x1x128xf32>, tensor<1x4x1x256xbf16>) {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xf32>, tensor<1x8x4096x128xf32>, tensor<1x8x4096x128xf32> -> tensor<1x32x1x128xf32>
  %o2 = poot.attention %q2, %k2, %v2 {scale = 0.0625 : f64} : tensor<1x4x1x256xbf16>, tensor<1x1x4096x256xbf16>, tensor<1x1x4096x256xbf16> -> tensor<1x4x1x256xbf16>
  return %o, %o2 : tensor<1x32x1x128xf32>, tensor<1x4x1x256xbf16>
}

// n_rep 8 (Hq 64 on Hkv 8): half-warp rows would hold 8 x (8 + 8 + 2) = 144
// registers of state (> 128): whole-warp rows (8 x 10 = 80), 8-byte vectors.
// CHECK-LABEL: func.func @many_heads
// CHECK-NOT: row_lanes
// CHECK: schedule = warp_decode, {{.*}}, unroll = {{[0-9]}}>
func.func @many_heads(%q: tensor<1x64x1x128xbf16>, %k: tensor<1x8x4096x128xbf16>, %v: tensor<1x8x4096x128xbf16>) -> tensor<1x64x1x128xbf16> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x64x1x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16> -> tensor<1x64x1x128xbf16>
  return %o : tensor<1x64x1x128xbf16>
}
