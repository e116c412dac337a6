// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 mma-sm=90 wide-head-mma=1" --poot-generate-attention-kernels=target=nvvm | FileCheck %s
// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 mma-sm=90 wide-head-mma=1" --poot-generate-attention-kernels=target=spirv -verify-diagnostics -o /dev/null
// RUN: not poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 mma-sm=90 wide-head-mma=1" --poot-attention-to-loops -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOOPS

// The tensor-core wide-head decode (WideHeadMmaKernel.h): MQA, 16 bf16 heads
// of width 128 on one KV head, Lk 256, one compute unit: R = 16 packed rows
// (one m tile), W = 4 warps (128 threads), C = 32 keys, split in 2 chunks
// of 128 keys (wide_head's rule: min(4, 256 / 128)), so two launches:
// `wide_head_mma` writes the partial (o, m, l) of 16 rows x 2 splits x 130
// floats, `combine` folds them. One i32 workgroup buffer of max(32 x 68,
// 128 x 20) + 4 x 16 x 32 = 4608 words, 16-byte aligned. The staging is
// pipelined: the first tile's K words (32 keys x 16 vectors / 128 threads =
// 4 16-byte loads a thread) are loaded before the walk and carried into it;
// per key tile: K stored as 16-byte vectors, a barrier, V loaded (4 loads a
// thread), each warp's part of S = (C/8) x (Dq/16/W) = 8 mma, its partials
// stored, a barrier, V^T stored, the W partials summed and the fragment
// softmax (quad shuffles xor 1, 2), P rounded to bf16 pairs, a barrier, the
// next tile's K loaded, the warp's (Dv/8/W) x (C/16) = 8 mma of P V, a
// barrier. The walk carries (Dv/8/W) x 4 = 16 accumulators, (m, l) of two
// rows and the 4 K vectors.
// CHECK: poot.attention {{.*}}poot.kernels = [@poot_attention_0::@wide_head_mma, @poot_attention_0::@combine]
// CHECK-SAME: schedule = wide_head_mma, lanes = 128, splits = 2, chunk = 128, grid_x = 2, grid_y = 1, q_block = 16, key_block = 32
// CHECK: gpu.func @wide_head_mma(%{{.*}}: memref<2048xbf16>, %{{.*}}: memref<32768xbf16>, %{{.*}}: memref<32768xbf16>, %{{.*}}: memref<4160xf32>) workgroup(%{{.*}} : memref<4608xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-COUNT-4: vector.load %{{.*}} {alignment = 16 : i64} : memref<32768xbf16>, vector<8xbf16>
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, vector<4xi32>, vector<4xi32>, vector<4xi32>, vector<4xi32>)
// CHECK-COUNT-4: vector.store %{{.*}} {alignment = 16 : i64} : memref<4608xi32, #gpu.address_space<workgroup>>, vector<4xi32>
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.load %{{.*}} {alignment = 16 : i64} : memref<32768xbf16>, vector<8xbf16>
// CHECK-COUNT-8: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: memref.store {{.*}} : memref<4608xi32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.load %{{.*}} {alignment = 16 : i64} : memref<32768xbf16>, vector<8xbf16>
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.mma.sync
// CHECK: memref.store {{.*}} : memref<4160xf32>
// CHECK: gpu.return
// CHECK: gpu.func @combine(%{{.*}}: memref<4160xf32>, %{{.*}}: memref<2048xbf16>) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// LOOPS: error: poot-attention-to-loops cannot express the wide_head_mma schedule (a GPU kernel): plan for the CPU target
func.func @mqa(%q: tensor<1x16x1x128xbf16>, %k: tensor<1x1x256x128xbf16>, %v: tensor<1x1x256x128xbf16>) -> tensor<1x16x1x128xbf16> {
  // expected-error @+1 {{the wide_head_mma schedule is NVIDIA tensor-core code (mma.sync): plan for the NVVM target}}
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x16x1x128xbf16>, tensor<1x1x256x128xbf16>, tensor<1x1x256x128xbf16> -> tensor<1x16x1x128xbf16>
  return %o : tensor<1x16x1x128xbf16>
}
