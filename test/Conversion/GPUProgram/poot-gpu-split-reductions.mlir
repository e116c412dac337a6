// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions))" | FileCheck %s

// A decode matmul: 1024 outputs, 4096 products each. Split 32 ways
// (32768 / 1024 threads, chunks of 128 products): partials over a leading
// split dimension, then a 32-term reduction into the original init.
// CHECK-LABEL: func.func @gemv
// CHECK: tensor.expand_shape %{{.*}} output_shape [32, 128, 1024]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: } -> tensor<32x1x1024xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]
// CHECK: } -> tensor<1x1024xf32>
func.func @gemv(%x: tensor<1x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<1x1024xf32> {
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %o : tensor<1x1024xf32>
}

// Enough outputs already (a prefill matmul: 256 x 1024 >= 32768), or a
// reduction too short to split (2 x 128 products): left as they are.
// CHECK-LABEL: func.func @wide
// CHECK-NOT: expand_shape
// CHECK: linalg.matmul
// CHECK-NOT: expand_shape
// CHECK: linalg.matmul
func.func @wide(%x: tensor<256x4096xf32>, %w: tensor<4096x1024xf32>, %y: tensor<1x200xf32>, %v: tensor<200x64xf32>) -> (tensor<256x1024xf32>, tensor<1x64xf32>) {
  %e = tensor.empty() : tensor<256x1024xf32>
  %e2 = tensor.empty() : tensor<1x64xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %i2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x64xf32>) -> tensor<1x64xf32>
  %o = linalg.matmul ins(%x, %w : tensor<256x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %o2 = linalg.matmul ins(%y, %v : tensor<1x200xf32>, tensor<200x64xf32>) outs(%i2 : tensor<1x64xf32>) -> tensor<1x64xf32>
  return %o, %o2 : tensor<256x1024xf32>, tensor<1x64xf32>
}

// A reduction read through a constant index (the lowering's keepdim
// broadcast, (d0, d1) -> (d0, 0)) is not a permutation of loops: left whole
// (splitReduction would assert).
// CHECK-LABEL: func.func @constant_index
// CHECK-NOT: expand_shape
// CHECK: linalg.generic
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0, 0)>
func.func @constant_index(%x: tensor<1x4096xf32>, %init: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %o = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<1x4096xf32>) outs(%init : tensor<1x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1xf32>
  return %o : tensor<1x1xf32>
}
