// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-cpu-vectorize-matmuls{vector-width=16 min-parallel-work=100000}))" | FileCheck %s

// A linear layer: output tiles of 1 x 64 (4 vectors) in a parallel loop,
// K in steps of 16, each tile one vector.contract.
// CHECK-LABEL: func.func @linear
// CHECK: scf.forall ({{.*}}) = (0, 0) to (1, 1024) step (1, 64)
// CHECK: scf.for {{.*}} step %c16
// CHECK: vector.contract {{.*}} vector<1x16xf32>, vector<16x64xf32> into vector<1x64xf32>
// CHECK-NOT: linalg.matmul
func.func @linear(%x: tensor<1x512xf32>, %w: tensor<512x1024xf32>) -> tensor<1x1024xf32> {
  %c = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = linalg.fill ins(%c : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x512xf32>, tensor<512x1024xf32>) outs(%z : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %y : tensor<1x1024xf32>
}

// Below min-parallel-work the tiles run in a serial loop; N = 97 (prime)
// gives one-column tiles, M = 6 two... three-row tiles (the largest divisor <= 4).
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.forall
// CHECK: scf.for
// CHECK: vector.contract {{.*}} into vector<3x1xf32>
func.func @small(%x: tensor<6x8xf32>, %w: tensor<8x97xf32>) -> tensor<6x97xf32> {
  %c = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x97xf32>
  %z = linalg.fill ins(%c : f32) outs(%e : tensor<6x97xf32>) -> tensor<6x97xf32>
  %y = linalg.matmul ins(%x, %w : tensor<6x8xf32>, tensor<8x97xf32>) outs(%z : tensor<6x97xf32>) -> tensor<6x97xf32>
  return %y : tensor<6x97xf32>
}
