// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64" -verify-diagnostics | FileCheck %s
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=1024 compute-units=1 max-grid-x=3" -verify-diagnostics | FileCheck %s --check-prefix=SMALL

// Decode rows (2 x 4 = 8) do not fill 64 compute units: split-KV with
// min(16, ceil(64 / 8) = 8, 1024 / 128 = 8) = 8 splits of 128 keys.
// CHECK-LABEL: func.func @decode
// CHECK: request = #poot.attention_request<batch = 2, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 1024, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 8, chunk = 128, grid_x = 64, grid_y = 1>
// With 1 KiB of workgroup memory only 8 lanes of (16 + 2) floats fit, one
// compute unit means streaming, and 8 workgroups fold onto a 3-wide grid.
// SMALL-LABEL: func.func @decode
// SMALL: schedule = streaming, lanes = 8, splits = 1, chunk = 1024, grid_x = 3, grid_y = 3
func.func @decode(%q: tensor<2x4x1x16xf32>, %k: tensor<2x2x1024x16xf32>, %v: tensor<2x2x1024x16xf32>) -> tensor<2x4x1x16xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x1x16xf32>, tensor<2x2x1024x16xf32>, tensor<2x2x1024x16xf32> -> tensor<2x4x1x16xf32>
  return %o : tensor<2x4x1x16xf32>
}

// -----

// Never a chunk under 128 keys: 200 keys stay one split.
// CHECK-LABEL: func.func @short
// CHECK: mask = per_head, key_bound = live, schedule = streaming, lanes = 64, splits = 1
// SMALL-LABEL: func.func @short
func.func @short(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x200x16xf32>, %v: tensor<1x4x200x16xf32>, %m: tensor<1x4x1x200xf32>, %l: tensor<1xi32>) -> tensor<1x4x1x16xf32> {
  %o = poot.attention %q, %k, %v mask(%m : tensor<1x4x1x200xf32>) len(%l : tensor<1xi32>) {scale = 0.25 : f64, softcap = 30.0 : f64} : tensor<1x4x1x16xf32>, tensor<1x4x200x16xf32>, tensor<1x4x200x16xf32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Prefill (Lq > 1) always streams; a paged key is recorded as such.
// CHECK-LABEL: func.func @prefill_paged
// CHECK: q_len = 8, key_len = 8{{.*}}key_bound = paged, schedule = streaming
// SMALL-LABEL: func.func @prefill_paged
func.func @prefill_paged(%q: tensor<1x2x8x16xf32>, %k: tensor<32x2x16xf32>, %v: tensor<32x2x16xf32>, %r: tensor<1x8xi32>) -> tensor<1x2x8x16xf32> {
  %o = poot.attention %q, %k, %v read(%r : tensor<1x8xi32>) {scale = 0.25 : f64} : tensor<1x2x8x16xf32>, tensor<32x2x16xf32>, tensor<32x2x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

