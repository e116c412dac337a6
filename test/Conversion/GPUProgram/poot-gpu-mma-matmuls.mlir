// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{mma-rows=8 mma-staged-rows=256}))" --split-input-file | FileCheck %s --check-prefix=SPLIT
// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{mma-rows=8 batch-invariant=1}))" --split-input-file | FileCheck %s --check-prefix=INVARIANT
// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{mma-rows=8 mma-staged-rows=256}),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},poot-gpu-mma-matmuls)" --split-input-file | FileCheck %s --check-prefix=MMA
// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{mma-rows=1 mma-staged-rows=1}),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},poot-gpu-mma-matmuls)" --split-input-file | FileCheck %s --check-prefix=STAGED

// 16 rows of a bf16 linear, torch's [N, K] weight: 16 workgroups of 4
// warps (64 columns each, the warps splitting K in four), split
// min(131072 / 2048, 4096 / 256, 4096 / (8 x 16)) = 16 ways; the partials'
// op is marked and becomes one kernel launch (grid y = the column slices,
// z = the splits), the
// partials' fill folded into it, the warps' sums combined through
// workgroup memory, the combine over the splits left to the CUDA-core
// passes.
// SPLIT-LABEL: func.func @rows16_nk
// SPLIT: linalg.generic {{.*}} ins({{.*}} : tensor<16x16x256xbf16>, tensor<1024x16x256xbf16>) outs({{.*}} : tensor<16x16x1024xf32>) attrs = {poot.mma_matmul = "direct"}
// SPLIT: linalg.generic {{.*}} ins({{.*}} : tensor<16x16x1024xf32>)
// SPLIT-NOT: poot.mma_matmul
// INVARIANT-LABEL: func.func @rows16_nk
// INVARIANT-NOT: poot.mma_matmul
// MMA-LABEL: func.func @rows16_nk
// MMA-NOT: linalg.fill ins({{.*}}) outs({{.*}} : memref<16x16x1024xf32>)
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%{{.*}} : memref<262144xf32>, %{{.*}} : memref<4194304xbf16>, %{{.*}} : memref<65536xbf16>)
// MMA: linalg.generic {{.*}} ins(%{{.*}} : memref<16x16x1024xf32>)
// MMA: gpu.module @poot_mma_matmuls
// MMA: gpu.func @mma_matmul_0({{.*}}) workgroup({{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// MMA: scf.for
// MMA: vector.load {{.*}} {alignment = 16 : i64} : memref<4194304xbf16>, vector<8xbf16>
// MMA: nvvm.mma.sync
// MMA: gpu.barrier
func.func @rows16_nk(%x: tensor<16x4096xbf16>, %w: tensor<1024x4096xbf16>) -> tensor<16x1024xf32> {
  %e = tensor.empty() : tensor<16x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %o = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<16x4096xbf16>, tensor<1024x4096xbf16>) outs(%i : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  return %o : tensor<16x1024xf32>
}

// -----

// 64 rows and a fused prologue (the lhs is x * s, a per-row scale, rounded
// to bf16), [K, N] weight. 16 workgroups, 1 row block; the partials cap is
// 1024 / (8 x 64) = 2. The prologue is computed once into a bf16 buffer of
// its own (loops but the columns, k last) before the kernel, which loads
// it in vectors.
// SPLIT-LABEL: func.func @rows64_prologue
// SPLIT: outs({{.*}} : tensor<2x64x1024xf32>) attrs = {poot.mma_matmul = "direct"}
// MMA-LABEL: func.func @rows64_prologue
// MMA: %[[LHS:.*]] = memref.alloc() : memref<2x64x512xbf16>
// MMA: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins({{.*}} : memref<64x2x512xbf16>, memref<64xf32>) outs(%[[LHS]] : memref<2x64x512xbf16>)
// MMA: arith.mulf
// MMA: arith.truncf
// MMA: %[[FLAT:.*]] = memref.collapse_shape %[[LHS]]
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%{{.*}} : memref<131072xf32>, %{{.*}} : memref<1048576xbf16>, %[[FLAT]] : memref<65536xbf16>)
func.func @rows64_prologue(%x: tensor<64x1024xbf16>, %s: tensor<64xf32>, %w: tensor<1024x1024xbf16>) -> tensor<64x1024xf32> {
  %e = tensor.empty() : tensor<64x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%x, %s, %w : tensor<64x1024xbf16>, tensor<64xf32>, tensor<1024x1024xbf16>) outs(%i : tensor<64x1024xf32>) {
  ^bb0(%a: bf16, %sc: f32, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %scaled = arith.mulf %a32, %sc : f32
    %r = arith.truncf %scaled : f32 to bf16
    %l = arith.extf %r : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %l, %b32 : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  } -> tensor<64x1024xf32>
  return %o : tensor<64x1024xf32>
}

