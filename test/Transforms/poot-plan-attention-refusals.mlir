// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=spirv workgroup-memory=32768 compute-units=64 max-alloc-bytes=100" -verify-diagnostics

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

func.func @dtype(%q: tensor<1x4x1x16xf16>, %k: tensor<1x4x8x16xf16>, %v: tensor<1x4x8x16xf16>) -> tensor<1x4x1x16xf16> {
  // expected-error @+1 {{DtypeLowering: the generated attention kernel is f32 only, this op is 'f16'}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16> -> tensor<1x4x1x16xf16>
  return %o : tensor<1x4x1x16xf16>
}

// -----

func.func @select(%c: tensor<4xi1>, %a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{DtypeLowering: SPIR-V cannot lower a two-byte select ('bf16')}}
  %0 = poot.select %c, %a, %b : (tensor<4xi1>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// The lane state of a 2^62-wide value overflows a byte count: refused, not
// wrapped into a small one.
func.func @lane_overflow(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x1x16xf32>, %v: tensor<1x1x1x4611686018427387904xf32>) -> tensor<1x1x1x4611686018427387904xf32> {
  // expected-error @+1 {{AttentionLds: one lane's running state for value width 4611686018427387904 overflows a 64-bit byte count}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>, tensor<1x1x1x4611686018427387904xf32> -> tensor<1x1x1x4611686018427387904xf32>
  return %o : tensor<1x1x1x4611686018427387904xf32>
}
