// RUN: poot-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(poot-gpu-host-to-parallel{threads=64}))" | FileCheck %s

// A one-row write map's scatter: the unrolled loop leaves its bounds check
// as a host scf.if around the copy loop, and the same condition guards a
// second pool's copy. Each guarded loop becomes a loop that tests the
// condition inside, so the slot load and the compares run in the kernels
// and nothing is computed on the host.
// CHECK-LABEL: func.func @one_row_scatter
// CHECK-NOT: scf.if
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.load %{{.*}}[%c0] : memref<1xi32>
// CHECK: arith.cmpi sge
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<64x2x8xf32>
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.load %{{.*}}[%c0] : memref<1xi32>
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<64x2x8xf32>
// CHECK: return
func.func @one_row_scatter(%kp: memref<64x2x8xf32>, %vp: memref<64x2x8xf32>,
                           %write: memref<1xi32>, %row: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c0_i32 = arith.constant 0 : i32
  %c64_i32 = arith.constant 64 : i32
  %slot = memref.load %write[%c0] : memref<1xi32>
  %ge = arith.cmpi sge, %slot, %c0_i32 : i32
  %lt = arith.cmpi slt, %slot, %c64_i32 : i32
  %ok = arith.andi %ge, %lt : i1
  scf.if %ok {
    %s = arith.index_cast %slot : i32 to index
    scf.parallel (%h, %d) = (%c0, %c0) to (%c2, %c8) step (%c1, %c1) {
      %x = memref.load %row[%h, %d] : memref<2x8xf32>
      memref.store %x, %kp[%s, %h, %d] : memref<64x2x8xf32>
      scf.reduce
    }
  }
  scf.if %ok {
    %s = arith.index_cast %slot : i32 to index
    scf.parallel (%h, %d) = (%c0, %c0) to (%c2, %c8) step (%c1, %c1) {
      %x = memref.load %row[%h, %d] : memref<2x8xf32>
      memref.store %x, %vp[%s, %h, %d] : memref<64x2x8xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A host if whose result the host uses cannot move into a kernel: refused
// with a diagnostic, not mis-lowered.
func.func @host_uses_if_result(%n: memref<i32>, %out: memref<4xf32>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i32 = arith.constant 0 : i32
  %v = memref.load %n[] : memref<i32>
  %p = arith.cmpi sgt, %v, %c0_i32 : i32
  // expected-error @+1 {{a value the host would compute is used by the host}}
  %r = scf.if %p -> index {
    scf.yield %c4 : index
  } else {
    scf.yield %c1 : index
  }
  return %r : index
}

// -----

// The scatter over a write map (distinct iterations): each row's copy, a
// loop nested under the row's bounds check, joins the row loop, so every
// element gets a thread (8 rows x 2 x 16 = 256), the check recomputed per
// element; before, each row's 32 elements were copied by one thread.
// CHECK-LABEL: func.func @scatter_rows_every_element
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK: arith.cmpi ult, %{{.*}}, %c256
// CHECK: memref.load %{{.*}} : memref<8xi32>
// CHECK: scf.if
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: memref.load {{.*}} : memref<8x1x2x16xbf16>
// CHECK-NEXT: memref.store {{.*}} : memref<512x2x16xbf16>
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @scatter_rows_every_element(%map: memref<8xi32>, %rows: memref<8x1x2x16xbf16>, %pool: memref<512x2x16xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c0_i32 = arith.constant 0 : i32
  %c512_i32 = arith.constant 512 : i32
  scf.for %i = %c0 to %c8 step %c1 {
    %0 = memref.load %map[%i] : memref<8xi32>
    %1 = arith.cmpi sge, %0, %c0_i32 : i32
    %2 = arith.cmpi slt, %0, %c512_i32 : i32
    %3 = arith.andi %1, %2 : i1
    scf.if %3 {
      %4 = arith.index_cast %0 : i32 to index
      scf.parallel (%h, %d) = (%c0, %c0) to (%c2, %c16) step (%c1, %c1) {
        %5 = memref.load %rows[%i, %c0, %h, %d] : memref<8x1x2x16xbf16>
        memref.store %5, %pool[%4, %h, %d] : memref<512x2x16xbf16>
        scf.reduce
      }
    }
  } {poot.distinct_iterations}
  return
}

// -----

// A final sum's one-element fill right before its host loop (where
// poot-gpu-fold-fills put it): one one-thread kernel for both.
// CHECK-LABEL: func.func @final_sum_with_fill
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.if
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.store
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @final_sum_with_fill(%partials: memref<8xf32>, %acc: memref<1x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %acc[%c0, %c0] : memref<1x1xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %p = memref.load %partials[%i] : memref<8xf32>
    %a = memref.load %acc[%c0, %c0] : memref<1x1xf32>
    %s = arith.addf %p, %a : f32
    memref.store %s, %acc[%c0, %c0] : memref<1x1xf32>
  }
  return
}
