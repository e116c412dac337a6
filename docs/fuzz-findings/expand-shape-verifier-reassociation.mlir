// poot-opt %s --pass-pipeline='builtin.module(poot-gpu-spirv-entry-abi,poot-gpu-serialize-program)'    (signal: Assertion `willBeValidAffineMap(dimCount, symbolCount, results)' @ (build/bin/poot-opt+N))
func.func @gemv(%x: tensor<1x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<1x1024xf32> {
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %o : tensor<1x1024xf32>
}

func.func @wide(%x: tensor<512x4096xf32>, %w: tensor<4096x1024xf32>, %y: tensor<1x60xf32>, %v: tensor<60x64xf32>) -> (tensor<512x1024xf32>, tensor<1x64xf32>) {
  %e = tensor.empty() : tensor<512x1024xf32>
  %e2 = tensor.empty() : tensor<1x64xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %i2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x64xf32>) -> tensor<1x64xf32>
  %o = linalg.matmul ins(%x, %w : tensor<512x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %o2 = linalg.matmul ins(%y, %v : tensor<1x60xf32>, tensor<60x64xf32>) outs(%i2 : tensor<1x64xf32>) -> tensor<1x64xf32>
  return %o, %o2 : tensor<512x1024xf32>, tensor<1x64xf32>
}

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

#x = affine_map<(d0, d1, d2) -> (d1, d2)>
#w = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
#o = affine_map<(d0, d1, d2) -> (d0)>
func.func @heads(%x: tensor<32x128xf32>, %w: tensor<32x128x4096xf32>, %init: tensor<4096xf32>) -> tensor<4096xf32> {
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<32x128xf32>, tensor<32x128x4096xf32>) outs(%init : tensor<4096xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

func.func @shared_fill(%x: tensor<1x4096xf32>, %w: tensor<4096x1024xf32>, %v: tensor<4096x1024xf32>) -> (tensor<1x1024xf32>, tensor<1x1x1024xf32>) {
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %ie = tensor.expand_shape %i [[-1, 1], [2]] output_shape [1, 1, 1024] : tensor<1x1024xf32> into tensor<1x1x1024xf32>
  %xe = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 1, 4096] : tensor<1x4096xf32> into tensor<1x1x4096xf32>
  %o2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xe, %v : tensor<1x1x4096xf32>, tensor<4096x1024xf32>) outs(%ie : tensor<1x1x1024xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1024xf32>
  return %o, %o2 : tensor<1x1024xf32>, tensor<1x1x1024xf32>
}

func.func @fused_norm(%x: tensor<1x4096xf32>, %ms: tensor<1x1xf32>, %w: tensor<4096x32000xf32>, %init: tensor<1x32000xf32>) -> tensor<1x32000xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, 82)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %ms, %w : tensor<1x4096xf32>, tensor<1x1xf32>, tensor<4096x32000xf32>) outs(%init : tensor<1x32000xf32>) {
  ^bb0(%a: f32, %s: f32, %b: f32, %acc: f32):
    %q = math.rsqrt %s : f32
    %n = arith.mulf %a, %q : f32
    %m = arith.mulf %n, %b : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<1x32000xf32>
  return %r : tensor<1x32000xf32>
}

func.func @gathered(%h: tensor<4x4x64xf32>, %table: tensor<4x64x4xf32>, %slot: tensor<4xi32>) -> tensor<4x4x4xf32> {
  %z = arith.constant 0.0 : f32
  %hi = arith.constant 3 : i32
  %lo = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x4x4xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%h, %slot : tensor<4x4x64xf32>, tensor<4xi32>) outs(%i : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %s: i32, %acc: f32):
    %col = linalg.index 2 : index
    %k = linalg.index 3 : index
    %c0 = arith.maxsi %s, %lo : i32
    %c1 = arith.minsi %c0, %hi : i32
    %row = arith.index_cast %c1 : i32 to index
    %b = tensor.extract %table[%row, %k, %col] : tensor<4x64x4xf32>
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x4x4xf32>
  return %r : tensor<4x4x4xf32>
}
