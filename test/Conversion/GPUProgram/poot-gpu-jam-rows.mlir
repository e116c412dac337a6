// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-jam-rows{max-rows=8}))" | FileCheck %s
// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-jam-rows{max-rows=1}))" | FileCheck %s --check-prefix=OFF
// RUN: not poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-jam-rows{max-rows=0}))" 2>&1 | FileCheck %s --check-prefix=BAD

// RUN: not poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-jam-rows{max-rows=65}))" 2>&1 | FileCheck %s --check-prefix=BIG
// RUN: not poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{jam-rows=0}))" 2>&1 | FileCheck %s --check-prefix=SPLIT

// BAD: poot-gpu-jam-rows: max-rows must be in [1, 64], got 0
// BIG: poot-gpu-jam-rows: max-rows must be in [1, 64], got 65
// SPLIT: poot-gpu-split-reductions: jam-rows must be in [1, 64], got 0

// The partial sums of a 16-row bf16 matmul split 64 ways: the 16 rows run
// as 2 groups of 8, each thread's reduction loop carries 8 accumulators and
// loads the weight element once (and converts it once) for all 8 rows.
// CHECK-LABEL: func.func @batched
// CHECK: scf.parallel (%[[S:.*]], %[[G:.*]], %[[N:.*]]) = (%c0, %c0, %c0) to (%c64, %c2, %c1024)
// CHECK: %[[M0:.*]] = arith.muli %[[G]], %c8
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-1: memref.load %{{.*}} : memref<4096x1024xbf16>
// CHECK-NOT: memref.load %{{.*}} : memref<4096x1024xbf16>
// CHECK: scf.yield
// CHECK-COUNT-8: memref.store %{{.*}} : memref<64x16x1x1024xf32>
// OFF-LABEL: func.func @batched
// OFF: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%c64, %c16, %c1024)
// The x loads: one per row.
// CHECK-LABEL: func.func @batched_x_loads
// CHECK-COUNT-8: memref.load %{{.*}} : memref<16x1x4096xbf16>
// CHECK-NOT: memref.load %{{.*}} : memref<16x1x4096xbf16>
// CHECK: scf.yield
func.func @batched(%x: memref<16x1x4096xbf16>, %w: memref<4096x1024xbf16>, %p: memref<64x16x1x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.parallel (%s, %m, %n) = (%c0, %c0, %c0) to (%c64, %c16, %c1024) step (%c1, %c1, %c1) {
    %0 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %cst) -> (f32) {
      %i = affine.linearize_index disjoint [%s, %k] by (64, 64) : index
      %a = memref.load %x[%m, %c0, %i] : memref<16x1x4096xbf16>
      %b = memref.load %w[%i, %n] : memref<4096x1024xbf16>
      %ea = arith.extf %a : bf16 to f32
      %eb = arith.extf %b : bf16 to f32
      %pr = arith.mulf %ea, %eb : f32
      %r = arith.addf %acc, %pr : f32
      scf.yield %r : f32
    }
    memref.store %0, %p[%s, %m, %c0, %n] : memref<64x16x1x1024xf32>
    scf.reduce
  }
  return
}
func.func @batched_x_loads(%x: memref<16x1x4096xbf16>, %w: memref<4096x1024xbf16>, %p: memref<64x16x1x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.parallel (%s, %m, %n) = (%c0, %c0, %c0) to (%c64, %c16, %c1024) step (%c1, %c1, %c1) {
    %0 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %cst) -> (f32) {
      %i = affine.linearize_index disjoint [%s, %k] by (64, 64) : index
      %a = memref.load %x[%m, %c0, %i] : memref<16x1x4096xbf16>
      %b = memref.load %w[%i, %n] : memref<4096x1024xbf16>
      %ea = arith.extf %a : bf16 to f32
      %eb = arith.extf %b : bf16 to f32
      %pr = arith.mulf %ea, %eb : f32
      %r = arith.addf %acc, %pr : f32
      scf.yield %r : f32
    }
    memref.store %0, %p[%s, %m, %c0, %n] : memref<64x16x1x1024xf32>
    scf.reduce
  }
  return
}

