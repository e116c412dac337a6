// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm mma-sm=90" --poot-attention-to-loops -verify-diagnostics -o /dev/null

// A schedule the loops cannot express is refused, never lowered as another.
func.func @tiled(%q: tensor<1x2x32x16xf32>, %k: tensor<1x1x32x16xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x2x32x16xf32> {
  // expected-error @+1 {{poot-attention-to-loops cannot express the tiled_prefill schedule (a GPU kernel): plan for the CPU target}}
  %o = poot.attention %q, %k, %v causal {scale = 0.25 : f64} : tensor<1x2x32x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}

// -----

func.func @warp(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x1024x64xf32>, %v: tensor<1x2x1024x64xf32>) -> tensor<1x8x1x64xf32> {
  // expected-error @+1 {{poot-attention-to-loops cannot express the warp_decode schedule (a GPU kernel): plan for the CPU target}}
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x8x1x64xf32>, tensor<1x2x1024x64xf32>, tensor<1x2x1024x64xf32> -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

func.func @wide(%q: tensor<1x16x1x128xf32>, %k: tensor<1x1x512x128xf32>, %v: tensor<1x1x512x128xf32>) -> tensor<1x16x1x128xf32> {
  // expected-error @+1 {{poot-attention-to-loops cannot express the wide_head schedule (a GPU kernel): plan for the CPU target}}
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x16x1x128xf32>, tensor<1x1x512x128xf32>, tensor<1x1x512x128xf32> -> tensor<1x16x1x128xf32>
  return %o : tensor<1x16x1x128xf32>
}

// -----

func.func @tiled_mma(%q: tensor<1x2x64x16xbf16>, %k: tensor<1x1x64x16xbf16>, %v: tensor<1x1x64x16xbf16>) -> tensor<1x2x64x16xbf16> {
  // expected-error @+1 {{poot-attention-to-loops cannot express the tiled_prefill_mma schedule (a GPU kernel): plan for the CPU target}}
  %o = poot.attention %q, %k, %v causal {scale = 0.25 : f64} : tensor<1x2x64x16xbf16>, tensor<1x1x64x16xbf16>, tensor<1x1x64x16xbf16> -> tensor<1x2x64x16xbf16>
  return %o : tensor<1x2x64x16xbf16>
}
