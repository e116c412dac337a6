// RUN: poot-opt %s --poot-to-llvm-cpu="entry=step" | FileCheck %s

// A state written at pos is donated: the step writes the new row into the
// argument's own buffer (one loop of 4 stores), allocates nothing, copies
// nothing, and the state result leaves the C interface (3 arguments, no
// out-parameter); the module records that result 0 is argument 0.

// CHECK: module attributes {poot.result_aliases = {step = array<i64: 0>}}
// CHECK-NOT: llvm.call @malloc
// CHECK-NOT: llvm.intr.memcpy
// CHECK: llvm.func @_mlir_ciface_step(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-SAME: attributes
func.func @step(%k: tensor<16x4xf32> {poot.slot = #poot.slot<state "k">},
                %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 15>},
                %u: tensor<1x4xf32>) -> (tensor<16x4xf32> {poot.slot = #poot.slot<state "k">}) {
  %k1 = poot.dynamic_update_slice %k, %u, %pos axis = 0 : tensor<16x4xf32>, tensor<1x4xf32>, tensor<i32>
  return %k1 : tensor<16x4xf32>
}
