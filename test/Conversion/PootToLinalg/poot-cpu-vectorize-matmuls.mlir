// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-cpu-vectorize-matmuls{vector-width=16 min-parallel-work=100000 compute-units=2}))" | FileCheck %s

// A decode linear layer, weight [K, N]: the weight streamed. A parallel loop
// over 2 column chunks of 512 (one per thread), K in steps of 8 inside it
// (8 weight rows read side by side),
// then the chunk's 1 x 64 tiles (4 vectors), each one vector.contract.
// CHECK-LABEL: func.func @linear
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%c512{{.*}})
// CHECK: scf.for {{.*}} step %c8{{.*}}
// CHECK: scf.for {{.*}} step %c64{{.*}}
// CHECK: vector.contract {{.*}} vector<1x8xf32>, vector<8x64xf32> into vector<1x64xf32>
// CHECK: vector.transfer_write {{.*}} vector<1x64xf32>
// CHECK-NOT: linalg.matmul
func.func @linear(%x: memref<1x512xf32>, %w: memref<512x1024xf32>, %y: memref<1x1024xf32>) {
  linalg.matmul ins(%x, %w : memref<1x512xf32>, memref<512x1024xf32>) outs(%y : memref<1x1024xf32>)
  return
}

// Batched decode (16 rows): every row inside each chunk, so the weight is
// read once, not once per 4-row tile. 16 x chunk x 4 bytes <= 32 KiB gives
// chunks of 512 columns (2 per thread); K in bands of 128 rows, in each the
// 64-column tiles (outer) take the four 4-row tiles (inner), and each tile
// runs its 16 steps of 8 rows with the 4 x 64 output tile in registers:
// read before the K loop, carried through it, written after it.
// CHECK-LABEL: func.func @rows16
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%c512{{.*}})
// CHECK: scf.for {{.*}} step %c128{{.*}}
// CHECK: scf.for {{.*}} step %c64{{.*}}
// CHECK: scf.for {{.*}} step %c4{{.*}}
// CHECK: %[[ACC:.*]] = vector.transfer_read %arg2{{.*}} : memref<16x2048xf32>, vector<4x64xf32>
// CHECK: %[[SUM:.*]] = scf.for {{.*}} step %c8{{.*}} iter_args(%[[A:.*]] = %[[ACC]]) -> (vector<4x64xf32>)
// CHECK-NOT: vector.transfer_write
// CHECK: vector.contract {{.*}}, %[[A]] : vector<4x8xf32>, vector<8x64xf32> into vector<4x64xf32>
// CHECK: scf.yield
// CHECK: vector.transfer_write %[[SUM]], %arg2
func.func @rows16(%x: memref<16x256xf32>, %w: memref<256x2048xf32>, %y: memref<16x2048xf32>) {
  linalg.matmul ins(%x, %w : memref<16x256xf32>, memref<256x2048xf32>) outs(%y : memref<16x2048xf32>)
  return
}

