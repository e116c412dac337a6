// RUN: poot-opt %s --split-input-file --poot-cpu-plan-arena | FileCheck %s
// RUN: not poot-opt %s --split-input-file --poot-cpu-plan-arena=max-bytes=100 -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT

// Three temporaries: %a and %b live at once (different offsets); %c is
// allocated after %a's last use and takes %a's bytes. The arena is the
// peak (512 bytes of 64-byte slots: 256 + 256), not the sum (768); it is
// the last argument and the module records its size.
// CHECK: module attributes {poot.arena_bytes = {step = 512 : i64}}
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[ARENA:[^:]*]]: memref<512xi8>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<512xi8> to memref<64xf32>
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: memref.view %[[ARENA]][%[[C256]]][] : memref<512xi8> to memref<64xf32>
// CHECK: %[[C0B:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0B]]][] : memref<512xi8> to memref<8x8xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// LIMIT: error: BufferBytes: the temporaries of @step need 512 bytes at their peak; the device's max-alloc-bytes is 100
func.func @step(%x: memref<64xf32>, %out: memref<64xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  memref.copy %x, %a : memref<64xf32> to memref<64xf32>
  %b = memref.alloc() : memref<64xf32>
  memref.copy %a, %b : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  %c = memref.alloc() : memref<8x8xf32>
  %flat = memref.collapse_shape %c [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  memref.copy %b, %flat : memref<64xf32> to memref<64xf32>
  memref.copy %flat, %out : memref<64xf32> to memref<64xf32>
  return
}

// -----

// What stays an allocation: one inside a parallel loop (each iteration
// needs its own), one of dynamic size, one a loop carries out (it escapes
// through iter_args), and any in a function something calls (its signature
// stays). The sequential loop's temporary moves into the arena.
// CHECK: module attributes {poot.arena_bytes = {entry = 64 : i64}}
// CHECK-LABEL: func.func @entry
// CHECK-SAME: memref<64xi8>)
// CHECK: scf.parallel
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: scf.for
// CHECK: memref.view
// CHECK: memref.alloc() : memref<2xf32>
// CHECK-LABEL: func.func private @callee()
// CHECK: memref.alloc() : memref<8xf32>
func.func @entry(%x: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %t = memref.alloc() : memref<4xf32>
    memref.copy %x, %t : memref<4xf32> to memref<4xf32>
    scf.reduce
  }
  %d = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %s = memref.alloc() : memref<4xf32>
    memref.copy %x, %s : memref<4xf32> to memref<4xf32>
  }
  %init = memref.alloc() : memref<2xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> memref<2xf32> {
    scf.yield %acc : memref<2xf32>
  }
  call @callee() : () -> ()
  return
}
func.func private @callee() {
  %t = memref.alloc() : memref<8xf32>
  return
}
