// RUN: poot-opt %s --poot-plan-attention="target=cpu workgroup-memory=49152 compute-units=2 vector-width=16" | FileCheck %s

// Decode, 8 KV groups >= 2 * 2 cores: no split; 16-lane vectors; key blocks
// of 32 keys (32 * (128 + 128) * 4 B = 32 KiB fits the 48 KiB L1, 64 would not).
// CHECK-LABEL: func.func @decode_groups
// CHECK: schedule = cpu_tiled, lanes = 16, splits = 1, chunk = 4096, grid_x = 8, grid_y = 2, q_block = 1, key_block = 32
func.func @decode_groups(%q: tensor<1x32x1x128xf32>, %k: tensor<1x8x4096x128xf32>, %v: tensor<1x8x4096x128xf32>) -> tensor<1x32x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xf32>, tensor<1x8x4096x128xf32>, tensor<1x8x4096x128xf32> -> tensor<1x32x1x128xf32>
  return %o : tensor<1x32x1x128xf32>
}

// Decode with 2 KV groups on 2 cores: splits = min(ceil(4 / 2), 16384 / 512) = 2.
// CHECK-LABEL: func.func @decode_split
// CHECK: schedule = cpu_tiled, lanes = 16, splits = 2, chunk = 8192, grid_x = 4, grid_y = 2, q_block = 1, key_block = 64
func.func @decode_split(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x16384x64xf32>, %v: tensor<1x2x16384x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x8x1x64xf32>, tensor<1x2x16384x64xf32>, tensor<1x2x16384x64xf32> -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// Prefill: head width 12 gives 4-lane vectors; n_rep = 2 wants 8 query rows
// per item, the largest divisor of Lq = 12 below that is 6; blocks stop at
// the first power of two >= Lk; 48 rows x 12 keys x 24 channels is below
// 2^18 multiply-adds: one chunk, no thread team.
// CHECK-LABEL: func.func @prefill
// CHECK: schedule = cpu_tiled, lanes = 4, splits = 1, chunk = 12, grid_x = 4, grid_y = 1, q_block = 6, key_block = 16
func.func @prefill(%q: tensor<1x4x12x12xf32>, %k: tensor<1x2x12x12xf32>, %v: tensor<1x2x12x12xf32>) -> tensor<1x4x12x12xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.288 : f64} : tensor<1x4x12x12xf32>, tensor<1x2x12x12xf32>, tensor<1x2x12x12xf32> -> tensor<1x4x12x12xf32>
  return %o : tensor<1x4x12x12xf32>
}
