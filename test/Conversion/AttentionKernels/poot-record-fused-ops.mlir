// RUN: poot-opt %s --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64" --poot-record-fused-ops | FileCheck %s
// RUN: not poot-opt %s --poot-record-fused-ops 2>&1 | FileCheck %s --check-prefix=UNPLANNED

// Before planning, a fused op has no request to record: an error.
// UNPLANNED: model.py:12:5: error: poot.attention has no planned request: run poot-plan-attention before poot-record-fused-ops

// Every fused op, in program order, gets its number, and the module one
// JSON record per op: kind, the planned request's parameters (integers,
// enums by keyword), scale (not for block_topk), source location.
// CHECK: module attributes {poot.fused_ops = [
// CHECK-SAME: "{\22location\22:\22model.py:12:5\22,\22op\22:\22attention\22,\22request\22:{\22batch\22:1,\22chunk\22:128,\22grid_x\22:16,\22grid_y\22:1,\22key_bound\22:\22capacity\22,\22key_len\22:512,\22key_width\22:16,\22kv_heads\22:2,\22lanes\22:64,\22mask\22:\22none\22,\22q_heads\22:4,\22q_len\22:1,\22schedule\22:\22split_kv\22,\22shared_width\22:0,\22splits\22:4,\22transform\22:\22scale\22,\22value_width\22:16},\22scale\22:0.25}"
// CHECK-SAME: "{\22location\22:\22<string>:3:1\22,\22op\22:\22block_topk\22,\22request\22:{\22batch\22:1,\22block_size\22:8,\22blocks\22:8,\22grid_x\22:4,\22grid_y\22:1,\22k\22:2,\22lanes\22:8,\22q_len\22:4,\22schedule\22:\22streaming\22}}"
// CHECK-SAME: "{\22op\22:\22selected_attention\22,\22request\22:{\22batch\22:1,
// CHECK-SAME: \22scale\22:0.5}"]}
// CHECK: poot.attention {{.*}}poot.fused = 0 : i64
// CHECK: poot.block_topk {{.*}}poot.fused = 1 : i64
// CHECK: poot.selected_attention {{.*}}poot.fused = 2 : i64
func.func @step(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x512x16xf32>, %v: tensor<1x2x512x16xf32>,
                %s: tensor<1x4x8xf32>, %p: tensor<1x4xi32>, %q2: tensor<1x2x4x16xf32>,
                %k2: tensor<1x2x64x16xf32>, %v2: tensor<1x2x64x16xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x2x4x16xf32>) {
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x16xf32>, tensor<1x2x512x16xf32>, tensor<1x2x512x16xf32> -> tensor<1x4x1x16xf32> loc("model.py":12:5)
  %ids = poot.block_topk %s, %p k = 2 block_size = 8 : tensor<1x4x8xf32>, tensor<1x4xi32> -> tensor<1x4x2xi32> loc("-":3:1)
  %o2 = poot.selected_attention %q2, %k2, %v2, %ids, %p block_size = 8 {scale = 0.5 : f64} : tensor<1x2x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x4x2xi32>, tensor<1x4xi32> -> tensor<1x2x4x16xf32> loc(unknown)
  return %o, %o2 : tensor<1x4x1x16xf32>, tensor<1x2x4x16xf32>
}
