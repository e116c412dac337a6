"""Attention as primitive ops: the chains the attention rewrite recognizes.

There is no attention opcode in what the tracer records. Every form below
emits one fixed chain (listed op by op in its docstring, in emission order)
built from three shared pieces:

score chain (`_score_chain`), for q `[B, Hq, Lq, Dk]`, expanded keys
`k_exp [B, Hq, Lk, Dk]` and values `v_exp [B, Hq, Lk, Dv]`:

    kt  = transpose k_exp perm = [0, 1, 3, 2]          [B, Hq, Dk, Lk]
    s   = matmul q, kt                                 [B, Hq, Lq, Lk]
          constant scale (0-d, q's dtype)
    s   = mul s, scale
    [softcap c:  constant c; s = div s, c; s = tanh s; s = mul s, c]
    [mask:       s = add s, mask]       (fixed-capacity / causal forms)
    [bias:       s = add s, bias]       (ALiBi-style, [1|B, 1|Hq, 1|Lq, Lk])
    [keep:       constant -inf; s = select keep, s, -inf]   (live, sparse)
    m   = reduce max s axis = 3 keepdim
    xs  = sub s, m
    ex  = exp xs
    den = reduce sum ex axis = 3 keepdim
    p   = div ex, den
    out = matmul p, v_exp                              [B, Hq, Lq, Dv]

i.e. `softmax(softcap(q k^T * scale) + mask + bias) v`, exactly the math of
`poot.attention`. The scale defaults to `1 / sqrt(Dk)` (Dk the full key
width); the softcap is applied before the mask.

GQA/MQA head repeat (`composites.repeat_kv`, nothing when Hq == Hkv):
reshape, broadcast, reshape -- for the keys, then for the values.

Masks: the fixed-capacity mask adds the dtype's lowest finite value (e.g.
-3.4028235e38 for f32; `dtypes.LOWEST_FINITE`) at hidden keys and 0
elsewhere. exp of it underflows to exactly 0, as -inf would, while
`score + mask` stays finite arithmetic. The live and sparse forms hide keys
with a true `select(keep, s, -inf)` instead, as their fused ops define.
"""

from __future__ import annotations

import math

from . import checks, primitives as P
from .checks import fail
from .composites import repeat_kv, softmax
from .dtypes import LOWEST_FINITE
from .tensor import Tensor
from .tracer import Tracer

# --- shared checks -----------------------------------------------------------


