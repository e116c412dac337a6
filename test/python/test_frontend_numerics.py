"""Numerics of the traced composites: the oracle's output of each traced
module against an independent numpy formula written here (not the frontend,
not oracle.semantics), on fresh seeded random inputs (the `rng` fixture
prints its seed; never zeros).

Every module is traced at f32 and run twice: `reference=True` (every float op
in float64; matched to 1e-10) and in f32 (matched to 1e-5). The module's
float constants (the scale, the softcap, eps, RoPE frequencies) are f32, so
the formulas take them rounded to f32 (`f32(...)`) to compare at 1e-10.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poot_mlir import oracle
from poot_mlir.frontend import Tracer, ops

FAST = settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def f32(x: float | None) -> float | None:
    return None if x is None else float(np.float32(x))


def normal(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# --- the independent formulas ------------------------------------------------------


def attend(q, k, v, *, scale, softcap=None, bias=None, visible=None) -> np.ndarray:
    """softmax(softcap(q k^T * scale) + bias, keys where visible) v in float64,
    query head h reading key head h // (Hq / Hkv)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    kx, vx = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = np.einsum("bhid,bhtd->bhit", q, kx) * scale
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    if bias is not None:
        s = s + np.asarray(bias, np.float64)
    if visible is not None:
        s = np.where(visible, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("bhit,bhtd->bhid", e / e.sum(axis=-1, keepdims=True), vx)


def alibi(heads: int, rows: int, keys: int, first_row: int) -> np.ndarray:
    """ALiBi bias [1, H, rows, keys]: -slope_h * (query position - key)."""
    slopes = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
    qpos = first_row + np.arange(rows)[:, None]
    dist = qpos - np.arange(keys)[None, :]
    return (-slopes[:, None, None] * dist[None]).astype(np.float32)[None]


def check(module, inputs: dict, expected: dict[str, np.ndarray]) -> None:
    """reference=True to 1e-10 and f32 to 1e-5 (float outputs keep f32)."""
    ref = oracle.run(module, inputs, reference=True)
    low = oracle.run(module, inputs)
    for name, want in expected.items():
        np.testing.assert_allclose(
            ref.named[name], want, rtol=1e-10, atol=1e-10, err_msg=f"{name} (reference)"
        )
        got = low.named[name]
        if got.dtype.kind == "f":
            assert got.dtype == np.float32, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} (f32)")


# --- decode over a fixed-capacity cache ---------------------------------------------------

# (B, Hkv, n_rep, cap, Dk, Dv, T, softcap, bias, scale)
DECODE_CASES = {
    "dense": (1, 2, 1, 8, 8, 8, 1, None, None, None),
    "gqa": (2, 2, 3, 10, 8, 8, 1, None, None, None),
    "mqa": (2, 1, 4, 9, 4, 4, 1, None, None, 0.3),
    "alibi": (1, 2, 2, 12, 8, 8, 1, None, "alibi", None),
    "softcap": (2, 2, 2, 8, 12, 12, 1, 2.5, None, None),
    "dv_ne_dk": (1, 2, 2, 8, 12, 5, 1, None, "shared", None),
    "multi_token": (2, 1, 2, 9, 8, 6, 3, 4.0, "alibi", None),
}