// 12 rows with at most 8 a thread: groups of 6 (the largest divisor).
// CHECK-LABEL: func.func @twelve_rows
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c256)
// CHECK: iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-6: memref.store
func.func @twelve_rows(%x: memref<12x512xf32>, %w: memref<512x256xf32>, %o: memref<12x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%m, %n) = (%c0, %c0) to (%c12, %c256) step (%c1, %c1) {
    %init = memref.load %o[%m, %n] : memref<12x256xf32>
    %0 = scf.for %k = %c0 to %c512 step %c1 iter_args(%acc = %init) -> (f32) {
      %a = memref.load %x[%m, %k] : memref<12x512xf32>
      %b = memref.load %w[%k, %n] : memref<512x256xf32>
      %pr = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %pr : f32
      scf.yield %r : f32
    }
    memref.store %0, %o[%m, %n] : memref<12x256xf32>
    scf.reduce
  }
  return
}

// Left as they are: a final sum over splits (every load is per row: nothing
// is shared), and a reduction whose length depends on the row (a causal
// row: the rows could not share one loop).
// CHECK-LABEL: func.func @nothing_shared
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c16, %c1024)
// CHECK-LABEL: func.func @row_dependent_bounds
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c16, %c256)
func.func @nothing_shared(%p: memref<64x16x1024xf32>, %o: memref<16x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.parallel (%m, %n) = (%c0, %c0) to (%c16, %c1024) step (%c1, %c1) {
    %0 = scf.for %s = %c0 to %c64 step %c1 iter_args(%acc = %cst) -> (f32) {
      %a = memref.load %p[%s, %m, %n] : memref<64x16x1024xf32>
      %r = arith.addf %a, %acc : f32
      scf.yield %r : f32
    }
    memref.store %0, %o[%m, %n] : memref<16x1024xf32>
    scf.reduce
  }
  return
}
func.func @row_dependent_bounds(%x: memref<16x16xf32>, %w: memref<16x256xf32>, %o: memref<16x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.parallel (%m, %n) = (%c0, %c0) to (%c16, %c256) step (%c1, %c1) {
    %len = arith.addi %m, %c1 : index
    %0 = scf.for %k = %c0 to %len step %c1 iter_args(%acc = %cst) -> (f32) {
      %a = memref.load %x[%m, %k] : memref<16x16xf32>
      %b = memref.load %w[%k, %n] : memref<16x256xf32>
      %pr = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %pr : f32
      scf.yield %r : f32
    }
    memref.store %0, %o[%m, %n] : memref<16x256xf32>
    scf.reduce
  }
  return
}

// A one-row projection over (head, d) columns: the heads do not index the
// activation, but they do index the weight (the streamed operand), so the
// heads share nothing worth a thread: left as they are.
// CHECK-LABEL: func.func @heads_share_only_the_activation
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c8, %c64)
// CHECK-COUNT-1: iter_args(%{{.*}}) -> (f32)
func.func @heads_share_only_the_activation(%x: memref<1x512xbf16>, %w: memref<512x8x64xbf16>, %o: memref<1x8x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
    %0 = scf.for %k = %c0 to %c512 step %c1 iter_args(%acc = %cst) -> (f32) {
      %a = memref.load %x[%c0, %k] : memref<1x512xbf16>
      %b = memref.load %w[%k, %h, %d] : memref<512x8x64xbf16>
      %ea = arith.extf %a : bf16 to f32
      %eb = arith.extf %b : bf16 to f32
      %pr = arith.mulf %ea, %eb : f32
      %r = arith.addf %acc, %pr : f32
      scf.yield %r : f32
    }
    memref.store %0, %o[%c0, %h, %d] : memref<1x8x64xf32>
    scf.reduce
  }
  return
}