def _scale_value(op: str, scale: float | None, dk: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(dk)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise fail(op, "scale", f"must be a finite number or None, got {scale!r}")
    return float(scale)


def _check_softcap(op: str, softcap: float | None) -> None:
    if softcap is None:
        return
    if (
        isinstance(softcap, bool)
        or not isinstance(softcap, (int, float))
        or not (math.isfinite(softcap) and softcap > 0)
    ):
        raise fail(op, "softcap", f"must be a positive finite number or None, got {softcap!r}")


def _check_bias(op: str, bias: Tensor | None, q: Tensor, lk: int) -> None:
    """`bias [1|B, 1|Hq, 1|Lq, Lk]` in q's dtype (a head axis of Hq carries
    per-head ALiBi slopes)."""
    if bias is None:
        return
    checks.require_tensor(op, "bias", bias)
    checks.require_same_dtype(op, "bias", bias, "q", q)
    b, hq, lq, _ = q.shape
    want = (b, hq, lq, lk)
    if (
        bias.rank != 4
        or bias.shape[3] != lk
        or any(d not in (1, w) for d, w in zip(bias.shape[:3], want[:3]))
    ):
        raise fail(op, "bias", f"has shape {bias.shape}; expected [1|{b}, 1|{hq}, 1|{lq}, {lk}]")


def _check_q(op: str, q: Tensor) -> None:
    checks.require_tensor(op, "q", q)
    checks.require_float(op, "q", q)
    checks.require_rank(op, "q", q, 4)


def _check_kv4(
    op: str, q: Tensor, k: Tensor, v: Tensor, kname: str, vname: str, dk: int | None = None
) -> int:
    """`k [B, Hkv, Lk, Dk]`, `v [B, Hkv, Lk, Dv]` against q `[B, Hq, Lq, Dk]`;
    returns n_rep = Hq / Hkv."""
    for arg, t in ((kname, k), (vname, v)):
        checks.require_tensor(op, arg, t)
        checks.require_same_dtype(op, arg, t, "q", q)
        checks.require_rank(op, arg, t, 4)
    b, hq, _, qd = q.shape
    if k.shape[0] != b:
        raise fail(
            op, kname, f"has batch {k.shape[0]} but q has {b} (q {q.shape}, {kname} {k.shape})"
        )
    if (dk if dk is not None else k.shape[3]) != qd:
        raise fail(
            op, kname, f"has key width {k.shape[3]} but q has {qd} (q {q.shape}, {kname} {k.shape})"
        )
    hkv = k.shape[1]
    if hkv == 0 or hq % hkv:
        raise fail(op, kname, f"has {hkv} heads, which do not divide q's {hq} heads")
    if v.shape[:3] != k.shape[:3]:
        raise fail(
            op, vname, f"has shape {v.shape}; its [B, Hkv, Lk] must match {kname} {k.shape[:3]}"
        )
    return hq // hkv


def _check_pos(
    op: str, pos: Tensor, tokens: int, length: int, what: str, rows: int | None = None
) -> bool:
    """`pos` is a 0-d i32 -- or, where the form takes one position per batch
    row (`rows` given), a `[rows]` i32; returns True for the per-row form. A
    declared range must keep `pos + tokens - 1` inside `length` (otherwise the
    clamped write lands elsewhere); for a per-row pos it bounds every row."""
    checks.require_tensor(op, "pos", pos)
    per_row = rows is not None and pos.shape == (rows,) and pos.dtype == "i32"
    if not per_row and (pos.shape != () or pos.dtype != "i32"):
        also = f" or a per-row [{rows}] i32 tensor" if rows is not None else ""
        raise fail(op, "pos", f"must be a 0-d i32 tensor{also}, got {pos.shape} {pos.dtype}")
    if pos.declared_range is not None:
        lo, hi = pos.declared_range
        if lo < 0 or hi > length - tokens:
            raise fail(
                op,
                "pos",
                f"has declared range [{lo}, {hi}], but {tokens} token(s) at pos must fit in "
                f"{what} of {length} (needs 0 <= pos <= {length - tokens})",
            )
    return per_row


# --- shared chains -------------------------------------------------------------


def _mask_from_hidden(hidden: Tensor, dtype: str) -> Tensor:
    """`select(hidden, lowest, 0)`: constant lowest, constant 0, select."""
    lowest = P.constant(LOWEST_FINITE[dtype], dtype, tracer=hidden.tracer)
    zero = P.constant(0.0, dtype, tracer=hidden.tracer)
    return P.select(hidden, lowest, zero)


def _decode_mask(pos: Tensor, lq: int, cap: int, dtype: str) -> Tensor:
    """Key `t` is hidden from query row `i` iff `t > pos + i`. `pos` is the
    0-d position, or one position per batch row reshaped to `[B, 1, 1, 1]`
    (then row `b` hides `t > pos[b] + i` and the mask is `[B, 1, Lq, cap]`):

    Lq == 1:  t = iota [1, 1, 1, cap] dim 3;  hidden = compare gt t, pos
    Lq > 1:   t = iota [1, 1, 1, cap] dim 3;  i = iota [1, 1, Lq, 1] dim 2;
              qp = add i, pos;  hidden = compare gt t, qp
    then constant lowest, constant 0, mask = select hidden, lowest, 0
    -> [1, 1, Lq, cap].
    """
    tr = pos.tracer
    t = P.iota((1, 1, 1, cap), 3, "i32", tracer=tr)
    if lq == 1:
        hidden = P.compare("gt", t, pos)
    else:
        rows = P.iota((1, 1, lq, 1), 2, "i32", tracer=tr)
        hidden = P.compare("gt", t, P.add(rows, pos))
    return _mask_from_hidden(hidden, dtype)


def _row_writes(
    k_cache: Tensor, v_cache: Tensor, k_new: Tensor, v_new: Tensor, pos: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """The cache writes of a decode step (T = 1) with one position per batch
    row; returns `(k_cache', v_cache', pos4)`. One dynamic_update_slice cannot
    do it (its offset is one scalar), so the new row is selected in:

        pos4 = reshape pos -> [B, 1, 1, 1]
        t    = iota [1, 1, cap, 1] dim 2
        at   = compare eq t, pos4                  [B, 1, cap, 1]
        k_cache' = select at, k_new, k_cache       (k_new [B, Hkv, 1, D]
        v_cache' = select at, v_new, v_cache        broadcasts along cap)
    """
    b, _, cap, _ = k_cache.shape
    pos4 = P.reshape(pos, (b, 1, 1, 1))
    at = P.compare("eq", P.iota((1, 1, cap, 1), 2, "i32", tracer=pos.tracer), pos4)
    return P.select(at, k_new, k_cache), P.select(at, v_new, v_cache), pos4


def _causal_mask(tr: Tracer, length: int, dtype: str, window: int | None = None) -> Tensor:
    """Prefill: row = iota [1, 1, L, 1] dim 2, col = iota [1, 1, 1, L] dim 3,
    hidden = compare gt col, row, then constant lowest, constant 0,
    mask = select hidden, lowest, 0 -> [1, 1, L, L]. With a sliding
    `window` W the keys `row - col >= W` are hidden too (an `or` of the two
    compares: the rewrite reads it as poot.attention's `window`)."""
    row = P.iota((1, 1, length, 1), 2, "i32", tracer=tr)
    col = P.iota((1, 1, 1, length), 3, "i32", tracer=tr)
    hidden = P.compare("gt", col, row)
    if window is not None:
        width = P.constant(window, "i32", tracer=tr)
        hidden = P.or_(hidden, P.compare("ge", P.sub(row, col), width))
    return _mask_from_hidden(hidden, dtype)


def _score_chain(
    q: Tensor,
    k_exp: Tensor,
    v_exp: Tensor,
    *,
    scale: float,
    softcap: float | None,
    mask: Tensor | None = None,
    bias: Tensor | None = None,
    keep: Tensor | None = None,
) -> Tensor:
    """The chain in the module docstring (everything already checked)."""
    tr = q.tracer
    s = P.matmul(q, P.transpose(k_exp, (0, 1, 3, 2)))
    s = P.mul(s, scale)
    if softcap is not None:
        c = P.constant(float(softcap), q.dtype, tracer=tr)
        s = P.mul(P.tanh(P.div(s, c)), c)
    if mask is not None:
        s = P.add(s, mask)
    if bias is not None:
        s = P.add(s, bias)
    if keep is not None:
        ninf = P.constant(-math.inf, q.dtype, tracer=tr)
        s = P.select(keep, s, ninf)
    return P.matmul(softmax(s), v_exp)


def _check_cache_pair(
    op: str, q: Tensor, k_new: Tensor, v_new: Tensor, k_cache: Tensor, v_cache: Tensor
) -> int:
    """Decode operands: caches `[B, Hkv, cap, D]`, new rows `[B, Hkv, T, D]`,
    q `[B, Hq, T, Dk]`; returns n_rep."""
    _check_q(op, q)
    n_rep = _check_kv4(op, q, k_cache, v_cache, "k_cache", "v_cache")
    for arg, new, cache in (("k_new", k_new, k_cache), ("v_new", v_new, v_cache)):
        checks.require_tensor(op, arg, new)
        checks.require_same_dtype(op, arg, new, "q", q)
        checks.require_rank(op, arg, new, 4)
        want = (cache.shape[0], cache.shape[1], q.shape[2], cache.shape[3])
        checks.require_shape(
            op, arg, new, want, f"[B, Hkv, Lq, D] (one row per query row, like {arg[0]}_cache)"
        )
    if q.shape[2] > k_cache.shape[2]:
        raise fail(
            op, "q", f"has {q.shape[2]} query rows, more than the cache capacity {k_cache.shape[2]}"
        )
    return n_rep


# --- the forms -----------------------------------------------------------------


def attention_masked(
    q: Tensor,
    k_new: Tensor,
    v_new: Tensor,
    k_cache: Tensor,
    v_cache: Tensor,
    pos: Tensor,
    *,
    scale: float | None = None,
    softcap: float | None = None,
    bias: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Decode over a fixed-capacity cache; returns `(out, k_cache', v_cache')`.

    q `[B, Hq, T, Dk]` (T = 1 for a decode step), k_new `[B, Hkv, T, Dk]`,
    v_new `[B, Hkv, T, Dv]`, caches `[B, Hkv, cap, Dk|Dv]` (state), pos a 0-d
    i32 (the first new row's position). Emits:

        k_cache' = dynamic_update_slice k_cache, k_new, pos axis = 2
        v_cache' = dynamic_update_slice v_cache, v_new, pos axis = 2
        repeat_kv k_cache' ; repeat_kv v_cache'
        decode mask [1, 1, T, cap]  (iota gt pos; see _decode_mask)
        score chain with mask (then bias)

    Query row `i` sees keys `t <= pos + i`.

    Per-row positions (continuous batching): `pos [B]` i32, one position per
    batch row, for a decode step (T = 1). The writes are `_row_writes` (two
    selects instead of the dynamic_update_slices) and the mask is
    `[B, 1, 1, cap]` (`t > pos[b]`, `_decode_mask` of `pos4`); the rest of the
    chain is the same.
    """
    op = "attention_masked"
    n_rep = _check_cache_pair(op, q, k_new, v_new, k_cache, v_cache)
    checks.tracer_of(
        op,
        dict(q=q, k_new=k_new, v_new=v_new, k_cache=k_cache, v_cache=v_cache, pos=pos, bias=bias),
    )
    cap, lq = k_cache.shape[2], q.shape[2]
    per_row = _check_pos(op, pos, lq, cap, "the cache capacity", rows=q.shape[0])
    if per_row and lq != 1:
        raise fail(
            op, "pos", f"has one position per row, which takes a decode step (T = 1), not {lq} rows"
        )
    scale_v = _scale_value(op, scale, q.shape[3])
    _check_softcap(op, softcap)
    _check_bias(op, bias, q, cap)

    if per_row:
        k1, v1, mask_pos = _row_writes(k_cache, v_cache, k_new, v_new, pos)
    else:
        k1 = P.dynamic_update_slice(k_cache, k_new, pos, 2)
        v1 = P.dynamic_update_slice(v_cache, v_new, pos, 2)
        mask_pos = pos
    k_exp = repeat_kv(k1, n_rep)
    v_exp = repeat_kv(v1, n_rep)
    mask = _decode_mask(mask_pos, lq, cap, q.dtype)
    out = _score_chain(q, k_exp, v_exp, scale=scale_v, softcap=softcap, mask=mask, bias=bias)
    return out, k1, v1


def attention_prefill(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    scale: float | None = None,
    softcap: float | None = None,
    bias: Tensor | None = None,
    window: int | None = None,
) -> Tensor:
    """Every query row against the prompt (causal), no cache write.

    q `[B, Hq, L, Dk]`, k `[B, Hkv, L, Dk]`, v `[B, Hkv, L, Dv]`. Emits:

        repeat_kv k ; repeat_kv v
        causal mask [1, 1, L, L]  (iota col gt iota row; see _causal_mask)
        score chain with mask (then bias)

    `window` (an int >= 1): Mistral's sliding window, row i sees the keys
    `i - window < t <= i`.
    """
    op = "attention_prefill"
    _check_q(op, q)
    n_rep = _check_kv4(op, q, k, v, "k", "v")
    tr = checks.tracer_of(op, dict(q=q, k=k, v=v, bias=bias))
    length = q.shape[2]
    if k.shape[2] != length:
        raise fail(
            op, "k", f"has {k.shape[2]} keys but q has {length} rows; prefill needs Lq == Lk"
        )
    scale_v = _scale_value(op, scale, q.shape[3])
    _check_softcap(op, softcap)
    _check_bias(op, bias, q, length)
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise fail(op, "window", f"must be an int >= 1, got {window!r}")

    k_exp = repeat_kv(k, n_rep)
    v_exp = repeat_kv(v, n_rep)
    mask = _causal_mask(tr, length, q.dtype, window)
    return _score_chain(q, k_exp, v_exp, scale=scale_v, softcap=softcap, mask=mask, bias=bias)


def attention_live(
    q: Tensor,
    k_new: Tensor,
    v_new: Tensor,
    k_cache: Tensor,
    v_cache: Tensor,
    pos: Tensor,
    *,
    scale: float | None = None,
    softcap: float | None = None,
    bias: Tensor | None = None,
    guard_name: str | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """The live-length decode (the one definition); returns
    `(out, k_cache', v_cache')`. Operands as `attention_masked` with T = 1.

    The live length `len = pos + 1` is built in the graph as `[B]` i32 and
    bounded by an index guard whose witness becomes a validation output
    (named `guard_name`, default `live_len_ok_<n>` for the tracer's n-th
    live attention). Inactive key and value rows (`t >= len[b]`) are selected
    to zero before either matmul -- a true select, so a NaN in an unused row
    cannot reach the output -- and inactive scores are selected to -inf
    before the softmax. Emits:

        k_cache' = dynamic_update_slice k_cache, k_new, pos axis = 2
        v_cache' = dynamic_update_slice v_cache, v_new, pos axis = 2
        one = constant 1 : tensor<i32>
        lp  = add pos, one                       tensor<i32>
        lb  = broadcast lp -> [B]
        len, ok = index_guard lb min = 1 max = cap    (ok -> validation result)
        len4 = reshape len -> [B, 1, 1, 1]
        tr  = iota [1, 1, cap, 1] dim 2
        krow = compare lt tr, len4               [B, 1, cap, 1]
        zero = constant 0 (q's dtype)
        k_live = select krow, k_cache', zero
        v_live = select krow, v_cache', zero
        repeat_kv k_live ; repeat_kv v_live
        tc  = iota [1, 1, 1, cap] dim 3
        keep = compare lt tc, len4               [B, 1, 1, cap]
        score chain with (bias, then) keep       (select keep, s, -inf)

    The state results are the written caches (not the zeroed views).

    Per-row positions: `pos [B]` i32. The writes are `_row_writes` (selects,
    see attention_masked) and the length is `lb = add pos, one` `[B]` itself
    (no broadcast); the guard, the selects and the score chain are the same.
    """
    op = "attention_live"
    n_rep = _check_cache_pair(op, q, k_new, v_new, k_cache, v_cache)
    tr = checks.tracer_of(
        op,
        dict(q=q, k_new=k_new, v_new=v_new, k_cache=k_cache, v_cache=v_cache, pos=pos, bias=bias),
    )
    b, _, lq, _ = q.shape
    cap = k_cache.shape[2]
    if lq != 1:
        raise fail(op, "q", f"has {lq} query rows; the live form is a decode (Lq = 1)")
    per_row = _check_pos(op, pos, lq, cap, "the cache capacity", rows=b)
    scale_v = _scale_value(op, scale, q.shape[3])
    _check_softcap(op, softcap)
    _check_bias(op, bias, q, cap)
    if guard_name is None:
        guard_name = f"live_len_ok_{tr.counters.live_guards}"
    if not isinstance(guard_name, str) or not guard_name:
        raise fail(op, "guard_name", f"must be a non-empty string, got {guard_name!r}")
    if guard_name in tr.result_names:
        raise fail(op, "guard_name", f"{guard_name!r} is already a result name")
    tr.counters.live_guards += 1

    if per_row:
        k1, v1, _ = _row_writes(k_cache, v_cache, k_new, v_new, pos)
    else:
        k1 = P.dynamic_update_slice(k_cache, k_new, pos, 2)
        v1 = P.dynamic_update_slice(v_cache, v_new, pos, 2)
    one = P.constant(1, "i32", tracer=tr)
    length = P.add(pos, one)
    if not per_row:
        length = P.broadcast_to(length, (b,))
    length, ok = P.index_guard(length, 1, cap)
    tr.validation(guard_name, ok)
    len4 = P.reshape(length, (b, 1, 1, 1))
    krow = P.compare("lt", P.iota((1, 1, cap, 1), 2, "i32", tracer=tr), len4)
    zero = P.constant(0.0, q.dtype, tracer=tr)
    k_live = P.select(krow, k1, zero)
    v_live = P.select(krow, v1, zero)
    k_exp = repeat_kv(k_live, n_rep)
    v_exp = repeat_kv(v_live, n_rep)
    keep = P.compare("lt", P.iota((1, 1, 1, cap), 3, "i32", tracer=tr), len4)
    out = _score_chain(q, k_exp, v_exp, scale=scale_v, softcap=softcap, bias=bias, keep=keep)
    return out, k1, v1


def attention_mla(
    q: Tensor,
    k_nope: Tensor,
    k_pe: Tensor,
    v: Tensor,
    pos: Tensor | None = None,
    *,
    scale: float | None = None,
    softcap: float | None = None,
    bias: Tensor | None = None,
) -> Tensor:
    """Split-key (multi-head latent) attention: each key is
    `concat(k_nope[b, g, t], k_pe[b, 0, t])`, the rotary part `k_pe` shared by
    every key head.

    q `[B, Hq, Lq, Dk]`, k_nope `[B, Hkv, Lk, Dk - s]`, k_pe `[B, 1, Lk, s]`,
    v `[B, Hkv, Lk, Dv]`. With `pos` (0-d i32) the keys are a cache already
    written and query row `i` sees `t <= pos + i` (the decode mask); without
    it this is a causal prefill (Lq == Lk). Emits:

        kpe_b = broadcast k_pe -> [B, Hkv, Lk, s]   (also when Hkv == 1)
        k     = concat k_nope, kpe_b axis = 3
        repeat_kv k ; repeat_kv v
        decode mask (pos given) or causal mask
        score chain with mask (then bias); scale defaults to 1/sqrt(Dk)
    """
    op = "attention_mla"
    _check_q(op, q)
    for arg, t in (("k_nope", k_nope), ("k_pe", k_pe)):
        checks.require_tensor(op, arg, t)
        checks.require_same_dtype(op, arg, t, "q", q)
        checks.require_rank(op, arg, t, 4)
    b, _, lq, dk = q.shape
    s_width = k_pe.shape[3]
    hkv, lk = k_nope.shape[1], k_nope.shape[2]
    if k_pe.shape[:3] != (b, 1, lk):
        raise fail(
            op,
            "k_pe",
            f"has shape {k_pe.shape}; expected [{b}, 1, {lk}, s] (one rotary part for every head)",
        )
    if k_nope.shape[3] + s_width != dk:
        raise fail(
            op,
            "k_nope",
            f"width {k_nope.shape[3]} plus k_pe width {s_width} must equal q's key width {dk}",
        )
    n_rep = _check_kv4(op, q, k_nope, v, "k_nope", "v", dk=k_nope.shape[3] + s_width)
    tr = checks.tracer_of(op, dict(q=q, k_nope=k_nope, k_pe=k_pe, v=v, pos=pos, bias=bias))
    if pos is None:
        if lq != lk:
            raise fail(
                op,
                "q",
                f"has {lq} rows but there are {lk} keys; without pos this is a prefill (Lq == Lk)",
            )
    else:
        _check_pos(op, pos, lq, lk, "the key length")
    scale_v = _scale_value(op, scale, dk)
    _check_softcap(op, softcap)
    _check_bias(op, bias, q, lk)

    kpe_b = P.broadcast_to(k_pe, (b, hkv, lk, s_width))
    k = P.concat([k_nope, kpe_b], axis=3)
    k_exp = repeat_kv(k, n_rep)
    v_exp = repeat_kv(v, n_rep)
    mask = _causal_mask(tr, lk, q.dtype) if pos is None else _decode_mask(pos, lq, lk, q.dtype)
    return _score_chain(q, k_exp, v_exp, scale=scale_v, softcap=softcap, mask=mask, bias=bias)


def attention_paged(
    q: Tensor,
    k_new: Tensor,
    v_new: Tensor,
    k_pool: Tensor,
    v_pool: Tensor,
    write_map: Tensor,
    read_map: Tensor,
    pos: Tensor,
    *,
    count: Tensor | None = None,
    scale: float | None = None,
    softcap: float | None = None,
    bias: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Decode over a paged KV cache; returns `(out, k_pool', v_pool')`.

    Pools `[S, Hkv, Dk|Dv]` (state), new rows `k_new [B, Hkv, T, Dk]`,
    `v_new [B, Hkv, T, Dv]`, q `[B, Hq, T, Dk]`, `write_map [B * T]` i32
    (token `t` of row `b` goes to pool slot `write_map[b * T + t]`, -1 writes
    nothing; declare it with `tr.write_map`: `poot.slot<write_map>`,
    `poot.range<-1, S-1>`), `read_map [B, cap]` i32 (the pool slot of each
    logical position; `tr.slot_map`: `poot.slot<slot_map>`,
    `poot.range<0, S-1>`), pos a 0-d i32 as in `attention_masked`. Emits:

        kr = transpose k_new perm = [0, 2, 1, 3]    [B, T, Hkv, Dk]
        kr = reshape kr -> [B * T, Hkv, Dk]
        k_pool' = scatter_update k_pool[write_map], kr
        (the same three for v)
        kg = gather k_pool'[read_map] axis = 0      [B, cap, Hkv, Dk]
        kg = transpose kg perm = [0, 2, 1, 3]        [B, Hkv, cap, Dk]
        (the same two for v)
        repeat_kv k ; repeat_kv v
        decode mask [1, 1, T, cap]; score chain with mask (then bias)

    Per-row positions and lengths (continuous batching: rows at different
    positions, prefill chunks of different lengths in one step): `pos [B]`
    i32, the position of row `b`'s first new token, and optionally
    `count [B]` i32 in `[1, T]`, how many of its T tokens are real (the rest
    are padding: their write-map words are -1 and their outputs meaningless;
    default: all T). Row `b`'s live length is `len[b] = pos[b] + count[b]`;
    with declared ranges `pos in [0, cap - T]` and `count in [1, T]` the
    rewrite proves `1 <= len <= cap` and fuses a paged key with a live
    length. The writes and the gathers are as above, then:

        len  = add pos, count                    [B]  (count absent:
                                                 constant T; len = add pos, T)
        len4 = reshape len -> [B, 1, 1, 1]
        tr   = iota [1, 1, cap, 1] dim 2
        krow = compare lt tr, len4               [B, 1, cap, 1]
        zero = constant 0 (q's dtype)
        k_live = select krow, k_view, zero ; v_live = select krow, v_view, zero
        repeat_kv k_live ; repeat_kv v_live
        T > 1: pos4 = reshape pos -> [B, 1, 1, 1]; decode mask of pos4
               [B, 1, T, cap]  (t > pos[b] + i hidden)
        tc   = iota [1, 1, 1, cap] dim 3
        keep = compare lt tc, len4               [B, 1, 1, cap]
        score chain with (mask, then bias, then) keep

    A decode (T = 1) needs no mask: `t > pos[b]` is `t >= len[b]`. The keys
    past a row's length are selected to zero (a true select: a stale or NaN
    slot cannot reach the output), as attention_live does.
    """
    op = "attention_paged"
    _check_q(op, q)
    b, hq, lq, dk = q.shape
    for arg, t in (("k_pool", k_pool), ("v_pool", v_pool)):
        checks.require_tensor(op, arg, t)
        checks.require_same_dtype(op, arg, t, "q", q)
        checks.require_rank(op, arg, t, 3)
    slots, hkv, pdk = k_pool.shape
    if pdk != dk:
        raise fail(op, "k_pool", f"has key width {pdk} but q has {dk}")
    if hkv == 0 or hq % hkv:
        raise fail(op, "k_pool", f"has {hkv} heads, which do not divide q's {hq} heads")
    if v_pool.shape[:2] != (slots, hkv):
        raise fail(
            op,
            "v_pool",
            f"has shape {v_pool.shape}; its [S, Hkv] must match k_pool {k_pool.shape[:2]}",
        )
    for arg, new, pool in (("k_new", k_new, k_pool), ("v_new", v_new, v_pool)):
        checks.require_tensor(op, arg, new)
        checks.require_same_dtype(op, arg, new, "q", q)
        checks.require_shape(op, arg, new, (b, hkv, lq, pool.shape[2]), "[B, Hkv, Lq, D]")
    checks.require_tensor(op, "write_map", write_map)
    checks.require_tensor(op, "read_map", read_map)
    checks.require_dtype(op, "write_map", write_map, ("i32",))
    checks.require_dtype(op, "read_map", read_map, ("i32",))
    checks.require_shape(op, "write_map", write_map, (b * lq,), "[B * T]")
    if read_map.rank != 2 or read_map.shape[0] != b:
        raise fail(op, "read_map", f"must have shape [{b}, cap], got {read_map.shape}")
    cap = read_map.shape[1]
    for arg, t, lo in (("write_map", write_map, -1), ("read_map", read_map, 0)):
        if t.declared_range is not None and (
            t.declared_range[0] < lo or t.declared_range[1] > slots - 1
        ):
            raise fail(
                op,
                arg,
                f"has declared range {list(t.declared_range)}, outside [{lo}, {slots - 1}] of the {slots}-slot pool",
            )
    tr = checks.tracer_of(
        op,
        dict(
            q=q,
            k_new=k_new,
            v_new=v_new,
            k_pool=k_pool,
            v_pool=v_pool,
            write_map=write_map,
            read_map=read_map,
            pos=pos,
            count=count,
            bias=bias,
        ),
    )
    per_row = _check_pos(op, pos, lq, cap, "the read map's capacity", rows=b)
    if count is not None:
        if not per_row:
            raise fail(op, "count", "needs one position per row (pos [B]); a 0-d pos writes all T")
        checks.require_tensor(op, "count", count)
        checks.require_dtype(op, "count", count, ("i32",))
        checks.require_shape(op, "count", count, (b,), "[B] (one token count per row)")
        if count.declared_range is not None and (
            count.declared_range[0] < 1 or count.declared_range[1] > lq
        ):
            raise fail(
                op,
                "count",
                f"has declared range {list(count.declared_range)}, outside [1, {lq}] "
                f"(each row has 1 to T = {lq} real tokens)",
            )
    scale_v = _scale_value(op, scale, dk)
    _check_softcap(op, softcap)
    _check_bias(op, bias, q, cap)

    def write(pool: Tensor, new: Tensor) -> Tensor:
        rows = P.reshape(P.transpose(new, (0, 2, 1, 3)), (b * lq, hkv, pool.shape[2]))
        return P.scatter_update(pool, write_map, rows)

    def read(pool: Tensor) -> Tensor:
        return P.transpose(P.gather(pool, read_map, 0), (0, 2, 1, 3))

    k_pool1 = write(k_pool, k_new)
    v_pool1 = write(v_pool, v_new)
    k_view = read(k_pool1)
    v_view = read(v_pool1)
    if not per_row:
        k_exp = repeat_kv(k_view, hq // hkv)
        v_exp = repeat_kv(v_view, hq // hkv)
        mask = _decode_mask(pos, lq, cap, q.dtype)
        out = _score_chain(q, k_exp, v_exp, scale=scale_v, softcap=softcap, mask=mask, bias=bias)
        return out, k_pool1, v_pool1

    live = count if count is not None else P.constant(lq, "i32", tracer=tr)
    len4 = P.reshape(P.add(pos, live), (b, 1, 1, 1))
    krow = P.compare("lt", P.iota((1, 1, cap, 1), 2, "i32", tracer=tr), len4)
    zero = P.constant(0.0, q.dtype, tracer=tr)
    k_live = P.select(krow, k_view, zero)
    v_live = P.select(krow, v_view, zero)
    k_exp = repeat_kv(k_live, hq // hkv)
    v_exp = repeat_kv(v_live, hq // hkv)
    mask = None
    if lq > 1:
        mask = _decode_mask(P.reshape(pos, (b, 1, 1, 1)), lq, cap, q.dtype)
    keep = P.compare("lt", P.iota((1, 1, 1, cap), 3, "i32", tracer=tr), len4)
    out = _score_chain(
        q, k_exp, v_exp, scale=scale_v, softcap=softcap, mask=mask, bias=bias, keep=keep
    )
    return out, k_pool1, v_pool1