def run_decode_masked(
    rng, B, Hkv, n_rep, cap, Dk, Dv, T, softcap, bias_kind, scale, *, live=False
) -> None:
    Hq = Hkv * n_rep
    tr = Tracer("decode")
    kc = tr.state("k0", (B, Hkv, cap, Dk))
    vc = tr.state("v0", (B, Hkv, cap, Dv))
    pos_t = tr.pos(max_pos=cap - T)
    q_t = tr.input("q", (B, Hq, T, Dk))
    k_t = tr.input("k", (B, Hkv, T, Dk))
    v_t = tr.input("v", (B, Hkv, T, Dv))
    bias_shape = {"alibi": (1, Hq, T, cap), "shared": (B, 1, T, cap)}.get(bias_kind)
    bias_t = tr.input("bias", bias_shape) if bias_shape else None
    form = ops.attention_live if live else ops.attention_masked
    out, k1, v1 = form(q_t, k_t, v_t, kc, vc, pos_t, scale=scale, softcap=softcap, bias=bias_t)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)

    pos = int(rng.integers(0, cap - T + 1))
    inputs = {
        "k0": normal(rng, (B, Hkv, cap, Dk)),
        "v0": normal(rng, (B, Hkv, cap, Dv)),
        "pos": np.int32(pos),
        "q": normal(rng, (B, Hq, T, Dk)),
        "k": normal(rng, (B, Hkv, T, Dk)),
        "v": normal(rng, (B, Hkv, T, Dv)),
    }
    bias = None
    if bias_kind == "alibi":
        bias = alibi(Hq, T, cap, pos)
    elif bias_kind == "shared":
        bias = normal(rng, bias_shape)
    if bias is not None:
        inputs["bias"] = bias
    k1_np, v1_np = inputs["k0"].copy(), inputs["v0"].copy()
    k1_np[:, :, pos : pos + T] = inputs["k"]
    v1_np[:, :, pos : pos + T] = inputs["v"]
    visible = np.arange(cap)[None, :] <= pos + np.arange(T)[:, None]  # [T, cap]
    want = attend(
        inputs["q"],
        k1_np,
        v1_np,
        scale=f32(1 / math.sqrt(Dk) if scale is None else scale),
        softcap=f32(softcap),
        bias=bias,
        visible=visible,
    )
    check(tr.finish(), inputs, {"out": want, "k0": k1_np, "v0": v1_np})


@pytest.mark.parametrize("case", list(DECODE_CASES), ids=list(DECODE_CASES))
def test_attention_masked_decode(rng, case) -> None:
    run_decode_masked(rng, *DECODE_CASES[case])


@FAST
@given(
    shape=st.tuples(
        st.integers(1, 2),
        st.integers(1, 3),
        st.sampled_from([1, 2, 4]),
        st.integers(4, 12),
        st.sampled_from([4, 8, 12]),
        st.sampled_from([3, 8]),
        st.integers(1, 3),
    ),
    softcap=st.sampled_from([None, 3.0]),
    bias=st.sampled_from([None, "alibi", "shared"]),
)
def test_attention_masked_decode_shapes(rng, shape, softcap, bias) -> None:
    B, Hkv, n_rep, cap, Dk, Dv, T = shape
    run_decode_masked(rng, B, Hkv, n_rep, cap, Dk, Dv, min(T, cap), softcap, bias, None)


# --- prefill ---------------------------------------------------------------------------------

# (B, Hkv, n_rep, L, Dk, Dv, softcap, bias, scale)
PREFILL_CASES = {
    "dense": (1, 2, 1, 6, 8, 8, None, None, None),
    "gqa": (2, 2, 2, 7, 8, 8, None, None, None),
    "mqa": (1, 1, 3, 5, 4, 4, None, None, None),
    "alibi": (1, 2, 2, 8, 8, 8, None, "alibi", None),
    "softcap": (2, 1, 2, 6, 8, 8, 3.0, None, 0.5),
    "dv_ne_dk": (1, 2, 1, 6, 16, 6, 10.0, "shared", None),
}


def run_prefill(rng, B, Hkv, n_rep, L, Dk, Dv, softcap, bias_kind, scale) -> None:
    Hq = Hkv * n_rep
    tr = Tracer("prefill")
    q_t = tr.input("q", (B, Hq, L, Dk))
    k_t = tr.input("k", (B, Hkv, L, Dk))
    v_t = tr.input("v", (B, Hkv, L, Dv))
    bias_shape = {"alibi": (1, Hq, L, L), "shared": (B, 1, 1, L)}.get(bias_kind)
    bias_t = tr.input("bias", bias_shape) if bias_shape else None
    tr.output(
        "out", ops.attention_prefill(q_t, k_t, v_t, scale=scale, softcap=softcap, bias=bias_t)
    )
    inputs = {
        "q": normal(rng, (B, Hq, L, Dk)),
        "k": normal(rng, (B, Hkv, L, Dk)),
        "v": normal(rng, (B, Hkv, L, Dv)),
    }
    bias = {"alibi": lambda: alibi(Hq, L, L, 0), "shared": lambda: normal(rng, bias_shape)}.get(
        bias_kind, lambda: None
    )()
    if bias is not None:
        inputs["bias"] = bias
    visible = np.arange(L)[None, :] <= np.arange(L)[:, None]
    want = attend(
        inputs["q"], inputs["k"], inputs["v"],
        scale=f32(1 / math.sqrt(Dk) if scale is None else scale), softcap=f32(softcap), bias=bias, visible=visible,
    )  # fmt: skip
    check(tr.finish(), inputs, {"out": want})


