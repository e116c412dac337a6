// RUN: poot-opt %s -split-input-file -verify-diagnostics -poot-tensor-parallel="degree=2 rank=1" | FileCheck %s

// A SwiGLU MLP: gate and up meet at their product, so they split by
// columns together; down reads rank 1's rows and the ranks' partial
// products are summed. The residual input stays whole.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME:  %arg1: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 1, block = 1, parts = 2>}
// CHECK-SAME:  %arg2: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 1, block = 1, parts = 2>}
// CHECK-SAME:  %arg3: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 2>}
// CHECK-SAME:  poot.tensor_parallel = #poot.tensor_parallel<rank = 1, degree = 2>
// CHECK:       %[[G:.*]] = poot.matmul %arg0, %arg1 : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
// CHECK:       %[[S:.*]] = poot.logistic %[[G]] : tensor<1x8xf32>
// CHECK:       %[[D:.*]] = poot.matmul %{{.*}}, %arg3 : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:  %[[R:.*]] = poot.all_reduce %[[D]] : tensor<1x8xf32>
// CHECK-NEXT:  %[[Y:.*]] = poot.add %arg0, %[[R]]
// CHECK-NEXT:  return %[[Y]]
func.func @mlp(%x: tensor<1x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>,
               %wd: tensor<16x8xf32>) -> tensor<1x8xf32> {
  %g = poot.matmul %x, %wg : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
  %s = poot.logistic %g : tensor<1x16xf32>
  %a = poot.mul %g, %s : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
  %u = poot.matmul %x, %wu : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
  %h = poot.mul %a, %u : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
  %d = poot.matmul %h, %wd : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  %y = poot.add %x, %d : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}

// -----

// Torch's layout: y = x @ W.T with W [out, in] (the weight splits along its
// rows, dim 0), a bias argument splits with the columns, and a replicated
// constant scale along them is read as rank 1's block.
// CHECK-LABEL: func.func @transposed_weight
// CHECK-SAME:  %arg1: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 2>}
// CHECK-SAME:  %arg2: tensor<8xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 2>}
// CHECK-SAME:  %arg3: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 2>}
// CHECK:       %[[C:.*]] = poot.constant
// CHECK:       poot.transpose %arg1 perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK:       %[[B:.*]] = poot.slice %[[C]] [8] to [16] step [1] : tensor<16xf32> -> tensor<8xf32>
// CHECK:       poot.mul %{{.*}}, %[[B]]
// CHECK:       poot.all_reduce
func.func @transposed_weight(%x: tensor<1x8xf32>, %w: tensor<16x8xf32>, %bias: tensor<16xf32>,
                             %wd: tensor<16x8xf32>) -> tensor<1x8xf32> {
  %c = poot.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]> : tensor<16xf32>
  %wt = poot.transpose %w perm = [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %h = poot.matmul %x, %wt : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
  %hb = poot.add %h, %bias : (tensor<1x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
  %hs = poot.mul %hb, %c : (tensor<1x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
  %d = poot.matmul %hs, %wd : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  return %d : tensor<1x8xf32>
}

// -----

// Logits are a result, not a state: the lm_head stays whole, with a remark.
// CHECK-LABEL: func.func @lm_head
// CHECK-SAME:  (%arg0: tensor<1x8xf32>, %arg1: tensor<8x32xf32>) -> tensor<1x32xf32>
// CHECK-NOT:   poot.all_reduce
// expected-warning @+1 {{nothing splits over 2 ranks: every rank runs the whole step}}
func.func @lm_head(%x: tensor<1x8xf32>, %w: tensor<8x32xf32>) -> tensor<1x32xf32> {
  // expected-remark @below {{stays whole on every rank: func.return: result #0 would be split (only a state may be)}}
  %l = poot.matmul %x, %w : (tensor<1x8xf32>, tensor<8x32xf32>) -> tensor<1x32xf32>
  return %l : tensor<1x32xf32>
}

// -----

// A norm over the columns between the projections: no rule splits a
// reduction over the split dimension, so the group stays whole.
// CHECK-LABEL: func.func @norm_between
// CHECK-NOT:   poot.shard
// expected-warning @+1 {{nothing splits over 2 ranks: every rank runs the whole step}}
func.func @norm_between(%x: tensor<1x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<1x8xf32> {
  // expected-remark @below {{stays whole on every rank: poot.reduce: reduces over the split dimension}}
  %h = poot.matmul %x, %w1 : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
  %s = poot.reduce sum %h axis = 1 keepdim : tensor<1x16xf32> -> tensor<1x1xf32>
  %n = poot.div %h, %s : (tensor<1x16xf32>, tensor<1x1xf32>) -> tensor<1x16xf32>
  %d = poot.matmul %n, %w2 : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  return %d : tensor<1x8xf32>
}


// -----

// A packed projection (Phi-3's gate_up_proj): the weight is two segments,
// gate and up, and each rank takes its block of each. The slices that take
// them apart take the rank's block instead.
// CHECK-LABEL: func.func @packed_gate_up
// CHECK-SAME:  %arg1: tensor<8x16xf32> {poot.shard = #poot.shard<dim = 1, block = 1, parts = 2, segments = [16, 16]>}
// CHECK-SAME:  %arg2: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 2>}
// CHECK:       poot.slice %{{.*}} [0, 0] to [1, 8] step [1, 1] : tensor<1x16xf32> -> tensor<1x8xf32>
// CHECK:       poot.slice %{{.*}} [0, 8] to [1, 16] step [1, 1] : tensor<1x16xf32> -> tensor<1x8xf32>
// CHECK:       poot.all_reduce
func.func @packed_gate_up(%x: tensor<1x8xf32>, %wgu: tensor<8x32xf32>, %wd: tensor<16x8xf32>) -> tensor<1x8xf32> {
  %gu = poot.matmul %x, %wgu : (tensor<1x8xf32>, tensor<8x32xf32>) -> tensor<1x32xf32>
  %g = poot.slice %gu [0, 0] to [1, 16] step [1, 1] : tensor<1x32xf32> -> tensor<1x16xf32>
  %u = poot.slice %gu [0, 16] to [1, 32] step [1, 1] : tensor<1x32xf32> -> tensor<1x16xf32>
  %s = poot.logistic %g : tensor<1x16xf32>
  %a = poot.mul %g, %s : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
  %h = poot.mul %a, %u : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
  %d = poot.matmul %h, %wd : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  return %d : tensor<1x8xf32>
}

// -----

// A projection reading a closing contraction's (summed, replicated) result
// starts a group of its own: two MLPs back to back both split.
// CHECK-LABEL: func.func @two_mlps
// CHECK-COUNT-2: poot.all_reduce
func.func @two_mlps(%x: tensor<1x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>,
                    %w3: tensor<8x16xf32>, %w4: tensor<16x8xf32>) -> tensor<1x8xf32> {
  %a = poot.matmul %x, %w1 : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
  %b = poot.logistic %a : tensor<1x16xf32>
  %c = poot.matmul %b, %w2 : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  %d = poot.matmul %c, %w3 : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
  %e = poot.logistic %d : tensor<1x16xf32>
  %f = poot.matmul %e, %w4 : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  return %f : tensor<1x8xf32>
}
