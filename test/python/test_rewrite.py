"""The attention rewrite on every frontend attention composite: the fused
poot.attention is really there (counted), and the oracle gives the same
results before and after on fresh random inputs (the `rng` fixture prints
its seed; F32 within 1e-5 relative, the float64 reference within 1e-6).
Declined chains (f16/bf16, a length the graph cannot bound) keep their
results bit for bit, and say why."""

from __future__ import annotations

import numpy as np
import pytest

from poot_mlir import ir
from poot_mlir.compiler.fuse import count_ops
from poot_mlir.frontend import Tracer, ops
from rewrite_support import check_rewrite, fused_copy


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def alibi(heads: int, rows: int, keys: int) -> np.ndarray:
    slopes = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
    dist = np.arange(rows)[:, None] - np.arange(keys)[None, :]
    return (-slopes[:, None, None] * dist[None]).astype(np.float32)[None]


def masked_decode(
    *, batch=1, hq=8, hkv=2, cap=16, d=8, dv=None, rows=1, softcap=None, bias=False, dtype="f32"
) -> ir.Module:
    dv = dv or d
    tr = Tracer("step")
    k_cache = tr.state("k0", (batch, hkv, cap, d), dtype)
    v_cache = tr.state("v0", (batch, hkv, cap, dv), dtype)
    pos = tr.pos(max_pos=cap - rows)
    q = tr.input("q", (batch, hq, rows, d), dtype)
    k = tr.input("k", (batch, hkv, rows, d), dtype)
    v = tr.input("v", (batch, hkv, rows, dv), dtype)
    b = ops.constant(alibi(hq, rows, cap), dtype) if bias else None
    out, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos, softcap=softcap, bias=b)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr.finish()


def prefill(*, batch=2, hq=4, hkv=2, length=8, d=8, dv=None, softcap=None, bias=False) -> ir.Module:
    dv = dv or d
    tr = Tracer("prefill")
    q = tr.input("q", (batch, hq, length, d))
    k = tr.input("k", (batch, hkv, length, d))
    v = tr.input("v", (batch, hkv, length, dv))
    b = tr.input("bias", (1, hq, length, length)) if bias else None
    tr.output("out", ops.attention_prefill(q, k, v, softcap=softcap, bias=b))
    return tr.finish()


def live_decode(*, batch=2, hq=4, hkv=2, cap=16, d=8, softcap=None, bias=False) -> ir.Module:
    tr = Tracer("live")
    k_cache = tr.state("k0", (batch, hkv, cap, d))
    v_cache = tr.state("v0", (batch, hkv, cap, d))
    pos = tr.pos(max_pos=cap - 1)
    q = tr.input("q", (batch, hq, 1, d))
    k = tr.input("k", (batch, hkv, 1, d))
    v = tr.input("v", (batch, hkv, 1, d))
    b = tr.input("bias", (1, hq, 1, cap)) if bias else None
    out, k1, v1 = ops.attention_live(q, k, v, k_cache, v_cache, pos, softcap=softcap, bias=b)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr.finish()


def mla(
    *, batch=1, hq=4, hkv=4, lk=8, rows=8, nope=6, rope_width=2, dv=4, decode=False
) -> ir.Module:
    tr = Tracer("mla")
    q = tr.input("q", (batch, hq, rows, nope + rope_width))
    k_nope = tr.input("k_nope", (batch, hkv, lk, nope))
    k_pe = tr.input("k_pe", (batch, 1, lk, rope_width))
    v = tr.input("v", (batch, hkv, lk, dv))
    pos = tr.pos(max_pos=lk - rows) if decode else None
    tr.output("out", ops.attention_mla(q, k_nope, k_pe, v, pos))
    return tr.finish()


def paged(*, batch=2, hq=4, hkv=2, slots=32, cap=8, d=8, declared=True) -> ir.Module:
    tr = Tracer("paged")
    k_pool = tr.state("kp", (slots, hkv, d))
    v_pool = tr.state("vp", (slots, hkv, d))
    pos = tr.pos(max_pos=cap - 1)
    q = tr.input("q", (batch, hq, 1, d))
    k = tr.input("k", (batch, hkv, 1, d))
    v = tr.input("v", (batch, hkv, 1, d))
    write = tr.write_map("write", batch, slots)
    if declared:
        read = tr.slot_map("read", batch, cap, slots)
    else:
        read = tr.input("read", (batch, cap), "i32")
    out, kp1, vp1 = ops.attention_paged(q, k, v, k_pool, v_pool, write, read, pos)
    tr.output("out", out)
    tr.state_out("kp", kp1)
    tr.state_out("vp", vp1)
    return tr.finish()