@pytest.mark.parametrize("case", list(PREFILL_CASES), ids=list(PREFILL_CASES))
def test_attention_prefill(rng, case) -> None:
    run_prefill(rng, *PREFILL_CASES[case])


@FAST
@given(
    shape=st.tuples(
        st.integers(1, 2),
        st.integers(1, 2),
        st.sampled_from([1, 3]),
        st.integers(1, 9),
        st.sampled_from([4, 8]),
        st.sampled_from([2, 8]),
    ),
    softcap=st.sampled_from([None, 2.0]),
    bias=st.sampled_from([None, "alibi", "shared"]),
)
def test_attention_prefill_shapes(rng, shape, softcap, bias) -> None:
    run_prefill(rng, *shape, softcap, bias, None)


# --- the live length ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "B, Hkv, n_rep, cap, Dk, Dv, softcap, bias",
    [
        (1, 2, 1, 8, 8, 8, None, None),
        (2, 2, 2, 10, 8, 4, 3.0, "alibi"),
        (2, 1, 4, 6, 12, 12, None, "shared"),
    ],
)
def test_attention_live_ignores_nan_in_unused_rows(
    rng, B, Hkv, n_rep, cap, Dk, Dv, softcap, bias
) -> None:
    """The one definition: same answer as the masked decode, and a NaN in a
    cache row past pos never reaches the output (true selects)."""
    Hq = Hkv * n_rep
    tr = Tracer("live")
    kc = tr.state("k0", (B, Hkv, cap, Dk))
    vc = tr.state("v0", (B, Hkv, cap, Dv))
    pos_t = tr.pos(max_pos=cap - 1)
    q_t = tr.input("q", (B, Hq, 1, Dk))
    k_t = tr.input("k", (B, Hkv, 1, Dk))
    v_t = tr.input("v", (B, Hkv, 1, Dv))
    bias_shape = {"alibi": (1, Hq, 1, cap), "shared": (B, 1, 1, cap)}.get(bias)
    bias_t = tr.input("bias", bias_shape) if bias_shape else None
    out, k1, v1 = ops.attention_live(q_t, k_t, v_t, kc, vc, pos_t, softcap=softcap, bias=bias_t)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    module = tr.finish()

    for pos in sorted({0, int(rng.integers(0, cap)), cap - 1}):
        inputs = {
            "k0": normal(rng, (B, Hkv, cap, Dk)),
            "v0": normal(rng, (B, Hkv, cap, Dv)),
            "pos": np.int32(pos),
            "q": normal(rng, (B, Hq, 1, Dk)),
            "k": normal(rng, (B, Hkv, 1, Dk)),
            "v": normal(rng, (B, Hkv, 1, Dv)),
        }
        inputs["k0"][:, :, pos + 1 :] = np.nan
        inputs["v0"][:, :, pos + 1 :] = np.nan
        b = {
            "alibi": lambda: alibi(Hq, 1, cap, pos),
            "shared": lambda: normal(rng, bias_shape),
        }.get(bias, lambda: None)()
        if b is not None:
            inputs["bias"] = b
        k1_np, v1_np = inputs["k0"].copy(), inputs["v0"].copy()
        k1_np[:, :, pos] = inputs["k"][:, :, 0]
        v1_np[:, :, pos] = inputs["v"][:, :, 0]
        live = slice(0, pos + 1)  # only the live keys enter the formula
        want = attend(
            inputs["q"], k1_np[:, :, live], v1_np[:, :, live], scale=f32(1 / math.sqrt(Dk)), softcap=f32(softcap),
            bias=None if b is None else b[..., live],
        )  # fmt: skip
        for reference, tol in ((True, 1e-10), (False, 1e-5)):
            res = oracle.run(module, inputs, reference=reference)
            assert bool(res.named["live_len_ok_0"]) is True
            assert np.all(np.isfinite(res.named["out"]))
            np.testing.assert_allclose(res.named["out"], want, rtol=tol, atol=tol)
            np.testing.assert_array_equal(res.named["k0"], k1_np)  # NaN rows kept as they were
            np.testing.assert_array_equal(res.named["v0"], v1_np)


