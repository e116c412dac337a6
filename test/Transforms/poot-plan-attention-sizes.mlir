// RUN: not poot-opt %s --poot-plan-attention="target=spirv max-buffer-bytes=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=SPIRV
// RUN: poot-opt %s --poot-plan-attention="target=nvvm max-buffer-bytes=4611686018427387904" | FileCheck %s --check-prefix=NVVM
// RUN: poot-opt %s --poot-plan-attention="target=cpu" | FileCheck %s --check-prefix=CPU

// Sizes no device description makes safe: SPIR-V counts an array's elements
// in 32 bits whatever the buffer limit (upstream truncates a larger count to
// a zero-length array and aborts), so q's 2^34 elements are refused there;
// NVVM and the CPU (host memory, no buffer limit) plan it.
// SPIRV: BufferBytes: a 'tensor<4096x32x4096x32xf32>' buffer has 17179869184 elements; a SPIR-V array holds at most 4294967295
// NVVM: request = #poot.attention_request<batch = 4096
// CPU: request = #poot.attention_request<batch = 4096
func.func @big(%q: tensor<4096x32x4096x32xf32>, %k: tensor<4096x8x4096x32xf32>, %v: tensor<4096x8x4096x32xf32>) -> tensor<4096x32x4096x32xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<4096x32x4096x32xf32>, tensor<4096x8x4096x32xf32>, tensor<4096x8x4096x32xf32> -> tensor<4096x32x4096x32xf32>
  return %o : tensor<4096x32x4096x32xf32>
}
