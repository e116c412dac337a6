// RUN: poot-opt %s --poot-plan-attention="target=spirv compute-units=64 max-buffer-bytes=4294967296" | FileCheck %s --check-prefix=SPV
// RUN: poot-opt %s --poot-plan-attention="target=spirv compute-units=64 max-buffer-bytes=4294967296 batch-invariant=1" | FileCheck %s --check-prefix=SPVBI
// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-buffer-bytes=4294967296" | FileCheck %s --check-prefix=NV
// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-buffer-bytes=4294967296 batch-invariant=1" | FileCheck %s --check-prefix=NVBI
// RUN: poot-opt %s --poot-plan-attention="target=cpu vector-width=16 compute-units=8 workgroup-memory=49152" | FileCheck %s --check-prefix=CPU
// RUN: poot-opt %s --poot-plan-attention="target=cpu vector-width=16 compute-units=8 workgroup-memory=49152 batch-invariant=1" | FileCheck %s --check-prefix=CPUBI

// batch-invariant (issue 24): every schedule chooses its split over keys
// for one batch row, so the same row gets the same splits and chunks (the
// same summation order) alone or in a batch of 16.

// Split-KV (SPIR-V, 64 compute units): one row's 4 heads split
// min(64 / 4, 2048 / 128) = 16 ways; 16 rows' 64 heads fill the device and
// stay unsplit by default, and keep the one row's 16 splits when
// batch-invariant.
// SPV-LABEL: func.func @stream_one
// SPV: schedule = split_kv, lanes = 64, splits = 16, chunk = 128, grid_x = 64,
// SPV-LABEL: func.func @stream_batch
// SPV: schedule = streaming, lanes = 64, splits = 1, chunk = 2048, grid_x = 64,
// SPVBI-LABEL: func.func @stream_one
// SPVBI: schedule = split_kv, lanes = 64, splits = 16, chunk = 128, grid_x = 64,
// SPVBI-LABEL: func.func @stream_batch
// SPVBI: schedule = split_kv, lanes = 64, splits = 16, chunk = 128, grid_x = 1024,
func.func @stream_one(%q: tensor<1x4x1x64xf32>, %k: tensor<1x2x2048x64xf32>, %v: tensor<1x2x2048x64xf32>) -> tensor<1x4x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x4x1x64xf32>, tensor<1x2x2048x64xf32>, tensor<1x2x2048x64xf32> -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}
func.func @stream_batch(%q: tensor<16x4x1x64xf32>, %k: tensor<16x2x2048x64xf32>, %v: tensor<16x2x2048x64xf32>) -> tensor<16x4x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<16x4x1x64xf32>, tensor<16x2x2048x64xf32>, tensor<16x2x2048x64xf32> -> tensor<16x4x1x64xf32>
  return %o : tensor<16x4x1x64xf32>
}

// Warp decode (NVVM, 132 SMs): one row's 8 KV groups split
// min(32 * 132 / 8, 16384 / 128, 128) = 128 ways; 16 rows' 128 groups
// min(ceil(4224 / 128), ...) = 33 ways by default, 128 when batch-invariant.
// NV-LABEL: func.func @warp_one
// NV: schedule = warp_decode, lanes = 128, splits = 128, chunk = 128, grid_x = 1024,
// NV-LABEL: func.func @warp_batch
// NV: schedule = warp_decode, lanes = 128, splits = 33, chunk = 497,
// NVBI-LABEL: func.func @warp_one
// NVBI: schedule = warp_decode, lanes = 128, splits = 128, chunk = 128, grid_x = 1024,
// NVBI-LABEL: func.func @warp_batch
// NVBI: schedule = warp_decode, lanes = 128, splits = 128, chunk = 128, grid_x = 16384,
func.func @warp_one(%q: tensor<1x32x1x128xf32>, %k: tensor<1x8x16384x128xf32>, %v: tensor<1x8x16384x128xf32>) -> tensor<1x32x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xf32>, tensor<1x8x16384x128xf32>, tensor<1x8x16384x128xf32> -> tensor<1x32x1x128xf32>
  return %o : tensor<1x32x1x128xf32>
}
func.func @warp_batch(%q: tensor<16x32x1x128xf32>, %k: tensor<16x8x16384x128xf32>, %v: tensor<16x8x16384x128xf32>) -> tensor<16x32x1x128xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.088 : f64} : tensor<16x32x1x128xf32>, tensor<16x8x16384x128xf32>, tensor<16x8x16384x128xf32> -> tensor<16x32x1x128xf32>
  return %o : tensor<16x32x1x128xf32>
}

// The CPU schedule (8 cores): one row's 2 items split
// min(ceil(16 / 2), 4096 / 512) = 8 ways; 16 rows' 32 items give every
// core two and stay unsplit by default, 8 ways when batch-invariant.
// CPU-LABEL: func.func @cpu_one
// CPU: schedule = cpu_tiled, lanes = 16, splits = 8, chunk = 512,
// CPU-LABEL: func.func @cpu_batch
// CPU: schedule = cpu_tiled, lanes = 16, splits = 1, chunk = 4096,
// CPUBI-LABEL: func.func @cpu_one
// CPUBI: schedule = cpu_tiled, lanes = 16, splits = 8, chunk = 512,
// CPUBI-LABEL: func.func @cpu_batch
// CPUBI: schedule = cpu_tiled, lanes = 16, splits = 8, chunk = 512,
func.func @cpu_one(%q: tensor<1x4x1x64xf32>, %k: tensor<1x2x4096x64xf32>, %v: tensor<1x2x4096x64xf32>) -> tensor<1x4x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x4x1x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32> -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}
func.func @cpu_batch(%q: tensor<16x4x1x64xf32>, %k: tensor<16x2x4096x64xf32>, %v: tensor<16x2x4096x64xf32>) -> tensor<16x4x1x64xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : tensor<16x4x1x64xf32>, tensor<16x2x4096x64xf32>, tensor<16x2x4096x64xf32> -> tensor<16x4x1x64xf32>
  return %o : tensor<16x4x1x64xf32>
}