@FAST
@given(
    shape=st.tuples(
        st.integers(1, 2),
        st.integers(1, 2),
        st.sampled_from([1, 2]),
        st.integers(2, 10),
        st.sampled_from([4, 8]),
        st.sampled_from([3, 8]),
    ),
    softcap=st.sampled_from([None, 5.0]),
    bias=st.sampled_from([None, "alibi", "shared"]),
)
def test_attention_live_equals_masked(rng, shape, softcap, bias) -> None:
    B, Hkv, n_rep, cap, Dk, Dv = shape
    run_decode_masked(rng, B, Hkv, n_rep, cap, Dk, Dv, 1, softcap, bias, None, live=True)


# --- split keys (MLA) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "B, Hkv, n_rep, Lq, Lk, Dn, s, Dv, decode, softcap",
    [
        (1, 2, 2, 1, 12, 8, 4, 6, True, None),
        (2, 1, 4, 1, 9, 6, 2, 6, True, 4.0),
        (1, 2, 1, 7, 7, 4, 4, 8, False, None),
        (2, 2, 2, 5, 5, 12, 4, 3, False, 2.0),
    ],
)
def test_attention_mla(rng, B, Hkv, n_rep, Lq, Lk, Dn, s, Dv, decode, softcap) -> None:
    Hq, Dk = Hkv * n_rep, Dn + s
    tr = Tracer("mla")
    pos_t = tr.pos(max_pos=Lk - Lq) if decode else None
    q_t = tr.input("q", (B, Hq, Lq, Dk))
    kn_t = tr.input("k_nope", (B, Hkv, Lk, Dn))
    kpe_t = tr.input("k_pe", (B, 1, Lk, s))
    v_t = tr.input("v", (B, Hkv, Lk, Dv))
    tr.output("out", ops.attention_mla(q_t, kn_t, kpe_t, v_t, pos_t, softcap=softcap))
    inputs = {
        "q": normal(rng, (B, Hq, Lq, Dk)),
        "k_nope": normal(rng, (B, Hkv, Lk, Dn)),
        "k_pe": normal(rng, (B, 1, Lk, s)),
        "v": normal(rng, (B, Hkv, Lk, Dv)),
    }
    first = 0
    if decode:
        first = int(rng.integers(0, Lk - Lq + 1))
        inputs["pos"] = np.int32(first)
    key = np.concatenate(
        [inputs["k_nope"], np.broadcast_to(inputs["k_pe"], (B, Hkv, Lk, s))], axis=-1
    )
    visible = np.arange(Lk)[None, :] <= first + np.arange(Lq)[:, None]
    want = attend(
        inputs["q"],
        key,
        inputs["v"],
        scale=f32(1 / math.sqrt(Dk)),
        softcap=f32(softcap),
        visible=visible,
    )
    check(tr.finish(), inputs, {"out": want})


# --- paged KV ----------------------------------------------------------------------------------------


