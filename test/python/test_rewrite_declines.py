"""Attention look-alikes that must not fuse: each keeps its primitive chain
(the oracle's results bit for bit) and gets exactly one remark that names
the failed check and the op it stopped at, located at the user's Python
line of that op (the frontend's source locations)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from poot_mlir import ir
from poot_mlir.frontend import Tracer, ops
from rewrite_support import check_rewrite

B, H, LQ, LK, D = 1, 2, 3, 8, 4


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def source_line(remark: str) -> str:
    """The Python source line a remark's location points to."""
    # `path:line:col: message` (the compiler's diagnostics format).
    found = re.match(r'loc\("([^"]+)":(\d+):\d+\)', remark) or re.match(r"([^:]+\.py):(\d+):\d+:", remark)
    assert found, remark
    path, line = found[1], int(found[2])
    with open(path) as source:
        return source.read().splitlines()[line - 1]


def start(name: str):
    tr = Tracer(name)
    q = tr.input("q", (B, H, LQ, D))
    k = tr.input("k", (B, H, LK, D))
    v = tr.input("v", (B, H, LK, D))
    s = ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), 1 / math.sqrt(D))
    return tr, s, v


def softmax_wrong_axis() -> ir.Module:
    tr, s, v = start("wrong_axis")
    # F.softmax(scores, dim=2): over the query rows
    m = ops.reduce_max(s, axis=2, keepdim=True)  # stops here
    e = ops.exp(ops.sub(s, m))
    p = ops.div(e, ops.reduce_sum(e, axis=2, keepdim=True))
    tr.output("out", ops.matmul(p, v))
    return tr.finish()


def max_of_other_tensor() -> ir.Module:
    tr, s, v = start("other_max")
    other = tr.input("other", (B, H, LQ, LK))
    m = ops.reduce_max(other, axis=-1, keepdim=True)  # stops here
    e = ops.exp(ops.sub(s, m))
    p = ops.div(e, ops.reduce_sum(e, axis=-1, keepdim=True))
    tr.output("out", ops.matmul(p, v))
    return tr.finish()


def mask_after_softmax() -> ir.Module:
    tr, s, v = start("mask_after")
    mask = tr.input("mask", (1, 1, LQ, LK))
    p = ops.add(ops.softmax(s), mask)  # stops here
    tr.output("out", ops.matmul(p, v))
    return tr.finish()


def scale_after_softmax() -> ir.Module:
    tr, s, v = start("scale_after")
    p = ops.mul(ops.softmax(s), 0.5)  # stops here
    tr.output("out", ops.matmul(p, v))
    return tr.finish()


def unnormalized_pv() -> ir.Module:
    tr, s, v = start("unnormalized")
    e = ops.exp(ops.sub(s, ops.reduce_max(s, axis=-1, keepdim=True)))
    tr.output("out", ops.matmul(e, v))  # stops here
    return tr.finish()


def sum_wrong_axis() -> ir.Module:
    tr, s, v = start("sum_axis")
    e = ops.exp(ops.sub(s, ops.reduce_max(s, axis=-1, keepdim=True)))
    z = ops.reduce_sum(e, axis=2, keepdim=True)  # stops here
    tr.output("out", ops.matmul(ops.div(e, z), v))
    return tr.finish()


def probabilities_on_the_right() -> ir.Module:
    tr = Tracer("p_right")
    q = tr.input("q", (B, H, LQ, D))
    k = tr.input("k", (B, H, LQ, D))
    w = tr.input("w", (B, H, D, LQ))
    p = ops.softmax(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))))
    tr.output("out", ops.matmul(w, p))  # stops here
    return tr.finish()


def tutorial_fill() -> ir.Module:
    tr, s, v = start("tutorial")
    keep = tr.input("keep", (B, 1, 1, LK), "i1")
    s = ops.masked_fill(s, ops.eq(keep, False), -1e9)  # stops here
    tr.output("out", ops.matmul(ops.softmax(s), v))
    return tr.finish()


def half_probabilities() -> ir.Module:
    """An f32 attention whose probabilities (and V) are rounded to f16 for
    the P.V matmul: Q/K f32, V f16 -- not one element type."""
    tr = Tracer("half_probabilities")
    q = tr.input("q", (B, H, LQ, D))
    k = tr.input("k", (B, H, LK, D))
    v = tr.input("v", (B, H, LK, D))
    p = ops.convert(ops.softmax(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))), "f16")
    tr.output("out", ops.matmul(p, ops.convert(v, "f16")))  # stops here
    return tr.finish()


