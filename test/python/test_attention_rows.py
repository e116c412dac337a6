"""Per-row positions and lengths (continuous batching): the per-row forms of
attention_paged (prefill chunks of different lengths, padding that writes
nothing) and of attention_masked / attention_live (decode), against an
independent numpy formula, fused by the rewrite into poot.attention (paged
key + live length + per-row mask), and compiled for the CPU. Inputs are
fresh random values (the `rng` fixture prints its seed)."""

from __future__ import annotations

import numpy as np
import pytest

from poot_mlir import oracle
from poot_mlir.compiler import compile_cpu
from poot_mlir.errors import RangeBindError
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime import cpu as runtime
from rewrite_support import check_rewrite, fused_copy

B, HQ, HKV, D, DV, CAP, S = 3, 4, 2, 8, 4, 16, 64


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def paged_rows(tokens: int, with_count: bool = True):
    tr = Tracer("paged_rows")
    kp = tr.state("kp", (S, HKV, D))
    vp = tr.state("vp", (S, HKV, DV))
    pos = tr.pos(max_pos=CAP - tokens, rows=B)
    count = tr.input("count", (B,), "i32", range=(1, tokens)) if with_count else None
    read = tr.slot_map("read", B, CAP, S)
    write = tr.write_map("write", B * tokens, S)
    q = tr.input("q", (B, HQ, tokens, D))
    k = tr.input("k", (B, HKV, tokens, D))
    v = tr.input("v", (B, HKV, tokens, DV))
    out, k1, v1 = ops.attention_paged(q, k, v, kp, vp, write, read, pos, count=count)
    tr.output("out", out)
    tr.state_out("kp", k1)
    tr.state_out("vp", v1)
    return tr.finish()


def dense_rows(kind: str):
    tr = Tracer(f"{kind}_rows")
    kc = tr.state("k0", (B, HKV, CAP, D))
    vc = tr.state("v0", (B, HKV, CAP, DV))
    pos = tr.pos(max_pos=CAP - 1, rows=B)
    q = tr.input("q", (B, HQ, 1, D))
    k = tr.input("k", (B, HKV, 1, D))
    v = tr.input("v", (B, HKV, 1, DV))
    attend = ops.attention_live if kind == "live" else ops.attention_masked
    out, k1, v1 = (
        attend(q, k, v, kc, vc, pos, guard_name="ok")
        if kind == "live"
        else attend(q, k, v, kc, vc, pos)
    )
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr.finish()


