// RUN: poot-opt %s -poot-collectives-to-calls="program=1" | FileCheck %s

// A GPU step's all-reduces: each a call of its own declaration with its
// buffer, marked with its site and element type, for
// poot-gpu-serialize-program to record as a program command. No hook.
// CHECK-LABEL: func.func @two_sums
// CHECK:       %[[B0:.*]] = memref.alloc() : memref<1x8xf32>
// CHECK:       bufferization.materialize_in_destination %arg0 in restrict writable %[[B0]]
// CHECK:       call @poot_all_reduce_0(%[[B0]]) {poot.all_reduce = {dtype = 0 : i32, site = 0 : i64}}
// CHECK:       %[[B1:.*]] = memref.alloc() : memref<4xbf16>
// CHECK:       call @poot_all_reduce_1(%[[B1]]) {poot.all_reduce = {dtype = 2 : i32, site = 1 : i64}}
// CHECK:       func.func private @poot_all_reduce_0(memref<1x8xf32>)
// CHECK:       func.func private @poot_all_reduce_1(memref<4xbf16>)
// CHECK-NOT:   poot_all_reduce_hook
func.func @two_sums(%a: tensor<1x8xf32>, %b: tensor<4xbf16>) -> (tensor<1x8xf32>, tensor<4xbf16>) {
  %0 = poot.all_reduce %a : tensor<1x8xf32>
  %1 = poot.all_reduce %b : tensor<4xbf16>
  return %0, %1 : tensor<1x8xf32>, tensor<4xbf16>
}
