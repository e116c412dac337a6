// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132" | FileCheck %s
// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-unroll=1" | FileCheck %s --check-prefix=ONE
// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-unroll=0" | FileCheck %s --check-prefix=SCALAR
// RUN: not poot-opt %s --poot-plan-attention="target=nvvm max-unroll=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// max-unroll bounds the planner's choice (a tuning knob); it must be >= 0.
// ONE-COUNT-3: schedule = warp_decode, {{.*}}, unroll = 1>
// BAD: poot-plan-attention: max-unroll must be >= 0, got -1
// max-unroll=0 keeps the scalar one-key form: no unroll on any warp-decode
// request. The default (4) plans the 16-byte-load form (CHECK below).
// SCALAR-NOT: unroll =
// SCALAR: schedule = warp_decode, lanes = 128, splits = 32, chunk = 128, grid_x = 256, grid_y = 1>
// SCALAR-NOT: unroll =

// NVIDIA decode, head widths in whole warps: the warp-decode schedule with
// splits = min(ceil(32 * 132 / (B * Hkv)), Lk / 128, 128) = min(528, 32, 128).
// Each warp loads 4 keys per step (PlanCommon.h warpDecodeUnroll): the 4
// heads' state, 4 x (4 + 4 + 2) = 40 registers, plus 4 x 8 loaded elements.
// CHECK: schedule = warp_decode, lanes = 128, splits = 32, chunk = 128, grid_x = 256, grid_y = 1, unroll = 4>
func.func @decode(%q: tensor<1x32x1x128xf32>, %k: tensor<1x8x4096x128xf32>, %v: tensor<1x8x4096x128xf32>) -> tensor<1x32x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xf32>, tensor<1x8x4096x128xf32>, tensor<1x8x4096x128xf32> -> tensor<1x32x1x128xf32>
  return %o : tensor<1x32x1x128xf32>
}

// A value width that is not whole warps keeps the seed's split-KV schedule.
// CHECK: schedule = split_kv, lanes = 64
func.func @odd_width(%q: tensor<1x32x1x128xf32>, %k: tensor<1x8x4096x128xf32>, %v: tensor<1x8x4096x40xf32>) -> tensor<1x32x1x40xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xf32>, tensor<1x8x4096x128xf32>, tensor<1x8x4096x40xf32> -> tensor<1x32x1x40xf32>
  return %o : tensor<1x32x1x40xf32>
}

// Wide rows: 512 + 512 channels are 32 elements a lane; the state (34) plus
// 4 loaded rows (128) would pass 160 registers, 2 rows (64) do not.
// CHECK: schedule = warp_decode, {{.*}}, unroll = 2>
func.func @wide(%q: tensor<1x8x1x512xf32>, %k: tensor<1x8x4096x512xf32>, %v: tensor<1x8x4096x512xf32>) -> tensor<1x8x1x512xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.04 : f64} : tensor<1x8x1x512xf32>, tensor<1x8x4096x512xf32>, tensor<1x8x4096x512xf32> -> tensor<1x8x1x512xf32>
  return %o : tensor<1x8x1x512xf32>
}

// 1536 + 1536 channels: even 2 loaded rows (192) pass the budget; one key per step.
// CHECK: schedule = warp_decode, {{.*}}, unroll = 1>
func.func @wider(%q: tensor<1x8x1x1536xf32>, %k: tensor<1x8x1024x1536xf32>, %v: tensor<1x8x1024x1536xf32>) -> tensor<1x8x1x1536xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.04 : f64} : tensor<1x8x1x1536xf32>, tensor<1x8x1024x1536xf32>, tensor<1x8x1024x1536xf32> -> tensor<1x8x1x1536xf32>
  return %o : tensor<1x8x1x1536xf32>
}
