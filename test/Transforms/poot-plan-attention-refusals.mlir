// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64 max-alloc-bytes=100 max-buffer-bytes=1073741824" -verify-diagnostics

// Each typed refusal is an error whose message starts with its reason tag.

func.func @lds(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x9000xf32>) -> tensor<1x1x1x9000xf32> {
  // expected-error @+1 {{AttentionLds: one lane's running state for value width 9000 needs 36008 bytes of workgroup memory; the device has 32768 bytes}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x1x1x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x9000xf32> -> tensor<1x1x1x9000xf32>
  return %o : tensor<1x1x1x9000xf32>
}

// -----

func.func @scratch(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x300x16xf32>, %v: tensor<1x4x300x16xf32>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{ScratchBytes: the split-KV scratch needs 576 bytes (4 rows x 2 splits x 72 bytes); the device can allocate 100 bytes}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x16xf32>, tensor<1x4x300x16xf32>, tensor<1x4x300x16xf32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

func.func @dtype_f64(%q: tensor<1x4x1x16xf64>, %k: tensor<1x4x8x16xf64>, %v: tensor<1x4x8x16xf64>) -> tensor<1x4x1x16xf64> {
  // expected-error @+1 {{DtypeLowering: the generated attention kernel reads f32, f16 or bf16 and computes in f32; this op is 'f64'}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x16xf64>, tensor<1x4x8x16xf64>, tensor<1x4x8x16xf64> -> tensor<1x4x1x16xf64>
  return %o : tensor<1x4x1x16xf64>
}

// -----

// A buffer no device binds: q alone is 64 GiB (the device's largest buffer
// is 1 GiB here). It used to reach SPIR-V type conversion, which truncates a
// 2^36-element array to length 0 and aborts.
func.func @buffer_bytes(%q: tensor<4096x32x4096x32xf32>, %k: tensor<4096x8x4096x32xf32>, %v: tensor<4096x8x4096x32xf32>) -> tensor<4096x32x4096x32xf32> {
  // expected-error @+1 {{BufferBytes: a 'tensor<4096x32x4096x32xf32>' buffer needs 68719476736 bytes; the device's largest buffer is 1073741824 bytes}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<4096x32x4096x32xf32>, tensor<4096x8x4096x32xf32>, tensor<4096x8x4096x32xf32> -> tensor<4096x32x4096x32xf32>
  return %o : tensor<4096x32x4096x32xf32>
}
