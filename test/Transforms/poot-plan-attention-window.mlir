// RUN: poot-opt %s --poot-plan-attention="target=nvvm workgroup-memory=49152 compute-units=132" | FileCheck %s --check-prefix=NVVM
// RUN: poot-opt %s --poot-plan-attention="target=cpu compute-units=16 vector-width=16" | FileCheck %s --check-prefix=CPU

// A decode row under a window of 1000 sees only the last 1000 of 4096
// keys: the split planners divide those (AttentionRequestAttr::getSplitKeys),
// so the warp decode's 7 splits take 143 keys each (not 4096 / 7), and the
// request keeps the window (part of the plan key).
// NVVM: schedule = warp_decode, lanes = 128, splits = 7, chunk = 143,
// NVVM-SAME: window = 1000>
// CPU: schedule = cpu_tiled
// CPU-SAME: chunk = 1000,
// CPU-SAME: window = 1000>
func.func @window_decode(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x4096x128xbf16>, %v: tensor<1x8x4096x128xbf16>) -> tensor<1x32x1x128xbf16> {
  %o = poot.attention %q, %k, %v causal window 1000 {scale = 0.088 : f64} : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16> -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}


// A prefill's rows have windows that start at different keys: every split
// planner keeps dividing all Lk keys (the walks start at each block's
// window instead).
// NVVM: schedule = tiled_prefill
// NVVM-SAME: window = 64>
func.func @window_prefill(%q: tensor<1x8x512x64xf32>, %k: tensor<1x2x512x64xf32>, %v: tensor<1x2x512x64xf32>) -> tensor<1x8x512x64xf32> {
  %o = poot.attention %q, %k, %v causal window 64 {scale = 0.125 : f64} : tensor<1x8x512x64xf32>, tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32> -> tensor<1x8x512x64xf32>
  return %o : tensor<1x8x512x64xf32>
}