// More rows than max-stream-rows (prefill): a parallel loop over 64-column
// strips, K bands of 16 * TK = 256 rows, the strip's 4 x 64 row tiles in
// each band, every tile's output in registers through the band's K loop.
// CHECK-LABEL: func.func @prefill
// CHECK: scf.parallel ({{.*}}) = (%{{.*}}) to (%{{.*}}) step (%c64{{.*}})
// CHECK: scf.for {{.*}} step %c256{{.*}}
// CHECK: scf.for {{.*}} step %c4{{.*}}
// CHECK: %[[ACC:.*]] = vector.transfer_read %arg2{{.*}} : memref<64x256xf32>, vector<4x64xf32>
// CHECK: %[[SUM:.*]] = scf.for {{.*}} step %c16{{.*}} iter_args(%[[A:.*]] = %[[ACC]]) -> (vector<4x64xf32>)
// CHECK-NOT: vector.transfer_write
// CHECK: vector.contract {{.*}}, %[[A]] : vector<4x16xf32>, vector<16x64xf32> into vector<4x64xf32>
// CHECK: scf.yield
// CHECK: vector.transfer_write %[[SUM]], %arg2
func.func @prefill(%x: memref<64x256xf32>, %w: memref<256x256xf32>, %y: memref<64x256xf32>) {
  linalg.matmul ins(%x, %w : memref<64x256xf32>, memref<256x256xf32>) outs(%y : memref<64x256xf32>)
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

// A torch Linear's weight [N, K] (`x @ W.T`: the rhs map (n, k)): each
// output is a dot product of two contiguous rows. One row (M = 1) of 16 KiB
// (K = 4096: more than the 8 KiB kept beside a single stream): 1 x 8
// register tiles (8 weight rows share each lhs load) in a parallel loop
// over N, contiguous 16-lane loads along K, 8 vector accumulators carried
// through the K loop, one horizontal reduction each at the end, added to
// the output. No transfer of a strided weight column, no matmul left.
// CHECK-LABEL: func.func @linear_nk
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%{{.*}}) step (%c8{{.*}})
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c16{{.*}} iter_args(%{{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[K]]] : memref<1x4096xf32>, vector<16xf32>
// CHECK-COUNT-8: vector.load %{{.*}}[%{{.*}}, %[[K]]] : memref<1000x4096xf32>, vector<16xf32>
// CHECK-COUNT-8: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-8: vector.reduction <add>
// CHECK: memref.load %{{.*}} : memref<1x1000xf32>
// CHECK: arith.addf
// CHECK: memref.store
// CHECK-NOT: vector.transfer_read
// CHECK-NOT: linalg.matmul
func.func @linear_nk(%x: memref<1x4096xf32>, %w: memref<1000x4096xf32>, %y: memref<1x1000xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<1x4096xf32>, memref<1000x4096xf32>) outs(%y : memref<1x1000xf32>)
  return
}

// A vocabulary head, K = 520 (a 2 KiB lhs row stays in L1): one weight row
// at a time, the parallel loop over single rows (a thread's rows of W are
// one sequential stream), K in steps of 8 vectors with 8 accumulators on
// consecutive vectors of the row, summed, then one vector (K 512..520 has
// none left: 520 = 4 x 128 + 8) and a scalar loop for the last 8.
// CHECK-LABEL: func.func @head_nk
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%c1{{.*}})
// CHECK: scf.for %{{.*}} = %{{.*}} to %c512{{.*}} step %c128{{.*}} iter_args
// CHECK-COUNT-8: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-7: arith.addf {{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>
// CHECK: scf.for %{{.*}} = %c512{{.*}} to %c520{{.*}} step %c1{{.*}} iter_args
// CHECK: math.fma
func.func @head_nk(%x: memref<1x520xf32>, %w: memref<3000x520xf32>, %y: memref<1x3000xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<1x520xf32>, memref<3000x520xf32>) outs(%y : memref<1x3000xf32>)
  return
}

// Batched rows (M = 6) with bf16 weights, as a linalg.generic with the same
// maps and a widening multiply-add body: 4 x 4 tiles (16 accumulators) plus
// a 2-row remainder tile; bf16 rows loaded as such and widened in registers
// (f32 accumulation); K = 40 is two vectors and a scalar remainder of 8;
// N = 10 is two full 4-column tiles and a 2-column remainder. Small: no
// parallel loop.
// CHECK-LABEL: func.func @rows_bf16
// CHECK-NOT: scf.parallel
// CHECK: vector.load {{.*}} : memref<10x40xbf16>, vector<16xbf16>
// CHECK: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK-COUNT-16: vector.fma
// CHECK: scf.for {{.*}} step %c1{{.*}} iter_args
// CHECK: memref.load {{.*}} : memref<10x40xbf16>
// CHECK: math.fma
// CHECK: vector.load {{.*}} : memref<10x40xbf16>, vector<16xbf16>
// CHECK-COUNT-8: vector.fma
// CHECK-NOT: linalg.generic
#nk_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @rows_bf16(%x: memref<6x40xbf16>, %w: memref<10x40xbf16>, %y: memref<6x10xf32>) {
  linalg.generic {indexing_maps = #nk_maps, iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<6x40xbf16>, memref<10x40xbf16>) outs(%y : memref<6x10xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A transpose that is not [N, K] rows (the lhs read transposed) is left alone.
// CHECK-LABEL: func.func @lhs_transposed
// CHECK: linalg.matmul
func.func @lhs_transposed(%x: memref<512x1xf32>, %w: memref<1000x512xf32>, %y: memref<1x1000xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<512x1xf32>, memref<1000x512xf32>) outs(%y : memref<1x1000xf32>)
  return
}
