// RUN: poot-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(poot-gpu-warp-reductions))" | FileCheck %s
// RUN: not poot-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(poot-gpu-warp-reductions{warp-size=24}))" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: poot-gpu-warp-reductions: warp-size must be a power of two >= 2 and min-threads >= 1, got 24 and 16384

// The final sum of a split decode matmul after poot-gpu-vectorize-columns:
// 1024 threads of 4 columns, 16 trips of 8 partials. 16 lanes an iteration
// (16384 threads); lane l starts at trip l; the sum starts from its init on
// lane 0 and -0.0 elsewhere; 4 xor shuffles per element; lane 0 stores.
// CHECK-LABEL: func.func @final_sum
// CHECK: scf.parallel (%[[N:.*]], %[[L:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c1024{{.*}}, %c16{{.*}})
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[L]], %c0
// CHECK: %[[START:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[INIT:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %[[START]] to %c128{{.*}} step %c128{{.*}} iter_args(%{{.*}} = %[[INIT]])
// CHECK: vector.extract %[[SUM]][0]
// CHECK: gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-15: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK: %[[TOTAL:.*]] = vector.from_elements
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: vector.store %[[TOTAL]]
func.func @final_sum(%p: memref<128x1x4096xf32>, %out: memref<1x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant dense<0.0> : vector<4xf32>
  scf.parallel (%n) = (%c0) to (%c1024) step (%c1) {
    %col = arith.muli %n, %c4 : index
    %s = scf.for %i = %c0 to %c128 step %c8 iter_args(%a = %zero) -> (vector<4xf32>) {
      %x0 = vector.load %p[%i, %c0, %col] : memref<128x1x4096xf32>, vector<4xf32>
      %a1 = arith.addf %x0, %a : vector<4xf32>
      %i1 = arith.addi %i, %c1 : index
      %x1 = vector.load %p[%i1, %c0, %col] : memref<128x1x4096xf32>, vector<4xf32>
      %a2 = arith.addf %x1, %a1 : vector<4xf32>
      scf.yield %a2 : vector<4xf32>
    }
    vector.store %s, %out[%c0, %col] : memref<1x4096xf32>, vector<4xf32>
    scf.reduce
  }
  return
}

// -----

// A row's sum of squares on one thread (a norm), then its use: a whole warp
// (32 lanes), the epilogue on lane 0. A max chain keeps its init on every
// lane (max is idempotent).
// CHECK-LABEL: func.func @row
// CHECK: scf.parallel (%{{.*}}, %[[L:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c1{{.*}}, %c32{{.*}})
// CHECK-NOT: arith.select
// CHECK: scf.for
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK: scf.if
// CHECK: math.rsqrt
// CHECK: memref.store
func.func @row(%x: memref<4096xf32>, %o: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %ninf = arith.constant 0xFF800000 : f32
  scf.parallel (%r) = (%c0) to (%c1) step (%c1) {
    %m = scf.for %k = %c0 to %c4096 step %c1 iter_args(%a = %ninf) -> (f32) {
      %v = memref.load %x[%k] : memref<4096xf32>
      %a1 = arith.maximumf %a, %v : f32
      scf.yield %a1 : f32
    }
    %r1 = math.rsqrt %m : f32
    memref.store %r1, %o[%r] : memref<1xf32>
    scf.reduce
  }
  return
}

// -----

// Left alone: enough threads already; a store before the reduction; a sum
// whose running value is used inside the loop (not a pure chain).
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: gpu.shuffle
// CHECK: return
func.func @untouched(%x: memref<4096xf32>, %w: memref<4096x32768xf32>, %o: memref<32768xf32>, %t: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %c32768 = arith.constant 32768 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%n) = (%c0) to (%c32768) step (%c1) {
    %s = scf.for %k = %c0 to %c4096 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %w[%k, %n] : memref<4096x32768xf32>
      %a1 = arith.addf %a, %v : f32
      scf.yield %a1 : f32
    }
    memref.store %s, %o[%n] : memref<32768xf32>
    scf.reduce
  }
  scf.parallel (%r) = (%c0) to (%c1) step (%c1) {
    memref.store %zero, %o[%r] : memref<32768xf32>
    %s = scf.for %k = %c0 to %c4096 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %x[%k] : memref<4096xf32>
      %a1 = arith.addf %a, %v : f32
      scf.yield %a1 : f32
    }
    memref.store %s, %o[%r] : memref<32768xf32>
    scf.reduce
  }
  scf.parallel (%r) = (%c0) to (%c1) step (%c1) {
    %s = scf.for %k = %c0 to %c4096 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %x[%k] : memref<4096xf32>
      %a1 = arith.addf %a, %v : f32
      memref.store %a1, %t[%k] : memref<4096xf32>
      scf.yield %a1 : f32
    }
    memref.store %s, %o[%r] : memref<32768xf32>
    scf.reduce
  }
  return
}

// -----

// A declaration has no body to look at (the 2026-12-06 campaign).
// CHECK-LABEL: func.func private @declared
func.func private @declared(%x: memref<4xf32>)
