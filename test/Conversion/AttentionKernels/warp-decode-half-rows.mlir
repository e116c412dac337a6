// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-keys-per-load=2 max-unroll=4" --poot-generate-attention-kernels=target=nvvm | FileCheck %s
// RUN: poot-opt %s --poot-to-nvvm="workgroup-memory=49152 compute-units=132 chip=sm_90 max-keys-per-load=2 max-unroll=4" | FileCheck %s --check-prefix=PTX

// Half-warp rows (docs/warp-decode.md): bf16 D = 128 is 16 lanes x 8
// elements a row, so lanes 0-15 read key t and lanes 16-31 key t + 1, one
// 16-byte vector each. The workgroup memory holds 4 warps x 2 halves x
// 4 heads x (128 + 2) floats.
// CHECK-LABEL: gpu.module @poot_attention_0
// CHECK: gpu.func @warp({{.*}}) workgroup(%{{.*}} : memref<4160xf32, #gpu.address_space<workgroup>>)
// A step of unroll = 4 loads (8 keys a warp) issues all K/V loads first.
// CHECK: scf.for
// CHECK-COUNT-8: vector.load {{.*}} {alignment = 16 : i64} : memref<256000xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// Each dot product completes over its half: xor 8, 4, 2, 1 (never 16:
// each half keeps its own online state, folded at the end).
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK-NOT: gpu.shuffle  xor %{{.*}}, %c16_i32
// The step's 4 keys are one online step: its max, one rescale of the state.
// CHECK: arith.maximumf
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: %[[MAX:.*]] = arith.maximumf %arg{{[0-9]+}}, %{{.*}} : f32
// CHECK: arith.subf %arg{{[0-9]+}}, %[[MAX]]
// CHECK-NEXT: math.exp
// The chunk's last loads, one a warp: a half past the chunk's end reads the
// load's first key and scores -inf.
// CHECK: scf.for
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK-COUNT-2: vector.load {{.*}} {alignment = 16 : i64} : memref<256000xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK-NOT: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: gpu.barrier
// PTX-LABEL: .visible .entry warp(
// PTX: ld.global{{(.nc)?}}.v4.b32
// PTX: shfl.sync.bfly.b32 {{.*}}, 8, 31, -1
// PTX-NOT: shfl.sync.bfly.b32 {{.*}}, 16, 31, -1
// PTX: bar.sync
func.func @bf16_d128(%q: tensor<1x8x1x128xbf16>, %k: tensor<1x2x1000x128xbf16>, %v: tensor<1x2x1000x128xbf16>) -> tensor<1x8x1x128xbf16> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x8x1x128xbf16>, tensor<1x2x1000x128xbf16>, tensor<1x2x1000x128xbf16> -> tensor<1x8x1x128xbf16>
  return %o : tensor<1x8x1x128xbf16>
}