def attention_reference(q, keys, values, visible) -> np.ndarray:
    """softmax(q k^T / sqrt(D)) v over the visible keys, GQA by h // n_rep;
    keys/values [B, Hkv, L, D], visible [B, Tq, L] bool."""
    n_rep = q.shape[1] // keys.shape[1]
    kx = np.repeat(keys, n_rep, axis=1).astype(np.float64)
    vx = np.repeat(values, n_rep, axis=1).astype(np.float64)
    s = q.astype(np.float64) @ kx.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    s = np.where(visible[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ vx


def paged_batch(rng: np.random.Generator, tokens: int):
    """A mixed step: each row its own position and its own number of real
    tokens (the rest padding, written nowhere), every row over its own pool
    slots; slot 0 of the read map past a row's length (never attended)."""
    order = rng.permutation(S)
    pos = rng.integers(0, CAP - tokens + 1, size=B).astype(np.int32)
    pos[0] = 0  # a row starting its prefill
    count = rng.integers(1, tokens + 1, size=B).astype(np.int32)
    read = np.zeros((B, CAP), np.int32)
    write = np.full(B * tokens, -1, np.int32)
    for b in range(B):
        mine = order[b * CAP : (b + 1) * CAP]
        length = pos[b] + count[b]
        read[b, :length] = mine[:length]
        write[b * tokens : b * tokens + count[b]] = mine[pos[b] : length]
    return pos, count, read, write


def test_paged_rows_chunks_match_the_formula_fuse_and_run_on_the_cpu(
    rng: np.random.Generator, tmp_path
) -> None:
    tokens = 4
    module = paged_rows(tokens)
    report = check_rewrite(module, rng, fused=1)
    [attention] = [line for line in str(report.module).splitlines() if "poot.attention" in line]
    assert "read(" in attention and "len(" in attention and "mask(" in attention, attention

    pos, count, read, write = paged_batch(rng, tokens)
    state = {
        "kp": rng.standard_normal((S, HKV, D)).astype(np.float32),
        "vp": rng.standard_normal((S, HKV, DV)).astype(np.float32),
    }
    inputs = {
        "pos": pos, "count": count, "read": read, "write": write,
        "q": rng.standard_normal((B, HQ, tokens, D)).astype(np.float32),
        "k": rng.standard_normal((B, HKV, tokens, D)).astype(np.float32),
        "v": rng.standard_normal((B, HKV, tokens, DV)).astype(np.float32),
    }  # fmt: skip
    ref = oracle.run(module, {**inputs, **state}, reference=True)

    # The formula: write the real tokens, read each row through its map.
    kp, vp = state["kp"].astype(np.float64), state["vp"].astype(np.float64)
    for b in range(B):
        for i in range(count[b]):
            kp[write[b * tokens + i]] = inputs["k"][b, :, i]
            vp[write[b * tokens + i]] = inputs["v"][b, :, i]
    keys = kp[read].transpose(0, 2, 1, 3)
    values = vp[read].transpose(0, 2, 1, 3)
    t = np.arange(CAP)
    visible = (t[None, None, :] <= pos[:, None, None] + np.arange(tokens)[None, :, None]) & (
        t[None, None, :] < (pos + count)[:, None, None]
    )
    want = attention_reference(inputs["q"], keys, values, visible)
    np.testing.assert_allclose(
        ref.named["out"], want, rtol=1e-6, atol=1e-6
    )  # the f32 scale constant
    np.testing.assert_array_equal(ref.state["kp"], kp)  # padding wrote nothing

    art = runtime.load(compile_cpu(report.module, tmp_path / "rows"))
    got = art.session(state).step(inputs)
    np.testing.assert_allclose(got.named["out"], ref.named["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got.state["kp"], ref.state["kp"].astype(np.float32))
    np.testing.assert_array_equal(got.state["vp"], ref.state["vp"].astype(np.float32))


def test_paged_rows_decode_fuses_without_a_mask(rng: np.random.Generator) -> None:
    report = check_rewrite(paged_rows(1, with_count=False), rng, fused=1)
    [attention] = [line for line in str(report.module).splitlines() if "poot.attention" in line]
    assert "read(" in attention and "len(" in attention and "mask(" not in attention, attention


@pytest.mark.parametrize("kind", ["masked", "live"])
def test_dense_rows_decode(rng: np.random.Generator, tmp_path, kind: str) -> None:
    module = dense_rows(kind)
    report = check_rewrite(module, rng, fused=1)
    pos = rng.permutation(CAP)[:B].astype(np.int32)  # every row elsewhere
    pos[0] = CAP - 1
    state = {
        "k0": rng.standard_normal((B, HKV, CAP, D)).astype(np.float32),
        "v0": rng.standard_normal((B, HKV, CAP, DV)).astype(np.float32),
    }
    inputs = {
        "pos": pos,
        "q": rng.standard_normal((B, HQ, 1, D)).astype(np.float32),
        "k": rng.standard_normal((B, HKV, 1, D)).astype(np.float32),
        "v": rng.standard_normal((B, HKV, 1, DV)).astype(np.float32),
    }
    ref = oracle.run(module, {**inputs, **state}, reference=True)
    kc, vc = state["k0"].astype(np.float64), state["v0"].astype(np.float64)
    for b in range(B):
        kc[b, :, pos[b]] = inputs["k"][b, :, 0]
        vc[b, :, pos[b]] = inputs["v"][b, :, 0]
    visible = np.arange(CAP)[None, None, :] <= pos[:, None, None]
    want = attention_reference(inputs["q"], kc, vc, visible)
    np.testing.assert_allclose(
        ref.named["out"], want, rtol=1e-6, atol=1e-6
    )  # the f32 scale constant
    np.testing.assert_array_equal(ref.state["k0"], kc)

    art = runtime.load(compile_cpu(report.module, tmp_path / kind))
    got = art.session(state).step(inputs)
    np.testing.assert_allclose(got.named["out"], ref.named["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got.state["k0"], kc.astype(np.float32))


def test_one_row_out_of_range_is_refused_at_the_bind(rng: np.random.Generator, tmp_path) -> None:
    """pos past cap - T in one row, or a count of 0: a typed RangeBindError
    from the CPU session and from the oracle, before anything runs."""
    tokens = 4
    module = paged_rows(tokens)
    art = runtime.load(compile_cpu(fused_copy(module).module, tmp_path / "rows"))
    pos, count, read, write = paged_batch(rng, tokens)
    state = {"kp": rng.standard_normal((S, HKV, D)).astype(np.float32),
             "vp": rng.standard_normal((S, HKV, DV)).astype(np.float32)}  # fmt: skip
    base = {
        "read": read, "write": write,
        "q": rng.standard_normal((B, HQ, tokens, D)).astype(np.float32),
        "k": rng.standard_normal((B, HKV, tokens, D)).astype(np.float32),
        "v": rng.standard_normal((B, HKV, tokens, DV)).astype(np.float32),
    }  # fmt: skip
    bad_pos = pos.copy()
    bad_pos[2] = CAP - tokens + 1
    bad_count = count.copy()
    bad_count[1] = 0
    session = art.session(state)
    for what, inputs in (
        ("'pos'", {**base, "pos": bad_pos, "count": count}),
        ("'count'", {**base, "pos": pos, "count": bad_count}),
    ):
        with pytest.raises(RangeBindError, match=what):
            session.step(inputs)
        with pytest.raises(RangeBindError, match=what):
            oracle.run(module, {**inputs, **state})
        for name in ("kp", "vp"):
            np.testing.assert_array_equal(session.state[name], state[name])


def test_per_row_trace_refusals() -> None:
    tr = Tracer("bad")
    kp = tr.state("kp", (S, HKV, D))
    vp = tr.state("vp", (S, HKV, D))
    read = tr.slot_map("read", B, CAP, S)
    write = tr.write_map("write", B * 2, S)
    q = tr.input("q", (B, HQ, 2, D))
    k = tr.input("k", (B, HKV, 2, D))
    wide = tr.pos(max_pos=CAP - 1, rows=B)
    with pytest.raises(Exception, match="needs 0 <= pos <= 14"):
        ops.attention_paged(q, k, k, kp, vp, write, read, wide)
    pos = tr.input("p", (B,), "i32", range=(0, CAP - 2))
    count = tr.input("c", (B,), "i32", range=(0, 2))
    with pytest.raises(Exception, match=r"count has declared range \[0, 2\], outside \[1, 2\]"):
        ops.attention_paged(q, k, k, kp, vp, write, read, pos, count=count)
    scalar = tr.input("s", (), "i32", range=(0, CAP - 2))
    with pytest.raises(Exception, match="count needs one position per row"):
        ops.attention_paged(q, k, k, kp, vp, write, read, scalar, count=count)
    kc = tr.state("kc", (B, HKV, CAP, D))
    with pytest.raises(Exception, match=r"one position per row, which takes a decode step"):
        ops.attention_masked(q, k, k, kc, kc, pos)