def run_paged(rng, B, Hkv, n_rep, T, cap, S, Dk, Dv, softcap, pad) -> None:
    Hq = Hkv * n_rep
    tr = Tracer("paged")
    kp_t = tr.state("k_pool", (S, Hkv, Dk))
    vp_t = tr.state("v_pool", (S, Hkv, Dv))
    write_t = tr.write_map("write", B * T, S)
    read_t = tr.slot_map("read", B, cap, S)
    pos_t = tr.pos(max_pos=cap - T)
    q_t = tr.input("q", (B, Hq, T, Dk))
    k_t = tr.input("k", (B, Hkv, T, Dk))
    v_t = tr.input("v", (B, Hkv, T, Dv))
    out, kp1, vp1 = ops.attention_paged(
        q_t, k_t, v_t, kp_t, vp_t, write_t, read_t, pos_t, softcap=softcap
    )
    tr.output("out", out)
    tr.state_out("k_pool", kp1)
    tr.state_out("v_pool", vp1)

    pos = int(rng.integers(0, cap - T + 1))
    write = rng.permutation(S)[: B * T].astype(np.int32)
    if pad and B * T > 1:
        write[-1] = -1  # a padding token writes nothing
    read = rng.integers(0, S, (B, cap)).astype(np.int32)
    for b in range(B):
        for t in range(T):
            if write[b * T + t] >= 0:
                read[b, pos + t] = write[b * T + t]
    inputs = {
        "k_pool": normal(rng, (S, Hkv, Dk)),
        "v_pool": normal(rng, (S, Hkv, Dv)),
        "write": write,
        "read": read,
        "pos": np.int32(pos),
        "q": normal(rng, (B, Hq, T, Dk)),
        "k": normal(rng, (B, Hkv, T, Dk)),
        "v": normal(rng, (B, Hkv, T, Dv)),
    }
    k_pool, v_pool = inputs["k_pool"].copy(), inputs["v_pool"].copy()
    for b in range(B):
        for t in range(T):
            slot = write[b * T + t]
            if slot >= 0:
                k_pool[slot] = inputs["k"][b, :, t]
                v_pool[slot] = inputs["v"][b, :, t]
    k_view = np.empty((B, Hkv, cap, Dk), np.float32)
    v_view = np.empty((B, Hkv, cap, Dv), np.float32)
    for b in range(B):
        for t in range(cap):
            k_view[b, :, t] = k_pool[read[b, t]]
            v_view[b, :, t] = v_pool[read[b, t]]
    visible = np.arange(cap)[None, :] <= pos + np.arange(T)[:, None]
    want = attend(
        inputs["q"],
        k_view,
        v_view,
        scale=f32(1 / math.sqrt(Dk)),
        softcap=f32(softcap),
        visible=visible,
    )
    check(tr.finish(), inputs, {"out": want, "k_pool": k_pool, "v_pool": v_pool})


@pytest.mark.parametrize(
    "B, Hkv, n_rep, T, cap, S, Dk, Dv, softcap, pad",
    [
        (1, 2, 1, 1, 8, 16, 8, 8, None, False),
        (2, 2, 2, 1, 12, 32, 8, 4, 5.0, True),
        (2, 1, 3, 2, 6, 20, 4, 6, None, True),
    ],
)
def test_attention_paged(rng, B, Hkv, n_rep, T, cap, S, Dk, Dv, softcap, pad) -> None:
    run_paged(rng, B, Hkv, n_rep, T, cap, S, Dk, Dv, softcap, pad)


@FAST
@given(
    shape=st.tuples(
        st.integers(1, 3),
        st.integers(1, 2),
        st.sampled_from([1, 2]),
        st.integers(1, 2),
        st.integers(2, 9),
    ),
    pad=st.booleans(),
)
def test_attention_paged_shapes(rng, shape, pad) -> None:
    B, Hkv, n_rep, T, cap = shape
    run_paged(rng, B, Hkv, n_rep, min(T, cap), cap, B * T + cap + 3, 4, 3, None, pad)


# --- the sparse indexer ------------------------------------------------------------------------------


def block_ids(index: np.ndarray, qpos: np.ndarray, bs: int, k: int) -> np.ndarray:
    """Per row, the k best complete blocks before the row's own, -1 padded."""
    B, Lq, _ = index.shape
    ids = np.full((B, Lq, k), -1, np.int32)
    for b in range(B):
        for i in range(Lq):
            own = int(qpos[b, i]) // bs
            best = {j: float(index[b, i, j * bs : (j + 1) * bs].max()) for j in range(own)}
            chosen = sorted(best, key=lambda j: (-best[j], j))[:k]
            ids[b, i, : len(chosen)] = chosen
    return ids


def sparse_visible(ids: np.ndarray, qpos: np.ndarray, bs: int, Lk: int) -> np.ndarray:
    B, Lq, _ = ids.shape
    visible = np.zeros((B, 1, Lq, Lk), bool)
    for b in range(B):
        for i in range(Lq):
            p = int(qpos[b, i])
            for t in range(p + 1):
                visible[b, 0, i, t] = t // bs in set(ids[b, i].tolist()) or t // bs == p // bs
    return visible


