//===- PootAttentionOps.td - fused attention ops -----------*- tablegen -*-===//
//
// The ops the compiler forms from the tracer's primitive chains. Nothing emits
// them directly from user code: the attention rewrite and the selection pass do.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_ATTENTION_OPS_TD
#define POOT_ATTENTION_OPS_TD

include "dialect/PootBase.td"
include "dialect/PootAttrs.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Poot_AttentionOp : Poot_Op<"attention", [Pure, AttrSizedOperandSegments,
    InferTypeOpAdaptor]> {
  let summary = "Fused scaled-dot-product attention (decode and prefill)";
  let description = [{
    For batch row `b`, query head `h`, query row `i` and key `t`, with
    `g = h / n_rep` (`n_rep = Hq / Hkv`, the GQA/MQA group size):

    ```
    s[t]   = dot(q[b,h,i,:], key(b,g,t)) * scale
    s[t]   = softcap * tanh(s[t] / softcap)          if softcap is set
    s[t]   = s[t] + mask[b', h', i', t]              if mask is given (broadcast
                                                     over size-1 b', h', i')
    s[t]   = -inf                                    if causal and t > i + (Lk - Lq)
    s[t]   = -inf                                    if window and t <= i + (Lk - Lq) - window
    s[t]   = -inf                                    if len is given and t >= len[b]
    p      = exp(s - max_t s) / sum_t exp(s - max_t s)
    out[b,h,i,:] = sum_t p[t] * value(b,g,t)
    ```

    A key whose score is `-inf` adds exactly zero weight; a row with no visible
    key is `0 / 0 = NaN`, as the primitive softmax gives. Decode (`Lq = 1`)
    and prefill are the same op.

    Operand layouts (`Dv` is independent of `Dk`):
    - dense: `q [B,Hq,Lq,Dk]`, `key [B,Hkv,Lk,Dk]`, `value [B,Hkv,Lk,Dv]`;
      `key(b,g,t) = key[b,g,t,:]`.
    - split key (multi-head latent attention): `key [B,Hkv,Lk,Dk-s]` holds the
      per-head part and `key_shared [B,1,Lk,s]` the part every head shares;
      `key(b,g,t) = concat(key[b,g,t,:], key_shared[b,0,t,:])`. The broadcast
      key is never built.
    - paged key: `key [S,Hkv,Dk]` and `value [S,Hkv,Dv]` are the pools, and
      `read [B,Lk]` (i32) names each logical position's pool slot;
      `key(b,g,t) = key[read[b,t], g, :]` (pool row `read[b,t] * Hkv + g`).
      Every word of `read` is a slot of the pool: the binder enforces it and
      the rewrite only forms this op when the map's declared range proves it.
    - live length: `len [B]` (i32); only keys `t < len[b]` are visited, so a
      decode costs the live length, not the capacity. Valid lengths satisfy
      `1 <= len[b] <= Lk` (the rewrite proves it); a generated kernel still
      clamps `len` into `0..Lk` so no length can read out of bounds.

    The optional additive `mask` is `[B|1, Hq|1, Lq|1, Lk]`: a head axis of
    `Hq` carries per-head biases (ALiBi).

    Element types (docs/two-byte-attention.md): `query`, `key`, `value`
    (and `key_shared`) share one element type, which is the result's. For
    f16 and bf16 the op is *two-byte attention*: every operand is widened
    to f32 exactly, the scores, the softmax and the P.V accumulation are
    computed in f32 (float64 in the oracle), and the output is rounded once,
    to nearest even, to the result type -- no intermediate is rounded to
    two bytes, whether or not the chain the op was fused from rounded its
    scores or probabilities. The `mask` of a two-byte op is the query's
    type or f32, and is added as given.

    `causal` is the causal mask as an index expression instead of a tensor:
    query row `i` sees the keys `t <= i + (Lk - Lq)`, the diagonal aligned to
    the bottom-right corner (square prefill: `t <= i`; a chunk of `Lq` new
    rows after `Lk - Lq` cached ones: every cached key and its own prefix).
    It needs `Lk >= Lq` (so every row sees key 0) and excludes a `mask`
    operand. The rewrite forms it only from an iota-compare chain that is
    exactly this set (tril/triu, `is_causal`, `t <= i + (Lk - Lq)`), filled
    with -inf or the lowest finite value; it agrees with that chain for
    every score below 2^103 in magnitude (a NaN or infinite score at a
    hidden key, which an additive mask would carry into the row, is
    dropped). Kernels skip the hidden keys; none reads a mask.

    `window W` (with `causal` only) is the sliding window of Mistral, Gemma 2
    and Qwen 2's local layers: row `i` sees the `W` keys ending at its
    diagonal, `i + (Lk - Lq) - W < t <= i + (Lk - Lq)` (at least key
    `i + (Lk - Lq)`, so no row is empty). The rewrite forms it from an
    iota-compare chain that is exactly this band (`j <= i + (Lk - Lq)` and
    `i + (Lk - Lq) - j < W`, in one condition or two mask steps, as `and`,
    `or` of the hidden sets or their negations); a band that differs by one
    key stays a tensor mask. Kernels start each row's walk at the window:
    key tiles before it are neither read nor scored.

    `request` is the plan (`#poot.attention_request`), absent until
    `poot-plan-attention` chooses the schedule the generator emits.

    ```mlir
    %o = poot.attention %q, %k, %v mask(%m : tensor<1x1x1x128xf32>) {scale = 0.125 : f64}
        : tensor<1x32x1x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>
        -> tensor<1x32x1x64xf32>
    ```
  }];
  let arguments = (ins
    Poot_FloatTensor:$query,
    Poot_FloatTensor:$key,
    Poot_FloatTensor:$value,
    Optional<Poot_FloatTensor>:$mask,
    Optional<Poot_FloatTensor>:$key_shared,
    Optional<Poot_IntTensor>:$read,
    Optional<Poot_IntTensor>:$length,
    F64Attr:$scale,
    OptionalAttr<F64Attr>:$softcap,
    UnitAttr:$causal,
    OptionalAttr<I64Attr>:$window,
    OptionalAttr<Poot_AttentionRequestAttr>:$request);
  let results = (outs Poot_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`key_shared` `(` $key_shared^ `:` type($key_shared) `)`)?
    (`read` `(` $read^ `:` type($read) `)`)?
    (`len` `(` $length^ `:` type($length) `)`)?
    (`causal` $causal^)?
    (`window` $window^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads per key/value head (GQA group size).
    int64_t getNumRep();
    /// True for the paged-key form (pools + read map).
    bool isPaged() { return static_cast<bool>(getRead()); }
    /// True for the split-key form (per-head key + shared key part).
    bool isSplitKey() { return static_cast<bool>(getKeyShared()); }
    /// True for the live-length form.
    bool isLive() { return static_cast<bool>(getLength()); }
    /// Logical key count Lk (the capacity the mask and `read` are laid over).
    int64_t getKeyLength();
  }];
}

