"""The fused attention semantics (poot.attention in every form,
poot.block_topk, poot.selected_attention) against brute-force loops written
from the op descriptions: one query row at a time, one key at a time, in
float64.
"""

from __future__ import annotations

import math
from typing import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poot_mlir.oracle import dtypes, semantics

BF16 = np.dtype(ml_dtypes.bfloat16)
FAST = settings(max_examples=25, deadline=None)

KeyFn = Callable[[int, int, int], np.ndarray]


def normal(rng: np.random.Generator, shape, dtype=np.float64) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def combine(scores: list[float], values: list[np.ndarray], width: int) -> np.ndarray:
    """softmax(scores) . values over the visited keys; no key (or only -inf
    scores) is 0/0 = NaN."""
    if not scores or max(scores) == -math.inf:
        return np.full(width, np.nan)
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = math.fsum(weights)
    return np.array(
        [math.fsum(w * float(v[d]) for w, v in zip(weights, values)) / total for d in range(width)]
    )


def brute_attention(
    q: np.ndarray,
    key_at: KeyFn,
    value_at: KeyFn,
    key_len: int,
    kv_heads: int,
    value_width: int,
    *,
    scale: float,
    softcap: float | None = None,
    mask: np.ndarray | None = None,
    length: np.ndarray | None = None,
) -> np.ndarray:
    """poot.attention, read straight off its description."""
    batch, heads, rows, _ = q.shape
    n_rep = heads // kv_heads
    out = np.empty((batch, heads, rows, value_width))
    for b, h, i in np.ndindex(batch, heads, rows):
        g = h // n_rep
        visited = key_len if length is None else min(max(int(length[b]), 0), key_len)
        scores, values = [], []
        for t in range(visited):
            s = math.fsum(float(x) * float(y) for x, y in zip(q[b, h, i], key_at(b, g, t))) * scale
            if softcap is not None:
                s = softcap * math.tanh(s / softcap)
            if mask is not None:
                mb, mh, mi = (idx if size > 1 else 0 for idx, size in zip((b, h, i), mask.shape))
                s += float(mask[mb, mh, mi, t])
            scores.append(s)
            values.append(value_at(b, g, t))
        out[b, h, i] = combine(scores, values, value_width)
    return out


def dense_case(rng, B=2, Hkv=2, n_rep=2, Lq=3, Lk=12, Dk=8, Dv=5):
    q = normal(rng, (B, Hkv * n_rep, Lq, Dk))
    k = normal(rng, (B, Hkv, Lk, Dk))
    v = normal(rng, (B, Hkv, Lk, Dv))
    return q, k, v


# --- poot.attention ---------------------------------------------------------------


@pytest.mark.parametrize(
    "mask_shape", [None, (1, 1, 1, 12), (2, 1, 3, 12), (1, 4, 1, 12), (2, 4, 3, 12)]
)
@pytest.mark.parametrize("softcap", [None, 2.5])
def test_dense_gqa_mask_softcap(rng, mask_shape, softcap) -> None:
    q, k, v = dense_case(rng)
    mask = None
    if mask_shape is not None:
        mask = normal(rng, mask_shape)
        mask[..., int(rng.integers(0, 12))] = -np.inf  # a hidden key adds zero weight
    scale = float(rng.uniform(0.1, 0.6))
    got = semantics.attention(q, k, v, scale=scale, softcap=softcap, mask=mask)
    expected = brute_attention(
        q,
        lambda b, g, t: k[b, g, t],
        lambda b, g, t: v[b, g, t],
        12,
        2,
        5,
        scale=scale,
        softcap=softcap,
        mask=mask,
    )
    assert got.dtype == np.float64 and got.shape == (2, 4, 3, 5)
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)
    # Float32 inputs compute in float32 and stay close to the float64 answer.
    got32 = semantics.attention(
        q.astype(np.float32),
        k.astype(np.float32),
        v.astype(np.float32),
        scale=scale,
        softcap=softcap,
        mask=None if mask is None else mask.astype(np.float32),
    )
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, expected, rtol=2e-4, atol=2e-5)


