// RUN: poot-opt %s -split-input-file -poot-collectives-to-calls | FileCheck %s

// Each all_reduce sums a copy of its operand in place through the runtime's
// hook; the call site numbers follow program order, the dtype code the
// element type (0 f32, 2 bf16). The hook pointer is exported, zero until
// the runtime stores its callback, and skipped while null (one rank).
// CHECK-LABEL: func.func @two_sums
// CHECK:       %[[B0:.*]] = memref.alloc() : memref<1x8xf32>
// CHECK:       bufferization.materialize_in_destination %arg0 in restrict writable %[[B0]]
// CHECK:       %[[P0:.*]] = memref.extract_aligned_pointer_as_index %[[B0]]
// CHECK-DAG:   %[[N8:.*]] = arith.constant 8 : i64
// CHECK-DAG:   %[[F32:.*]] = arith.constant 0 : i32
// CHECK-DAG:   %[[S0:.*]] = arith.constant 0 : i64
// CHECK:       call @poot_all_reduce(%[[P0]], %[[N8]], %[[F32]], %[[S0]])
// CHECK:       %[[T0:.*]] = bufferization.to_tensor %[[B0]] restrict writable
// CHECK:       memref.alloc() : memref<4xbf16>
// CHECK-DAG:   arith.constant 4 : i64
// CHECK-DAG:   arith.constant 2 : i32
// CHECK-DAG:   arith.constant 1 : i64
// CHECK:       call @poot_all_reduce(
// CHECK:       return %[[T0]]
// CHECK:       llvm.mlir.global external @poot_all_reduce_hook() {{.*}} : !llvm.ptr {
// CHECK-NEXT:    %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    llvm.return %[[NULL]] : !llvm.ptr
// CHECK-LABEL: func.func private @poot_all_reduce(
// CHECK:       %[[HOOK:.*]] = llvm.load
// CHECK:       %[[SET:.*]] = llvm.icmp "ne" %[[HOOK]]
// CHECK:       scf.if %[[SET]]
// CHECK:         llvm.call %[[HOOK]](
func.func @two_sums(%a: tensor<1x8xf32>, %b: tensor<4xbf16>) -> (tensor<1x8xf32>, tensor<4xbf16>) {
  %0 = poot.all_reduce %a : tensor<1x8xf32>
  %1 = poot.all_reduce %b : tensor<4xbf16>
  return %0, %1 : tensor<1x8xf32>, tensor<4xbf16>
}

// -----

// No collective: nothing is added.
// CHECK-LABEL: func.func @none
// CHECK-NOT:   poot_all_reduce
func.func @none(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