# --- what fuses ------------------------------------------------------------------


@pytest.mark.parametrize(
    "case, build",
    [
        ("dense MHA decode", lambda: masked_decode(hq=4, hkv=4)),
        ("GQA decode", lambda: masked_decode(hq=8, hkv=2)),
        ("MQA decode", lambda: masked_decode(hq=4, hkv=1)),
        ("GQA decode, batch 2", lambda: masked_decode(batch=2, hq=4, hkv=2)),
        ("decode, 3 new rows", lambda: masked_decode(rows=3)),
        ("ALiBi bias", lambda: masked_decode(bias=True)),
        ("softcap 30 (a division)", lambda: masked_decode(softcap=30.0)),
        ("softcap 32 (canonicalized to a product)", lambda: masked_decode(softcap=32.0)),
        ("softcap + ALiBi", lambda: masked_decode(softcap=50.0, bias=True)),
        ("Dv != Dk", lambda: masked_decode(d=8, dv=4)),
        ("prefill GQA", lambda: prefill()),
        ("prefill MQA, Dv != Dk", lambda: prefill(hkv=1, dv=4)),
        ("prefill softcap + bias", lambda: prefill(softcap=20.0, bias=True)),
        ("MLA prefill", lambda: mla()),
        ("MLA decode, GQA", lambda: mla(hq=4, hkv=2, rows=1, decode=True)),
    ],
)
def test_dense_forms_fuse(case: str, build, rng: np.random.Generator) -> None:
    module = build()
    report = check_rewrite(module, rng, fused=1)
    text = str(report.module)
    # Nothing of the chain survives: no repeat copy, no score matmul, no softmax.
    assert count_ops(report.module, "poot.matmul") == 0, text
    assert count_ops(report.module, "poot.exp") == 0, text
    assert count_ops(report.module, "poot.broadcast") == 0, text


def test_mla_keeps_the_split_key(rng: np.random.Generator) -> None:
    report = check_rewrite(mla(), rng, fused=1)
    text = str(report.module)
    assert "key_shared(" in text and "poot.concat" not in text, text


def test_paged_with_declared_read_map_reads_the_pools(rng: np.random.Generator) -> None:
    report = check_rewrite(paged(), rng, fused=1)
    text = str(report.module)
    assert " read(" in text, text
    assert (
        "poot.gather" not in text and "poot.transpose" not in text.split("poot.attention")[1]
    ), text


def test_paged_without_declared_range_keeps_the_gathered_view(rng: np.random.Generator) -> None:
    report = check_rewrite(paged(declared=False), rng, fused=1)
    text = str(report.module)
    assert " read(" not in text and "poot.gather" in text, text
    assert any(
        "cannot prove the read map inside the pool [0, 32)" in r for r in report.remarks
    ), report.remarks


@pytest.mark.parametrize(
    "case, kwargs",
    [
        ("live GQA, batch 2", dict()),
        ("live MHA", dict(hq=2, hkv=2)),
        ("live softcap + bias", dict(softcap=25.0, bias=True)),
    ],
)
def test_live_fuses_with_len(case: str, kwargs: dict, rng: np.random.Generator) -> None:
    report = check_rewrite(live_decode(**kwargs), rng, fused=1)
    text = str(report.module)
    assert " len(" in text and "poot.select" not in text, text
    # The guard stays: its witness is still the validation output.
    assert "poot.index_guard" in text, text


def test_live_nan_in_unused_rows_stays_out(rng: np.random.Generator) -> None:
    """The fused live op never reads rows t >= len: a NaN there reaches
    neither the primitive chain (a true select) nor the fused op."""
    from poot_mlir import oracle
    from rewrite_support import random_inputs

    module = live_decode()
    report = fused_copy(module)
    inputs = random_inputs(module, rng)
    inputs["pos"] = np.int32(3)
    for name in ("k0", "v0"):
        inputs[name][:, :, 5:, :] = np.nan
    before = oracle.run(module, inputs).named["out"]
    after = oracle.run(report.module, inputs).named["out"]
    assert np.isfinite(before).all() and np.isfinite(after).all()
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)


# --- what declines -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_two_byte_chains_fuse(dtype: str, rng: np.random.Generator) -> None:
    """Two-byte attention (docs/two-byte-attention.md): the bf16/f16 chain
    fuses, its result the chain's exact math rounded once (check_rewrite)."""
    module = masked_decode(dtype=dtype)
    report = check_rewrite(module, rng, fused=1)
    assert count_ops(report.module, "poot.matmul") == 0
    assert report.remarks == []


