// RUN: poot-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(poot-gpu-elide-layout-copies))" | FileCheck %s

// The fused attention's flat output copied into the output projection's
// [1, 1, heads, d] lhs: every element keeps its flat offset, the source is
// done with: the destination is a view of the source, no copy loop.
// CHECK-LABEL: func.func @attention_output
// CHECK-NOT: scf.parallel
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[SRC:.*]] {{\[\[}}0, 1, 2, 3]] output_shape [1, 1, 32, 128] : memref<4096xbf16> into memref<1x1x32x128xbf16>
// CHECK: memref.load %[[VIEW]]
func.func @attention_output(%out: memref<1x1x32x128xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %src = memref.alloc() : memref<4096xbf16>
  %dst = memref.alloc() : memref<1x1x32x128xbf16>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c32, %c128) step (%c1, %c1) {
    %i = affine.linearize_index disjoint [%h, %d] by (32, 128) : index
    %v = memref.load %src[%i] : memref<4096xbf16>
    memref.store %v, %dst[%c0, %c0, %h, %d] : memref<1x1x32x128xbf16>
    scf.reduce
  }
  scf.parallel (%h, %d) = (%c0, %c0) to (%c32, %c128) step (%c1, %c1) {
    %v = memref.load %dst[%c0, %c0, %h, %d] : memref<1x1x32x128xbf16>
    memref.store %v, %out[%c0, %c0, %h, %d] : memref<1x1x32x128xbf16>
    scf.reduce
  }
  return
}

// -----

// [1, 8, 1, 128] -> [1, 1, 8, 128] (a unit dimension moves): the same
// offsets; collapsed then expanded.
// CHECK-LABEL: func.func @unit_dimension_moves
// CHECK-NOT: scf.parallel
// CHECK: memref.collapse_shape {{.*}} : memref<1x8x1x128xf32> into memref<1024xf32>
// CHECK: memref.expand_shape {{.*}} output_shape [1, 1, 8, 128] : memref<1024xf32> into memref<1x1x8x128xf32>
func.func @unit_dimension_moves(%out: memref<1x1x8x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %src = memref.alloc() : memref<1x8x1x128xf32>
  %dst = memref.alloc() : memref<1x1x8x128xf32>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c128) step (%c1, %c1) {
    %v = memref.load %src[%c0, %h, %c0, %d] : memref<1x8x1x128xf32>
    memref.store %v, %dst[%c0, %c0, %h, %d] : memref<1x1x8x128xf32>
    scf.reduce
  }
  memref.copy %dst, %out : memref<1x1x8x128xf32> to memref<1x1x8x128xf32>
  return
}

// -----

// Not elided: a real transpose ([8, 128] -> [128, 8] moves elements); a
// source read again after the copy; a source that is a step argument (it
// may be donated state); a copy of only part of its destination.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: scf.parallel
func.func @kept(%arg: memref<8x128xf32>, %out: memref<8x128xf32>, %t: memref<128x8xf32>, %part: memref<2x128xf32>,
                %out3: memref<1x8x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %src = memref.alloc() : memref<8x128xf32>
  %dst = memref.alloc() : memref<128x8xf32>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c128) step (%c1, %c1) {
    %v = memref.load %src[%h, %d] : memref<8x128xf32>
    memref.store %v, %dst[%d, %h] : memref<128x8xf32>
    scf.reduce
  }
  memref.copy %dst, %t : memref<128x8xf32> to memref<128x8xf32>
  %dst2 = memref.alloc() : memref<1x8x128xf32>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c128) step (%c1, %c1) {
    %v = memref.load %src[%h, %d] : memref<8x128xf32>
    memref.store %v, %dst2[%c0, %h, %d] : memref<1x8x128xf32>
    scf.reduce
  }
  memref.copy %src, %out : memref<8x128xf32> to memref<8x128xf32>
  %dst3 = memref.alloc() : memref<1x8x128xf32>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c128) step (%c1, %c1) {
    %v = memref.load %arg[%h, %d] : memref<8x128xf32>
    memref.store %v, %dst3[%c0, %h, %d] : memref<1x8x128xf32>
    scf.reduce
  }
  %c2 = arith.constant 2 : index
  %src4 = memref.alloc() : memref<256xf32>
  %dst4 = memref.alloc() : memref<2x128xf32>
  scf.parallel (%h, %d) = (%c0, %c0) to (%c1, %c128) step (%c1, %c1) {
    %i = affine.linearize_index disjoint [%h, %d] by (2, 128) : index
    %v = memref.load %src4[%i] : memref<256xf32>
    memref.store %v, %dst4[%h, %d] : memref<2x128xf32>
    scf.reduce
  }
  memref.copy %dst4, %part : memref<2x128xf32> to memref<2x128xf32>
  memref.copy %dst2, %out3 : memref<1x8x128xf32> to memref<1x8x128xf32>
  memref.copy %dst3, %out3 : memref<1x8x128xf32> to memref<1x8x128xf32>
  return
}