// -----

// Two matmuls of one input through one prologue (q and k of one scaled x,
// as an importer that fuses the norm into each projection leaves them):
// one materialized buffer, computed once, read by both kernels.
// MMA-LABEL: func.func @shared_prologue
// MMA: %[[LHS:.*]] = memref.alloc() : memref<2x64x512xbf16>
// MMA: linalg.generic {{.*}} outs(%[[LHS]] : memref<2x64x512xbf16>)
// MMA: %[[A:.*]] = memref.collapse_shape %[[LHS]]
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0 {{.*}} %[[A]] : memref<65536xbf16>)
// MMA-NOT: memref<2x64x512xbf16>)
// MMA: %[[B:.*]] = memref.collapse_shape %[[LHS]]
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_1 {{.*}} %[[B]] : memref<65536xbf16>)
#scaled_x = affine_map<(m, n, k) -> (m, k)>
#scale = affine_map<(m, n, k) -> (m)>
#weight_kn = affine_map<(m, n, k) -> (k, n)>
#sums = affine_map<(m, n, k) -> (m, n)>
func.func @shared_prologue(%x: tensor<64x1024xbf16>, %s: tensor<64xf32>, %wq: tensor<1024x1024xbf16>,
                           %wk: tensor<1024x1024xbf16>) -> (tensor<64x1024xf32>, tensor<64x1024xf32>) {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64x1024xf32>
  %i0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %q = linalg.generic {indexing_maps = [#scaled_x, #scale, #weight_kn, #sums],
                       iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%x, %s, %wq : tensor<64x1024xbf16>, tensor<64xf32>, tensor<1024x1024xbf16>) outs(%i0 : tensor<64x1024xf32>) {
  ^bb0(%a: bf16, %sc: f32, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %scaled = arith.mulf %a32, %sc : f32
    %r = arith.truncf %scaled : f32 to bf16
    %l = arith.extf %r : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %l, %b32 : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  } -> tensor<64x1024xf32>
  %e1 = tensor.empty() : tensor<64x1024xf32>
  %i1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %k = linalg.generic {indexing_maps = [#scaled_x, #scale, #weight_kn, #sums],
                       iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%x, %s, %wk : tensor<64x1024xbf16>, tensor<64xf32>, tensor<1024x1024xbf16>) outs(%i1 : tensor<64x1024xf32>) {
  ^bb0(%a: bf16, %sc: f32, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %scaled = arith.mulf %a32, %sc : f32
    %r = arith.truncf %scaled : f32 to bf16
    %l = arith.extf %r : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %l, %b32 : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  } -> tensor<64x1024xf32>
  return %q, %k : tensor<64x1024xf32>, tensor<64x1024xf32>
}

// -----

// 512 rows (a prefill chunk) over columns that are not whole 128-column
// tiles: the reduction stays whole (cap 512 / (8 x 512) < 2), and each
// workgroup's 4 warps take 64-row tiles of their own over all of K
// (MmaWorkgroupShape): 2 row blocks of 256, no workgroup memory, no
// barrier, every warp storing its own rows.
// SPLIT-LABEL: func.func @rows512_row_warps
// SPLIT: linalg.matmul {{.*}} {poot.mma_matmul = "direct"} ins
// MMA-LABEL: func.func @rows512_row_warps
// MMA: %[[TWO:.*]] = arith.constant 2 : index
// MMA: %[[FIVE:.*]] = arith.constant 5 : index
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0 blocks in (%[[TWO]], %[[FIVE]], %{{.*}})
// MMA: gpu.func @mma_matmul_0(%{{[^)]*}}) kernel
// MMA-NOT: gpu.barrier
// MMA: nvvm.mma.sync
// MMA-NOT: gpu.barrier
// MMA: gpu.return
func.func @rows512_row_warps(%x: tensor<512x512xbf16>, %w: tensor<320x512xbf16>) -> tensor<512x320xf32> {
  %e = tensor.empty() : tensor<512x320xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<512x320xf32>) -> tensor<512x320xf32>
  %o = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<512x512xbf16>, tensor<320x512xbf16>) outs(%i : tensor<512x320xf32>) -> tensor<512x320xf32>
  return %o : tensor<512x320xf32>
}

// -----

// 500 rows over whole 128-column tiles: the staged kernel (MmaStagedKernel
// .cpp). A workgroup owns 128 x 128 of the output: 4 row blocks (the last
// partial) x 2 column blocks. 48 KB of workgroup memory (3 buffers of a
// 128 x 32 lhs tile and a 32-deep weight tile); two steps issued by
// cp.async before the walk, zero bytes for rows past the end; in the walk
// a wait for all but the newest group, a barrier, the next copies, then
// ldmatrix (non-transposed: the [N, K] weight's rows are B's columns) and
// 64 mmas a step; stores guarded by the row.
// MMA-LABEL: func.func @rows500_staged
// MMA: %[[FOUR:.*]] = arith.constant 4 : index
// MMA: %[[TWO:.*]] = arith.constant 2 : index
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0 blocks in (%[[FOUR]], %[[TWO]], %{{.*}}) threads in (%{{.*}} : memref<128000xf32>
// MMA: gpu.func @mma_matmul_0(%{{[^)]*}}) workgroup(%{{.*}} : memref<12288xi32, #gpu.address_space<workgroup>>) kernel
// MMA: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg, %{{.*}} :
// MMA: nvvm.cp.async.commit.group
// MMA: nvvm.cp.async.commit.group
// MMA: scf.for
// MMA: nvvm.cp.async.wait.group 1
// MMA-NEXT: gpu.barrier
// MMA: scf.if
// MMA: nvvm.cp.async.shared.global
// MMA: nvvm.cp.async.commit.group
// MMA: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// MMA: nvvm.mma.sync
// MMA: scf.yield
// MMA: scf.if
// MMA: memref.store
// MMA: gpu.return
func.func @rows500_staged(%x: tensor<500x512xbf16>, %w: tensor<256x512xbf16>) -> tensor<500x256xf32> {
  %e = tensor.empty() : tensor<500x256xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<500x256xf32>) -> tensor<500x256xf32>
  %o = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<500x512xbf16>, tensor<256x512xbf16>) outs(%i : tensor<500x256xf32>) -> tensor<500x256xf32>
  return %o : tensor<500x256xf32>
}

// -----

// A [K, N] weight in the staged kernel: whole row blocks (no byte counts
// on the copies), the weight's fragments by ldmatrix.trans.
// MMA-LABEL: func.func @rows256_staged_kn
// MMA: gpu.func @mma_matmul_0
// MMA-NOT: cache = cg, %
// MMA: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>
// MMA: gpu.return
func.func @rows256_staged_kn(%x: tensor<256x512xbf16>, %w: tensor<512x128xbf16>) -> tensor<256x128xf32> {
  %e = tensor.empty() : tensor<256x128xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<256x128xf32>) -> tensor<256x128xf32>
  %o = linalg.matmul ins(%x, %w : tensor<256x512xbf16>, tensor<512x128xbf16>) outs(%i : tensor<256x128xf32>) -> tensor<256x128xf32>
  return %o : tensor<256x128xf32>
}

