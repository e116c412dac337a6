// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-grid-x=2147483647 max-alloc-bytes=1000000" -verify-diagnostics

// ScratchBytes: the DeepSeek shape's 33 splits need 128 rows x 33 x 514
// floats = 8684544 bytes of scratch, past max-alloc-bytes (the buffer limit,
// 1 GiB, would hold it).
func.func @scratch(%q: tensor<1x128x1x576xf32>, %k: tensor<1x1x32768x512xf32>, %v: tensor<1x1x32768x512xf32>, %ks: tensor<1x1x32768x64xf32>) -> tensor<1x128x1x512xf32> {
  // expected-error @+1 {{ScratchBytes: the wide-head split-KV scratch needs 8684544 bytes (128 rows x 33 splits x 2056 bytes); the device can allocate 1000000 bytes}}
  %o = poot.attention %q, %k, %v key_shared(%ks : tensor<1x1x32768x64xf32>) {scale = 0.0416 : f64} : tensor<1x128x1x576xf32>, tensor<1x1x32768x512xf32>, tensor<1x1x32768x512xf32> -> tensor<1x128x1x512xf32>
  return %o : tensor<1x128x1x512xf32>
}
