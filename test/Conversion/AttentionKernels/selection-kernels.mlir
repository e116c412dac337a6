// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=4096 compute-units=1" --poot-generate-attention-kernels=target=nvvm | FileCheck %s --check-prefix=NVVM
// RUN: poot-opt %s --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64" --poot-generate-attention-kernels=target=spirv | FileCheck %s --check-prefix=SPIRV

// The generator's kernels for the block-selected ops (SelectionEmitter).
// Block top-k: one workgroup per (batch row, query row), 8 lanes for the 8
// blocks, the lanes' bests in two workgroup buffers (keys f32, ids i32);
// each of the min(K, NB) = 7 rounds is a scan, a 3-phase tree and a publish
// phase, one barrier after each (5 per round).
// NVVM-LABEL: func.func @step
// NVVM: poot.block_topk {{.*}}poot.kernels = [@poot_block_topk_0::@topk]
// NVVM: poot.selected_attention {{.*}}poot.kernels = [@poot_selected_attention_0::@warp, @poot_selected_attention_0::@combine]
// NVVM-SAME: schedule = warp_decode, lanes = 128, splits = 2, chunk = 128
// NVVM: gpu.module @poot_block_topk_0
// NVVM: gpu.func @topk(%{{.*}}: memref<8xf32>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<7xi32>) workgroup(%{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xi32, #gpu.address_space<workgroup>>) kernel
// NVVM-SAME: known_block_size = array<i32: 8, 1, 1>
// NVVM: scf.for
// NVVM: arith.cmpf uno
// NVVM: gpu.barrier
// NVVM: gpu.barrier
// NVVM: gpu.barrier
// NVVM: gpu.barrier
// NVVM: gpu.barrier
// An NVIDIA decode with warp-wide heads: the warp-decode kernel over the 256
// visited positions (a workgroup of 4 warps per (KV group, split); 2 x 2 =
// 4 workgroups), query, key, value, block_ids, q_pos, then the scratch; the
// combine as for poot.attention.
// NVVM: gpu.module @poot_selected_attention_0
// NVVM: gpu.func @warp(%{{.*}}: memref<128xf32>, %{{.*}}: memref<16384xf32>, %{{.*}}: memref<16384xf32>, %{{.*}}: memref<7xi32>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<272xf32>) workgroup(%{{.*}} : memref<272xf32, #gpu.address_space<workgroup>>) kernel
// NVVM: gpu.shuffle xor
// NVVM: gpu.func @combine(%{{.*}}: memref<272xf32>, %{{.*}}: memref<128xf32>) kernel

// SPIR-V: the seed's split-KV schedule over the visited positions instead
// (min(16, 64 / 4, 256 / 128) = 2 splits of 128), workgroup memory as
// memref.alloc in space 3.
// SPIRV: poot.selected_attention {{.*}}poot.kernels = [@poot_selected_attention_0::@partials, @poot_selected_attention_0::@combine]
// SPIRV-SAME: schedule = split_kv, lanes = 64, splits = 2, chunk = 128, grid_x = 8
// SPIRV: gpu.func @topk
// SPIRV-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [8, 1, 1]>
// SPIRV: memref.alloc() : memref<8xf32, 3>
// SPIRV: memref.alloc() : memref<8xi32, 3>
// SPIRV: gpu.func @partials(%{{.*}}: memref<128xf32>, %{{.*}}: memref<16384xf32>, %{{.*}}: memref<16384xf32>, %{{.*}}: memref<7xi32>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<272xf32>)
// SPIRV: memref.alloc() : memref<2176xf32, 3>
// SPIRV: math.exp
// SPIRV: gpu.barrier
// SPIRV: gpu.func @combine
func.func @step(%q: tensor<1x4x1x32xf32>, %k: tensor<1x2x256x32xf32>, %v: tensor<1x2x256x32xf32>,
                %s: tensor<1x1x8xf32>, %p: tensor<1x1xi32>) -> (tensor<1x4x1x32xf32>, tensor<1x1x7xi32>) {
  %ids = poot.block_topk %s, %p k = 7 block_size = 32 : tensor<1x1x8xf32>, tensor<1x1xi32> -> tensor<1x1x7xi32>
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 32 {scale = 0.125 : f64}
      : tensor<1x4x1x32xf32>, tensor<1x2x256x32xf32>, tensor<1x2x256x32xf32>, tensor<1x1x7xi32>, tensor<1x1xi32> -> tensor<1x4x1x32xf32>
  return %o, %ids : tensor<1x4x1x32xf32>, tensor<1x1x7xi32>
}
