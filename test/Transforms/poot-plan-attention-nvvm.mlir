// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132" | FileCheck %s

// NVIDIA decode, head widths in whole warps: the warp-decode schedule with
// splits = min(ceil(32 * 132 / (B * Hkv)), Lk / 128, 128) = min(528, 32, 128).
// CHECK: schedule = warp_decode, lanes = 128, splits = 32, chunk = 128, grid_x = 256, grid_y = 1
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
