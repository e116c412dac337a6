// RUN: poot-opt %s --poot-to-nvvm="workgroup-memory=49152 compute-units=132 chip=sm_90" | FileCheck %s

// An NVIDIA decode whose head widths are whole warps gets the warp-decode
// schedule: 4 warps per (batch row, KV group, split), a warp per key row with
// the dot product finished by xor shuffles, then the split combine.
// CHECK: {{[{ ]}}request = #poot.attention_request<{{.*}}schedule = warp_decode, lanes = 128, splits = 2
// CHECK: gpu.binary @poot_attention_0
// CHECK-SAME: #nvvm.target<O = 3, chip = "sm_90">
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry warp(
// CHECK-SAME: .maxntid 128, 1, 1
// CHECK-SAME: shfl.sync.bfly.b32
// CHECK-SAME: bar.sync
// CHECK-SAME: .visible .entry combine(
func.func @step(%q: tensor<8x32x1x64xf32>, %k: tensor<8x8x256x64xf32>, %v: tensor<8x8x256x64xf32>) -> tensor<8x32x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<8x32x1x64xf32>, tensor<8x8x256x64xf32>, tensor<8x8x256x64xf32> -> tensor<8x32x1x64xf32>
  return %o : tensor<8x32x1x64xf32>
}
