// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{jam-rows=1}))" | FileCheck %s
// RUN: poot-opt %s --pass-pipeline="builtin.module(func.func(poot-gpu-split-reductions{jam-rows=8}))" | FileCheck %s --check-prefix=JAM

// 16 rows, 8 a thread (poot-gpu-jam-rows): 2 x 256 threads of 4 columns,
// so min(131072 / 512, 4096 / 32) = 128 splits, capped at 64 by the
// partials (64 x 16 x 1024 x 4 bytes = a quarter of the 16 MiB weight).
// With a thread per row (jam-rows=1): 4096 threads, 32 splits.
// JAM-LABEL: func.func @batched
// JAM: } -> tensor<64x16x1024xf32>
// CHECK-LABEL: func.func @batched
// CHECK: } -> tensor<32x16x1024xf32>
func.func @batched(%x: tensor<16x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<16x1024xf32> {
  %e = tensor.empty() : tensor<16x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<16x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  return %o : tensor<16x1024xf32>
}

// A decode matmul: 1024 outputs (256 threads of 4 columns), 4096 products
// each. Split 128 ways (min(131072 / 256, 4096 / 32)): partials over a
// leading split dimension, then a 128-term reduction into the original init,
// its split loop innermost (threads over the outputs).
// CHECK-LABEL: func.func @gemv
// CHECK: tensor.expand_shape %{{.*}} output_shape [128, 32, 1024]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: } -> tensor<128x1x1024xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<128x1x1024xf32>)
// CHECK: } -> tensor<1x1024xf32>
func.func @gemv(%x: tensor<1x4096xf32>, %w: tensor<4096x1024xf32>) -> tensor<1x1024xf32> {
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %o : tensor<1x1024xf32>
}

// Enough threads already (a prefill matmul: 512 x 1024 / 4 = 131072), or a
// reduction too short to split (60 < 2 x 32 products): left as they are.
// CHECK-LABEL: func.func @wide
// CHECK-NOT: expand_shape
// CHECK: linalg.matmul
// CHECK-NOT: expand_shape
// CHECK: linalg.matmul
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

// A keepdim reduction (the lowering's (d0, d1) -> (d0, 0), an RMSNorm's
// sum of squares) writes a collapsed init, so it splits: 128 partials of
// 32 (one thread each instead of one thread for all 4096), a 128-term
// final reduction, the result expanded back to 1x1.
// CHECK-LABEL: func.func @constant_index
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<1x1xf32> into tensor<1xf32>
// CHECK: } -> tensor<128x1xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} outs(%[[C]] : tensor<1xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, 1] : tensor<1xf32> into tensor<1x1xf32>
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

// The output projection: two adjacent reduction loops (heads x head_dim)
// read as one run by both operands fold into one of 4096 (upstream
// collapseOpIterationDims), which then splits 128 ways (1024 threads of 4
// columns: min(131072 / 1024, 4096 / 32)).
// CHECK-LABEL: func.func @heads
// CHECK: tensor.collapse_shape %{{.*}} : tensor<32x128x4096xf32> into tensor<4096x4096xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: } -> tensor<128x4096xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: } -> tensor<4096xf32>
#x = affine_map<(d0, d1, d2) -> (d1, d2)>
#w = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
#o = affine_map<(d0, d1, d2) -> (d0)>
func.func @heads(%x: tensor<32x128xf32>, %w: tensor<32x128x4096xf32>, %init: tensor<4096xf32>) -> tensor<4096xf32> {
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<32x128xf32>, tensor<32x128x4096xf32>) outs(%init : tensor<4096xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// Two matmuls whose inits are one shared fill (through a reshape): each
// gets a fill of its own, so bufferization does not fill one buffer and
// copy it into both outputs.
// CHECK-LABEL: func.func @shared_fill
// CHECK: %[[F1:.*]] = linalg.fill {{.*}} -> tensor<1x1024xf32>
// CHECK: %[[F2:.*]] = linalg.fill {{.*}} -> tensor<1x1024xf32>
// CHECK: outs(%[[F2]] : tensor<1x1024xf32>)
// CHECK: tensor.expand_shape %[[F1]]
// CHECK-NOT: linalg.fill {{.*}} -> tensor<1x1024xf32>
// CHECK: return
func.func @shared_fill(%x: tensor<1x4096xf32>, %w: tensor<4096x1024xf32>, %v: tensor<4096x1024xf32>) -> (tensor<1x1024xf32>, tensor<1x1x1024xf32>) {
  %e = tensor.empty() : tensor<1x1024xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %o = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x1024xf32>) outs(%i : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %ie = tensor.expand_shape %i [[0, 1], [2]] output_shape [1, 1, 1024] : tensor<1x1024xf32> into tensor<1x1x1024xf32>
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

// A norm's scale fused into the matmul that follows it (lm_head): the
// keepdim sum is read through (d0, d1, d2) -> (d0, 0): the input is
// collapsed too, so the matmul still splits (8000 threads of 4 columns:
// min(131072 / 8000, 4096 / 32) = 16).
// CHECK-LABEL: func.func @fused_norm
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<1x1xf32> into tensor<1xf32>
// CHECK: } -> tensor<16x1x32000xf32>
// CHECK: } -> tensor<1x32000xf32>
func.func @fused_norm(%x: tensor<1x4096xf32>, %ms: tensor<1x1xf32>, %w: tensor<4096x32000xf32>, %init: tensor<1x32000xf32>) -> tensor<1x32000xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, 0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
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

// A matmul with its weight gathered by a slot (a LoRA table picked per
// row, fused into the reduction): the body reads its loops through
// linalg.index, which upstream splitReduction leaves as they were. After
// the split (2 x 32 products) the column is loop 3 (was 2) and the
// reduction index is split * 32 + inner (loop 0 * 32 + loop 4).
// CHECK-LABEL: func.func @gathered
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-DAG: %[[COL:.*]] = linalg.index 3 : index
// CHECK-DAG: %[[INNER:.*]] = linalg.index 4 : index
// CHECK-DAG: %[[SPLIT:.*]] = linalg.index 0 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[BASE:.*]] = arith.muli %[[SPLIT]], %[[C32]] : index
// CHECK: %[[K:.*]] = arith.addi %[[BASE]], %[[INNER]] : index
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %[[K]], %[[COL]]] : tensor<4x64x4xf32>
// CHECK: } -> tensor<2x4x4x4xf32>
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

// A one-row projection over (head, d): the heads index the weight, so no
// rows are jammed (the activation is all they would share): split as with
// jam-rows=1 (512 / 4 = 128 threads: min(1024, 512 / 32) = 16 ways).
// JAM-LABEL: func.func @heads_one_row
// JAM: } -> tensor<16x1x8x64xf32>
#hx = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
#hw = affine_map<(d0, d1, d2, d3) -> (d3, d1, d2)>
#ho = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @heads_one_row(%x: tensor<1x512xf32>, %w: tensor<512x8x64xf32>) -> tensor<1x8x64xf32> {
  %e = tensor.empty() : tensor<1x8x64xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  %o = linalg.generic {indexing_maps = [#hx, #hw, #ho], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<1x512xf32>, tensor<512x8x64xf32>) outs(%i : tensor<1x8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x8x64xf32>
  return %o : tensor<1x8x64xf32>
}

// An argmax over a large vocabulary (a serving step's next token): its max
// over bf16 logits and its first-index min over i32 are split too -- a max
// or a min gives the same bits in any order, at any type -- instead of one
// thread per row looping over 128256 logits. The index's linalg.index is
// remapped to split * chunk + inner.
// CHECK-LABEL: func.func @argmax_rows
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<64x256x501xbf16>) outs(%{{.*}} : tensor<256x64xbf16>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<64xbf16>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<256x64xi32>)
// CHECK: linalg.index 0
// CHECK: arith.muli %{{.*}}, %c501
// CHECK: arith.minsi
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<64xi32>)
func.func @argmax_rows(%logits: tensor<64x128256xbf16>) -> tensor<64xi32> {
  %ninf = arith.constant 0xFF80 : bf16
  %big = arith.constant 2147483647 : i32
  %vocab = arith.constant 128256 : i32
  %e = tensor.empty() : tensor<64xbf16>
  %mi = linalg.fill ins(%ninf : bf16) outs(%e : tensor<64xbf16>) -> tensor<64xbf16>
  %max = linalg.generic {indexing_maps = [affine_map<(r, v) -> (r, v)>, affine_map<(r, v) -> (r)>], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<64x128256xbf16>) outs(%mi : tensor<64xbf16>) {
  ^bb0(%x: bf16, %m: bf16):
    %0 = arith.maximumf %m, %x : bf16
    linalg.yield %0 : bf16
  } -> tensor<64xbf16>
  %ei = tensor.empty() : tensor<64xi32>
  %ii = linalg.fill ins(%big : i32) outs(%ei : tensor<64xi32>) -> tensor<64xi32>
  %idx = linalg.generic {indexing_maps = [affine_map<(r, v) -> (r, v)>, affine_map<(r, v) -> (r)>, affine_map<(r, v) -> (r)>], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %max : tensor<64x128256xbf16>, tensor<64xbf16>) outs(%ii : tensor<64xi32>) {
  ^bb0(%x: bf16, %m: bf16, %best: i32):
    %v = linalg.index 1 : index
    %vi = arith.index_cast %v : index to i32
    %hit = arith.cmpf oeq, %x, %m : bf16
    %c = arith.select %hit, %vi, %vocab : i32
    %0 = arith.minsi %best, %c : i32
    linalg.yield %0 : i32
  } -> tensor<64xi32>
  return %idx : tensor<64xi32>
}
