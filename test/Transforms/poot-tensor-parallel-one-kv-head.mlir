// RUN: poot-opt %s -poot-tensor-parallel="degree=2 rank=1" | FileCheck %s

// One KV head, 4 query heads, 2 ranks. Split into blocks, k's 8 columns
// would be half a head per rank, which RoPE cannot rotate: k and v are held
// whole by both ranks (the head replicated: no shard mark) while q splits
// by heads, so the attention still splits and the output projection sums.
// CHECK-LABEL: func.func @one_kv_head
// CHECK-SAME:  %arg2: tensor<16x16xf32> {poot.shard = #poot.shard<dim = 1, block = 1, parts = 2>}
// CHECK-SAME:  %arg3: tensor<16x8xf32>,
// CHECK-SAME:  %arg4: tensor<16x8xf32>,
// CHECK-SAME:  %arg5: tensor<16x16xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 2>}
// CHECK:       poot.attention {{.*}} : tensor<1x2x1x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x2x1x8xf32>
// CHECK:       poot.all_reduce
func.func @one_kv_head(%pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>},
    %x: tensor<1x1x16xf32>, %wq: tensor<16x32xf32>, %wk: tensor<16x8xf32>, %wv: tensor<16x8xf32>,
    %wo: tensor<32x16xf32>, %cos: tensor<8xf32>, %sin: tensor<8xf32>,
    %k0: tensor<1x1x8x8xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">},
    %v0: tensor<1x1x8x8xf32> {poot.name = "v", poot.slot = #poot.slot<state "v">})
    -> (tensor<1x1x8x8xf32> {poot.slot = #poot.slot<state "k">},
        tensor<1x1x8x8xf32> {poot.slot = #poot.slot<state "v">}, tensor<1x1x16xf32>) {
  %q = poot.matmul %x, %wq : (tensor<1x1x16xf32>, tensor<16x32xf32>) -> tensor<1x1x32xf32>
  %q1 = poot.reshape %q : tensor<1x1x32xf32> -> tensor<1x1x4x8xf32>
  %q2 = poot.transpose %q1 perm = [0, 2, 1, 3] : tensor<1x1x4x8xf32> -> tensor<1x4x1x8xf32>
  %qr = poot.rope %q2, %cos, %sin : tensor<1x4x1x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x4x1x8xf32>
  %k = poot.matmul %x, %wk : (tensor<1x1x16xf32>, tensor<16x8xf32>) -> tensor<1x1x8xf32>
  %k1 = poot.reshape %k : tensor<1x1x8xf32> -> tensor<1x1x1x8xf32>
  %k2 = poot.transpose %k1 perm = [0, 2, 1, 3] : tensor<1x1x1x8xf32> -> tensor<1x1x1x8xf32>
  %kr = poot.rope %k2, %cos, %sin : tensor<1x1x1x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x1x1x8xf32>
  %v = poot.matmul %x, %wv : (tensor<1x1x16xf32>, tensor<16x8xf32>) -> tensor<1x1x8xf32>
  %v1 = poot.reshape %v : tensor<1x1x8xf32> -> tensor<1x1x1x8xf32>
  %v2 = poot.transpose %v1 perm = [0, 2, 1, 3] : tensor<1x1x1x8xf32> -> tensor<1x1x1x8xf32>
  %kc = poot.dynamic_update_slice %k0, %kr, %pos axis = 2 : tensor<1x1x8x8xf32>, tensor<1x1x1x8xf32>, tensor<i32>
  %vc = poot.dynamic_update_slice %v0, %v2, %pos axis = 2 : tensor<1x1x8x8xf32>, tensor<1x1x1x8xf32>, tensor<i32>
  %a = poot.attention %qr, %kc, %vc {scale = 0.35 : f64} : tensor<1x4x1x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x4x1x8xf32>
  %a1 = poot.transpose %a perm = [0, 2, 1, 3] : tensor<1x4x1x8xf32> -> tensor<1x1x4x8xf32>
  %a2 = poot.reshape %a1 : tensor<1x1x4x8xf32> -> tensor<1x1x32xf32>
  %o = poot.matmul %a2, %wo : (tensor<1x1x32xf32>, tensor<32x16xf32>) -> tensor<1x1x16xf32>
  return %kc, %vc, %o : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x16xf32>
}
