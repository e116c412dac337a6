// RUN: poot-opt %s -split-input-file -poot-attention-rewrite="remarks=true" -verify-diagnostics | FileCheck %s

// Boolean masks applied to the scores by select (torch.where, masked_fill):
// the rewrite replays the mask steps on a zero score, so the op's additive
// mask is select(m, 0, fill) -- exact where s + fill rounds to fill, i.e.
// always for -inf and for |s| < 2^103 with f32's lowest finite value.

// GPT-2: a bottom-right aligned causal mask (key j visible to query i iff
// j <= i + Lk - Lq) from iotas, applied by torch.where with finfo.min: the
// op's causal kind, no mask tensor (more spellings and near misses in
// poot-attention-rewrite-causal.mlir).
// CHECK-LABEL: func.func @where_lowest_bottom_right
// CHECK:       poot.attention %arg0, %arg1, %arg2 causal {scale = 5.000000e-01 : f64}
// CHECK-NOT:   poot.exp
func.func @where_lowest_bottom_right(%q: tensor<1x2x2x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x2x4xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x2x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x2x4xf32>
  %c = poot.constant dense<0.5> : tensor<f32>
  %s1 = poot.mul %s, %c : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %row = poot.iota dim = 0 : tensor<2x1xi32>
  %col = poot.iota dim = 1 : tensor<1x4xi32>
  %off = poot.constant dense<2> : tensor<i32>
  %last = poot.add %row, %off : (tensor<2x1xi32>, tensor<i32>) -> tensor<2x1xi32>
  %keep = poot.compare le, %col, %last : (tensor<1x4xi32>, tensor<2x1xi32>) -> tensor<2x4xi1>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %s2 = poot.select %keep, %s1, %low : (tensor<2x4xi1>, tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %ex = poot.exp %xs : tensor<1x2x2x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x2x4xf32> -> tensor<1x2x2x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x2x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x2x4xf32>
  return %out : tensor<1x2x2x4xf32>
}

// -----

// masked_fill(hidden, -inf): the fill on the select's true side, a boolean
// padding mask per batch row.
// CHECK-LABEL: func.func @masked_fill_neg_inf
// CHECK:       %[[ZERO:.*]] = poot.constant dense<0.000000e+00> : tensor<f32>
// CHECK:       %[[M:.*]] = poot.select %arg3, %{{.*}}, %[[ZERO]] : (tensor<2x1x1x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x1x4xf32>
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%[[M]] : tensor<2x1x1x4xf32>) {scale = 1.000000e+00 : f64}
func.func @masked_fill_neg_inf(%q: tensor<2x1x1x2xf32>, %k: tensor<2x1x4x2xf32>, %v: tensor<2x1x4x2xf32>, %hidden: tensor<2x1x1x4xi1>) -> tensor<2x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<2x1x4x2xf32> -> tensor<2x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<2x1x1x2xf32>, tensor<2x1x2x4xf32>) -> tensor<2x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %hidden, %ninf, %s : (tensor<2x1x1x4xi1>, tensor<f32>, tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<2x1x1x4xf32> -> tensor<2x1x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<2x1x1x4xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x4xf32>
  %ex = poot.exp %xs : tensor<2x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<2x1x1x4xf32> -> tensor<2x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<2x1x1x4xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<2x1x1x4xf32>, tensor<2x1x4x2xf32>) -> tensor<2x1x1x2xf32>
  return %out : tensor<2x1x1x2xf32>
}

// -----

