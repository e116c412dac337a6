// RUN: poot-opt %s -split-input-file --poot-to-llvm-cpu | FileCheck %s
// RUN: poot-opt %s -split-input-file --poot-to-llvm-cpu=entry=step | FileCheck %s --check-prefix=ENTRY

// Steps that return one value twice used to segfault in upstream
// buffer-results-to-out-params: directly, or after CSE merged two identical
// index guards (every multi-layer attention_live decode). Each result is now
// its own out-parameter, filled with a copy.

// CHECK-LABEL: llvm.func @step(
// CHECK: llvm.func @_mlir_ciface_step(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
func.func @step(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = poot.exp %x : tensor<4xf32>
  return %y, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: llvm.func @step(
// CHECK: llvm.func @_mlir_ciface_step(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
func.func @step(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<i1>, tensor<i1>) {
  %a, %ok = poot.index_guard %x min = 1 max = 8 : tensor<4xi32>
  %b, %ok2 = poot.index_guard %x min = 1 max = 8 : tensor<4xi32>
  return %a, %ok, %ok2 : tensor<4xi32>, tensor<i1>, tensor<i1>
}

// -----

// A function other than the entry is rewritten to out-parameters too, so it
// gets the copies as well (found by the fuzzer with entry=step).
// ENTRY: llvm.func @_mlir_ciface_step(
// ENTRY: llvm.func @_mlir_ciface_step(
// ENTRY: llvm.func @step(
// ENTRY-NOT: _mlir_ciface_other
// ENTRY: llvm.func @other(%{{.*}}, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr
func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @other(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = poot.exp %x : tensor<4xf32>
  return %y, %y : tensor<4xf32>, tensor<4xf32>
}
