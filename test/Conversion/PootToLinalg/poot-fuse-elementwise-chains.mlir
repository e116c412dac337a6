// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(poot-fuse-elementwise-chains))' | FileCheck %s
// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(poot-fuse-elementwise-chains{max-body-ops=2}))' | FileCheck %s --check-prefix=CAP
// RUN: poot-opt %s --split-input-file --pass-pipeline='builtin.module(poot-fuse-elementwise-chains{propagate-reshapes=true})' | FileCheck %s --check-prefix=NOLINALG

#id = affine_map<(d0) -> (d0)>

// A chain of four elementwise ops becomes one op computing all four; capped
// at two payload operations, two ops of two.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NEXT: math.exp
// CHECK-NEXT: math.sin
// CHECK-NEXT: math.cos
// CHECK-NOT: linalg.generic
// CAP-LABEL: func.func @chain
// CAP: linalg.generic
// CAP: math.tanh
// CAP-NEXT: math.exp
// CAP-NEXT: linalg.yield
// CAP: linalg.generic
// CAP: math.sin
// CAP-NEXT: math.cos
// CAP-NEXT: linalg.yield
// CAP-NOT: linalg.generic
func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%1 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.sin %a : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%2 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.cos %a : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %3 : tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#vec = affine_map<(d0, d1) -> (d1)>
#out = affine_map<(d0, d1) -> (d0)>

// A producer with two uses stays (fused, it would run twice), and an
// elementwise producer is not fused into a reduction (it would run once per
// reduction step of every output).
// CHECK-LABEL: func.func @kept
// CAP-LABEL: func.func @kept
// CHECK: %[[T:.*]] = linalg.generic
// CHECK: math.tanh
// CHECK: linalg.generic {{.*}} ins(%[[T]]
// CHECK: linalg.generic {{.*}} ins(%[[T]]
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%{{.*}}, %[[E]]
func.func @kept(%x: tensor<64xf32>, %m: tensor<8x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%t : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%t : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %z = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<8xf32>
  %i = linalg.fill ins(%z : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#row, #vec, #out], iterator_types = ["parallel", "reduction"]} ins(%m, %w : tensor<8x64xf32>, tensor<64xf32>) outs(%i : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %u, %v, %s : tensor<64xf32>, tensor<64xf32>, tensor<8xf32>
}

// -----

// Found by the 2026-12-06 campaign: the pass run on a module with no linalg
// op (poot ops not lowered yet) read the linalg dialect before it was loaded.
// NOLINALG-LABEL: func.func @ew
// NOLINALG: poot.exp
func.func @ew(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = poot.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
