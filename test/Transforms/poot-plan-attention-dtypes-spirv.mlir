// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=1" -verify-diagnostics | FileCheck %s

// Two-byte attention on SPIR-V (docs/two-byte-attention.md): f16 is planned
// like f32 (the lane state is f32: (Dv + 2) * 4 B per lane decides the
// lanes), with its mask as given; so is bf16 (its kernels carry it as i16:
// poot-spirv-bf16-as-i16).

// CHECK-LABEL: func.func @f16_masked
// CHECK: schedule = streaming, lanes = 64, splits = 1, chunk = 512, grid_x = 8, grid_y = 1
func.func @f16_masked(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x512x64xf16>, %v: tensor<1x2x512x64xf16>, %m: tensor<1x8x1x512xf32>) -> tensor<1x8x1x64xf16> {
  %o = poot.attention %q, %k, %v mask(%m : tensor<1x8x1x512xf32>) {scale = 0.125 : f64} : tensor<1x8x1x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

// CHECK-LABEL: func.func @bf16
// CHECK: schedule = streaming, lanes = 64, splits = 1
func.func @bf16(%q: tensor<1x8x1x64xbf16>, %k: tensor<1x2x512x64xbf16>, %v: tensor<1x2x512x64xbf16>) -> tensor<1x8x1x64xbf16> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x8x1x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16> -> tensor<1x8x1x64xbf16>
  return %o : tensor<1x8x1x64xbf16>
}
