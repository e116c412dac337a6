// RUN: poot-opt %s --convert-poot-to-linalg="fold-transposed-rhs=true" --canonicalize | FileCheck %s
// RUN: poot-opt %s --convert-poot-to-linalg | FileCheck %s --check-prefix=DEFAULT

// `x @ W.T` (a torch Linear, W [N, K]): the matmul reads W through the map
// (n, k); no transposed copy of the weight is left. Batch rows of the lhs
// are rows of the matmul as for a [K, N] weight.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: %[[X:.*]]: tensor<2x3x64xf32>, %[[W:.*]]: tensor<96x64xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[X]]
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[ROWS]], %[[W]] : tensor<6x64xf32>, tensor<96x64xf32>)
// DEFAULT-LABEL: func.func @linear
// DEFAULT: linalg.transpose
// DEFAULT: linalg.matmul ins
func.func @linear(%x: tensor<2x3x64xf32>, %w: tensor<96x64xf32>) -> tensor<2x3x96xf32> {
  %wt = poot.transpose %w perm = [1, 0] : tensor<96x64xf32> -> tensor<64x96xf32>
  %y = poot.matmul %x, %wt : (tensor<2x3x64xf32>, tensor<64x96xf32>) -> tensor<2x3x96xf32>
  return %y : tensor<2x3x96xf32>
}

// The transpose has another user: it stays for that one, the matmul still
// reads W directly.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: %[[X:.*]]: tensor<1x64xf32>, %[[W:.*]]: tensor<96x64xf32>
// CHECK: linalg.transpose ins(%[[W]]
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[X]], %[[W]] : tensor<1x64xf32>, tensor<96x64xf32>)
func.func @shared(%x: tensor<1x64xf32>, %w: tensor<96x64xf32>) -> (tensor<1x96xf32>, tensor<64x96xf32>) {
  %wt = poot.transpose %w perm = [1, 0] : tensor<96x64xf32> -> tensor<64x96xf32>
  %y = poot.matmul %x, %wt : (tensor<1x64xf32>, tensor<64x96xf32>) -> tensor<1x96xf32>
  return %y, %wt : tensor<1x96xf32>, tensor<64x96xf32>
}
