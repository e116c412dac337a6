// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-unroll=4" --poot-generate-attention-kernels=target=nvvm | FileCheck %s
// RUN: poot-opt %s --poot-to-nvvm="workgroup-memory=49152 compute-units=132 chip=sm_90 max-unroll=4" | FileCheck %s --check-prefix=PTX

// The warp decode reads K/V rows as 16-byte vectors where the head width is
// a whole number of 32 x 4 f32 (or 32 x 8 two-byte) channels: lane l owns
// channels 4l .. 4l + 3 of each 128-channel pass. A step of `unroll` = 4 keys
// issues all its loads (4 keys x (K, V)) before the first shuffle.
// CHECK-LABEL: gpu.module @poot_attention_0
// CHECK: gpu.func @warp
// CHECK: scf.for
// CHECK-COUNT-8: vector.load {{.*}} {alignment = 16 : i64} : memref<262144xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: gpu.shuffle  xor
// The chunk's remaining keys, one per warp: one K and one V vector each.
// CHECK: scf.for
// CHECK-COUNT-2: vector.load {{.*}} {alignment = 16 : i64} : memref<262144xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: gpu.barrier
// PTX-LABEL: .visible .entry warp(
// PTX: ld.global{{(.nc)?}}.v4.{{b32|f32}}
// PTX: shfl.sync.bfly.b32
func.func @f32_d128(%q: tensor<1x8x1x128xf32>, %k: tensor<1x2x1024x128xf32>, %v: tensor<1x2x1024x128xf32>) -> tensor<1x8x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x8x1x128xf32>, tensor<1x2x1024x128xf32>, tensor<1x2x1024x128xf32> -> tensor<1x8x1x128xf32>
  return %o : tensor<1x8x1x128xf32>
}

// bf16, 256 channels: 8 bf16 (16 bytes) per lane per pass, widened to f32.
// CHECK-LABEL: gpu.module @poot_attention_1
// CHECK: gpu.func @warp
// CHECK: %[[ROW:.*]] = vector.load {{.*}} {alignment = 16 : i64} : memref<{{[0-9]+}}xbf16>, vector<8xbf16>
// CHECK: arith.extf %[[ROW]] : vector<8xbf16> to vector<8xf32>
// PTX-LABEL: .visible .entry warp(
// PTX: ld.global{{(.nc)?}}.v4.b32
// PTX: cvt.f32.bf16
func.func @bf16_d256(%q: tensor<1x4x1x256xbf16>, %k: tensor<1x1x512x256xbf16>, %v: tensor<1x1x512x256xbf16>) -> tensor<1x4x1x256xbf16> {
  %o = poot.attention %q, %k, %v {scale = 0.0625 : f64} : tensor<1x4x1x256xbf16>, tensor<1x1x512x256xbf16>, tensor<1x1x512x256xbf16> -> tensor<1x4x1x256xbf16>
  return %o : tensor<1x4x1x256xbf16>
}

// 64 channels: 2 f32 per lane (8-byte vectors); 32 channels: scalar loads.
// CHECK-LABEL: gpu.module @poot_attention_2
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<{{[0-9]+}}xf32>, vector<2xf32>
// CHECK-LABEL: gpu.module @poot_attention_3
// CHECK-NOT: vector.load
// CHECK: gpu.shuffle
// CHECK-NOT: vector.load
// CHECK: gpu.barrier
func.func @narrow(%q: tensor<1x4x1x64xf32>, %k: tensor<1x2x512x64xf32>, %v: tensor<1x2x512x64xf32>,
                  %q2: tensor<1x4x1x32xf32>, %k2: tensor<1x2x512x32xf32>, %v2: tensor<1x2x512x32xf32>) -> (tensor<1x4x1x64xf32>, tensor<1x4x1x32xf32>) {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x4x1x64xf32>, tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32> -> tensor<1x4x1x64xf32>
  %o2 = poot.attention %q2, %k2, %v2 {scale = 0.17 : f64} : tensor<1x4x1x32xf32>, tensor<1x2x512x32xf32>, tensor<1x2x512x32xf32> -> tensor<1x4x1x32xf32>
  return %o, %o2 : tensor<1x4x1x64xf32>, tensor<1x4x1x32xf32>
}
