// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=4096 compute-units=1" --poot-generate-attention-kernels=target=nvvm | FileCheck %s

// The generator keeps the op, records its kernels, and emits one gpu.func
// per launch: flat memref arguments (query, key, value, key_shared, mask,
// out), a workgroup attribution of lanes * (Dv + 2) floats, and the barrier
// between the lanes' scan and their combine. 4 KiB fits 32 lanes of 18 floats.
// CHECK: poot.attention {{.*}}poot.kernels = [@poot_attention_0::@stream]
// CHECK: gpu.module @poot_attention_0
// CHECK: gpu.func @stream(%{{.*}}: memref<128xf32>, %{{.*}}: memref<512xf32>, %{{.*}}: memref<1024xf32>, %{{.*}}: memref<256xf32>, %{{.*}}: memref<256xf32>, %{{.*}}: memref<128xf32>) workgroup(%{{.*}} : memref<576xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK: scf.for
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: gpu.barrier
// CHECK: arith.divf
func.func @step(%q: tensor<1x2x4x16xf32>, %knope: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x16xf32>, %ks: tensor<1x1x32x8xf32>, %m: tensor<1x2x4x32xf32>) -> tensor<1x2x4x16xf32> {
  %o = poot.attention %q, %knope, %v mask(%m : tensor<1x2x4x32xf32>) key_shared(%ks : tensor<1x1x32x8xf32>) {scale = 0.2 : f64, softcap = 10.0 : f64} : tensor<1x2x4x16xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x16xf32> -> tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}
