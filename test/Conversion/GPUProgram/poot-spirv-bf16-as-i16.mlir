// RUN: poot-opt %s --split-input-file --poot-spirv-bf16-as-i16 --verify-diagnostics | FileCheck %s

// A kernel adding bf16 values: the add computes in f32 and rounds once, the
// conversions become integer bit operations, and every bf16 buffer, value
// and signature (host and kernel alike) carries i16.
// CHECK-LABEL: func.func @host
// CHECK-SAME: memref<4xi16>
// CHECK: gpu.launch_func @k::@add {{.*}} args(%{{.*}} : memref<4xi16>)
// CHECK: gpu.func @add(%[[BUF:.*]]: memref<4xi16>)
// CHECK: %[[BITS:.*]] = memref.load %[[BUF]]
// CHECK-SAME: memref<4xi16>
// CHECK: arith.extui %[[BITS]] : i16 to i32
// CHECK: arith.addf {{.*}} : f32
// CHECK: memref.store %{{.*}}, %[[BUF]]{{.*}} : memref<4xi16>
// CHECK-NOT: bf16
module attributes {gpu.container_module} {
  func.func @host(%a: memref<4xbf16>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@add blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xbf16>)
    return
  }
  gpu.module @k {
    gpu.func @add(%buf: memref<4xbf16>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %buf[%i] : memref<4xbf16>
      %s = arith.addf %v, %v : bf16
      memref.store %s, %buf[%i] : memref<4xbf16>
      gpu.return
    }
  }
}

// -----

// Constants and loop-carried values move bits: a bf16 constant becomes its
// bit pattern (1.0 = 0x3F80 = 16256).
// CHECK-LABEL: func.func @carried
// CHECK: arith.constant 16256 : i16
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i16)
// CHECK-NOT: bf16
func.func @carried(%buf: memref<4xbf16>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : bf16
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %one) -> (bf16) {
    %v = memref.load %buf[%i] : memref<4xbf16>
    %m = arith.mulf %acc, %v : bf16
    scf.yield %m : bf16
  }
  memref.store %r, %buf[%c0] : memref<4xbf16>
  return
}

// -----

// A math function left on bf16 is refused, never mis-lowered.
func.func @math(%buf: memref<4xbf16>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %buf[%c0] : memref<4xbf16>
  // expected-error @+1 {{computes on bf16}}
  %e = math.exp %v : bf16
  memref.store %e, %buf[%c0] : memref<4xbf16>
  return
}
