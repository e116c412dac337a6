"""The spellings PyTorch and Hugging Face attention code produces, traced the
way the frontend emits them from that code (the PyTorch line is quoted above
each spelling), fuse to one poot.attention with the oracle's results before
and after equal on fresh random inputs (seed printed; f32 within 1e-5, the
float64 reference within 1e-6; NaN in the same places). Boolean masks keep
rows whose keys are all hidden exactly as the primitive chain computes them.
The f32 softmax around f16/bf16 fuses too (two-byte attention: the chain's
exact math rounded once); mixed spellings outside that contract decline with
a remark saying why."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poot_mlir import ir, oracle
from poot_mlir.compiler.fuse import count_ops
from poot_mlir.frontend import Tracer, ops
from poot_mlir.frontend.dtypes import LOWEST_FINITE
from rewrite_support import check_rewrite, fused_copy, random_inputs

B, H, HKV, LQ, LK, D = 2, 4, 2, 3, 8, 8
SCALE = 1.0 / math.sqrt(D)
F32_MIN = LOWEST_FINITE["f32"]  # torch.finfo(torch.float32).min


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def qkv(tr: Tracer, lq: int = LQ, lk: int = LK, hkv: int = HKV):
    q = tr.input("q", (B, H, lq, D))
    k = tr.input("k", (B, hkv, lk, D))
    v = tr.input("v", (B, hkv, lk, D))
    return q, ops.repeat_kv(k, H // hkv), ops.repeat_kv(v, H // hkv)


def scores(q, k):
    # attn_weights = torch.matmul(query, key.transpose(-1, -2)) * scale
    return ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), SCALE)


def finish(tr: Tracer, p, v) -> ir.Module:
    tr.output("out", ops.matmul(p, v))
    return tr.finish()


# --- boolean masks -----------------------------------------------------------------


def gpt2_causal(fill: float, *, lq: int = LQ, lk: int = LK) -> ir.Module:
    """GPT-2: a bottom-right aligned causal mask (query i sees keys
    j <= i + Lk - Lq), applied by torch.where with finfo.min (or -inf)."""
    tr = Tracer("gpt2")
    q, k, v = qkv(tr, lq, lk)
    s = scores(q, k)
    # causal_mask = torch.ones(lq, lk, dtype=bool).tril(diagonal=lk - lq)
    rows = ops.iota((lq, 1), 0)
    cols = ops.iota((1, lk), 1)
    causal = ops.le(cols, ops.add(rows, lk - lq))
    # attn_weights = torch.where(causal_mask, attn_weights, mask_value)
    s = ops.where(causal, s, ops.constant(fill, "f32"))
    return finish(tr, ops.softmax(s), v)


def gpt2_buffer() -> ir.Module:
    """GPT-2 literally: the causal mask is a registered bool buffer
    `tril(ones(n_positions, n_positions))`, sliced to the last Lq rows."""
    n = 16
    tr = Tracer("gpt2_buffer")
    q, k, v = qkv(tr)
    bias = ops.constant(np.tril(np.ones((1, 1, n, n), bool)))
    # causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
    causal = ops.slice(bias, (0, 0, LK - LQ, 0), (1, 1, LK, LK))
    # mask_value = torch.full([], torch.finfo(attn_weights.dtype).min)
    s = ops.where(causal, scores(q, k), ops.constant(F32_MIN, "f32"))
    return finish(tr, ops.softmax(s), v)


def padding_masked_fill(fill: float) -> ir.Module:
    """A boolean padding mask [B, 1, 1, Lk] (True = keep) applied with
    `scores.masked_fill(~mask, fill)` -- a fully padded row included when the
    random mask hides every key of a batch row."""
    tr = Tracer("padding")
    q, k, v = qkv(tr)
    keep = tr.input("keep", (B, 1, 1, LK), "i1")
    hidden = ops.eq(keep, False)
    s = ops.masked_fill(scores(q, k), hidden, fill)
    return finish(tr, ops.softmax(s), v)


def bert_extended_mask() -> ir.Module:
    """BERT: `(1.0 - attention_mask[:, None, None, :]) * finfo.min` added."""
    tr = Tracer("bert")
    q, k, v = qkv(tr)
    attention_mask = tr.input("attention_mask", (B, LK), "i1")
    extended = ops.reshape(ops.convert(attention_mask, "f32"), (B, 1, 1, LK))
    extended = ops.mul(ops.sub(1.0, extended), F32_MIN)
    return finish(tr, ops.softmax(ops.add(scores(q, k), extended)), v)


def causal_and_padding() -> ir.Module:
    """A causal select (finfo.min) and a padding select (finfo.min) one after
    the other, then an ALiBi-style bias added, then the scale."""
    tr = Tracer("two_masks")
    q, k, v = qkv(tr)
    keep = tr.input("keep", (B, 1, 1, LK), "i1")
    bias = tr.input("bias", (1, H, LQ, LK))
    s = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))
    causal = ops.le(ops.iota((1, 1, 1, LK), 3), ops.add(ops.iota((1, 1, LQ, 1), 2), LK - LQ))
    s = ops.where(causal, s, F32_MIN)
    s = ops.masked_fill(s, ops.eq(keep, False), F32_MIN)
    s = ops.mul(ops.add(s, bias), SCALE)
    return finish(tr, ops.softmax(s), v)


def causal_prefill_neg_inf() -> ir.Module:
    """Prefill, top-left causal: `scores.masked_fill(triu(ones, 1), -inf)`."""
    tr = Tracer("causal")
    q, k, v = qkv(tr, LK, LK)
    upper = ops.gt(ops.iota((1, 1, 1, LK), 3), ops.iota((1, 1, LK, 1), 2))
    s = ops.masked_fill(scores(q, k), upper, float("-inf"))
    return finish(tr, ops.softmax(s), v)


def bool_tril(spelling: str) -> ir.Module:
    """`causal = torch.tril(torch.ones(L, L, dtype=torch.bool))` as the
    frontend emits it (tril of a bool tensor: `select(col - row <= 0, ones,
    False)`), applied by `scores.masked_fill(~causal, -inf)` (`~`: `eq(x,
    False)`) or `torch.where(causal & True, scores, -inf)`."""
    tr = Tracer("bool_tril")
    q, k, v = qkv(tr, LK, LK)
    rows, cols = ops.iota((LK, LK), 0), ops.iota((LK, LK), 1)
    ones = ops.constant(True, "i1", shape=(LK, LK))
    causal = ops.select(ops.le(ops.sub(cols, rows), 0), ones, False)
    if spelling == "masked_fill":
        s = ops.masked_fill(scores(q, k), ops.eq(causal, False), float("-inf"))
    else:
        s = ops.where(ops.and_(causal, True), scores(q, k), float("-inf"))
    return finish(tr, ops.softmax(s), v)


def sliding_window(spelling: str, *, lq: int = LK, lk: int = LK, window: int = 3) -> ir.Module:
    """Mistral / Qwen 2 / Gemma 2 local layers: query i (at position
    i + Lk - Lq) sees the `window` keys ending at its own position."""
    tr = Tracer("sliding_window")
    q, k, v = qkv(tr, lq, lk)
    q_idx = ops.add(ops.iota((1, 1, lq, 1), 2), lk - lq)
    kv_idx = ops.iota((1, 1, 1, lk), 3)
    if spelling == "and_masks":
        # transformers.masking_utils: and_masks(causal_mask_function,
        # sliding_window_overlay(window)) -> kv_idx <= q_idx and
        # kv_idx > q_idx - window; attn_mask applied by torch.where.
        keep = ops.and_(ops.le(kv_idx, q_idx), ops.gt(kv_idx, ops.sub(q_idx, window)))
        s = ops.where(keep, scores(q, k), F32_MIN)
    elif spelling == "two_masked_fill":
        s = ops.masked_fill(scores(q, k), ops.gt(kv_idx, q_idx), float("-inf"))
        s = ops.masked_fill(s, ops.ge(ops.sub(q_idx, kv_idx), window), float("-inf"))
    else:  # near miss: |q - kv| < window, bidirectional local attention
        dist = ops.sub(q_idx, kv_idx)
        keep = ops.and_(ops.lt(dist, window), ops.gt(dist, -window))
        s = ops.where(keep, scores(q, k), F32_MIN)
    return finish(tr, ops.softmax(s), v)


#: The spellings whose mask becomes poot.attention's sliding window.
WINDOW_KIND = {
    "Mistral sliding window, and_masks by torch.where",
    "sliding window as two masked_fill -inf",
    "sliding window, chunk after a cache",
}

#: The spellings whose mask becomes poot.attention's causal kind (the rest,
#: a sliced constant buffer among them, stay tensors).
CAUSAL_KIND = {
    "GPT-2 causal, torch.where with finfo.min",
    "causal by torch.where with -inf",
    "bottom-right causal, Lq=1 decode",
    "top-left causal masked_fill -inf",
    "bool tril(ones), masked_fill(~causal, -inf)",
    "bool tril(ones), torch.where(causal & True)",
    *WINDOW_KIND,
}


@pytest.mark.parametrize(
    "case, build",
    [
        ("GPT-2 causal, torch.where with finfo.min", lambda: gpt2_causal(F32_MIN)),
        ("causal by torch.where with -inf", lambda: gpt2_causal(float("-inf"))),
        ("bottom-right causal, Lq=1 decode", lambda: gpt2_causal(F32_MIN, lq=1)),
        ("GPT-2's sliced bool buffer", gpt2_buffer),
        ("padding masked_fill(~mask, -inf)", lambda: padding_masked_fill(float("-inf"))),
        ("padding masked_fill(~mask, finfo.min)", lambda: padding_masked_fill(F32_MIN)),
        ("BERT extended additive mask", bert_extended_mask),
        ("causal + padding selects, bias, then the scale", causal_and_padding),
        ("top-left causal masked_fill -inf", causal_prefill_neg_inf),
        ("bool tril(ones), masked_fill(~causal, -inf)", lambda: bool_tril("masked_fill")),
        ("bool tril(ones), torch.where(causal & True)", lambda: bool_tril("where")),
        ("Mistral sliding window, and_masks by torch.where", lambda: sliding_window("and_masks")),
        ("sliding window as two masked_fill -inf", lambda: sliding_window("two_masked_fill")),
        ("sliding window, chunk after a cache", lambda: sliding_window("and_masks", lq=LQ, window=4)),
        ("local attention |q - kv| < W (both sides)", lambda: sliding_window("two_sided")),
    ],
)
def test_boolean_masks_fuse(case: str, build, rng: np.random.Generator) -> None:
    report = check_rewrite(build(), rng, fused=1, trials=3)
    assert report.remarks == [], report.remarks
    # The score matmul and the softmax are gone; the mask is an operand, or
    # the op's causal kind when it is exactly the causal index set (iotas).
    assert count_ops(report.module, "poot.exp") == 0
    assert count_ops(report.module, "poot.matmul") == 0
    text = str(report.module)
    if case in CAUSAL_KIND:
        assert " causal " in text and " mask(" not in text
        assert (" window " in text) == (case in WINDOW_KIND)
    else:
        assert " mask(" in text and " causal " not in text


@pytest.mark.parametrize("spelling", ["masked_fill", "where"])
def test_bool_tril_runs_causal_on_the_cpu(spelling: str, rng: np.random.Generator, tmp_path) -> None:
    """The bool tril spelling compiled for the CPU: one poot.attention of the
    causal kind (no mask tensor), its result the float64 oracle's."""
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    module = bool_tril(spelling)
    text = str(fused_copy(module).module)
    assert " causal " in text and " mask(" not in text, text
    path = compile_cpu(module, tmp_path / "step")
    inputs = random_inputs(module, rng)
    (got,) = CpuArtifact(path).run(inputs).outputs
    want = oracle.run(module, inputs, reference=True).named["out"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fill", [float("-inf"), F32_MIN])
def test_fully_hidden_rows_keep_their_result(fill: float, rng: np.random.Generator) -> None:
    """A batch row whose padding hides every key: -inf gives NaN (0/0) and
    finfo.min a uniform average of V -- before and after the rewrite."""
    module = padding_masked_fill(fill)
    report = fused_copy(module)
    assert report.attention == 1, report.remarks
    inputs = random_inputs(module, rng)
    inputs["keep"][0] = False  # batch row 0: every key hidden
    inputs["keep"][1] = True
    for reference in (False, True):
        before = oracle.run(module, inputs, reference=reference).named["out"]
        after = oracle.run(report.module, inputs, reference=reference).named["out"]
        if math.isinf(fill):
            assert np.isnan(before[0]).all() and np.isnan(after[0]).all()
        else:
            v = np.asarray(inputs["v"], np.float64)
            uniform = np.repeat(v.mean(axis=2, keepdims=True), H // HKV, axis=1)[0]
            uniform = np.broadcast_to(uniform, before[0].shape)
            np.testing.assert_allclose(before[0], uniform, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(after[0], before[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(after[1], before[1], rtol=1e-5, atol=1e-6)


def test_non_absorbing_fill_declines(rng: np.random.Generator) -> None:
    """`masked_fill(mask == 0, -1e9)` (the tutorial spelling): s - 1e9 is not
    -1e9, so a fully hidden row would change; the chain stays and says why."""
    tr = Tracer("tutorial")
    q, k, v = qkv(tr)
    keep = tr.input("keep", (B, 1, 1, LK), "i1")
    s = ops.masked_fill(scores(q, k), ops.eq(keep, False), -1e9)
    module = finish(tr, ops.softmax(s), v)
    report = check_rewrite(module, rng, fused=0, exact=True)
    assert len(report.remarks) == 1, report.remarks
    assert "hides scores with -1e+09, neither -inf nor f32's lowest finite value" in (
        report.remarks[0]
    )


# --- the fully-masked-row guard (torch's decomposed SDPA, `_safe_softmax`) -----------


def guarded_padding(spelling: str) -> ir.Module:
    """`F.scaled_dot_product_attention(q, k, v, attn_mask=keep)` as torch's
    core-ATen decomposition computes it: softmax, then a row whose scores
    are all -inf set to 0 (not 0/0), in three spellings of that row."""
    tr = Tracer(f"guard_{spelling}")
    q, k, v = qkv(tr)
    keep = tr.input("keep", (B, 1, LQ, LK), "i1")
    s = ops.where(keep, scores(q, k), float("-inf"))
    p = ops.softmax(s)
    if spelling == "torch":
        # logical_not(any(logical_not(s == -inf), dim=-1, keepdim=True))
        visible = ops.eq(ops.eq(s, float("-inf")), False)
        some = ops.gt(ops.reduce_max(ops.convert(visible, "i32"), axis=-1, keepdim=True), 0)
        hidden = ops.eq(some, False)
    elif spelling == "all":
        # (s == -inf).all(dim=-1, keepdim=True)
        words = ops.convert(ops.eq(s, float("-inf")), "i32")
        hidden = ops.gt(ops.reduce_min(words, axis=-1, keepdim=True), 0)
    elif spelling == "max":
        # s.amax(-1, keepdim=True) == -inf
        hidden = ops.eq(ops.reduce_max(s, axis=-1, keepdim=True), float("-inf"))
    else:  # "none": the plain softmax, 0/0 on such a row
        return finish(tr, p, v)
    return finish(tr, ops.where(hidden, 0.0, p), v)


@pytest.mark.parametrize("spelling", ["torch", "all", "max"])
def test_fully_masked_row_guard_fuses(spelling: str, rng: np.random.Generator) -> None:
    """The guard fuses with the attention: the op keeps its own 0/0 row and
    the rewrite zeroes the rows whose mask is all -inf after it, so the
    results before and after agree -- zero rows in the same places, no NaN."""
    module = guarded_padding(spelling)
    report = check_rewrite(module, rng, fused=1)
    assert not report.remarks, report.remarks
    inputs = random_inputs(module, rng)
    inputs["keep"][0, 0, 1] = False  # batch 0, query row 1: every key hidden
    inputs["keep"][1, 0, :, 0] = True  # batch 1: every row sees key 0
    for reference in (False, True):
        before = oracle.run(module, inputs, reference=reference).named["out"]
        after = oracle.run(report.module, inputs, reference=reference).named["out"]
        assert np.isfinite(before).all() and (before[0, :, 1] == 0).all()
        np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)
        assert (after[0, :, 1] == 0).all()


@pytest.mark.parametrize("spelling", ["none", "torch"])
def test_fully_masked_rows_on_the_cpu(spelling: str, rng: np.random.Generator, tmp_path) -> None:
    """The fused op defines a row whose keys are all hidden as 0/0 = NaN
    (the spec's streaming softmax, the oracle's): the compiled CPU kernel
    gives NaN on exactly the rows the oracle does; with torch's guard the
    compiled step gives 0 there, as torch's SDPA."""
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    module = guarded_padding(spelling)
    assert fused_copy(module).attention == 1
    path = compile_cpu(module, tmp_path / "step")
    inputs = random_inputs(module, rng)
    # Every row sees key 0 (a random mask could hide a whole row by chance:
    # the seed 13460998981278270110 did), but batch 1's query row 2 sees none.
    inputs["keep"][:, 0, :, 0] = True
    inputs["keep"][1, 0, 2] = False
    (got,) = CpuArtifact(path).run(inputs).outputs
    want = oracle.run(module, inputs, reference=True).named["out"]
    hidden = np.zeros(want.shape, bool)
    hidden[1, :, 2] = True
    if spelling == "none":
        assert np.isnan(want[hidden]).all() and np.isnan(got[hidden]).all()
    else:
        assert (want[hidden] == 0).all() and (got[hidden] == 0).all()
    assert np.isfinite(got[~hidden]).all()
    np.testing.assert_allclose(got[~hidden], want[~hidden], rtol=1e-5, atol=1e-5)


def test_guard_that_is_not_all_hidden_declines(rng: np.random.Generator) -> None:
    """`where(any(s == -inf), 0, p)` zeroes rows with *some* key hidden: not
    the guard, so the chain stays primitive and says why."""
    tr = Tracer("some_hidden")
    q, k, v = qkv(tr)
    keep = tr.input("keep", (B, 1, LQ, LK), "i1")
    s = ops.where(keep, scores(q, k), float("-inf"))
    words = ops.convert(ops.eq(s, float("-inf")), "i32")
    some = ops.gt(ops.reduce_max(words, axis=-1, keepdim=True), 0)
    module = finish(tr, ops.where(some, 0.0, ops.softmax(s)), v)
    report = check_rewrite(module, rng, fused=0, exact=True)
    assert len(report.remarks) == 1, report.remarks
    assert "'poot.select' after the softmax is not the fully-masked-row guard" in report.remarks[0]


# --- two-byte attention: the f32 softmax around f16/bf16 ----------------------------
# Each fuses into one poot.attention whose result is the chain's exact math
# rounded once (check_rewrite: docs/two-byte-attention.md), not the chain's
# own intermediate roundings.


def half_qkv(tr: Tracer, dtype: str):
    q = tr.input("q", (B, H, LQ, D), dtype)
    k = tr.input("k", (B, HKV, LK, D), dtype)
    v = tr.input("v", (B, HKV, LK, D), dtype)
    return q, ops.repeat_kv(k, H // HKV), ops.repeat_kv(v, H // HKV)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_hf_f32_softmax_around_half_fuses(dtype: str, rng: np.random.Generator) -> None:
    """HF eager: `softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)`
    with the mask added in the two-byte type before the upcast."""
    tr = Tracer("upcast")
    q, k, v = half_qkv(tr, dtype)
    bias = tr.input("bias", (B, 1, LQ, LK), dtype)
    s = ops.add(ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), SCALE), bias)
    p = ops.convert(ops.softmax(ops.convert(s, "f32")), dtype)
    module = finish(tr, p, v)
    report = check_rewrite(module, rng, fused=1)
    assert count_ops(report.module, "poot.convert") == 0, report.module


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_upcast_operands_and_f32_mask_fuse(dtype: str, rng: np.random.Generator) -> None:
    """`q.float() @ k.float().transpose(-1, -2) * scale + mask_f32`, softmax,
    `(p @ v.float()).to(q.dtype)`: the converts on Q, K and V are read
    through, the f32 mask stays f32 (the op adds it as given)."""
    tr = Tracer("upcast_operands")
    q, k, v = half_qkv(tr, dtype)
    mask = tr.input("mask", (B, 1, 1, LK), "f32")
    q32, k32, v32 = (ops.convert(x, "f32") for x in (q, k, v))
    s = ops.add(ops.mul(ops.matmul(q32, ops.transpose(k32, (0, 1, 3, 2))), SCALE), mask)
    tr.output("out", ops.convert(ops.matmul(ops.softmax(s), v32), dtype))
    module = tr.finish()
    report = check_rewrite(module, rng, fused=1)
    assert "mask(" in str(report.module) and "xf32>)" in str(report.module)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_two_byte_chain_throughout_fuses(dtype: str, rng: np.random.Generator) -> None:
    """The chain computed in the two-byte type throughout (`torch.softmax` on
    bf16 scores): the op computes it in f32 and rounds once."""
    tr = Tracer("half")
    q, k, v = half_qkv(tr, dtype)
    module = finish(tr, ops.softmax(ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), SCALE)), v)
    check_rewrite(module, rng, fused=1)


def test_probabilities_rounded_to_another_type_decline(rng: np.random.Generator) -> None:
    """bf16 Q/K/V whose f32 probabilities are rounded to f16: not one
    element type, so not the op's contract."""
    tr = Tracer("mixed")
    q, k, v = half_qkv(tr, "bf16")
    s = ops.convert(ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), SCALE), "f32")
    p = ops.convert(ops.softmax(s), "f16")
    tr.output("out", ops.matmul(p, ops.convert(v, "f16")))
    module = tr.finish()
    report = check_rewrite(module, rng, fused=0, exact=True)
    assert len(report.remarks) == 1, report.remarks
    assert "Q is bf16, K bf16 and V f16" in report.remarks[0]


