// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152" --poot-generate-attention-kernels=target=nvvm | FileCheck %s
// RUN: poot-opt %s --poot-plan-attention="target=spirv workgroup-memory=32768" --poot-generate-attention-kernels=target=spirv | FileCheck %s --check-prefix=SPIRV

// The tiled prefill kernel (TiledPrefillKernel.h): one launch `prefill`, a
// workgroup per (b, h, 32-row block) = 2 blocks, 128 threads, one workgroup
// buffer of R*(Dq+1) + C*(Dq+1) + C*Dv + R*(C+1) + 3R = 544 + 544 + 512 +
// 1056 + 96 = 2752 floats; no mask argument (causal is an index expression); the
// key walk a loop carrying this thread's R*Dv/128 = 4 outputs, with the
// four barriers inside it.
// CHECK: poot.attention {{.*}}poot.kernels = [@poot_attention_0::@prefill]
// CHECK: gpu.func @prefill(%{{.*}}: memref<1024xf32>, %{{.*}}: memref<512xf32>, %{{.*}}: memref<512xf32>, %{{.*}}: memref<1024xf32>) workgroup(%{{.*}} : memref<2752xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32, f32, f32)
// CHECK-COUNT-4: gpu.barrier
// CHECK: arith.divf
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
// SPIRV: gpu.func @prefill
// SPIRV-SAME: known_block_size = array<i32: 64, 1, 1>
// SPIRV: memref.alloc() : memref<2752xf32, 3>
// SPIRV: memref.dealloc
func.func @step(%q: tensor<1x2x32x16xf32>, %k: tensor<1x1x32x16xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x2x32x16xf32> {
  %o = poot.attention %q, %k, %v causal {scale = 0.25 : f64} : tensor<1x2x32x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}
