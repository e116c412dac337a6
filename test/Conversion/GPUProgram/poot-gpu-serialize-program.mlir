// RUN: poot-opt %s -split-input-file -verify-diagnostics --poot-gpu-serialize-program | FileCheck %s

// Buffers 0..2 are the arguments, 3 the scratch temporary (arena offset 0,
// 1152 bytes rounded up to 1280). The record of fused op 0 moves
// from the module into the program, with the ids of its launch commands
// (0 and 1); the launches say "fused": 0; the elementwise launch (2) is no
// fused op's.
// CHECK: module attributes {gpu.container_module, poot.programs = {step = "{
// CHECK-SAME: \22arena_bytes\22:1280
// CHECK-SAME: \22buffers\22:[{\22index\22:0,\22kind\22:\22arg\22},{\22index\22:1,\22kind\22:\22arg\22},{\22index\22:2,\22kind\22:\22arg\22},{\22bytes\22:1152,\22kind\22:\22temp\22,\22offset\22:0}]
// CHECK-SAME: \22commands\22:[{\22launch\22:{\22args\22:[0,3],\22block\22:[64,1,1],\22entry\22:\22partials\22,\22fused\22:0,\22grid\22:[16,1,1],\22module\22:\22poot_attention_0\22}},{\22launch\22:{\22args\22:[3,1],\22block\22:[64,1,1],\22entry\22:\22combine\22,\22fused\22:0,\22grid\22:[4,1,1],\22module\22:\22poot_attention_0\22}},{\22launch\22:{\22args\22:[1,2],\22block\22:[128,1,1],\22entry\22:\22step_kernel\22,\22grid\22:[1,1,1],\22module\22:\22step_kernel\22}}]
// CHECK-SAME: \22fused_ops\22:[{\22commands\22:[0,1],\22index\22:0,\22op\22:\22attention\22,\22request\22:{\22batch\22:1},\22scratch_bytes\22:1152}]
// CHECK-SAME: \22results\22:[]
// CHECK-NOT: poot.fused_ops
module attributes {gpu.container_module, poot.fused_ops = ["{\22op\22:\22attention\22,\22request\22:{\22batch\22:1},\22scratch_bytes\22:1152}"]} {
  gpu.module @poot_attention_0 {
    gpu.func @partials(%q: memref<64xf32>, %s: memref<288xf32>) kernel {
      gpu.return
    }
    gpu.func @combine(%s: memref<288xf32>, %o: memref<64xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @step_kernel {
    gpu.func @step_kernel(%a: memref<64xf32>, %b: memref<64xf32>) kernel {
      gpu.return
    }
  }
  func.func @step(%q: memref<64xf32>, %o: memref<64xf32>, %r: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %s = memref.alloc() : memref<288xf32>
    gpu.launch_func @poot_attention_0::@partials blocks in (%c16, %c1, %c1) threads in (%c64, %c1, %c1) args(%q : memref<64xf32>, %s : memref<288xf32>) {poot.fused = 0 : i64}
    gpu.launch_func @poot_attention_0::@combine blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1) args(%s : memref<288xf32>, %o : memref<64xf32>) {poot.fused = 0 : i64}
    memref.dealloc %s : memref<288xf32>
    gpu.launch_func @step_kernel::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%o : memref<64xf32>, %r : memref<64xf32>)
    return
  }
}

// -----

// A launch numbered past the module's records is an error naming the number.
module attributes {gpu.container_module, poot.fused_ops = []} {
  gpu.module @k {
    gpu.func @k(%a: memref<64xf32>) kernel {
      gpu.return
    }
  }
  func.func @step(%a: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error @below {{poot.fused 3 names no record of poot.fused_ops}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<64xf32>) {poot.fused = 3 : i64}
    return
  }
}

// -----

// A dynamically shaped argument (the step pipelines refuse it earlier, in
// poot-gpu-check-step-types; run alone, this pass asserted: fuzz, 2026-12-06).
// expected-error @+1 {{argument 0 is a dynamically shaped buffer ('memref<?xf32>')}}
func.func @dynamic(%x: memref<?xf32>) {
  return
}