def test_f32_output_of_two_byte_operands_declines(rng: np.random.Generator) -> None:
    """bf16 Q/K/V upcast, an f32 output kept f32: the op's result is rounded
    to bf16, so it cannot stand for this chain."""
    tr = Tracer("f32_out")
    q, k, v = half_qkv(tr, "bf16")
    q32, k32, v32 = (ops.convert(x, "f32") for x in (q, k, v))
    s = ops.mul(ops.matmul(q32, ops.transpose(k32, (0, 1, 3, 2))), SCALE)
    tr.output("out", ops.matmul(ops.softmax(s), v32))
    module = tr.finish()
    report = check_rewrite(module, rng, fused=0, exact=True)
    assert len(report.remarks) == 1, report.remarks
    assert "the attention output is f32 while Q, K and V are bf16" in report.remarks[0]


# --- layouts ---------------------------------------------------------------------------


def bart_heads_in_batch(mask: bool = True) -> ir.Module:
    """BART/OPT eager attention: heads folded into the batch of torch.bmm,
    the scores viewed as [B, H, Lq, Lk] around the mask, the scale applied
    to the query projection."""
    e = H * D
    tr = Tracer("bart")
    x = tr.input("x", (B, LQ, e))
    mem = tr.input("mem", (B, LK, e))
    # Projection weights as a model holds them (constants, ~N(0, 1/E)), so
    # the scores stay O(1) rather than O(E) and the softmax well conditioned.
    weights = np.random.default_rng(0).standard_normal((3, e, e)) / math.sqrt(e)
    wq, wk, wv = (ops.constant(w.astype(np.float32), "f32") for w in weights)

    def shape(t, length):
        # tensor.view(bsz, seq_len, num_heads, head_dim).transpose(1, 2)
        return ops.transpose(ops.reshape(t, (B, length, H, D)), (0, 2, 1, 3))

    # query_states = self.q_proj(hidden_states) * self.scaling
    query = ops.mul(ops.matmul(x, wq), SCALE)
    # proj_shape = (bsz * num_heads, -1, head_dim)
    q3 = ops.reshape(shape(query, LQ), (B * H, LQ, D))
    k3 = ops.reshape(shape(ops.matmul(mem, wk), LK), (B * H, LK, D))
    v3 = ops.reshape(shape(ops.matmul(mem, wv), LK), (B * H, LK, D))
    # attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
    s = ops.matmul(q3, ops.transpose(k3, (0, 2, 1)))
    if mask:
        attention_mask = tr.input("attention_mask", (B, 1, LQ, LK))
        # attn_weights.view(bsz, num_heads, tgt_len, src_len) + attention_mask
        s = ops.add(ops.reshape(s, (B, H, LQ, LK)), attention_mask)
        s = ops.reshape(s, (B * H, LQ, LK))
    p = ops.softmax(s)
    out = ops.matmul(p, v3)  # torch.bmm(attn_probs, value_states)
    # attn_output.view(bsz, num_heads, tgt_len, head_dim).transpose(1, 2)
    out = ops.transpose(ops.reshape(out, (B, H, LQ, D)), (0, 2, 1, 3))
    tr.output("out", ops.reshape(out, (B, LQ, e)))
    return tr.finish()