def test_split_key(rng) -> None:
    q, knope, v = dense_case(rng, Dk=6)
    q = normal(rng, (2, 4, 3, 9))
    kpe = normal(rng, (2, 1, 12, 3))
    got = semantics.attention(q, knope, v, scale=0.3, key_shared=kpe)
    expected = brute_attention(
        q,
        lambda b, g, t: np.concatenate([knope[b, g, t], kpe[b, 0, t]]),
        lambda b, g, t: v[b, g, t],
        12,
        2,
        5,
        scale=0.3,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)


def test_paged_key(rng) -> None:
    q = normal(rng, (2, 4, 3, 8))
    kpool, vpool = normal(rng, (20, 2, 8)), normal(rng, (20, 2, 5))
    read = np.stack([rng.permutation(20)[:12] for _ in range(2)]).astype(np.int32)
    length = np.array([int(rng.integers(1, 13)), int(rng.integers(1, 13))], np.int32)
    got = semantics.attention(q, kpool, vpool, scale=0.4, read=read, length=length)
    expected = brute_attention(
        q,
        lambda b, g, t: kpool[read[b, t], g],
        lambda b, g, t: vpool[read[b, t], g],
        12,
        2,
        5,
        scale=0.4,
        length=length,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)


def test_live_length_never_reads_rows_past_len(rng) -> None:
    q, k, v = dense_case(rng)
    length = np.array([int(rng.integers(1, 12)), int(rng.integers(1, 12))], np.int32)
    for b in range(2):
        k[b, :, length[b] :, int(rng.integers(0, 8))] = np.nan
        v[b, :, length[b] :, :] = np.nan
        v[b, 0, -1, 0] = np.inf
    got = semantics.attention(q, k, v, scale=0.5, length=length)
    assert np.isfinite(got).all()
    expected = brute_attention(
        q,
        lambda b, g, t: k[b, g, t],
        lambda b, g, t: v[b, g, t],
        12,
        2,
        5,
        scale=0.5,
        length=length,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)
    # The same NaN reaches the output when nothing bounds the keys.
    assert np.isnan(semantics.attention(q, k, v, scale=0.5)).all()


