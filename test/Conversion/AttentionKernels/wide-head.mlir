// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132" --poot-generate-attention-kernels=target=nvvm | FileCheck %s
// RUN: poot-opt %s --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=32" --poot-generate-attention-kernels=target=spirv | FileCheck %s --check-prefix=SPIRV

// The wide-head decode's kernels (TiledPrefillKernel.h over a KV group):
// MQA, 16 heads of width 128 on one KV head (too wide for warp_decode),
// B = 1, Lk = 1024. The plan is R = 16 packed rows (the whole group), C = 16
// keys a tile, 8 splits of 128 keys: a `wide_head` launch writing the
// partials (o, m, l) to the scratch [16 rows x 8 splits x 130 floats] and the
// split combine. One workgroup buffer of R*129 + C*max(129, 128) + R*17 + 3R
// = 2064 + 2064 + 272 + 48 = 4448 floats (K and V share one region) plus the
// sliced S step's partial dots, slices * (R*C + 1): 128 / 16 = 8 slices of
// 16 query words a thread, 8 * 257 = 2056 floats (SPIR-V: 64 threads, 4
// slices of 32 words, 1028); the key walk carries the thread's R*Dv/128 = 16
// outputs and holds five barriers (the slices' sum adds one).
// CHECK: poot.attention {{.*}}poot.kernels = [@poot_attention_0::@wide_head, @poot_attention_0::@combine], request = {{.*}}schedule = wide_head, lanes = 128, splits = 8, chunk = 128, grid_x = 8, grid_y = 1, q_block = 16, key_block = 16>
// CHECK: gpu.func @wide_head(%{{.*}}: memref<2048xf32>, %{{.*}}: memref<131072xf32>, %{{.*}}: memref<131072xf32>, %{{.*}}: memref<16640xf32>) workgroup(%{{.*}} : memref<6504xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-5: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
// CHECK: gpu.func @combine(%{{.*}}: memref<16640xf32>, %{{.*}}: memref<2048xf32>) kernel
// SPIRV: gpu.func @wide_head
// SPIRV-SAME: known_block_size = array<i32: 64, 1, 1>
// SPIRV: memref.alloc() : memref<5476xf32, 3>
// SPIRV: gpu.func @combine
func.func @step(%q: tensor<1x16x1x128xf32>, %k: tensor<1x1x1024x128xf32>, %v: tensor<1x1x1024x128xf32>) -> tensor<1x16x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x16x1x128xf32>, tensor<1x1x1024x128xf32>, tensor<1x1x1024x128xf32> -> tensor<1x16x1x128xf32>
  return %o : tensor<1x16x1x128xf32>
}
