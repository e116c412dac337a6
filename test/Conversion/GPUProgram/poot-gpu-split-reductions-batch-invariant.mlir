// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{jam-rows=8}))" | FileCheck %s
// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{jam-rows=8 batch-invariant=1}))" | FileCheck %s --check-prefix=BI

// batch-invariant: each op's ratio is chosen for one row (issue 24), so a
// row is summed in the same chunks whatever batch it is packed into.

// One row: 256 threads of 4 columns, min(131072 / 256, 4096 / 32) = 128
// splits, with the option or without.
// CHECK-LABEL: func.func @one_row
// CHECK: } -> tensor<128x1x1024xf32>
// BI-LABEL: func.func @one_row
// BI: } -> tensor<128x1x1024xf32>
func.func @one_row(%x: tensor<1x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<1x1024xf32> {
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %o : tensor<1x1024xf32>
}

// The same row in a batch of 16: by default 8 rows a thread (jam-rows) and
// the partials capped at a quarter of the weight: 64 splits. Batch-invariant:
// the rows (the loop the weight does not index) count as 1 and nothing caps
// the partials: 128 splits, as alone.
// CHECK-LABEL: func.func @batched
// CHECK: } -> tensor<64x16x1024xf32>
// BI-LABEL: func.func @batched
// BI: } -> tensor<128x16x1024xf32>
func.func @batched(%x: tensor<16x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<16x1024xf32> {
  %e = tensor.empty() : tensor<16x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<16x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  return %o : tensor<16x1024xf32>
}

// A row sum over 8192 rows (a norm's sum of squares: each output reduces
// data of its own, so every parallel loop is a row). By default 2048
// threads (8192 / 4 columns): min(131072 / 2048, 4096 / 32) = 64 splits;
// one row alone would get 128. Batch-invariant: 128, as one row.
// CHECK-LABEL: func.func @row_sums
// CHECK: } -> tensor<64x8192xf32>
// BI-LABEL: func.func @row_sums
// BI: } -> tensor<128x8192xf32>
func.func @row_sums(%x: tensor<8192x4096xf32>) -> tensor<8192xf32> {
  %e = tensor.empty() : tensor<8192xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<8192xf32>) -> tensor<8192xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8192x4096xf32>) outs(%i : tensor<8192xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.mulf %a, %a : f32
    %t = arith.addf %s, %acc : f32
    linalg.yield %t : f32
  } -> tensor<8192xf32>
  return %o : tensor<8192xf32>
}

// The same sum for one row: 128 splits either way.
// CHECK-LABEL: func.func @row_sum_one
// CHECK: } -> tensor<128x1xf32>
// BI-LABEL: func.func @row_sum_one
// BI: } -> tensor<128x1xf32>
func.func @row_sum_one(%x: tensor<1x4096xf32>) -> tensor<1xf32> {
  %e = tensor.empty() : tensor<1xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1xf32>) -> tensor<1xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<1x4096xf32>) outs(%i : tensor<1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.mulf %a, %a : f32
    %t = arith.addf %s, %acc : f32
    linalg.yield %t : f32
  } -> tensor<1xf32>
  return %o : tensor<1xf32>
}