def rank3_bmm() -> ir.Module:
    """Plain [B*H, L, D] tensors and torch.bmm, no 4-D view anywhere."""
    tr = Tracer("bmm")
    q = tr.input("q", (B * H, LQ, D))
    k = tr.input("k", (B * H, LK, D))
    v = tr.input("v", (B * H, LK, D))
    s = ops.div(ops.matmul(q, ops.transpose(k, (0, 2, 1))), math.sqrt(D))
    tr.output("out", ops.matmul(ops.softmax(s), v))
    return tr.finish()


def keys_pre_transposed(whisper: bool = False) -> ir.Module:
    """Keys cached as [B, Hkv, D, Lk] so the score matmul reads k directly;
    Whisper's spelling scales q and the key by D^-0.25 each."""
    tr = Tracer("kt")
    q = tr.input("q", (B, H, LQ, D))
    kt = tr.input("kt", (B, HKV, D, LK))
    v = tr.input("v", (B, HKV, LK, D))
    kx = ops.repeat_kv(kt, H // HKV)
    vx = ops.repeat_kv(v, H // HKV)
    if whisper:
        quarter = D**-0.25
        # q = q.view(...).permute(0, 2, 1, 3) * scale; k = ....permute(0, 2, 3, 1) * scale
        s = ops.matmul(ops.mul(q, quarter), ops.mul(kx, quarter))
    else:
        s = ops.mul(ops.matmul(q, kx), SCALE)
    return finish(tr, ops.softmax(s), vx)


def keys_scaled(where: str) -> ir.Module:
    """The scale on q (`q = q * self.scaling`) or on k before the score
    matmul: folded into the op's scale."""
    tr = Tracer("prescaled")
    q, k, v = qkv(tr)
    if where == "q":
        s = ops.matmul(ops.mul(q, SCALE), ops.transpose(k, (0, 1, 3, 2)))
    elif where == "k":
        s = ops.matmul(q, ops.transpose(ops.div(k, math.sqrt(D)), (0, 1, 3, 2)))
    else:  # k^T scaled
        s = ops.matmul(q, ops.mul(SCALE, ops.transpose(k, (0, 1, 3, 2))))
    return finish(tr, ops.softmax(s), v)


@pytest.mark.parametrize(
    "case, build, check",
    [
        ("BART heads in the batch, mask in 4-D", bart_heads_in_batch, "mask("),
        ("BART heads in the batch, no mask", lambda: bart_heads_in_batch(False), "poot.attention"),
        ("rank-3 bmm, no 4-D view", rank3_bmm, "tensor<1x8x3x8xf32>"),
        ("keys stored [B, H, D, L]", keys_pre_transposed, "perm = [0, 1, 3, 2]"),
        ("Whisper: q and k^T scaled by D^-0.25", lambda: keys_pre_transposed(True), "scale = 0.35"),
        ("scale on q", lambda: keys_scaled("q"), "scale = 0.35"),
        ("scale on k (a division)", lambda: keys_scaled("k"), "scale = 0.35"),
        ("scale on k^T, constant on the left", lambda: keys_scaled("kt"), "scale = 0.35"),
    ],
)
def test_layouts_fuse(case: str, build, check: str, rng: np.random.Generator) -> None:
    report = check_rewrite(build(), rng, fused=1)
    assert report.remarks == [], report.remarks
    text = str(report.module)
    assert check in text, text
    assert count_ops(report.module, "poot.exp") == 0, text
    # Only the projections survive; no scale multiply is left outside.
    assert count_ops(report.module, "poot.mul") == 0, text
    assert count_ops(report.module, "poot.div") == 0, text


def test_mla_one_key_head_keeps_the_split_key(rng: np.random.Generator) -> None:
    """Absorbed MLA (one latent KV head): canonicalization folds the identity
    broadcast of k_pe; the split key is still formed, no concat is built."""
    tr = Tracer("mla1")
    q = tr.input("q", (B, H, LQ, D + 2))
    k_nope = tr.input("k_nope", (B, 1, LK, D))
    k_pe = tr.input("k_pe", (B, 1, LK, 2))
    v = tr.input("v", (B, 1, LK, D))
    pos = tr.pos(max_pos=LK - LQ)
    tr.output("out", ops.attention_mla(q, k_nope, k_pe, v, pos))
    report = check_rewrite(tr.finish(), rng, fused=1)
    text = str(report.module)
    assert "key_shared(" in text and "poot.concat" not in text, text
    assert report.remarks == [], report.remarks


# --- softmax normalization --------------------------------------------------------------


def normalization(kind: str) -> ir.Module:
    tr = Tracer("norm")
    q, k, v = qkv(tr)
    s = ops.add(scores(q, k), tr.input("mask", (1, 1, LQ, LK)))
    if kind == "neg":
        # attn - attn.amax(-1, keepdim=True) written as attn + (-max)
        e = ops.exp(ops.add(s, ops.neg(ops.reduce_max(s, axis=-1, keepdim=True))))
    else:
        # m = attn.max(dim=-1).values.unsqueeze(-1).expand_as(attn)
        m = ops.broadcast_to(ops.reshape(ops.reduce_max(s, axis=-1), (B, H, LQ, 1)), s.shape)
        e = ops.exp(ops.sub(s, m))
    z = ops.reduce_sum(e, axis=-1, keepdim=kind != "plain")
    if kind == "plain":
        z = ops.reshape(z, (B, H, LQ, 1))
    if kind == "reciprocal":
        return finish(tr, ops.mul(e, ops.div(1.0, z)), v)
    if kind == "after":
        # out = (e @ v) / e.sum(-1, keepdim=True)
        tr.output("out", ops.div(ops.matmul(e, v), z))
        return tr.finish()
    if kind == "after_reciprocal":
        tr.output("out", ops.mul(ops.div(1.0, z), ops.matmul(e, v)))
        return tr.finish()
    return finish(tr, ops.div(e, ops.broadcast_to(z, s.shape)), v)


@pytest.mark.parametrize(
    "kind", ["reciprocal", "plain", "neg", "after", "after_reciprocal"]
)
def test_normalization_spellings_fuse(kind: str, rng: np.random.Generator) -> None:
    report = check_rewrite(normalization(kind), rng, fused=1)
    assert report.remarks == [], report.remarks
    assert count_ops(report.module, "poot.exp") == 0
    assert count_ops(report.module, "poot.matmul") == 0
    assert count_ops(report.module, "poot.div") == 0


# --- the fused spellings run ----------------------------------------------------------


@pytest.mark.parametrize(
    "case, build",
    [
        ("GPT-2 causal torch.where", lambda: gpt2_causal(F32_MIN)),
        ("padding masked_fill -inf", lambda: padding_masked_fill(float("-inf"))),
        ("BART heads in the batch", bart_heads_in_batch),
        ("Whisper: keys stored transposed, q and k scaled", lambda: keys_pre_transposed(True)),
        ("division after P.V", lambda: normalization("after")),
    ],
)
def test_fused_spelling_runs_on_the_cpu(case: str, build, rng, tmp_path) -> None:
    """The fused module compiled for the CPU against the oracle of the
    primitive chain it came from."""
    from poot_mlir.compiler.cpu import compile_cpu
    from poot_mlir.runtime import cpu as runtime

    module = build()
    report = fused_copy(module)
    assert report.attention == 1, report.remarks
    artifact = runtime.load(compile_cpu(report.module, tmp_path / "step"))
    inputs = random_inputs(module, rng)
    got = artifact.run(inputs).named["out"]
    want = oracle.run(module, inputs, reference=True).named["out"]
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("window", [1, 5, 30])
def test_frontend_window_runs_on_the_cpu(window: int, rng: np.random.Generator, tmp_path) -> None:
    """`attention_prefill(window=W)` compiled for the CPU: one poot.attention
    with `causal window W` (no mask tensor) unless the window covers every
    key (then plain causal), its result the float64 oracle's of the traced
    chain."""
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    length = 20
    tr = Tracer("window")
    q = tr.input("q", (B, H, length, D))
    k = tr.input("k", (B, HKV, length, D))
    v = tr.input("v", (B, HKV, length, D))
    tr.output("out", ops.attention_prefill(q, k, v, window=window))
    module = tr.finish()
    text = str(fused_copy(module).module)
    assert " causal " in text and " mask(" not in text, text
    assert (f" window {window} " in text) == (window < length), text
    path = compile_cpu(module, tmp_path / "step")
    inputs = random_inputs(module, rng)
    (got,) = CpuArtifact(path).run(inputs).outputs
    want = oracle.run(module, inputs, reference=True).named["out"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Independently: row i averages the values of keys i - W < t <= i.
    rep = H // HKV
    s = np.einsum("bhid,bhtd->bhit", inputs["q"].astype(np.float64),
                  np.repeat(inputs["k"], rep, axis=1).astype(np.float64)) / math.sqrt(D)
    rows, cols = np.arange(length)[:, None], np.arange(length)[None, :]
    s = np.where((cols <= rows) & (rows - cols < window), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, p @ np.repeat(inputs["v"], rep, axis=1), rtol=1e-5, atol=1e-5)
