// RUN: poot-opt %s --poot-cpu-lower-alloca-scopes | FileCheck %s

// CHECK-LABEL: func.func @scope
// CHECK-NOT: memref.alloca_scope
// CHECK: %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK: memref.alloca() : memref<16xf32>
// CHECK: memref.store
// CHECK: llvm.intr.stackrestore %[[SP]] : !llvm.ptr
// CHECK: return
func.func @scope(%m: memref<64xf32>, %i: index) {
  memref.alloca_scope {
    %a = memref.alloca() : memref<16xf32>
    %x = memref.load %m[%i] : memref<64xf32>
    memref.store %x, %a[%i] : memref<16xf32>
  }
  return
}
