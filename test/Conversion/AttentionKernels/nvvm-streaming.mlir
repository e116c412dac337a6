// RUN: poot-opt %s --poot-to-nvvm="workgroup-memory=49152 compute-units=132 chip=sm_90" | FileCheck %s

// A short prefill (Lq < 16; from 16 rows the tiled prefill:
// tiled-prefill.mlir) and widths that are not whole warps keep the seed's
// streaming schedule on NVIDIA: lane state in .shared, one bar.sync, no
// shuffles.
// CHECK: schedule = streaming, lanes = 64
// CHECK: gpu.binary @poot_attention_0
// CHECK-SAME: .visible .entry stream(
// CHECK-SAME: .maxntid 64, 1, 1
// CHECK-SAME: .shared .align
// CHECK-SAME: bar.sync
// CHECK-NOT: shfl.sync
func.func @step(%q: tensor<1x8x8x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) -> tensor<1x8x8x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x8x8x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x8x8x64xf32>
  return %o : tensor<1x8x8x64xf32>
}