// -----

// The sums' one elementwise consumer (r + bf16(sums), rounded) runs in the
// kernel on the sums in registers (MmaEpilogue.h): the kernel writes the
// bf16 result and reads r; the f32 sums' buffer and the consumer's own
// kernel are gone.
// MMA-LABEL: func.func @rows256_residual_epilogue
// MMA-NOT: memref<256x256xf32>
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0 {{.*}} args(%{{.*}} : memref<65536xbf16>, %{{.*}} : memref<131072xbf16>, %{{.*}} : memref<131072xbf16>, %{{.*}} : memref<65536xbf16>)
// MMA-NOT: linalg.generic
// MMA: return
// MMA: gpu.func @mma_matmul_0
// MMA: nvvm.mma.sync
// MMA: arith.truncf {{.*}} : f32 to bf16
// MMA: arith.addf
// MMA: memref.store {{.*}} : memref<65536xbf16>
func.func @rows256_residual_epilogue(%x: tensor<256x512xbf16>, %w: tensor<256x512xbf16>, %r: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %e = tensor.empty() : tensor<256x256xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %o = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<256x512xbf16>, tensor<256x512xbf16>) outs(%i : tensor<256x256xf32>) -> tensor<256x256xf32>
  %ye = tensor.empty() : tensor<256x256xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%o, %r : tensor<256x256xf32>, tensor<256x256xbf16>) outs(%ye : tensor<256x256xbf16>) {
  ^bb0(%s: f32, %res: bf16, %acc: bf16):
    %s16 = arith.truncf %s : f32 to bf16
    %a = arith.extf %s16 : bf16 to f32
    %b = arith.extf %res : bf16 to f32
    %sum = arith.addf %a, %b : f32
    %t = arith.truncf %sum : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}

