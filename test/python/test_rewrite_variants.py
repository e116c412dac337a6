"""Robustness: the same attention written in other equivalent ways (scale as
a division, the mask before the scale, other transposes, softmax with plain
reductions and reshapes, constants on the left, a -inf mask, the softcap as a
product) fuses to one poot.attention with the same results; spellings the op
cannot express decline with their reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poot_mlir import ir
from poot_mlir.frontend import Tracer, ops
from rewrite_support import check_rewrite

B, HQ, HKV, LQ, LK, D = 2, 4, 2, 3, 8, 6


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def build(
    *,
    scale: str = "mul",
    mask_first: bool = False,
    key_layout: str = "bhld",
    softmax: str = "keepdim",
    const_left: bool = False,
    mask_kind: str = "input",
    softcap: str | None = None,
) -> ir.Module:
    """softmax(softcap(q k^T * c) + mask) v, GQA by repeat_kv, spelled as asked."""
    tr = Tracer("variant")
    q = tr.input("q", (B, HQ, LQ, D))
    if key_layout == "blhd":
        k = tr.input("k", (B, LK, HKV, D))
    else:
        k = tr.input("k", (B, HKV, LK, D))
    v = tr.input("v", (B, HKV, LK, D))
    c = 1.0 / math.sqrt(D)

    if mask_kind == "input":
        mask = tr.input("mask", (1, 1, LQ, LK))
    else:  # causal from iotas, hiding keys with -inf
        hidden = ops.compare(
            "gt", ops.iota((1, 1, 1, LK), 3, "i32"), ops.iota((1, 1, LQ, 1), 2, "i32") + 4
        )
        mask = ops.select(hidden, ops.constant(float("-inf"), "f32"), 0.0)

    if key_layout == "blhd":
        kh = ops.transpose(k, (0, 2, 1, 3))  # [B, Hkv, Lk, D]
    else:
        kh = k
    kx = ops.repeat_kv(kh, HQ // HKV)
    vx = ops.repeat_kv(v, HQ // HKV)
    kt = ops.transpose(kx, (0, 1, 3, 2))
    s = ops.matmul(q, kt)

    def apply_scale(x):
        if scale == "div":
            return ops.div(x, math.sqrt(D))
        if const_left:
            return ops.mul(ops.constant(c, "f32"), x)
        return ops.mul(x, c)

    if mask_first:
        s = apply_scale(ops.add(mask, s) if const_left else ops.add(s, mask))
    else:
        s = apply_scale(s)
        if softcap == "div":
            cap = ops.constant(20.0, "f32")
            s = ops.mul(ops.tanh(ops.div(s, cap)), cap)
        elif softcap == "mul":
            s = ops.mul(ops.constant(20.0, "f32"), ops.tanh(ops.mul(s, 1.0 / 20.0)))
        s = ops.add(s, mask)

    if softmax == "keepdim":
        p = ops.softmax(s)
    else:  # plain reductions, reshaped back, explicit broadcasts
        m = ops.reshape(ops.reduce_max(s, axis=3), (B, HQ, LQ, 1))
        e = ops.exp(ops.sub(s, ops.broadcast_to(m, (B, HQ, LQ, LK))))
        z = ops.reshape(ops.reduce_sum(e, axis=3), (B, HQ, LQ, 1))
        p = ops.div(e, ops.broadcast_to(z, (B, HQ, LQ, LK)))
    tr.output("out", ops.matmul(p, vx))
    return tr.finish()


@pytest.mark.parametrize(
    "case, kwargs",
    [
        ("seed spelling", dict()),
        ("scale as a division by sqrt(D)", dict(scale="div")),
        ("mask added before the scale", dict(mask_first=True)),
        ("mask before a division scale", dict(mask_first=True, scale="div")),
        ("keys cached [B, Lk, H, D]: two transposes", dict(key_layout="blhd")),
        ("softmax from plain reductions and reshapes", dict(softmax="plain")),
        ("constants on the left", dict(const_left=True)),
        ("constants on the left, mask first", dict(const_left=True, mask_first=True)),
        ("-inf causal mask from iotas", dict(mask_kind="causal")),
        ("softcap as c * tanh(s / c)", dict(softcap="div")),
        ("softcap as c * tanh(s * (1/c))", dict(softcap="mul")),
        (
            "everything at once",
            dict(
                scale="div", key_layout="blhd", softmax="plain", mask_kind="causal", softcap="mul"
            ),
        ),
    ],
)
def test_variant_fuses(case: str, kwargs: dict, rng: np.random.Generator) -> None:
    report = check_rewrite(build(**kwargs), rng, fused=1)
    assert report.remarks == [], report.remarks


def test_mask_before_softcap_declines(rng: np.random.Generator) -> None:
    """softcap(s + m) is not softcap(s) + m: the op cannot express it."""
    tr = Tracer("mask_then_softcap")
    q = tr.input("q", (1, 2, 1, 4))
    k = tr.input("k", (1, 2, 8, 4))
    v = tr.input("v", (1, 2, 8, 4))
    mask = tr.input("mask", (1, 1, 1, 8))
    s = ops.add(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), mask)
    cap = ops.constant(30.0, "f32")
    s = ops.mul(ops.tanh(ops.div(s, cap)), cap)
    tr.output("out", ops.matmul(ops.softmax(s), v))
    report = check_rewrite(tr.finish(), rng, fused=0, exact=True)
    assert len(report.remarks) == 1 and "before the softcap" in report.remarks[0], report.remarks


def test_scores_used_elsewhere_decline(rng: np.random.Generator) -> None:
    tr = Tracer("scores_out")
    q = tr.input("q", (1, 2, 1, 4))
    k = tr.input("k", (1, 2, 8, 4))
    v = tr.input("v", (1, 2, 8, 4))
    s = ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), 0.5)
    p = ops.softmax(s)
    tr.output("out", ops.matmul(p, v))
    tr.output("probs", p)
    report = check_rewrite(tr.finish(), rng, fused=0, exact=True)
    assert len(report.remarks) == 1 and "also used outside the attention chain" in report.remarks[0]
