// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 mma-sm=90" --poot-generate-attention-kernels=target=spirv -verify-diagnostics -o /dev/null

// The tensor-core schedule is NVIDIA code: a request for it is refused by
// the generator for any other target, never emitted as something else.
func.func @prefill(%q: tensor<1x2x128x16xbf16>, %k: tensor<1x1x128x16xbf16>, %v: tensor<1x1x128x16xbf16>) -> tensor<1x2x128x16xbf16> {
  // expected-error @+1 {{the tiled_prefill_mma schedule is NVIDIA tensor-core code (mma.sync): plan for the NVVM target}}
  %o = poot.attention %q, %k, %v causal {scale = 0.25 : f64} : tensor<1x2x128x16xbf16>, tensor<1x1x128x16xbf16>, tensor<1x1x128x16xbf16> -> tensor<1x2x128x16xbf16>
  return %o : tensor<1x2x128x16xbf16>
}