// -----

// Not on tensor cores: 4 rows (below mma-rows), f32 operands, 1000 columns
// (not a multiple of a warp's 64).
// SPLIT-LABEL: func.func @few_rows
// SPLIT-NOT: poot.mma_matmul
// SPLIT-LABEL: func.func @f32_rows
// SPLIT-NOT: poot.mma_matmul
// SPLIT-LABEL: func.func @ragged_columns
// SPLIT-NOT: poot.mma_matmul
func.func @few_rows(%x: tensor<4x4096xbf16>, %w: tensor<4096x1024xbf16>) -> tensor<4x1024xf32> {
  %e = tensor.empty() : tensor<4x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<4x1024xf32>) -> tensor<4x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<4x4096xbf16>, tensor<4096x1024xbf16>) outs(%i : tensor<4x1024xf32>) -> tensor<4x1024xf32>
  return %o : tensor<4x1024xf32>
}
func.func @f32_rows(%x: tensor<16x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<16x1024xf32> {
  %e = tensor.empty() : tensor<16x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<16x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  return %o : tensor<16x1024xf32>
}
func.func @ragged_columns(%x: tensor<16x4096xbf16>, %w: tensor<4096x1000xbf16>) -> tensor<16x1000xf32> {
  %e = tensor.empty() : tensor<16x1000xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<16x1000xf32>) -> tensor<16x1000xf32>
  %o = linalg.matmul ins(%x, %w : tensor<16x4096xbf16>, tensor<4096x1000xbf16>) outs(%i : tensor<16x1000xf32>) -> tensor<16x1000xf32>
  return %o : tensor<16x1000xf32>
}

// -----

// A transposed weight (torch's [N, K] stored, read as [K, N]): the matmul
// reads the weight itself through the permuted map, so the transpose (a
// copy of the whole weight each step) goes; the kernel loads the weight
// along K. 8 warps; split min(4096 / 64, 4096 / (8 x 32)) = 16 ways.
// SPLIT-LABEL: func.func @transposed_weight
// SPLIT-NOT: linalg.transpose
// SPLIT: ins({{.*}} : tensor<32x16x256xbf16>, tensor<512x16x256xbf16>) outs({{.*}} : tensor<16x32x512xf32>) attrs = {poot.mma_matmul = "direct"}
// MMA-LABEL: func.func @transposed_weight
// MMA-NOT: linalg.transpose
// MMA: gpu.launch_func
func.func @transposed_weight(%x: tensor<32x4096xbf16>, %w: tensor<512x4096xbf16>) -> tensor<32x512xf32> {
  %t0 = tensor.empty() : tensor<4096x512xbf16>
  %t = linalg.transpose ins(%w : tensor<512x4096xbf16>) outs(%t0 : tensor<4096x512xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<32x512xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<32x512xf32>) -> tensor<32x512xf32>
  %o = linalg.matmul ins(%x, %t : tensor<32x4096xbf16>, tensor<4096x512xbf16>) outs(%i : tensor<32x512xf32>) -> tensor<32x512xf32>
  return %o : tensor<32x512xf32>
}

