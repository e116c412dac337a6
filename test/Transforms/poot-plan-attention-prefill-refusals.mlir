// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 max-grid-x=2 max-grid-y=2" -verify-diagnostics

// The tiled prefill's launch is refused with GridLimit when its workgroups
// (B * Hq * ceil(Lq / q_block) = 1 * 8 * 1) pass max-grid-x * max-grid-y.
func.func @grid(%q: tensor<1x8x64x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>) -> tensor<1x8x64x16xf32> {
  // expected-error @+1 {{GridLimit: 8 workgroups do not fit a 2 x 2 grid}}
  %o = poot.attention %q, %k, %v causal {scale = 0.25 : f64} : tensor<1x8x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32> -> tensor<1x8x64x16xf32>
  return %o : tensor<1x8x64x16xf32>
}

// -----

// The op's verifier: the causal kind needs Lk >= Lq and excludes a mask.
func.func @causal_short_keys(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>) -> tensor<1x1x8x16xf32> {
  // expected-error @+1 {{causal needs Lk >= Lq (every row sees key 0), got Lk = 4, Lq = 8}}
  %o = poot.attention %q, %k, %v causal {scale = 0.25 : f64} : tensor<1x1x8x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32> -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

func.func @causal_and_mask(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>, %m: tensor<1x1x4x4xf32>) -> tensor<1x1x4x16xf32> {
  // expected-error @+1 {{causal excludes a mask operand}}
  %o = poot.attention %q, %k, %v mask(%m : tensor<1x1x4x4xf32>) causal {scale = 0.25 : f64} : tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32> -> tensor<1x1x4x16xf32>
  return %o : tensor<1x1x4x16xf32>
}
