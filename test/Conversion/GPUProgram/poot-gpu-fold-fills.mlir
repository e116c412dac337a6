// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-fold-fills))" | FileCheck %s

// A split GEMV after the lowering: the partials' fill and the output's
// fill both fold into the reductions that start from them (2 launches
// fewer); each accumulator starts from the fill's zero.
// CHECK-LABEL: func.func @gemv
// CHECK-NOT: memref.store %[[Z:cst]]
// CHECK: scf.parallel (%[[S:.*]], %[[N:.*]]) = (%c0, %c0) to (%c16, %c256)
// CHECK-NEXT: scf.for {{.*}} iter_args(%{{.*}} = %cst) -> (f32)
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[S]], %c0, %[[N]]]
// CHECK: scf.parallel (%[[M:.*]]) = (%c0) to (%c256)
// CHECK-NEXT: scf.for {{.*}} iter_args(%{{.*}} = %cst) -> (f32)
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @gemv(%x: memref<1x2048xf32>, %w: memref<2048x256xf32>) -> memref<1x256xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.0 : f32
  %out = memref.alloc() : memref<1x256xf32>
  scf.parallel (%n) = (%c0) to (%c256) step (%c1) {
    memref.store %cst, %out[%c0, %n] : memref<1x256xf32>
    scf.reduce
  }
  %p = memref.alloc() : memref<16x1x256xf32>
  scf.parallel (%s, %n) = (%c0, %c0) to (%c16, %c256) step (%c1, %c1) {
    memref.store %cst, %p[%s, %c0, %n] : memref<16x1x256xf32>
    scf.reduce
  }
  scf.parallel (%s, %n) = (%c0, %c0) to (%c16, %c256) step (%c1, %c1) {
    %0 = memref.load %p[%s, %c0, %n] : memref<16x1x256xf32>
    %1 = scf.for %k = %c0 to %c128 step %c1 iter_args(%acc = %0) -> (f32) {
      %i0 = arith.muli %s, %c128 : index
      %i = arith.addi %i0, %k : index
      %a = memref.load %x[%c0, %i] : memref<1x2048xf32>
      %b = memref.load %w[%i, %n] : memref<2048x256xf32>
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      scf.yield %r : f32
    }
    memref.store %1, %p[%s, %c0, %n] : memref<16x1x256xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c256) step (%c1) {
    %0 = memref.load %out[%c0, %n] : memref<1x256xf32>
    %1 = scf.for %s = %c0 to %c16 step %c1 iter_args(%acc = %0) -> (f32) {
      %b = memref.load %p[%s, %c0, %n] : memref<16x1x256xf32>
      %r = arith.addf %acc, %b : f32
      scf.yield %r : f32
    }
    memref.store %1, %out[%c0, %n] : memref<1x256xf32>
    scf.reduce
  }
  return %out : memref<1x256xf32>
}

