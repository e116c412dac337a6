// RUN: poot-opt %s -split-input-file -verify-diagnostics

// One case per typing rule of the fused ops (poot.attention,
// poot.block_topk, poot.selected_attention).

func.func @q_rank(%q: tensor<8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>) {
  // expected-error @+1 {{query must be [B, Hq, Lq, Dk]}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @dtype(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf16>, %v: tensor<1x2x32x16xf16>) {
  // expected-error @+1 {{query, key and value need one element type}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @kv_rank(%q: tensor<1x8x1x16xf32>, %k: tensor<2x32x16xf32>, %v: tensor<2x32x16xf32>) {
  // expected-error @+1 {{key and value must be [B, Hkv, Lk, D]}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<2x32x16xf32>, tensor<2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

// A single key head that the matmul merely broadcasts over the batch does not
// type as attention: key batch must be the query batch.
func.func @kv_batch(%q: tensor<2x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>) {
  // expected-error @+1 {{key and value batch must equal the query batch (2)}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<2x8x1x16xf32>
  return
}

// -----

func.func @kv_agree(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x31x16xf32>) {
  // expected-error @+1 {{key and value must agree on [Hkv, Lk]}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x31x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @gqa(%q: tensor<1x8x1x16xf32>, %k: tensor<1x3x32x16xf32>, %v: tensor<1x3x32x16xf32>) {
  // expected-error @+1 {{query heads (8) must be a multiple of key/value heads (3)}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x3x32x16xf32>, tensor<1x3x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @key_width(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x12xf32>, %v: tensor<1x2x32x16xf32>) {
  // expected-error @+1 {{key width (12) must equal the query width (16)}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x12xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @mask_shape(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %m: tensor<1x2x1x32xf32>) {
  // expected-error @+1 {{mask must be [B|1, Hq|1, Lq|1, Lk] = [1|1, 8|1, 1|1, 32]}}
  %0 = poot.attention %q, %k, %v mask(%m : tensor<1x2x1x32xf32>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @mask_dtype(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %m: tensor<1x1x1x32xf16>) {
  // expected-error @+1 {{mask needs the query's element type}}
  %0 = poot.attention %q, %k, %v mask(%m : tensor<1x1x1x32xf16>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @len_shape(%q: tensor<2x8x1x16xf32>, %k: tensor<2x2x32x16xf32>, %v: tensor<2x2x32x16xf32>, %l: tensor<1xi32>) {
  // expected-error @+1 {{len must be [B] = [2]}}
  %0 = poot.attention %q, %k, %v len(%l : tensor<1xi32>) {scale = 1.0 : f64} : tensor<2x8x1x16xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x16xf32> -> tensor<2x8x1x16xf32>
  return
}

// -----

func.func @scale_inf(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>) {
  // expected-error @+1 {{scale must be finite}}
  %0 = poot.attention %q, %k, %v {scale = 0x7FF0000000000000 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @softcap_neg(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>) {
  // expected-error @+1 {{softcap must be a positive finite number}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64, softcap = -1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @result_type(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x8x1x8xf32>' are incompatible with return type(s) of operation 'tensor<1x8x1x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = poot.attention %q, %k, %v {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x8xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

//===-- split key -------------------------------------------------------===//

func.func @split_shape(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x12xf32>, %v: tensor<1x2x32x16xf32>, %s: tensor<1x2x32x4xf32>) {
  // expected-error @+1 {{key_shared must be [B, 1, Lk, s] = [1, 1, 32, s]}}
  %0 = poot.attention %q, %k, %v key_shared(%s : tensor<1x2x32x4xf32>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x12xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @split_width(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x12xf32>, %v: tensor<1x2x32x16xf32>, %s: tensor<1x1x32x2xf32>) {
  // expected-error @+1 {{key width (14, per-head + shared) must equal the query width (16)}}
  %0 = poot.attention %q, %k, %v key_shared(%s : tensor<1x1x32x2xf32>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x12xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @split_dtype(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x12xf32>, %v: tensor<1x2x32x16xf32>, %s: tensor<1x1x32x4xf16>) {
  // expected-error @+1 {{key_shared needs the query's element type}}
  %0 = poot.attention %q, %k, %v key_shared(%s : tensor<1x1x32x4xf16>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x12xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

//===-- paged key -------------------------------------------------------===//

func.func @paged_split(%q: tensor<1x8x1x16xf32>, %k: tensor<64x2x12xf32>, %v: tensor<64x2x16xf32>, %s: tensor<1x1x32x4xf32>, %r: tensor<1x32xi32>) {
  // expected-error @+1 {{a paged key cannot also be a split key}}
  %0 = poot.attention %q, %k, %v key_shared(%s : tensor<1x1x32x4xf32>) read(%r : tensor<1x32xi32>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<64x2x12xf32>, tensor<64x2x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @paged_rank(%q: tensor<1x8x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %r: tensor<1x32xi32>) {
  // expected-error @+1 {{paged key and value must be pools [S, Hkv, D]}}
  %0 = poot.attention %q, %k, %v read(%r : tensor<1x32xi32>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @paged_pools(%q: tensor<1x8x1x16xf32>, %k: tensor<64x2x16xf32>, %v: tensor<32x2x16xf32>, %r: tensor<1x32xi32>) {
  // expected-error @+1 {{paged key and value pools must agree on [S, Hkv]}}
  %0 = poot.attention %q, %k, %v read(%r : tensor<1x32xi32>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<64x2x16xf32>, tensor<32x2x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

func.func @paged_read(%q: tensor<1x8x1x16xf32>, %k: tensor<64x2x16xf32>, %v: tensor<64x2x16xf32>, %r: tensor<2x32xi32>) {
  // expected-error @+1 {{read map must be [B, Lk] with B = 1}}
  %0 = poot.attention %q, %k, %v read(%r : tensor<2x32xi32>) {scale = 1.0 : f64} : tensor<1x8x1x16xf32>, tensor<64x2x16xf32>, tensor<64x2x16xf32> -> tensor<1x8x1x16xf32>
  return
}

// -----

//===-- block selection -------------------------------------------------===//

func.func @topk_scores(%s: tensor<8x4xf32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{scores must be [B, Lq, NB]}}
  %0 = poot.block_topk %s, %p k = 2 block_size = 8 : tensor<8x4xf32>, tensor<1x8xi32> -> tensor<1x8x2xi32>
  return
}

// -----

func.func @topk_k(%s: tensor<1x8x4xf32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{k must be >= 1}}
  %0 = poot.block_topk %s, %p k = 0 block_size = 8 : tensor<1x8x4xf32>, tensor<1x8xi32> -> tensor<1x8x1xi32>
  return
}

// -----

func.func @topk_block(%s: tensor<1x8x4xf32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{block_size must be >= 1}}
  %0 = poot.block_topk %s, %p k = 2 block_size = 0 : tensor<1x8x4xf32>, tensor<1x8xi32> -> tensor<1x8x2xi32>
  return
}

// -----

func.func @topk_qpos(%s: tensor<1x8x4xf32>, %p: tensor<1x4xi32>) {
  // expected-error @+1 {{q_pos must be [B, Lq] matching the scores}}
  %0 = poot.block_topk %s, %p k = 2 block_size = 8 : tensor<1x8x4xf32>, tensor<1x4xi32> -> tensor<1x8x2xi32>
  return
}

// -----

func.func @sel_dtype(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf16>, %v: tensor<1x2x32x16xf16>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{query, key and value need one element type}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_kv(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x16x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{key and value must be [B, Hkv, Lk, D] with the query's B}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x16x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_width(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{key width must equal the query width}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_gqa(%q: tensor<1x4x8x16xf32>, %k: tensor<1x3x32x16xf32>, %v: tensor<1x3x32x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{query heads (4) must be a multiple of key/value heads (3)}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x3x32x16xf32>, tensor<1x3x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_ids(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %i: tensor<1x4x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{block_ids must be [B, Lq, K]}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x4x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_qpos(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{q_pos must be [B, Lq]}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_block(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{block_size must be >= 1}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 0 {scale = 1.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_scale(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{scale must be finite}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 0x7FF8000000000000 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_softcap(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{softcap must be a positive finite number}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64, softcap = 0.0 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @sel_rank(%q: tensor<4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>, %i: tensor<1x8x2xi32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{query and value must be rank 4}}
  %0 = poot.selected_attention %q, %k, %v, %i, %p block_size = 8 {scale = 1.0 : f64} : tensor<4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return
}

// -----

// A negative k used to abort while the result type tensor<1x8x-3xi32> was
// built; it is now refused before.
func.func @topk_negative_k(%s: tensor<1x8x4xf32>, %p: tensor<1x8xi32>) {
  // expected-error @+1 {{k must be >= 1, got -3}}
  %0 = poot.block_topk %s, %p k = -3 block_size = 8 : tensor<1x8x4xf32>, tensor<1x8xi32> -> tensor<1x8x2xi32>
  return
}

// -----

// Zero-sized attention shapes (B, Hq, Lq, Lk or D = 0) are refused at the
// type: the planner divided by a zero workgroup count, and SPIR-V failed to
// legalize a kernel over no keys.
func.func @batch_zero(%q: tensor<0x4x1x16xf32>, %k: tensor<0x2x64x16xf32>, %v: tensor<0x2x64x16xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<0x4x1x16xf32>, tensor<0x2x64x16xf32>, tensor<0x2x64x16xf32> -> tensor<0x4x1x16xf32>
  return
}

// -----

func.func @keys_zero(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x0x16xf32>, %v: tensor<1x2x0x16xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x16xf32>, tensor<1x2x0x16xf32>, tensor<1x2x0x16xf32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @width_zero(%q: tensor<1x4x1x0xf32>, %k: tensor<1x2x8x0xf32>, %v: tensor<1x2x8x0xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x4x1x0xf32>, tensor<1x2x8x0xf32>, tensor<1x2x8x0xf32> -> tensor<1x4x1x0xf32>
  return
}

// -----

func.func @window_without_causal(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{window needs causal}}
  %o = poot.attention %q, %k, %v window 4 {scale = 0.25 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @window_zero(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{window must be >= 1, got 0}}
  %o = poot.attention %q, %k, %v causal window 0 {scale = 0.25 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @window_negative(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{window must be >= 1, got -3}}
  %o = poot.attention %q, %k, %v causal window -3 {scale = 0.25 : f64} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return
}
