// RUN: poot-opt %s -split-input-file --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132 max-grid-x=2147483647 max-alloc-bytes=1000000 mma-sm=90 wide-head-mma=1" -verify-diagnostics
// RUN: not poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=1 max-grid-x=3 max-grid-y=1 mma-sm=90 wide-head-mma=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRID
// RUN: not poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=2048 compute-units=132 mma-sm=90 wide-head-mma=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LDS

// The tensor-core wide-head form's refusals (PlanPrefill.cpp
// withWideHeadSplits, shared with wide_head). ScratchBytes: the DeepSeek
// shape's 128 splits need 128 rows x 128 x 514 floats = 33685504 bytes of
// scratch, past max-alloc-bytes (the 1 GiB buffer limit would hold it).
// The GRID run: one compute unit (unsplit), 4 blocks past a 3 x 1 grid.
// The LDS run: 2 KiB holds no tiling of either form, nor one lane's 514 floats.
// GRID: error: GridLimit: 4 wide-head workgroups do not fit a 3 x 1 grid
// LDS: error: AttentionLds
func.func @scratch(%q: tensor<1x128x1x576xbf16>, %k: tensor<1x1x32768x512xbf16>, %v: tensor<1x1x32768x512xbf16>, %ks: tensor<1x1x32768x64xbf16>) -> tensor<1x128x1x512xbf16> {
  // expected-error @+1 {{ScratchBytes: the wide-head split-KV scratch needs 33685504 bytes (128 rows x 128 splits x 2056 bytes); the device can allocate 1000000 bytes}}
  %o = poot.attention %q, %k, %v key_shared(%ks : tensor<1x1x32768x64xbf16>) {scale = 0.0416 : f64} : tensor<1x128x1x576xbf16>, tensor<1x1x32768x512xbf16>, tensor<1x1x32768x512xbf16> -> tensor<1x128x1x512xbf16>
  return %o : tensor<1x128x1x512xbf16>
}