// Kept: the reduction covers half the filled rows (another space); a
// copy reads the filled buffer before the reduction; the reduction reads
// its accumulator through a view; the reduction loads its start inside a
// nested loop (per step, not once).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: memref.store %cst
// CHECK: return
func.func @kept(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>, %d: memref<8xf32>, %e: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %cst = arith.constant 0.0 : f32
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    memref.store %cst, %a[%n] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c4) step (%c1) {
    %0 = memref.load %a[%n] : memref<8xf32>
    %1 = arith.addf %0, %0 : f32
    memref.store %1, %a[%n] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    memref.store %cst, %b[%n] : memref<8xf32>
    scf.reduce
  }
  memref.copy %b, %e : memref<8xf32> to memref<8xf32>
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    %0 = memref.load %b[%n] : memref<8xf32>
    memref.store %0, %b[%n] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    memref.store %cst, %c[%n] : memref<8xf32>
    scf.reduce
  }
  %v = memref.cast %c : memref<8xf32> to memref<?xf32>
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    %0 = memref.load %v[%n] : memref<?xf32>
    memref.store %0, %c[%n] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    memref.store %cst, %d[%n] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c4 step %c1 {
      %0 = memref.load %d[%n] : memref<8xf32>
      %1 = arith.addf %0, %0 : f32
      memref.store %1, %d[%n] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// A fill over 512 elements and a reduction over 8 x 64 storing the flat
// index of (head, d): the same elements, each once: folded.
// CHECK-LABEL: func.func @flat_fill
// CHECK-NOT: memref.store %cst
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c8, %c64)
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %cst)
// CHECK-LABEL: func.func @flat_fill_half
// CHECK: memref.store %cst
func.func @flat_fill(%p: memref<16x512xf32>, %out: memref<1x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.parallel (%n) = (%c0) to (%c512) step (%c1) {
    memref.store %cst, %out[%c0, %n] : memref<1x512xf32>
    scf.reduce
  }
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
    %i = affine.linearize_index disjoint [%h, %d] by (8, 64) : index
    %init = memref.load %out[%c0, %i] : memref<1x512xf32>
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %init) -> (f32) {
      %v = memref.load %p[%k, %i] : memref<16x512xf32>
      %r = arith.addf %v, %a : f32
      scf.yield %r : f32
    }
    memref.store %s, %out[%c0, %i] : memref<1x512xf32>
    scf.reduce
  }
  return
}
// Only half the filled elements reduced (8 x 32 of 512): the fill stays.
func.func @flat_fill_half(%p: memref<16x512xf32>, %out: memref<1x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c512 = arith.constant 512 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.parallel (%n) = (%c0) to (%c512) step (%c1) {
    memref.store %cst, %out[%c0, %n] : memref<1x512xf32>
    scf.reduce
  }
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c32) step (%c1, %c1) {
    %i = affine.linearize_index disjoint [%h, %d] by (8, 32) : index
    %init = memref.load %out[%c0, %i] : memref<1x512xf32>
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %init) -> (f32) {
      %v = memref.load %p[%k, %i] : memref<16x512xf32>
      %r = arith.addf %v, %a : f32
      scf.yield %r : f32
    }
    memref.store %s, %out[%c0, %i] : memref<1x512xf32>
    scf.reduce
  }
  return
}

// A norm's final sum over its 8 partials runs on the host's scf.for into a
// one-element accumulator, filled at the top of the step: the fill moves
// down to right before that loop (the first op that touches the buffer),
// where poot-gpu-host-to-parallel wraps both in one one-thread kernel
// (poot-gpu-host-to-parallel.mlir). A fill whose first user is not a host
// loop stays where it is.
// CHECK-LABEL: func.func @final_sum_fill
// CHECK: memref.alloc() : memref<1x1xf32>
// CHECK-NEXT: memref.alloc() : memref<1xf32>
// CHECK-NEXT: memref.store %{{.*}}, %[[OTHER:.*]][%{{.*}}] : memref<1xf32>
// CHECK-NEXT: scf.parallel
// CHECK: memref.store %[[ZERO:.*]], %[[ACC:.*]][%{{.*}}, %{{.*}}] : memref<1x1xf32>
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[ACC]]
func.func @final_sum_fill(%partials: memref<8xf32>, %out: memref<1xf32>, %other_out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<1x1xf32>
  %other = memref.alloc() : memref<1xf32>
  memref.store %zero, %acc[%c0, %c0] : memref<1x1xf32>
  memref.store %zero, %other[%c0] : memref<1xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %other[%c0] : memref<1xf32>
    memref.store %v, %other_out[%i] : memref<8xf32>
    scf.reduce
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %p = memref.load %partials[%i] : memref<8xf32>
    %a = memref.load %acc[%c0, %c0] : memref<1x1xf32>
    %s = arith.addf %p, %a : f32
    memref.store %s, %acc[%c0, %c0] : memref<1x1xf32>
  }
  %r = memref.load %acc[%c0, %c0] : memref<1x1xf32>
  memref.store %r, %out[%c0] : memref<1xf32>
  return
}
