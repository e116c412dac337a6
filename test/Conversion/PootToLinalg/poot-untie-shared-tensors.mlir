// RUN: poot-opt %s --split-input-file --poot-untie-shared-tensors | FileCheck %s

// One tensor.empty that CSE shared between three destinations: each use but
// the first gets its own, right before its user (nested users included).
// CHECK-LABEL: func.func @chain
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<64xf32>
// CHECK: %[[A:.*]] = linalg.generic {{.*}} outs(%[[E0]] : tensor<64xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<64xf32>
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<64xf32>) outs(%[[E1]] : tensor<64xf32>)
// CHECK: scf.if
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<64xf32>
// CHECK: linalg.generic {{.*}} ins(%[[B]] : tensor<64xf32>) outs(%[[E2]] : tensor<64xf32>)
// CHECK-NOT: tensor.empty
#id = affine_map<(d0) -> (d0)>
func.func @chain(%x: tensor<64xf32>, %c: i1) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.exp %in : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %r = scf.if %c -> tensor<64xf32> {
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%b : tensor<64xf32>) outs(%e : tensor<64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %t = math.sin %in : f32
      linalg.yield %t : f32
    } -> tensor<64xf32>
    scf.yield %d : tensor<64xf32>
  } else {
    scf.yield %b : tensor<64xf32>
  }
  return %r : tensor<64xf32>
}

// -----

// A tensor constant read by two ops: the second gets its own (equal)
// constant; a scalar constant is left shared.
// CHECK-LABEL: func.func @constants
// CHECK: %[[ONE:.*]] = arith.constant 1.0{{.*}} : f32
// CHECK: %[[H0:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[H0]] : tensor<4xf32>, tensor<f32>)
// CHECK: arith.addf %{{.*}}, %[[ONE]]
// CHECK: %[[H1:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[H1]] : tensor<4xf32>, tensor<f32>)
// CHECK: arith.addf %{{.*}}, %[[ONE]]
#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @constants(%x: tensor<4xf32>, %o1: tensor<4xf32>, %o2: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %h = arith.constant dense<0.5> : tensor<f32>
  %a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel"]}
      ins(%x, %h : tensor<4xf32>, tensor<f32>) outs(%o1 : tensor<4xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    %p = arith.addf %m, %one : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  %b = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel"]}
      ins(%a, %h : tensor<4xf32>, tensor<f32>) outs(%o2 : tensor<4xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    %p = arith.addf %m, %one : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %b : tensor<4xf32>
}