// -----

// A gather fused into the matmul (each row's hidden state picked by a
// loop index out of a tensor from outside, as a serving step's lm_head
// picks each row's last token): the lhs reads the reduction loop through
// linalg.index, so it qualifies; it is computed once into its own buffer
// (the index renumbered to the new op's loop) before the kernel.
// SPLIT-LABEL: func.func @gathered_rows
// SPLIT: attrs = {poot.mma_matmul = "direct"}
// MMA-LABEL: func.func @gathered_rows
// MMA: %[[LHS:.*]] = memref.alloc() : memref<{{.*}}xbf16>
// MMA: linalg.generic {{.*}} outs(%[[LHS]] : memref<{{.*}}xbf16>)
// MMA: linalg.index
// MMA: memref.load
// MMA: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0
func.func @gathered_rows(%hidden: tensor<1024x1024xbf16>, %last: tensor<16xi32>, %w: tensor<1024x512xbf16>) -> tensor<16x512xf32> {
  %e = tensor.empty() : tensor<16x512xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<16x512xf32>) -> tensor<16x512xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%last, %w : tensor<16xi32>, tensor<1024x512xbf16>) outs(%i : tensor<16x512xf32>) {
  ^bb0(%row: i32, %b: bf16, %acc: f32):
    %k = linalg.index 2 : index
    %r = arith.index_cast %row : i32 to index
    %a = tensor.extract %hidden[%r, %k] : tensor<1024x1024xbf16>
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  } -> tensor<16x512xf32>
  return %o : tensor<16x512xf32>
}

// -----

// Decode rows on the staged kernel (mma-staged-rows=1; the default keeps
// them on the direct one): 64 rows x 128 columns a workgroup, each warp 32
// columns; 4 buffers of 12 KB (a 64 x 32 lhs tile, a 128-column weight
// tile). Split 8 ways to fill the device: the partials' op is marked
// "staged", its grid z the splits.
// SPLIT-LABEL: func.func @rows64_decode
// SPLIT: attrs = {poot.mma_matmul = "direct"}
// STAGED-LABEL: func.func @rows64_decode
// STAGED: gpu.launch_func @poot_mma_matmuls::@mma_matmul_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}})
// STAGED: gpu.func @mma_matmul_0(%{{[^)]*}}) workgroup(%{{.*}} : memref<12288xi32, #gpu.address_space<workgroup>>) kernel
// STAGED: nvvm.cp.async.wait.group 2
// STAGED: gpu.return
func.func @rows64_decode(%x: tensor<64x4096xbf16>, %w: tensor<1024x4096xbf16>) -> tensor<64x1024xf32> {
  %e = tensor.empty() : tensor<64x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %o = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<64x4096xbf16>, tensor<1024x4096xbf16>) outs(%i : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %o : tensor<64x1024xf32>
}

// -----

// One row (a B=1 GEMV) staged: a 16-row tile, 4 buffers of 9 KB; the lhs
// tile is 64 chunks, copied by threads 0-63.
// STAGED-LABEL: func.func @rows1_gemv
// STAGED: gpu.func @mma_matmul_0(%{{[^)]*}}) workgroup(%{{.*}} : memref<9216xi32, #gpu.address_space<workgroup>>) kernel
// STAGED: %[[TID:.*]] = gpu.thread_id x
// STAGED: arith.cmpi ult, %[[TID]], %{{.*}}
// STAGED: scf.if
// STAGED: nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg, %
// STAGED: gpu.return
func.func @rows1_gemv(%x: tensor<1x4096xbf16>, %w: tensor<4096x1024xbf16>) -> tensor<1x1024xf32> {
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<1x4096xbf16>, tensor<4096x1024xbf16>) outs(%i : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %o : tensor<1x1024xf32>
}
