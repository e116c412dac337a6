"""The linear algebra and attention ATen ops: `matmul`/`mm`/`bmm`,
`linear`, `addmm`/`baddbmm`, and `scaled_dot_product_attention` emitted as
the primitive chain the attention rewrite fuses."""

from __future__ import annotations

import math
from typing import Any

from .. import composites as C
from .. import primitives as P
from ..tensor import Tensor
from ._table import aten, to


# --- contractions -----------------------------------------------------------------------------


def _matmul_operands(*ts: Tensor) -> None:
    for t in ts:
        if t.rank < 2:
            raise ValueError(f"a rank-{t.rank} operand {t.shape} (matmul needs rank >= 2)")


@aten("matmul", "mm", "bmm")
def _matmul(a, out, ctx):
    lhs, rhs = to(a["self"], out.dtype), to(a.get("other", a.get("mat2")), out.dtype)
    _matmul_operands(lhs, rhs)
    return P.matmul(lhs, rhs)


@aten("linear")
def _linear(a, out, ctx):
    x, w = a["input"], a["weight"]
    _matmul_operands(x, w)
    y = P.matmul(x, P.transpose(w, [1, 0]))
    bias = a.get("bias")
    return y if bias is None else P.add(y, bias)


@aten("addmm", "baddbmm")
def _addmm(a, out, ctx):
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)
    lhs = a["mat1"] if "mat1" in a else a["batch1"]
    product = P.matmul(lhs, a["mat2"] if "mat2" in a else a["batch2"])
    if alpha != 1:
        product = P.mul(product, alpha)
    if beta == 0:
        return product
    bias = a["self"] if beta == 1 else P.mul(a["self"], beta)
    return P.add(bias, product)


# --- attention ------------------------------------------------------------------------------------


def _refuse_sdpa(a: dict[str, Any]) -> str | None:
    if a.get("dropout_p", 0.0) != 0.0:
        return f"dropout_p={a['dropout_p']} (attention dropout is random: only dropout_p=0 imports)"
    if a.get("is_causal") and a.get("attn_mask") is not None:
        return "both attn_mask and is_causal (torch refuses the pair as well)"
    return None


@aten("scaled_dot_product_attention", refuse=_refuse_sdpa)
def _sdpa(a, out, ctx):
    """The math of torch's SDPA as the primitive chain the attention rewrite
    fuses: repeat_kv (enable_gqa), `q @ k^T * scale`, the mask (a bool mask
    by `where(mask, s, -inf)`, a float one added, `is_causal` as an iota
    compare: torch's top-left diagonal, key `t <= row i`), softmax, `@ v`.
    With an `attn_mask`, a row whose keys are all hidden is 0, as torch
    computes it (`_safe_softmax`): `where(max(s) == -inf, 0, softmax(s))`,
    the fully-masked-row guard the rewrite fuses (docs/attention-rewrite.md).
    Without one no row is hidden entirely (`is_causal` keeps key 0)."""
    q, k, v = a["query"], a["key"], a["value"]
    if q.rank != 4 and (a.get("enable_gqa") and k.shape[-3] != q.shape[-3]):
        raise ValueError(f"enable_gqa with rank-{q.rank} query {q.shape} (only [B, H, L, D])")
    if q.rank >= 3 and k.shape[-3] != q.shape[-3]:
        n_rep = q.shape[-3] // k.shape[-3]
        k, v = C.repeat_kv(k, n_rep), C.repeat_kv(v, n_rep)
    scale = a.get("scale")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    perm = list(range(k.rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    s = P.mul(P.matmul(q, P.transpose(k, perm)), scale)
    mask = a.get("attn_mask")
    if mask is not None and mask.dtype == "i1":
        s = P.where(mask, s, float("-inf"))
    elif mask is not None:
        s = P.add(s, to(mask, s.dtype))
    if a.get("is_causal"):
        lq, lk = q.shape[-2], k.shape[-2]
        row = P.iota((lq, lk), 0, tracer=ctx.tracer)
        col = P.iota((lq, lk), 1, tracer=ctx.tracer)
        s = P.where(P.le(col, row), s, float("-inf"))
    p = C.softmax(s)
    if mask is not None:
        hidden = P.eq(P.reduce_max(s, axis=-1, keepdim=True), float("-inf"))
        p = P.where(hidden, 0.0, p)
    return P.matmul(p, v)
