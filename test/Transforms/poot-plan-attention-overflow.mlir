// RUN: poot-opt %s --poot-plan-attention="target=cpu" -verify-diagnostics
// The lane state of a 2^62-wide value overflows a byte count: refused, not
// wrapped into a small one.
func.func @lane_overflow(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x1x16xf32>, %v: tensor<1x1x1x4611686018427387904xf32>) -> tensor<1x1x1x4611686018427387904xf32> {
  // expected-error @+1 {{AttentionLds: one lane's running state for value width 4611686018427387904 overflows a 64-bit byte count}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>, tensor<1x1x1x4611686018427387904xf32> -> tensor<1x1x1x4611686018427387904xf32>
  return %o : tensor<1x1x1x4611686018427387904xf32>
}

