// RUN: poot-opt %s --poot-plan-attention="target=cpu vector-width=16" -verify-diagnostics

// The CPU schedule keeps an item's row state on its thread's stack: a value
// width of 2^62 floats is refused, not planned (or wrapped).
func.func @cpu_row_state_overflow(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x1x16xf32>, %v: tensor<1x1x1x4611686018427387904xf32>) -> tensor<1x1x1x4611686018427387904xf32> {
  // expected-error @+1 {{AttentionLds: the CPU schedule's row state for 1 heads of value width 4611686018427387904 needs 9223372036854775807 bytes of a thread's stack; the budget is 1048576 bytes}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>, tensor<1x1x1x4611686018427387904xf32> -> tensor<1x1x1x4611686018427387904xf32>
  return %o : tensor<1x1x1x4611686018427387904xf32>
}
