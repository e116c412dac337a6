// RUN: poot-opt %s --poot-to-nvvm="workgroup-memory=232448 compute-units=132 chip=sm_90" | FileCheck %s

// NVVM: PTX for sm_90 in a gpu.binary; lane state in .shared, one bar.sync.
// CHECK: gpu.binary @poot_attention_0
// CHECK-SAME: #nvvm.target<O = 3, chip = "sm_90">
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry stream(
// CHECK-SAME: .maxntid 64, 1, 1
// CHECK-SAME: .shared .align
// CHECK-SAME: bar.sync
func.func @step(%q: tensor<8x32x1x64xf32>, %k: tensor<8x8x256x64xf32>, %v: tensor<8x8x256x64xf32>) -> tensor<8x32x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<8x32x1x64xf32>, tensor<8x8x256x64xf32>, tensor<8x8x256x64xf32> -> tensor<8x32x1x64xf32>
  return %o : tensor<8x32x1x64xf32>
}
