// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-cpu-vectorize-matmuls{vector-width=16 min-parallel-work=100000}))" | FileCheck %s

// A linear layer: output tiles of 1 x 64 (4 vectors) in a parallel loop,
// K in steps of 16, each tile one vector.contract.
// CHECK-LABEL: func.func @linear
// CHECK: scf.parallel ({{.*}}) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %c64{{.*}})
// CHECK: scf.for {{.*}} step %c16{{.*}}
// CHECK: vector.contract {{.*}} vector<1x16xf32>, vector<16x64xf32> into vector<1x64xf32>
// CHECK: vector.transfer_write {{.*}} vector<1x64xf32>
// CHECK-NOT: linalg.matmul
func.func @linear(%x: memref<1x512xf32>, %w: memref<512x1024xf32>, %y: memref<1x1024xf32>) {
  linalg.matmul ins(%x, %w : memref<1x512xf32>, memref<512x1024xf32>) outs(%y : memref<1x1024xf32>)
  return
}

// Below min-parallel-work the tiles run in a serial loop; N = 97 (prime)
// gives one-column tiles, M = 6 three-row tiles (the largest divisor <= 4).
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: vector.contract {{.*}} into vector<3x1xf32>
func.func @small(%x: memref<6x8xf32>, %w: memref<8x97xf32>, %y: memref<6x97xf32>) {
  linalg.matmul ins(%x, %w : memref<6x8xf32>, memref<8x97xf32>) outs(%y : memref<6x97xf32>)
  return
}
