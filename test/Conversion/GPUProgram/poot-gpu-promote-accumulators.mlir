// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-promote-accumulators))" | FileCheck %s

// A lowered matmul's reduction: the output element is loaded once before
// the loop, carried, and stored once after it.
// CHECK-LABEL: func.func @dot
// CHECK: scf.parallel (%[[N:.*]]) =
// CHECK: %[[INIT:.*]] = memref.load %arg2[%c0, %[[N]]]
// CHECK: %[[R:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK-NOT: memref.store
// CHECK: arith.addf %[[ACC]]
// CHECK: scf.yield
// CHECK: memref.store %[[R]], %arg2[%c0, %[[N]]]
func.func @dot(%x: memref<1x64xf32>, %w: memref<64x16xf32>, %out: memref<1x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%n) = (%c0) to (%c16) step (%c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %a = memref.load %x[%c0, %k] : memref<1x64xf32>
      %b = memref.load %w[%k, %n] : memref<64x16xf32>
      %c = memref.load %out[%c0, %n] : memref<1x16xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      memref.store %s, %out[%c0, %n] : memref<1x16xf32>
    }
  }
  return
}

// The body reads another element of the output (a prefix sum): not an
// accumulator, left as it is (and a top-level loop is the host's anyway).
// CHECK-LABEL: func.func @prefix
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: memref.store
func.func @prefix(%out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  scf.for %k = %c1 to %c64 step %c1 {
    %prev = memref.load %out[%c0] : memref<64xf32>
    %cur = memref.load %out[%k] : memref<64xf32>
    %s = arith.addf %prev, %cur : f32
    memref.store %s, %out[%c0] : memref<64xf32>
  }
  return
}

// The accumulator's index computed inside the loop (a folded view's index
// math): hoisted first (upstream LICM), then promoted.
// CHECK-LABEL: func.func @index_inside
// CHECK: %[[I:.*]] = arith.addi
// CHECK: %[[A:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[A]]) -> (f32)
// CHECK-NOT: memref.store
// CHECK: }
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]]]
func.func @index_inside(%p: memref<8x64xf32>, %out: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%n) = (%c0) to (%c64) step (%c1) {
    scf.for %s = %c0 to %c8 step %c1 {
      %v = memref.load %p[%s, %n] : memref<8x64xf32>
      %i = arith.addi %n, %c64 : index
      %a = memref.load %out[%i] : memref<128xf32>
      %r = arith.addf %a, %v : f32
      memref.store %r, %out[%i] : memref<128xf32>
    }
    scf.reduce
  }
  return
}