def router_softmax() -> ir.Module:
    """An MoE router's softmax over expert logits: a softmax, no P.V."""
    tr = Tracer("router")
    x = tr.input("x", (B, LQ, D))
    w = tr.input("w", (D, 4))
    p = ops.softmax(ops.matmul(x, w))
    values, _ = ops.top_k(p, 2)  # stops here
    tr.output("gates", values)
    return tr.finish()


@pytest.mark.parametrize(
    "case, build, check, op",
    [
        ("softmax over the wrong axis", softmax_wrong_axis,
         "'poot.reduce' takes the softmax max over axis 2, not the last (key) axis 3",
         "reduce_max(s, axis=2"),
        ("a max taken from another tensor", max_of_other_tensor,
         "the max the softmax subtracts ('poot.reduce') is taken over argument #3, not over "
         "the scores the exp reads ('poot.mul')", "reduce_max(other"),
        ("the mask added after the softmax", mask_after_softmax,
         "the softmax probabilities feed 'poot.add', not the P.V matmul", "ops.add(ops.softmax"),
        ("the scale applied after the softmax", scale_after_softmax,
         "the softmax probabilities feed 'poot.mul', not the P.V matmul", "ops.mul(ops.softmax"),
        ("P.V with the unnormalized exp", unnormalized_pv,
         "the P.V matmul reads the unnormalized exp: no reduce sum of the exp divides it",
         "ops.matmul(e, v)"),
        ("the sum over the wrong axis", sum_wrong_axis,
         "'poot.reduce' sums the softmax over axis 2, not the last (key) axis 3",
         "reduce_sum(e, axis=2"),
        ("the probabilities on the right of the matmul", probabilities_on_the_right,
         "the softmax probabilities are the right operand of 'poot.matmul'", "ops.matmul(w, p)"),
        ("a -1e9 fill", tutorial_fill, "'poot.select' hides scores with -1e+09", "masked_fill"),
        ("f16 probabilities of an f32 attention", half_probabilities,
         "Q is f32, K f32 and V f16: poot.attention reads Q, K and V in one element type",
         "ops.matmul(p, ops.convert(v"),
        ("a router softmax", router_softmax,
         "the softmax probabilities feed 'poot.top_k', not the P.V matmul", "ops.top_k(p"),
    ],
)  # fmt: skip
def test_look_alike_declines_with_one_remark(
    case: str, build, check: str, op: str, rng: np.random.Generator
) -> None:
    report = check_rewrite(build(), rng, fused=0, exact=True)
    assert len(report.remarks) == 1, report.remarks
    remark = report.remarks[0]
    assert f"attention not fused: {check}" in remark, remark
    # The remark points at the user's line of the op the match stopped at.
    assert "test_rewrite_declines.py" in remark, remark
    assert op in source_line(remark), (remark, source_line(remark))


def test_two_candidates_of_one_exp_get_one_remark(rng: np.random.Generator) -> None:
    """exp(s - max(other)) with `other` a second score matmul: both matmuls
    reach the exp; the decline is reported once."""
    tr, s, v = start("two_candidates")
    q2 = tr.input("q2", (B, H, LQ, D))
    other = ops.matmul(q2, ops.transpose(tr.input("k2", (B, H, LK, D)), (0, 1, 3, 2)))
    e = ops.exp(ops.sub(s, ops.reduce_max(other, axis=-1, keepdim=True)))
    p = ops.div(e, ops.reduce_sum(e, axis=-1, keepdim=True))
    tr.output("out", ops.matmul(p, v))
    report = check_rewrite(tr.finish(), rng, fused=0, exact=True)
    assert len(report.remarks) == 1, report.remarks
    assert "is taken over 'poot.matmul'" in report.remarks[0], report.remarks


def test_exp_without_a_matmul_is_no_candidate(rng: np.random.Generator) -> None:
    """A softmax of an input reaches no score matmul: nothing to say."""
    tr = Tracer("plain_softmax")
    x = tr.input("x", (B, H, LQ, LK))
    tr.output("p", ops.softmax(x))
    report = check_rewrite(tr.finish(), rng, fused=0, exact=True)
    assert report.remarks == []
