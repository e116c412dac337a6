// RUN: poot-opt %s -poot-tensor-parallel="degree=4 rank=1" | FileCheck %s

// Decode attention with a KV cache as state: 8 query heads on 2 KV heads
// over 4 ranks. q/k/v split by heads; each KV head is held by two ranks
// (parts = 2: rank 1 holds KV head 0), the cache state with it, and the
// output projection reads rank 1's rows of wo.
// CHECK-LABEL: func.func @decode_attention
// CHECK-SAME:  %arg2: tensor<16x4xf32> {poot.shard = #poot.shard<dim = 1, block = 1, parts = 4>}
// CHECK-SAME:  %arg3: tensor<16x2xf32> {poot.shard = #poot.shard<dim = 1, block = 0, parts = 2>}
// CHECK-SAME:  %arg4: tensor<16x2xf32> {poot.shard = #poot.shard<dim = 1, block = 0, parts = 2>}
// CHECK-SAME:  %arg5: tensor<4x16xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 4>}
// CHECK-SAME:  %arg6: tensor<1x1x8x2xf32> {poot.name = "k", poot.shard = #poot.shard<dim = 1, block = 0, parts = 2>, poot.slot = #poot.slot<state "k">}
// CHECK-SAME:  -> (tensor<1x1x8x2xf32> {poot.shard = #poot.shard<dim = 1, block = 0, parts = 2>, poot.slot = #poot.slot<state "k">}
// CHECK:       poot.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64} : tensor<1x2x1x2xf32>, tensor<1x1x8x2xf32>, tensor<1x1x8x2xf32> -> tensor<1x2x1x2xf32>
// CHECK:       %[[P:.*]] = poot.matmul %{{.*}}, %arg5 : (tensor<1x1x4xf32>, tensor<4x16xf32>) -> tensor<1x1x16xf32>
// CHECK-NEXT:  poot.all_reduce %[[P]] : tensor<1x1x16xf32>
func.func @decode_attention(%pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>},
    %x: tensor<1x1x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x4xf32>, %wv: tensor<16x4xf32>,
    %wo: tensor<16x16xf32>,
    %k0: tensor<1x2x8x2xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">},
    %v0: tensor<1x2x8x2xf32> {poot.name = "v", poot.slot = #poot.slot<state "v">})
    -> (tensor<1x2x8x2xf32> {poot.slot = #poot.slot<state "k">},
        tensor<1x2x8x2xf32> {poot.slot = #poot.slot<state "v">}, tensor<1x1x16xf32>) {
  %q = poot.matmul %x, %wq : (tensor<1x1x16xf32>, tensor<16x16xf32>) -> tensor<1x1x16xf32>
  %q1 = poot.reshape %q : tensor<1x1x16xf32> -> tensor<1x1x8x2xf32>
  %q2 = poot.transpose %q1 perm = [0, 2, 1, 3] : tensor<1x1x8x2xf32> -> tensor<1x8x1x2xf32>
  %k = poot.matmul %x, %wk : (tensor<1x1x16xf32>, tensor<16x4xf32>) -> tensor<1x1x4xf32>
  %k1 = poot.reshape %k : tensor<1x1x4xf32> -> tensor<1x1x2x2xf32>
  %k2 = poot.transpose %k1 perm = [0, 2, 1, 3] : tensor<1x1x2x2xf32> -> tensor<1x2x1x2xf32>
  %v = poot.matmul %x, %wv : (tensor<1x1x16xf32>, tensor<16x4xf32>) -> tensor<1x1x4xf32>
  %v1 = poot.reshape %v : tensor<1x1x4xf32> -> tensor<1x1x2x2xf32>
  %v2 = poot.transpose %v1 perm = [0, 2, 1, 3] : tensor<1x1x2x2xf32> -> tensor<1x2x1x2xf32>
  %kc = poot.dynamic_update_slice %k0, %k2, %pos axis = 2 : tensor<1x2x8x2xf32>, tensor<1x2x1x2xf32>, tensor<i32>
  %vc = poot.dynamic_update_slice %v0, %v2, %pos axis = 2 : tensor<1x2x8x2xf32>, tensor<1x2x1x2xf32>, tensor<i32>
  %a = poot.attention %q2, %kc, %vc {scale = 0.5 : f64} : tensor<1x8x1x2xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x2xf32> -> tensor<1x8x1x2xf32>
  %a1 = poot.transpose %a perm = [0, 2, 1, 3] : tensor<1x8x1x2xf32> -> tensor<1x1x8x2xf32>
  %a2 = poot.reshape %a1 : tensor<1x1x8x2xf32> -> tensor<1x1x16xf32>
  %o = poot.matmul %a2, %wo : (tensor<1x1x16xf32>, tensor<16x16xf32>) -> tensor<1x1x16xf32>
  return %kc, %vc, %o : tensor<1x2x8x2xf32>, tensor<1x2x8x2xf32>, tensor<1x1x16xf32>
}
