// RUN: poot-opt %s --poot-cpu-outline-loops="min-loops=2" | FileCheck %s
// RUN: poot-opt %s --poot-cpu-outline-loops | FileCheck %s --check-prefix=SMALL

// Each top-level loop nest becomes a private noinline function called in
// place; the constants it uses are cloned in, the buffers are arguments.
// CHECK: func.func private @step_loop0(%{{.*}}: memref<64xf32>) attributes {passthrough = ["noinline"]}
// CHECK: arith.constant 64 : index
// CHECK: scf.for
// CHECK: func.func private @step_loop1(%{{.*}}: memref<64xf32>) -> f32 attributes {passthrough = ["noinline"]}
// CHECK: scf.for {{.*}} iter_args
// CHECK-LABEL: func.func @step(
// CHECK-SAME: attributes {passthrough = ["noinline", "optnone"]}
// CHECK: call @step_loop0(%arg0) : (memref<64xf32>) -> ()
// CHECK: %[[S:.*]] = call @step_loop1(%arg0) : (memref<64xf32>) -> f32
// CHECK: return %[[S]]
// The same nest on another buffer (a second layer) calls the same function.
// CHECK-LABEL: func.func @twice(
// CHECK: call @twice_loop0(%arg0)
// CHECK: call @twice_loop0(%arg1)
// CHECK-NOT: twice_loop1
// A step with fewer nests than min-loops (16) stays one function.
// SMALL-NOT: call
func.func @step(%a: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  }
  %s = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  }
  return %s : f32
}

func.func @twice(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %b[%i] : memref<64xf32>
  }
  return
}
