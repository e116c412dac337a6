// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 mma-sm=90" --poot-generate-attention-kernels=target=nvvm | FileCheck %s

// The tensor-core prefill kernel (TiledPrefillMmaKernel.h): one launch
// `prefill_mma`, a workgroup per (b, h, 64-row block) = 2 x 2 blocks, 128
// threads, one i32 workgroup buffer of C*(Dq/2+4) + C*(Dv/2+4) = 64*12 +
// 64*12 = 1536 words (K rows, V rows); bf16 buffers in, bf16 out. The first
// K tile is copied by cp.async (16-byte chunks, cache cg) before the walk;
// per key tile: V's copy issued, a wait for K and a barrier, (Dq/16)*(C/8)
// = 8 mma for S (m16n8k16, row x col, bf16 -> f32) on ldmatrix fragments, a
// branch for tiles the warp sees whole (no per-score tests), the quad's row
// max and sum by xor shuffles 1 and 2, P rounded to bf16 pairs, a wait for V
// and a barrier, the next tile's K copy issued, (C/16)*(Dv/8) = 8 mma for
// P V on transposed ldmatrix fragments, a barrier. The walk carries
// (Dv/8)*4 = 8 accumulators and (m, l) of the thread's two rows.
// CHECK: poot.attention {{.*}}poot.kernels = [@poot_attention_0::@prefill_mma]
// CHECK: gpu.func @prefill_mma(%{{.*}}: memref<4096xbf16>, %{{.*}}: memref<2048xbf16>, %{{.*}}: memref<2048xbf16>, %{{.*}}: memref<4096xbf16>) workgroup(%{{.*}} : memref<1536xi32, #gpu.address_space<workgroup>>) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: scf.if
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.mma.sync
// CHECK: arith.divf
// CHECK: gpu.return
func.func @prefill(%q: tensor<1x2x128x16xbf16>, %k: tensor<1x1x128x16xbf16>, %v: tensor<1x1x128x16xbf16>) -> tensor<1x2x128x16xbf16> {
  %o = poot.attention %q, %k, %v causal {scale = 0.25 : f64} : tensor<1x2x128x16xbf16>, tensor<1x1x128x16xbf16>, tensor<1x1x128x16xbf16> -> tensor<1x2x128x16xbf16>
  return %o : tensor<1x2x128x16xbf16>
}