def test_live_without_a_witness_or_pos_bound_declines(rng: np.random.Generator) -> None:
    """A raw length from an undeclared input, clamped by a guard whose witness
    is dropped: nothing proves 1 <= len <= Lk."""
    tr = Tracer("live_raw")
    q = tr.input("q", (1, 2, 1, 4))
    k = tr.input("k", (1, 2, 8, 4))
    v = tr.input("v", (1, 2, 8, 4))
    raw = tr.input("len", (1,), "i32", range=(0, 100))
    length, _ok = ops.index_guard(raw, 1, 8)
    len4 = ops.reshape(length, (1, 1, 1, 1))
    krow = ops.compare("lt", ops.iota((1, 1, 8, 1), 2, "i32"), len4)
    kl, vl = ops.select(krow, k, 0.0), ops.select(krow, v, 0.0)
    keep = ops.compare("lt", ops.iota((1, 1, 1, 8), 3, "i32"), len4)
    s = ops.mul(ops.matmul(q, ops.transpose(kl, (0, 1, 3, 2))), 0.5)
    s = ops.select(keep, s, float("-inf"))
    tr.output("out", ops.matmul(ops.softmax(s), vl))
    module = tr.finish()
    report = check_rewrite(module, rng, fused=0, exact=True)
    assert len(report.remarks) == 1
    assert "whose witness is not returned as a #poot.slot<validation> result" in report.remarks[0]


def test_sparse_selected_attention_is_left_to_the_selection_pass(rng: np.random.Generator) -> None:
    """The block-selected form hides scores with a -inf select but zeroes no
    K/V rows: not a live length. The rewrite leaves it, without a remark, to
    the selection pass, which forms poot.block_topk + poot.selected_attention
    (test_select_blocks.py has the rest)."""
    tr = Tracer("sparse")
    q = tr.input("q", (1, 2, 8, 4))
    k = tr.input("k", (1, 1, 8, 4))
    v = tr.input("v", (1, 1, 8, 4))
    scores = ops.indexer_scores(tr.input("q_idx", (1, 8, 3)), tr.input("k_idx", (1, 8, 3)))
    tr.output("out", ops.sparse_selected_attention(q, k, v, scores, block_size=2, top_k=1))
    report = check_rewrite(tr.finish(), rng, fused=0)
    assert (report.block_topk, report.selected_attention) == (1, 1), report.remarks
    assert report.remarks == []


def guarded_live(witness: bool) -> ir.Module:
    """attention_live's selects over a length bound only by an index_guard."""
    tr = Tracer("guarded")
    q = tr.input("q", (2, 2, 1, 4))
    k = tr.input("k", (2, 2, 8, 4))
    v = tr.input("v", (2, 2, 8, 4))
    raw = tr.input("len", (2,), "i32")
    length, ok = ops.index_guard(raw, 1, 8)
    if witness:
        tr.validation("len_ok", ok)
    len4 = ops.reshape(length, (2, 1, 1, 1))
    krow = ops.compare("lt", ops.iota((1, 1, 8, 1), 2, "i32"), len4)
    kl, vl = ops.select(krow, k, 0.0), ops.select(krow, v, 0.0)
    keep = ops.compare("lt", ops.iota((1, 1, 1, 8), 3, "i32"), len4)
    s = ops.mul(ops.matmul(q, ops.transpose(kl, (0, 1, 3, 2))), 0.5)
    s = ops.select(keep, s, ops.constant(float("-inf"), "f32"))
    tr.output("out", ops.matmul(ops.softmax(s), vl))
    return tr.finish()


def test_guarded_length_fuses_only_with_its_witness(rng: np.random.Generator) -> None:
    from poot_mlir import errors, oracle
    from rewrite_support import assert_same_results, random_inputs

    assert fused_copy(guarded_live(witness=False)).attention == 0
    module = guarded_live(witness=True)
    report = fused_copy(module)
    assert report.attention == 1 and " len(" in str(report.module)
    inputs = random_inputs(module, rng)
    inputs["len"] = rng.integers(1, 9, size=2).astype(np.int32)
    assert_same_results(oracle.run(module, inputs), oracle.run(report.module, inputs), 1e-5, "f32")
    # A bad length fails the step in both programs: never a valid-looking answer.
    inputs["len"] = np.array([0, 9], np.int32)
    for program in (module, report.module):
        with pytest.raises(errors.ValidationFailure):
            oracle.run(program, inputs)
