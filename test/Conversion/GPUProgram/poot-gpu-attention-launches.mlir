// RUN: poot-opt %s -split-input-file -verify-diagnostics --poot-gpu-attention-launches | FileCheck %s

// A split-KV attention call (4 rows, 4 splits, value width 16) becomes the
// partials launch over the planner's grid into a plan-local scratch of
// 4 * 4 * (16 + 2) floats, then the combine launch (one workgroup per row).
// Both launches carry the op's number, and its record in poot.fused_ops
// gets the scratch bytes (1152).
// CHECK: module attributes {gpu.container_module, poot.fused_ops = ["{\22location\22:\22model.py:12:5\22,\22op\22:\22attention\22,\22request\22:{\22batch\22:1},\22scale\22:0.25,\22scratch_bytes\22:1152}"]}
// CHECK-LABEL: func.func @step
// CHECK: %[[S:.*]] = memref.alloc() : memref<288xf32>
// CHECK: gpu.launch_func @poot_attention_0::@partials blocks in (%c16, %{{.*}}, %{{.*}}) threads in (%c64, %{{.*}}, %{{.*}}) args(%arg0 : memref<64xf32>, %arg1 : memref<16384xf32>, %arg2 : memref<16384xf32>, %[[S]] : memref<288xf32>) {poot.fused = 0 : i64}
// CHECK: gpu.launch_func @poot_attention_0::@combine blocks in (%c4, %{{.*}}, %{{.*}}) threads in (%c64, %{{.*}}, %{{.*}}) args(%[[S]] : memref<288xf32>, %arg3 : memref<64xf32>) {poot.fused = 0 : i64}
// CHECK: memref.dealloc %[[S]]
// CHECK-NOT: call
// CHECK-NOT: poot_offload_0
module attributes {gpu.container_module, poot.fused_ops = ["{\22location\22:\22model.py:12:5\22,\22op\22:\22attention\22,\22request\22:{\22batch\22:1},\22scale\22:0.25}"]} {
  gpu.module @poot_attention_0 {
    gpu.func @partials(%q: memref<64xf32>, %k: memref<16384xf32>, %v: memref<16384xf32>, %s: memref<288xf32>) kernel {
      gpu.return
    }
    gpu.func @combine(%s: memref<288xf32>, %o: memref<64xf32>) kernel {
      gpu.return
    }
  }
  func.func private @poot_offload_0(memref<64xf32>, memref<16384xf32>, memref<16384xf32>, memref<64xf32>)
  func.func @step(%q: memref<64xf32>, %k: memref<16384xf32>, %v: memref<16384xf32>, %o: memref<64xf32>) {
    call @poot_offload_0(%q, %k, %v, %o) {poot.fused = 0 : i64, poot.kernels = [@poot_attention_0::@partials, @poot_attention_0::@combine], poot.request = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 512, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 4, chunk = 128, grid_x = 16, grid_y = 1>} : (memref<64xf32>, memref<16384xf32>, memref<16384xf32>, memref<64xf32>) -> ()
    return
  }
}

// -----

// A call without its kernels is an error, not a guess.
module {
  func.func private @poot_offload_0(memref<64xf32>, memref<16384xf32>, memref<16384xf32>, memref<64xf32>)
  func.func @step(%q: memref<64xf32>, %k: memref<16384xf32>, %v: memref<16384xf32>, %o: memref<64xf32>) {
    // expected-error @below {{the attention call has no poot.kernels}}
    call @poot_offload_0(%q, %k, %v, %o) {poot.request = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 512, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 4, chunk = 128, grid_x = 16, grid_y = 1>} : (memref<64xf32>, memref<16384xf32>, memref<16384xf32>, memref<64xf32>) -> ()
    return
  }
}
