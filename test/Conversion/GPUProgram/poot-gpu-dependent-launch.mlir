// RUN: poot-opt %s --pass-pipeline="builtin.module(gpu.module(poot-gpu-dependent-launch))" | FileCheck %s
// Running it twice leaves one wait and one trigger per kernel.
// RUN: poot-opt %s --pass-pipeline="builtin.module(gpu.module(poot-gpu-dependent-launch,poot-gpu-dependent-launch))" | FileCheck %s

// Every kernel waits for the grids ahead of it before its first load, then
// lets the grid after it be scheduled; a device function (not a kernel) is
// left alone.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @scale
    // CHECK-NEXT: nvvm.griddepcontrol wait
    // CHECK-NEXT: nvvm.griddepcontrol launch_dependents
    // CHECK-NOT: nvvm.griddepcontrol
    // CHECK: memref.load
    gpu.func @scale(%a: memref<4096xf32>, %out: memref<4096xf32>) kernel {
      %i = gpu.thread_id x
      %x = memref.load %a[%i] : memref<4096xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %out[%i] : memref<4096xf32>
      gpu.return
    }
    // CHECK-LABEL: gpu.func @helper
    // CHECK-NOT: nvvm.griddepcontrol
    // CHECK: gpu.return
    gpu.func @helper(%x: f32) -> f32 {
      gpu.return %x : f32
    }
  }
}
