// RUN: not poot-opt %s -o /dev/null 2>&1 | FileCheck %s
// RUN: not poot-opt %s --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPLIT

// A block label defined twice in one region: MLIR 22's parser reports the
// redefinition, then asserts tearing down the half-built region (a value
// destroyed with uses left; dominance asked about an unlinked block: the
// 2026-12-06 campaign, seed 9091). poot-opt refuses the text first, naming
// the line. The same label in sibling regions (every linalg.generic's ^bb0)
// and in strings or comments is fine.
// CHECK-NOT: PLEASE submit
// CHECK: error: {{.*}}block-redefinition-guard.mlir:27: redefinition of block '^bb0' (MLIR 22's parser would abort tearing down the region)
// SPLIT: error: {{.*}}block-redefinition-guard.mlir:27: redefinition of block '^bb0'
#id = affine_map<(d0) -> (d0)>
func.func @fine(%x: tensor<4xf32>) -> tensor<4xf32> attributes {note = "{ ^bb0( }"} {
  // ^bb0(
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<4xf32>) outs(%x : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%1 : tensor<4xf32>) outs(%x : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.sin %a : f32
  ^bb0(%b: f32, %p: f32):
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
