// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-fuse-epilogues),canonicalize)" | FileCheck %s

// A split matmul's final sum, its rounding to bf16 and its copy into the
// heads' layout: one kernel. The rounding reads the sum from the register
// and the copy the rounded value (no load of either is left): %sum and
// %rounded, now only stored, are gone.
// CHECK-LABEL: func.func @final_sum_round_copy
// CHECK-NOT: memref<1x512xf32>
// CHECK-NOT: memref<1x1x8x64xbf16>
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: arith.truncf
// CHECK-NOT: memref<1x1x8x64xbf16>
// CHECK: memref.store %{{.*}} : memref<1x8x1x64xbf16>
// CHECK-NOT: scf.parallel
// CHECK: return
// (%q is an allocation: two arguments are not known apart.)
func.func @final_sum_round_copy(%p: memref<16x1x512xf32>) -> memref<1x8x1x64xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.000000e+00 : f32
  %sum = memref.alloc() : memref<1x512xf32>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
    %i = affine.linearize_index disjoint [%h, %d] by (8, 64) : index
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %p[%k, %c0, %i] : memref<16x1x512xf32>
      %r = arith.addf %v, %a : f32
      scf.yield %r : f32
    }
    memref.store %s, %sum[%c0, %i] : memref<1x512xf32>
    scf.reduce
  }
  %rounded = memref.alloc() : memref<1x1x8x64xbf16>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
    %i = affine.linearize_index disjoint [%h, %d] by (8, 64) : index
    %v = memref.load %sum[%c0, %i] : memref<1x512xf32>
    %b = arith.truncf %v : f32 to bf16
    memref.store %b, %rounded[%c0, %c0, %h, %d] : memref<1x1x8x64xbf16>
    scf.reduce
  }
  %q = memref.alloc() : memref<1x8x1x64xbf16>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
    %v = memref.load %rounded[%c0, %c0, %h, %d] : memref<1x1x8x64xbf16>
    memref.store %v, %q[%c0, %h, %c0, %d] : memref<1x8x1x64xbf16>
    scf.reduce
  }
  return %q : memref<1x8x1x64xbf16>
}

// Left as they are: a consumer reading a neighbour's sum (another
// iteration's element), a consumer over other bounds, and a consumer
// writing a buffer the reduction reads.
// CHECK-LABEL: func.func @neighbour
// CHECK-COUNT-2: scf.parallel
// CHECK-LABEL: func.func @other_bounds
// CHECK-COUNT-2: scf.parallel
// CHECK-LABEL: func.func @writes_an_input
// CHECK-COUNT-2: scf.parallel
func.func @neighbour(%p: memref<16x512xf32>, %o: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c511 = arith.constant 511 : index
  %zero = arith.constant 0.000000e+00 : f32
  %sum = memref.alloc() : memref<512xf32>
  scf.parallel (%n) = (%c0) to (%c511) step (%c1) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %p[%k, %n] : memref<16x512xf32>
      %r = arith.addf %v, %a : f32
      scf.yield %r : f32
    }
    memref.store %s, %sum[%n] : memref<512xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c511) step (%c1) {
    %m = arith.addi %n, %c1 : index
    %v = memref.load %sum[%m] : memref<512xf32>
    memref.store %v, %o[%n] : memref<512xf32>
    scf.reduce
  }
  return
}
func.func @other_bounds(%p: memref<16x512xf32>, %o: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.000000e+00 : f32
  %sum = memref.alloc() : memref<512xf32>
  scf.parallel (%n) = (%c0) to (%c512) step (%c1) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %p[%k, %n] : memref<16x512xf32>
      %r = arith.addf %v, %a : f32
      scf.yield %r : f32
    }
    memref.store %s, %sum[%n] : memref<512xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c256) step (%c1) {
    %v = memref.load %sum[%n] : memref<512xf32>
    memref.store %v, %o[%n] : memref<512xf32>
    scf.reduce
  }
  return
}
func.func @writes_an_input(%p: memref<16x512xf32>, %o: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.000000e+00 : f32
  scf.parallel (%n) = (%c0) to (%c512) step (%c1) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %p[%k, %n] : memref<16x512xf32>
      %r = arith.addf %v, %a : f32
      scf.yield %r : f32
    }
    memref.store %s, %o[%n] : memref<512xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c512) step (%c1) {
    memref.store %zero, %p[%c0, %n] : memref<16x512xf32>
    scf.reduce
  }
  return
}
