// RUN: poot-opt %s --poot-plan-attention="target=spirv workgroup-memory=32768 max-grid-x=2 max-grid-y=2" -verify-diagnostics

// GridLimit: 8 batch rows of one 16-head group, one block each (R = 16),
// unsplit (1 compute unit): 8 workgroups past a 2 x 2 grid.
func.func @grid(%q: tensor<8x16x1x16xf32>, %k: tensor<8x1x512x16xf32>, %v: tensor<8x1x512x16xf32>) -> tensor<8x16x1x16xf32> {
  // expected-error @+1 {{GridLimit: 8 wide-head workgroups do not fit a 2 x 2 grid}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<8x16x1x16xf32>, tensor<8x1x512x16xf32>, tensor<8x1x512x16xf32> -> tensor<8x16x1x16xf32>
  return %o : tensor<8x16x1x16xf32>
}
