// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64" -verify-diagnostics | FileCheck %s
// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=1024 compute-units=1 max-grid-x=3" -verify-diagnostics | FileCheck %s --check-prefix=SMALL

// The planner's requests for the block-selected ops (PlanSelection.cpp).

// Decode, K = 4 blocks of 64: each row visits 320 positions. Block top-k:
// 16 lanes for the 16 blocks, one workgroup. Selected attention: 4 rows do
// not fill 64 compute units, so split-KV over the visited positions
// (min(16, 64 / 4, 320 / 128) = 2 splits of 160); 64 lanes of 18 floats.
// A device with 1 KiB of workgroup memory gets 8 lanes, one compute unit no
// split, and a grid of 3 in X folds the 4 workgroups onto 3 x 2.
// CHECK-LABEL: func.func @decode
// CHECK: poot.block_topk {{.*}}request = #poot.block_topk_request<batch = 1, q_len = 1, blocks = 16, k = 4, block_size = 64, schedule = streaming, lanes = 16, grid_x = 1, grid_y = 1>
// CHECK: poot.selected_attention {{.*}}request = #poot.selected_attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 1024, key_width = 16, value_width = 16, k = 4, block_size = 64, visited = 320, transform = scale, schedule = split_kv, lanes = 64, splits = 2, chunk = 160, grid_x = 8, grid_y = 1>
// SMALL-LABEL: func.func @decode
// SMALL: #poot.block_topk_request<batch = 1, q_len = 1, blocks = 16, k = 4, block_size = 64, schedule = streaming, lanes = 16, grid_x = 1, grid_y = 1>
// SMALL: #poot.selected_attention_request<{{.*}}visited = 320, transform = scale, schedule = streaming, lanes = 8, splits = 1, chunk = 320, grid_x = 3, grid_y = 2>
func.func @decode(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x1024x16xf32>, %v: tensor<1x2x1024x16xf32>,
                  %s: tensor<1x1x16xf32>, %p: tensor<1x1xi32>) -> tensor<1x4x1x16xf32> {
  %ids = poot.block_topk %s, %p k = 4 block_size = 64 : tensor<1x1x16xf32>, tensor<1x1xi32> -> tensor<1x1x4xi32>
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 64 {scale = 0.25 : f64}
      : tensor<1x4x1x16xf32>, tensor<1x2x1024x16xf32>, tensor<1x2x1024x16xf32>, tensor<1x1x4xi32>, tensor<1x1xi32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Several query rows per batch row: never split; the softcap is part of
// the request; 8 blocks get 8 lanes.
// CHECK-LABEL: func.func @rows
// CHECK: #poot.block_topk_request<batch = 2, q_len = 8, blocks = 8, k = 2, block_size = 8, schedule = streaming, lanes = 8, grid_x = 16, grid_y = 1>
// CHECK: #poot.selected_attention_request<batch = 2, q_heads = 2, kv_heads = 1, q_len = 8, key_len = 64, key_width = 16, value_width = 16, k = 2, block_size = 8, visited = 24, transform = scale_softcap, schedule = streaming, lanes = 64, splits = 1, chunk = 24, grid_x = 32, grid_y = 1>
// SMALL-LABEL: func.func @rows
// SMALL: #poot.block_topk_request<{{.*}}lanes = 8, grid_x = 3, grid_y = 6>
// SMALL: #poot.selected_attention_request<{{.*}}lanes = 8, splits = 1, chunk = 24, grid_x = 3, grid_y = 11>
func.func @rows(%q: tensor<2x2x8x16xf32>, %k: tensor<2x1x64x16xf32>, %v: tensor<2x1x64x16xf32>,
                %s: tensor<2x8x8xf32>, %p: tensor<2x8xi32>) -> tensor<2x2x8x16xf32> {
  %ids = poot.block_topk %s, %p k = 2 block_size = 8 : tensor<2x8x8xf32>, tensor<2x8xi32> -> tensor<2x8x2xi32>
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 8 {scale = 0.25 : f64, softcap = 5.0 : f64}
      : tensor<2x2x8x16xf32>, tensor<2x1x64x16xf32>, tensor<2x1x64x16xf32>, tensor<2x8x2xi32>, tensor<2x8xi32> -> tensor<2x2x8x16xf32>
  return %o : tensor<2x2x8x16xf32>
}

// -----

// The generated kernels are f32 only: typed refusals (DtypeLowering).
func.func @f16(%q: tensor<1x2x1x16xf16>, %k: tensor<1x2x64x16xf16>, %v: tensor<1x2x64x16xf16>,
               %s: tensor<1x1x8xf16>, %p: tensor<1x1xi32>) -> tensor<1x2x1x16xf16> {
  // expected-error @+1 {{DtypeLowering: the generated block top-k kernel is f32 only, these block scores are 'f16'}}
  %ids = poot.block_topk %s, %p k = 2 block_size = 8 : tensor<1x1x8xf16>, tensor<1x1xi32> -> tensor<1x1x2xi32>
  // expected-error @+1 {{DtypeLowering: the generated selected-attention kernel is f32 only, this op is 'f16'}}
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 8 {scale = 0.25 : f64}
      : tensor<1x2x1x16xf16>, tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16>, tensor<1x1x2xi32>, tensor<1x1xi32> -> tensor<1x2x1x16xf16>
  return %o : tensor<1x2x1x16xf16>
}

// -----

// One lane's state of a 9000-wide value does not fit (AttentionLds).
func.func @wide(%q: tensor<1x2x1x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x9000xf32>,
                %ids: tensor<1x1x2xi32>, %p: tensor<1x1xi32>) -> tensor<1x2x1x9000xf32> {
  // expected-error @+1 {{AttentionLds: one lane's running state for value width 9000 needs 36008 bytes of workgroup memory}}
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 8 {scale = 0.25 : f64}
      : tensor<1x2x1x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x9000xf32>, tensor<1x1x2xi32>, tensor<1x1xi32> -> tensor<1x2x1x9000xf32>
  return %o : tensor<1x2x1x9000xf32>
}