def test_live_length_is_clamped_into_0_lk(rng) -> None:
    q, k, v = dense_case(rng)
    full = semantics.attention(q, k, v, scale=0.5)
    over = semantics.attention(q, k, v, scale=0.5, length=np.array([12, 99], np.int32))
    np.testing.assert_array_equal(over, full)
    empty = semantics.attention(q, k, v, scale=0.5, length=np.array([0, -3], np.int32))
    assert np.isnan(empty).all()
    one = semantics.attention(q, k, v, scale=0.5, length=np.array([1, 1], np.int32))
    for h in range(4):
        np.testing.assert_allclose(
            one[:, h], np.broadcast_to(v[:, h // 2, :1], (2, 3, 5)), rtol=1e-15
        )


def test_fully_masked_row_is_nan(rng) -> None:
    q, k, v = dense_case(rng)
    mask = normal(rng, (2, 1, 3, 12))
    mask[1, 0, 2, :] = -np.inf
    got = semantics.attention(q, k, v, scale=0.5, mask=mask)
    assert np.isnan(got[1, :, 2]).all()
    got[1, :, 2] = 0
    assert np.isfinite(got).all()


def test_minus_inf_key_adds_exactly_zero_weight(rng) -> None:
    q, k, v = dense_case(rng, B=1, Hkv=1, n_rep=1, Lq=1)
    mask = np.zeros((1, 1, 1, 12))
    hidden = rng.permutation(12)[:5]
    mask[..., hidden] = -np.inf
    keep = np.setdiff1d(np.arange(12), hidden)
    got = semantics.attention(q, k, v, scale=0.5, mask=mask)
    subset = semantics.attention(q, k[:, :, keep], v[:, :, keep], scale=0.5)
    np.testing.assert_allclose(got, subset, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_16bit_attention_rounds_the_float64_answer_once(rng, dtype) -> None:
    """Two-byte attention: float64 math on the widened inputs, the output
    rounded once to nearest even (docs/two-byte-attention.md)."""
    q, k, v = (x.astype(dtype) for x in dense_case(rng))
    got = semantics.attention(q, k, v, scale=0.5)
    assert got.dtype == dtype
    wide = semantics.attention(*(x.astype(np.float64) for x in (q, k, v)), scale=0.5)
    want = dtypes.round_float64(wide, np.dtype(dtype))
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@FAST
@given(
    dims=st.tuples(
        st.integers(1, 2),
        st.integers(1, 2),
        st.integers(1, 3),
        st.integers(1, 3),
        st.integers(1, 9),
        st.integers(1, 6),
        st.integers(1, 5),
    ),
    form=st.sampled_from(["dense", "split", "paged"]),
    mask_axes=st.none() | st.tuples(st.booleans(), st.booleans(), st.booleans()),
    softcap=st.none() | st.floats(0.5, 20.0),
    live=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_attention_forms_property(dims, form, mask_axes, softcap, live, seed) -> None:
    B, Hkv, n_rep, Lq, Lk, Dk, Dv = dims
    rng = np.random.default_rng(seed)
    q = normal(rng, (B, Hkv * n_rep, Lq, Dk))
    v = normal(rng, (B, Hkv, Lk, Dv))
    kwargs: dict = {}
    if form == "dense":
        k = normal(rng, (B, Hkv, Lk, Dk))
        key_at = lambda b, g, t: k[b, g, t]  # noqa: E731
        value_at = lambda b, g, t: v[b, g, t]  # noqa: E731
    elif form == "split":
        split = int(rng.integers(0, Dk + 1))
        k = normal(rng, (B, Hkv, Lk, Dk - split))
        kwargs["key_shared"] = shared = normal(rng, (B, 1, Lk, split))
        key_at = lambda b, g, t: np.concatenate([k[b, g, t], shared[b, 0, t]])  # noqa: E731
        value_at = lambda b, g, t: v[b, g, t]  # noqa: E731
    else:
        slots = Lk + int(rng.integers(0, 4))
        k = normal(rng, (slots, Hkv, Dk))
        v = normal(rng, (slots, Hkv, Dv))
        kwargs["read"] = read = rng.integers(0, slots, (B, Lk)).astype(np.int32)
        key_at = lambda b, g, t: k[read[b, t], g]  # noqa: E731
        value_at = lambda b, g, t: v[read[b, t], g]  # noqa: E731
    mask = None
    if mask_axes is not None:
        shape = tuple(n if full else 1 for n, full in zip((B, Hkv * n_rep, Lq), mask_axes)) + (Lk,)
        mask = normal(rng, shape)
    length = rng.integers(1, Lk + 1, B).astype(np.int32) if live else None
    got = semantics.attention(
        q, k, v, scale=0.7, softcap=softcap, mask=mask, length=length, **kwargs
    )
    expected = brute_attention(
        q, key_at, value_at, Lk, Hkv, Dv, scale=0.7, softcap=softcap, mask=mask, length=length
    )
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


# --- block_topk / selected_attention ------------------------------------------------


def brute_block_topk(scores: np.ndarray, q_pos: np.ndarray, k: int, bs: int) -> np.ndarray:
    """The tracer's chain by hand: non-candidates score -inf, rank by
    (NaN last, descending, lower id), then non-candidates become -1."""
    B, Lq, blocks = scores.shape
    out = np.full((B, Lq, k), -1)
    for b, i in np.ndindex(B, Lq):
        own = math.floor(int(q_pos[b, i]) / bs)
        key = [float(s) if j < own else -math.inf for j, s in enumerate(scores[b, i])]
        order = sorted(range(blocks), key=lambda j: (math.isnan(key[j]), 0 if math.isnan(key[j]) else -key[j], j))
        listed = [j if j < own else -1 for j in order[:k]]
        out[b, i, : len(listed)] = listed
    return out


@FAST
@given(
    B=st.integers(1, 2),
    Lq=st.integers(1, 6),
    blocks=st.integers(1, 8),
    k=st.integers(1, 6),
    bs=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_block_topk_property(B, Lq, blocks, k, bs, seed) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.integers(-2, 3, (B, Lq, blocks)).astype(np.float32)  # ties are common
    if rng.random() < 0.3:
        scores[0, 0, int(rng.integers(0, blocks))] = np.nan
    q_pos = rng.integers(-2, blocks * bs + 2, (B, Lq)).astype(np.int32)
    got = semantics.block_topk(scores, q_pos, k=k, block_size=bs)
    assert got.dtype == np.int32 and got.shape == (B, Lq, k)
    np.testing.assert_array_equal(got, brute_block_topk(scores, q_pos, k, bs))


def brute_selected(q, k, v, ids, q_pos, bs, scale, softcap):
    B, Hq, Lq, _ = q.shape
    Hkv, Lk, Dv = k.shape[1], k.shape[2], v.shape[3]
    n_rep = Hq // Hkv
    out = np.empty((B, Hq, Lq, Dv))
    for b, h, i in np.ndindex(B, Hq, Lq):
        g, p = h // n_rep, int(q_pos[b, i])
        listed = {int(j) for j in ids[b, i] if j >= 0}
        scores, values = [], []
        for t in range(Lk):
            if t <= p and (t // bs in listed or t // bs == p // bs):
                s = math.fsum(float(x) * float(y) for x, y in zip(q[b, h, i], k[b, g, t])) * scale
                if softcap is not None:
                    s = softcap * math.tanh(s / softcap)
                scores.append(s)
                values.append(v[b, g, t])
        out[b, h, i] = combine(scores, values, Dv)
    return out


@pytest.mark.parametrize("softcap", [None, 3.0])
def test_selected_attention(rng, softcap) -> None:
    B, Hkv, n_rep, Lq, Lk, D, bs, K = 2, 2, 2, 6, 32, 8, 4, 3
    q = normal(rng, (B, Hkv * n_rep, Lq, D))
    k, v = normal(rng, (B, Hkv, Lk, D)), normal(rng, (B, Hkv, Lk, 5))
    q_pos = rng.integers(0, Lk, (B, Lq)).astype(np.int32)
    q_pos[0, 0] = -1  # sees nothing at all: NaN
    scores = normal(rng, (B, Lq, Lk // bs))
    ids = semantics.block_topk(scores, q_pos, k=K, block_size=bs)
    # A key outside every row's selection may hold garbage: it is never read.
    visible = semantics.selected_visibility(ids, q_pos, Lk, bs)
    never = ~visible.any(axis=1)  # [B, Lk]
    for b, t in zip(*np.nonzero(never)):
        k[b, :, t, 0] = np.nan
        v[b, :, t, :] = np.nan
    got = semantics.selected_attention(
        q, k, v, ids, q_pos, block_size=bs, scale=0.35, softcap=softcap
    )
    expected = brute_selected(q, k, v, ids, q_pos, bs, 0.35, softcap)
    assert np.isnan(got[0, :, 0]).all()
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)
    assert np.isfinite(np.delete(got.reshape(B, -1, Lq, 5)[0], 0, axis=1)).all()


def test_selected_attention_rows_do_not_share_garbage(rng) -> None:
    # Row 0 selects block 0, row 1 does not: a NaN in block 0 reaches only row 0.
    q = normal(rng, (1, 1, 2, 4))
    k, v = normal(rng, (1, 1, 16, 4)), normal(rng, (1, 1, 16, 3))
    q_pos = np.array([[9, 13]], np.int32)  # both in block 2 (bs = 4)
    ids = np.array([[[0, -1], [1, -1]]], np.int32)
    v[0, 0, 1, :] = np.nan
    got = semantics.selected_attention(q, k, v, ids, q_pos, block_size=4, scale=0.5)
    assert np.isnan(got[0, 0, 0]).all() and np.isfinite(got[0, 0, 1]).all()
