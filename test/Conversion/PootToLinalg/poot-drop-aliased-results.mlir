// RUN: poot-opt %s --poot-drop-aliased-results --split-input-file | FileCheck %s

// A result that is an argument's buffer (directly or through a cast) leaves
// the signature; a fresh result stays. The module records both.

// CHECK: module attributes {poot.result_aliases = {step = array<i64: 0, -1, 1>}}
// CHECK: func.func @step(%[[K:.*]]: memref<8x4xf32>, %[[V:.*]]: memref<8x4xf32>, %{{.*}}: memref<1x4xf32>) -> memref<1x4xf32>
// CHECK: return %{{.*}} : memref<1x4xf32>
func.func @step(%k: memref<8x4xf32>, %v: memref<8x4xf32>, %u: memref<1x4xf32>)
    -> (memref<8x4xf32>, memref<1x4xf32>, memref<8x4xf32, strided<[4, 1]>>) {
  %o = memref.alloc() : memref<1x4xf32>
  memref.copy %u, %o : memref<1x4xf32> to memref<1x4xf32>
  %c = memref.cast %v : memref<8x4xf32> to memref<8x4xf32, strided<[4, 1]>>
  return %k, %o, %c : memref<8x4xf32>, memref<1x4xf32>, memref<8x4xf32, strided<[4, 1]>>
}

// -----

// A function with callers keeps its results (its call sites would change).

// CHECK: poot.result_aliases = {caller = array<i64: -1>}
// CHECK: func.func private @callee(%{{.*}}: memref<4xf32>) -> memref<4xf32>
func.func private @callee(%x: memref<4xf32>) -> memref<4xf32> {
  return %x : memref<4xf32>
}
func.func @caller(%x: memref<4xf32>) -> memref<4xf32> {
  %y = call @callee(%x) : (memref<4xf32>) -> memref<4xf32>
  return %y : memref<4xf32>
}