// Two selects (causal, then padding), an additive bias, then the scale: the
// steps replay in program order on zero and the scale multiplies all of it.
// CHECK-LABEL: func.func @selects_bias_then_scale
// CHECK:       %[[ZERO:.*]] = poot.constant dense<0.000000e+00> : tensor<f32>
// CHECK:       %[[C:.*]] = poot.select %arg3, %[[ZERO]], %[[LOW:.*]] : (tensor<1x1x1x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x4xf32>
// CHECK:       %[[P:.*]] = poot.select %arg4, %[[LOW]], %[[C]] : (tensor<2x1x1x4xi1>, tensor<f32>, tensor<1x1x1x4xf32>) -> tensor<2x1x1x4xf32>
// CHECK:       %[[A:.*]] = poot.add %[[P]], %arg5 : (tensor<2x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<2x1x1x4xf32>
// CHECK:       %[[S:.*]] = poot.constant dense<2.500000e-01> : tensor<f32>
// CHECK:       %[[M:.*]] = poot.mul %[[A]], %[[S]]
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%[[M]] : tensor<2x1x1x4xf32>) {scale = 2.500000e-01 : f64}
func.func @selects_bias_then_scale(%q: tensor<2x1x1x2xf32>, %k: tensor<2x1x4x2xf32>, %v: tensor<2x1x4x2xf32>,
                                   %causal: tensor<1x1x1x4xi1>, %pad: tensor<2x1x1x4xi1>, %bias: tensor<1x1x1x4xf32>) -> tensor<2x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<2x1x4x2xf32> -> tensor<2x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<2x1x1x2xf32>, tensor<2x1x2x4xf32>) -> tensor<2x1x1x4xf32>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %s1 = poot.select %causal, %s, %low : (tensor<1x1x1x4xi1>, tensor<2x1x1x4xf32>, tensor<f32>) -> tensor<2x1x1x4xf32>
  %s2 = poot.select %pad, %low, %s1 : (tensor<2x1x1x4xi1>, tensor<f32>, tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32>
  %s3 = poot.add %s2, %bias : (tensor<2x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<2x1x1x4xf32>
  %c = poot.constant dense<0.25> : tensor<f32>
  %s4 = poot.mul %s3, %c : (tensor<2x1x1x4xf32>, tensor<f32>) -> tensor<2x1x1x4xf32>
  %m = poot.reduce max %s4 axis = 3 keepdim : tensor<2x1x1x4xf32> -> tensor<2x1x1x1xf32>
  %xs = poot.sub %s4, %m : (tensor<2x1x1x4xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x4xf32>
  %ex = poot.exp %xs : tensor<2x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<2x1x1x4xf32> -> tensor<2x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<2x1x1x4xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<2x1x1x4xf32>, tensor<2x1x4x2xf32>) -> tensor<2x1x1x2xf32>
  return %out : tensor<2x1x1x2xf32>
}

// -----

// A -inf select of the scores by t < len alone (no K/V zeroing): not a live
// length but a boolean mask, so it fuses as one.
// CHECK-LABEL: func.func @live_score_select_alone
// CHECK:       %[[KEEP:.*]] = poot.compare lt
// CHECK:       %[[M:.*]] = poot.select %[[KEEP]], %{{.*}}, %{{.*}} : (tensor<1x1x1x8xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x8xf32>
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%[[M]] : tensor<1x1x1x8xf32>)
// CHECK-NOT:   len(
func.func @live_score_select_alone(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                                   %pos: tensor<i32> {poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>}) -> tensor<1x2x1x4xf32> {
  %one = poot.constant dense<1> : tensor<i32>
  %lp = poot.add %pos, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x8xi32>
  %keep = poot.compare lt, %tc, %lp : (tensor<1x1x1x8xi32>, tensor<i32>) -> tensor<1x1x1x8xi1>
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s2 = poot.select %keep, %s, %ninf : (tensor<1x1x1x8xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x1x8xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %ex = poot.exp %xs : tensor<1x2x1x8xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x1x8xf32> -> tensor<1x2x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x2x1x8xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x8xf32>
  %out = poot.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %out : tensor<1x2x1x4xf32>
}

// -----

// The live length (K/V rows zeroed, scores -inf past len) and a -inf causal
// select besides it: the select bounding the K/V length is the live one,
// the other one the mask.
// CHECK-LABEL: func.func @live_and_mask_select
// CHECK:       %[[M:.*]] = poot.select %arg4, %{{.*}}, %{{.*}} : (tensor<1x1x1x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x4xf32>
// CHECK:       poot.attention %arg0, %arg1, %arg2 mask(%[[M]] : tensor<1x1x1x4xf32>) len(%{{.*}} : tensor<1xi32>)
func.func @live_and_mask_select(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                                %len: tensor<1xi32> {poot.range = #poot.range<1, 4>}, %keep2: tensor<1x1x1x4xi1>) -> tensor<1x1x1x2xf32> {
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x4x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %len4 : (tensor<1x1x1x4xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %keep2, %s, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %s2 = poot.select %keep, %s1, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A finite-fill mask select after the live-length select: the op applies
// the live length after every mask, which would turn that fill into -inf on
// the keys both hide.
// CHECK-LABEL: func.func @finite_fill_after_live
// CHECK-NOT:   poot.attention
func.func @finite_fill_after_live(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                                  %len: tensor<1xi32> {poot.range = #poot.range<1, 4>}, %keep2: tensor<1x1x1x4xi1>) -> tensor<1x1x1x2xf32> {
  %len4 = poot.reshape %len : tensor<1xi32> -> tensor<1x1x1x1xi32>
  %tr = poot.iota dim = 2 : tensor<1x1x4x1xi32>
  %krow = poot.compare lt, %tr, %len4 : (tensor<1x1x4x1xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x4x1xi1>
  %zero = poot.constant dense<0.0> : tensor<f32>
  %kl = poot.select %krow, %k, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %vl = poot.select %krow, %v, %zero : (tensor<1x1x4x1xi1>, tensor<1x1x4x2xf32>, tensor<f32>) -> tensor<1x1x4x2xf32>
  %tc = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %keep = poot.compare lt, %tc, %len4 : (tensor<1x1x1x4xi32>, tensor<1x1x1x1xi32>) -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %kl perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %low = poot.constant dense<-3.40282347E+38> : tensor<f32>
  %s1 = poot.select %keep, %s, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: a mask select filling with a finite value after the live-length select is not the op's order (the live length applies after every mask)}}
  %s2 = poot.select %keep2, %s1, %low : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %vl : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// masked_fill(mask == 0, -1e9), the tutorial spelling: s - 1e9 is not -1e9,
// so a row whose keys are all hidden would change.
// CHECK-LABEL: func.func @fill_not_absorbing
// CHECK-NOT:   poot.attention
func.func @fill_not_absorbing(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %hidden: tensor<1x1x1x4xi1>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %fill = poot.constant dense<-1.0e9> : tensor<f32>
  // expected-remark @+1 {{attention not fused: 'poot.select' hides scores with -1e+09, neither -inf nor f32's lowest finite value: as the op's additive mask a hidden score would become s + -1e+09 rather than -1e+09, which changes every row whose keys are all hidden}}
  %s1 = poot.select %hidden, %fill, %s : (tensor<1x1x1x4xi1>, tensor<f32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// torch.where(m, scores, other) with a tensor, not a constant, on the other
// side.
// CHECK-LABEL: func.func @select_between_tensors
// CHECK-NOT:   poot.attention
func.func @select_between_tensors(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>,
                                  %keep: tensor<1x1x1x4xi1>, %other: tensor<1x1x1x4xf32>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: 'poot.select' in the score chain does not choose between the scores and a splat fill constant}}
  %s1 = poot.select %keep, %s, %other : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A select whose condition comes from a poot.top_k but is not the sparse
// indexer's block-selection visibility (no causal bound, no own block): an
// ordinary boolean mask (the indexer's chain is left to poot-select-blocks,
// test/Transforms/poot-select-blocks.mlir).
// CHECK-LABEL: func.func @block_selection
// CHECK:       poot.attention {{.*}} mask(
func.func @block_selection(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %blocks: tensor<1x1x4xf32>) -> tensor<1x1x1x2xf32> {
  %vals, %ids = poot.top_k %blocks k = 2 : tensor<1x1x4xf32> -> tensor<1x1x2xf32>, tensor<1x1x2xi32>
  %ids4 = poot.reshape %ids : tensor<1x1x2xi32> -> tensor<1x1x2x1xi32>
  %t = poot.iota dim = 3 : tensor<1x1x1x4xi32>
  %hit = poot.compare eq, %ids4, %t : (tensor<1x1x2x1xi32>, tensor<1x1x1x4xi32>) -> tensor<1x1x2x4xi1>
  %hiti = poot.convert %hit : tensor<1x1x2x4xi1> -> tensor<1x1x2x4xi32>
  %any = poot.reduce max %hiti axis = 2 : tensor<1x1x2x4xi32> -> tensor<1x1x4xi32>
  %zero = poot.constant dense<0> : tensor<i32>
  %sel = poot.compare gt, %any, %zero : (tensor<1x1x4xi32>, tensor<i32>) -> tensor<1x1x4xi1>
  %keep = poot.reshape %sel : tensor<1x1x4xi1> -> tensor<1x1x1x4xi1>
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %keep, %s, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s1 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s1, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}

// -----

// A mask select before the softcap: softcap(select(m, s, -inf)) is -softcap
// on the hidden keys, not the op's order.
// CHECK-LABEL: func.func @select_before_softcap
// CHECK-NOT:   poot.attention
func.func @select_before_softcap(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>, %keep: tensor<1x1x1x4xi1>) -> tensor<1x1x1x2xf32> {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x1x4x2xf32> -> tensor<1x1x2x4xf32>
  %s = poot.matmul %q, %kt : (tensor<1x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  %ninf = poot.constant dense<0xFF800000> : tensor<f32>
  %s1 = poot.select %keep, %s, %ninf : (tensor<1x1x1x4xi1>, tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %cap = poot.constant dense<30.0> : tensor<f32>
  %d = poot.div %s1, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %th = poot.tanh %d : tensor<1x1x1x4xf32>
  // expected-remark @+1 {{attention not fused: a mask select before the softcap is not the op's score transform (the softcap comes before the mask)}}
  %s2 = poot.mul %th, %cap : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %m = poot.reduce max %s2 axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %xs = poot.sub %s2, %m : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %ex = poot.exp %xs : tensor<1x1x1x4xf32>
  %den = poot.reduce sum %ex axis = 3 keepdim : tensor<1x1x1x4xf32> -> tensor<1x1x1x1xf32>
  %p = poot.div %ex, %den : (tensor<1x1x1x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  %out = poot.matmul %p, %v : (tensor<1x1x1x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %out : tensor<1x1x1x2xf32>
}