def run_sparse(rng, B, Hkv, n_rep, Lq, Lk, D, bs, k, softcap, decode) -> None:
    Hq = Hkv * n_rep
    tr = Tracer("sparse")
    q_t = tr.input("q", (B, Hq, Lq, D))
    k_t = tr.input("k", (B, Hkv, Lk, D))
    v_t = tr.input("v", (B, Hkv, Lk, D))
    idx_t = tr.input("index", (B, Lq, Lk))
    qpos_t = tr.input("q_pos", (B, Lq), "i32", range=(0, Lk - 1)) if decode else None
    tr.output("ids", ops.sparse_block_topk(idx_t, qpos_t, block_size=bs, top_k=k))
    tr.output(
        "out",
        ops.sparse_selected_attention(
            q_t, k_t, v_t, idx_t, qpos_t, block_size=bs, top_k=k, softcap=softcap
        ),
    )
    inputs = {
        "q": normal(rng, (B, Hq, Lq, D)),
        "k": normal(rng, (B, Hkv, Lk, D)),
        "v": normal(rng, (B, Hkv, Lk, D)),
        "index": normal(rng, (B, Lq, Lk)),
    }
    if decode:
        qpos = rng.integers(0, Lk, (B, Lq)).astype(np.int32)
        inputs["q_pos"] = qpos
    else:
        qpos = np.broadcast_to(np.arange(Lq, dtype=np.int32), (B, Lq))
    ids = block_ids(inputs["index"], qpos, bs, k)
    visible = sparse_visible(ids, qpos, bs, Lk)
    want = attend(
        inputs["q"],
        inputs["k"],
        inputs["v"],
        scale=f32(1 / math.sqrt(D)),
        softcap=f32(softcap),
        visible=visible,
    )
    check(tr.finish(), inputs, {"out": want})
    for reference in (True, False):
        np.testing.assert_array_equal(
            oracle.run(tr.finish(), inputs, reference=reference).named["ids"], ids
        )


@pytest.mark.parametrize(
    "B, Hkv, n_rep, Lq, Lk, D, bs, k, softcap, decode",
    [
        (1, 2, 2, 16, 16, 8, 4, 2, None, False),
        (2, 1, 2, 12, 12, 4, 2, 3, 3.0, False),
        (2, 2, 1, 1, 32, 8, 4, 3, None, True),
        (1, 1, 3, 3, 24, 8, 8, 1, None, True),
    ],
)
def test_sparse_selected_attention(rng, B, Hkv, n_rep, Lq, Lk, D, bs, k, softcap, decode) -> None:
    run_sparse(rng, B, Hkv, n_rep, Lq, Lk, D, bs, k, softcap, decode)


@FAST
@given(
    shape=st.tuples(
        st.integers(1, 2),
        st.integers(1, 2),
        st.sampled_from([1, 2]),
        st.sampled_from([1, 2, 4]),
        st.integers(1, 5),
    ),
    k=st.integers(1, 3),
    decode=st.booleans(),
)
def test_sparse_selected_attention_shapes(rng, shape, k, decode) -> None:
    B, Hkv, n_rep, bs, nb = shape
    Lk = bs * nb
    run_sparse(rng, B, Hkv, n_rep, 2 if decode else Lk, Lk, 4, bs, min(k, nb), None, decode)


def test_sparse_block_topk_matches_the_fused_op(rng) -> None:
    """The selection chain equals poot.block_topk on the block scores (the
    equivalence the selection pass relies on), ties and padding included."""
    B, Lq, bs, nb, k = 2, 9, 2, 6, 4
    tr = Tracer("topk")
    idx_t = tr.input("index", (B, Lq, nb * bs))
    qpos_t = tr.input("q_pos", (B, Lq), "i32", range=(0, nb * bs - 1))
    tr.output("ids", ops.sparse_block_topk(idx_t, qpos_t, block_size=bs, top_k=k))
    index = rng.integers(-2, 3, (B, Lq, nb * bs)).astype(np.float32)  # many ties
    qpos = rng.integers(0, nb * bs, (B, Lq)).astype(np.int32)
    got = oracle.run(tr.finish(), {"index": index, "q_pos": qpos}).named["ids"]
    block_scores = index.reshape(B, Lq, nb, bs).max(axis=-1)
    np.testing.assert_array_equal(
        got, oracle.semantics.block_topk(block_scores, qpos, k=k, block_size=bs)
    )
    np.testing.assert_array_equal(got, block_ids(index, qpos, bs, k))


