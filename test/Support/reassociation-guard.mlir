// RUN: not poot-opt %s -o /dev/null 2>&1 | FileCheck %s
// RUN: not poot-opt %s --split-input-file -o /dev/null 2>&1 | FileCheck %s

// The reshape ops' verifiers build affine maps from the reassociation before
// checking it: a negative index asserts in AffineMap::get (found by the
// issue-28 long fuzz campaign, on tensor.expand_shape). poot-opt refuses the
// input first, naming the line in the file (with --split-input-file too,
// where each chunk is checked as it will be parsed).
// CHECK-NOT: expand_shape
// CHECK: error: {{.*}}reassociation-guard.mlir:19: 'memref.collapse_shape' reassociation index -2 is not a dimension of its rank-2 type (MLIR 22's verifier would abort building its map)
func.func @expand(%x: tensor<1x1024xf32>) -> tensor<1x1x1024xf32> {
  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 1, 1024] : tensor<1x1024xf32> into tensor<1x1x1024xf32>
  return %e : tensor<1x1x1024xf32>
}

// -----

func.func @collapse(%x: memref<2x3xf32>) -> memref<6xf32> {
  %c = memref.collapse_shape %x [[0, -2]] : memref<2x3xf32> into memref<6xf32>
  return %c : memref<6xf32>
}
