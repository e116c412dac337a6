// poot-opt %s --pass-pipeline='builtin.module(func.func(poot-gpu-vectorize-columns{vector-memory=1 width=3}),func.func(poot-gpu-vectorize-columns{unroll=-1}))'    (signal: Assertion `(Value == N || llvm::isPowerOf2_64(Value)) && "Alignment is neither N nor a power of N"' @ ::ColumnCloner::cloneOp)
func.func @gemv(%x: memref<1x2048xf32>, %w: memref<2048x256xf32>, %p: memref<16x1x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
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
  return
}

func.func @heads(%x: memref<1x20xf32>, %w: memref<20x4x16xf32>, %o: memref<1x4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  scf.parallel (%h, %d) = (%c0, %c0) to (%c4, %c16) step (%c1, %c1) {
    %0 = memref.load %o[%c0, %h, %d] : memref<1x4x16xf32>
    %1 = scf.for %k = %c0 to %c20 step %c1 iter_args(%acc = %0) -> (f32) {
      %a = memref.load %x[%c0, %k] : memref<1x20xf32>
      %b = memref.load %w[%k, %h, %d] : memref<20x4x16xf32>
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      scf.yield %r : f32
    }
    memref.store %1, %o[%c0, %h, %d] : memref<1x4x16xf32>
    scf.reduce
  }
  return
}

func.func @scalar(%x: memref<64xf32>, %w: memref<64x6xf32>, %o: memref<6xf32>,
                  %o2: memref<8xf32>, %v: memref<64x8xf32, strided<[6, 1]>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%n) = (%c0) to (%c6) step (%c1) {
    %1 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %z) -> (f32) {
      %a = memref.load %x[%k] : memref<64xf32>
      %b = memref.load %w[%k, %n] : memref<64x6xf32>
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      scf.yield %r : f32
    }
    memref.store %1, %o[%n] : memref<6xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    %1 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %z) -> (f32) {
      %i = arith.index_cast %n : index to i32
      %f = arith.sitofp %i : i32 to f32
      %r = arith.addf %acc, %f : f32
      scf.yield %r : f32
    }
    memref.store %1, %o2[%n] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%n) = (%c0) to (%c8) step (%c1) {
    %1 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %z) -> (f32) {
      %b = memref.load %v[%k, %n] : memref<64x8xf32, strided<[6, 1]>>
      %r = arith.addf %acc, %b : f32
      scf.yield %r : f32
    }
    memref.store %1, %o2[%n] : memref<8xf32>
    scf.reduce
  }
  return
}