def Poot_BlockTopKOp : Poot_Op<"block_topk", [Pure,
    InferTypeOpAdaptor]> {
  let summary = "Per query row, the k best complete key blocks before its own";
  let description = [{
    Keys are grouped in blocks of `block_size` positions. For batch row `b`
    and query row `i` at position `p = q_pos[b,i]`, the candidates are the
    complete blocks before the row's own block: `j < floor(p / block_size)`.
    `ids[b,i,:]` lists the `k` candidates with the highest `scores[b,i,j]`
    (descending; ties to the lower id), padded with `-1` when fewer than `k`
    exist. The row's own unfinished block is always visited by
    `poot.selected_attention` and is never listed here.

    Precisely (this is the tracer's primitive chain, NaN included): every
    block is ranked by `scores[b,i,j]` if it is a candidate and `-inf`
    otherwise, in `poot.top_k`'s order (descending, NaN below every number,
    ties to the lower id); the first `k` are listed (`-1` past NB) and each
    non-candidate among them becomes `-1`. So a NaN-scored candidate ranks
    below the non-candidates and is listed only when nothing else is left.
    `scores` are the block scores `[B, Lq, NB]` (e.g. the max index score
    of each block); the op never reads the keys. `request` is the plan
    (`#poot.block_topk_request`), absent until `poot-plan-attention`.

    ```mlir
    %ids = poot.block_topk %scores, %qpos k = 4 block_size = 64
        : tensor<1x128x32xf32>, tensor<1x128xi32> -> tensor<1x128x4xi32>
    ```
  }];
  let arguments = (ins Poot_FloatTensor:$scores, Poot_IntTensor:$q_pos,
                   Poot_SignedI64Attr:$k, Poot_SignedI64Attr:$block_size,
                   OptionalAttr<Poot_BlockTopKRequestAttr>:$request);
  let results = (outs Poot_IntTensor:$ids);
  let assemblyFormat = [{
    $scores `,` $q_pos `k` `=` $k `block_size` `=` $block_size attr-dict `:`
    type($scores) `,` type($q_pos) `->` type($ids)
  }];
  let hasVerifier = 1;
}

def Poot_SelectedAttentionOp : Poot_Op<"selected_attention", [Pure,
    InferTypeOpAdaptor]> {
  let summary = "Attention over selected key blocks plus the row's own block";
  let description = [{
    The block-selected form of `poot.attention`: no mask operand; the
    selected block ids and the query positions take its place. With
    `p = q_pos[b,i]`, `bs = block_size` and `g = h / n_rep`, key `t < Lk` is
    visible to row `(b,i)` iff `t <= p` and either `t / bs` is listed in
    `block_ids[b,i,:]` (ids `< 0` are padding) or `t / bs == p / bs` (the
    row's own, unfinished block). Each row therefore visits at most
    `(K + 1) * bs` keys instead of `Lk`. The test is an any-of over the
    list: a repeated id, the own block listed again, padding and ids past
    the last block change nothing (poot.block_topk produces none of them,
    but the op takes any ids). On the visible keys:

    ```
    s[t] = dot(q[b,h,i,:], key[b,g,t,:]) * scale   (then softcap if set)
    out[b,h,i,:] = sum_t softmax(s)[t] * value[b,g,t,:]
    ```

    A row with no visible key is `NaN` (0 / 0), as in `poot.attention`.
    `request` is the plan (`#poot.selected_attention_request`), absent until
    `poot-plan-attention`.

    ```mlir
    %o = poot.selected_attention %q, %k, %v, %ids, %qpos block_size = 64
        {scale = 0.125 : f64}
        : tensor<1x8x128x64xf32>, tensor<1x2x1024x64xf32>, tensor<1x2x1024x64xf32>,
          tensor<1x128x4xi32>, tensor<1x128xi32> -> tensor<1x8x128x64xf32>
    ```
  }];
  let arguments = (ins Poot_FloatTensor:$query, Poot_FloatTensor:$key,
                   Poot_FloatTensor:$value, Poot_IntTensor:$block_ids,
                   Poot_IntTensor:$q_pos, Poot_SignedI64Attr:$block_size, F64Attr:$scale,
                   OptionalAttr<F64Attr>:$softcap,
                   OptionalAttr<Poot_SelectedAttentionRequestAttr>:$request);
  let results = (outs Poot_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $block_ids `,` $q_pos `block_size` `=` $block_size
    attr-dict `:` type($query) `,` type($key) `,` type($value) `,`
    type($block_ids) `,` type($q_pos) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // POOT_ATTENTION_OPS_TD