def test_indexer_scores(rng) -> None:
    tr = Tracer("indexer")
    qi = tr.input("q_idx", (2, 5, 3))
    ki = tr.input("k_idx", (2, 7, 3))
    tr.output("s", ops.indexer_scores(qi, ki))
    inputs = {"q_idx": normal(rng, (2, 5, 3)), "k_idx": normal(rng, (2, 7, 3))}
    want = np.einsum(
        "bid,btd->bit", inputs["q_idx"].astype(np.float64), inputs["k_idx"].astype(np.float64)
    )
    check(tr.finish(), inputs, {"s": want})


# --- RoPE, RMSNorm, the MLP ----------------------------------------------------------------------------


def test_rope_rms_norm_mlp(rng) -> None:
    tr = Tracer("blocks")
    x_t = tr.input("x", (2, 3, 8))
    ang_t = tr.input("angle", (3, 8))
    w_t = tr.input("w", (8,))
    wg_t, wu_t, wd_t = tr.input("wg", (8, 16)), tr.input("wu", (8, 16)), tr.input("wd", (16, 8))
    tr.output("rope", ops.rope(x_t, ops.cos(ang_t), ops.sin(ang_t)))
    tr.output("norm", ops.rms_norm(x_t, w_t, eps=1e-5))
    tr.output("mlp", ops.mlp(x_t, wg_t, wu_t, wd_t))
    tr.output("softmax", ops.softmax(x_t))
    inputs = {
        n: normal(rng, s)
        for n, s in (
            ("x", (2, 3, 8)),
            ("angle", (3, 8)),
            ("w", (8,)),
            ("wg", (8, 16)),
            ("wu", (8, 16)),
            ("wd", (16, 8)),
        )
    }
    x, ang, w = (inputs[n].astype(np.float64) for n in ("x", "angle", "w"))
    rotated = np.concatenate([-x[..., 4:], x[..., :4]], axis=-1)
    rope = x * np.cos(ang) + rotated * np.sin(ang)
    norm = x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + f32(1e-5)) * w
    g, u = x @ inputs["wg"].astype(np.float64), x @ inputs["wu"].astype(np.float64)
    mlp = (g / (1 + np.exp(-g)) * u) @ inputs["wd"].astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    check(
        tr.finish(),
        inputs,
        {"rope": rope, "norm": norm, "mlp": mlp, "softmax": e / e.sum(-1, keepdims=True)},
    )


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_decode_runs_at_its_dtype(rng, dtype) -> None:
    """The same chains at f16/bf16 (the primitive decomposition's own dtype:
    lowest-finite mask, -inf select), against the float64 formula within the
    dtype's precision."""
    import ml_dtypes

    npdt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    B, Hkv, n_rep, cap, D = 2, 1, 2, 8, 8
    Hq = Hkv * n_rep
    for live in (False, True):
        tr = Tracer("half")
        kc = tr.state("k0", (B, Hkv, cap, D), dtype)
        vc = tr.state("v0", (B, Hkv, cap, D), dtype)
        pos_t = tr.pos(max_pos=cap - 1)
        q_t = tr.input("q", (B, Hq, 1, D), dtype)
        k_t = tr.input("k", (B, Hkv, 1, D), dtype)
        form = ops.attention_live if live else ops.attention_masked
        out, k1, v1 = form(q_t, k_t, k_t, kc, vc, pos_t, softcap=4.0)
        tr.output("out", out)
        tr.state_out("k0", k1)
        tr.state_out("v0", v1)
        pos = int(rng.integers(0, cap))
        inputs = {
            "k0": normal(rng, (B, Hkv, cap, D)).astype(npdt),
            "v0": normal(rng, (B, Hkv, cap, D)).astype(npdt),
            "pos": np.int32(pos),
            "q": normal(rng, (B, Hq, 1, D)).astype(npdt),
            "k": normal(rng, (B, Hkv, 1, D)).astype(npdt),
        }
        k1_np, v1_np = (inputs[n].astype(np.float64) for n in ("k0", "v0"))
        k1_np[:, :, pos] = inputs["k"][:, :, 0]
        v1_np[:, :, pos] = inputs["k"][:, :, 0]
        want = attend(
            inputs["q"],
            k1_np[:, :, : pos + 1],
            v1_np[:, :, : pos + 1],
            scale=1 / math.sqrt(D),
            softcap=4.0,
        )
        got = oracle.run(tr.finish(), inputs).named["out"]
        assert got.dtype == np.dtype(npdt)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=5e-2, atol=5e-2)
