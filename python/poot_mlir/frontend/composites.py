"""Composite ops that are not attention: each is a fixed primitive chain.

The chains are part of the contract with the compiler (RoPE recognition, the
attention rewrite): a composite always emits exactly the ops listed in its
docstring, in that order, so a pattern can recognize it.
"""

from __future__ import annotations

import numbers

from . import checks, primitives as P
from .checks import fail
from .dtypes import FLOAT_DTYPES
from .tensor import Tensor

_I32_MAX = 2**31 - 1


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """GQA/MQA head repeat `[B, Hkv, L, D] -> [B, Hkv * n_rep, L, D]`,
    query head `h` reading key head `h // n_rep`:

        reshape   [B, Hkv, L, D]       -> [B, Hkv, 1, L, D]
        broadcast [B, Hkv, 1, L, D]    -> [B, Hkv, n_rep, L, D]
        reshape   [B, Hkv, n_rep, L, D] -> [B, Hkv * n_rep, L, D]

    Emits nothing (returns `x`) when `n_rep == 1`.
    """
    op = "repeat_kv"
    checks.require_tensor(op, "x", x)
    checks.tracer_of(op, {"x": x})
    checks.require_rank(op, "x", x, 4)
    checks.require_int(op, "n_rep", n_rep, minimum=1)
    if n_rep == 1:
        return x
    b, hkv, length, d = x.shape
    x5 = P.reshape(x, (b, hkv, 1, length, d))
    xb = P.broadcast_to(x5, (b, hkv, n_rep, length, d))
    return P.reshape(xb, (b, hkv * n_rep, length, d))


def softmax(x: Tensor) -> Tensor:
    """Numerically stable softmax over the last axis:

        m  = reduce max x  (last axis, keepdim)
        xs = sub x, m
        ex = exp xs
        s  = reduce sum ex (last axis, keepdim)
        p  = div ex, s

    A `-inf` entry gets exactly zero weight; a row that is all `-inf` is
    `0 / 0 = NaN`, as the fused attention defines it.
    """
    op = "softmax"
    checks.require_tensor(op, "x", x)
    checks.tracer_of(op, {"x": x})
    checks.require_float(op, "x", x)
    if x.rank < 1:
        raise fail(op, "x", "must have rank >= 1")
    m = P.reduce_max(x, axis=-1, keepdim=True)
    xs = P.sub(x, m)
    ex = P.exp(xs)
    s = P.reduce_sum(ex, axis=-1, keepdim=True)
    return P.div(ex, s)


def argmax(x: Tensor, keepdim: bool = False) -> Tensor:
    """`torch.argmax(x, dim=-1, keepdim=keepdim)` as i32: the index of the
    first maximum of the last axis (ties go to the lowest index). NaN counts
    as the maximum, as in torch and numpy: a row holding a NaN gives the
    index of its first NaN. With `N = x.shape[-1]`, emits:

        m    = reduce max x (last axis, keepdim)
        top  = compare eq x, m
        nan  = compare ne x, x
        hit  = or top, nan
        idx  = iota x.shape (last axis, i32)
        n    = constant N (0-d i32)
        cand = select hit, idx, n
        out  = reduce min cand (last axis[, keepdim])

    Why this form: `reduce max` propagates NaN, so in a row with a NaN `m`
    is NaN and `eq` holds nowhere -- `ne x, x` marks the NaNs instead; in a
    row without one `nan` is all false. Every row then has a hit, so `N`
    (the select's fill) never reaches the result. A row of equal values,
    -inf included, gives 0.
    """
    op = "argmax"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    checks.require_dtype(op, "x", x, FLOAT_DTYPES + ("i32",))
    if x.rank < 1:
        raise fail(op, "x", "must have rank >= 1")
    if not isinstance(keepdim, bool):
        raise fail(op, "keepdim", f"must be a bool, got {keepdim!r}")
    n = x.shape[-1]
    if n > _I32_MAX:
        raise fail(op, "x", f"has {n} entries on its last axis; an i32 index holds at most {_I32_MAX}")
    m = P.reduce_max(x, axis=-1, keepdim=True)
    hit = P.or_(P.eq(x, m), P.ne(x, x))
    idx = P.iota(x.shape, x.rank - 1, "i32", tracer=tr)
    cand = P.select(hit, idx, n)
    return P.reduce_min(cand, axis=-1, keepdim=keepdim)


def masked_fill(x: Tensor, mask: Tensor, value: float) -> Tensor:
    """PyTorch's `x.masked_fill(mask, value)`: `value` where `mask` holds,
    `x` elsewhere (`mask` i1, broadcast to `x`). Emits:

        fill = constant value (0-d, x's dtype)
        out  = select mask, fill, x
    """
    op = "masked_fill"
    checks.require_tensor(op, "x", x)
    checks.require_tensor(op, "mask", mask)
    tr = checks.tracer_of(op, {"x": x, "mask": mask})
    checks.require_dtype(op, "mask", mask, ("i1",))
    checks.broadcasts_to(op, "mask", mask.shape, x.shape, "x")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise fail(op, "value", f"must be a number, got {value!r}")
    fill = P.constant(float(value) if x.dtype in FLOAT_DTYPES else value, x.dtype, tracer=tr)
    return P.select(mask, fill, x)


def rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotary embedding, rotate-half form: with `h = D / 2`,
    `x1 = x[..., :h]`, `x2 = x[..., h:]`,
    `out = x * cos + concat(-x2, x1) * sin`. Emits:

        a   = mul x, cos
        x1  = slice x [..., 0:h]
        x2  = slice x [..., h:D]
        nx2 = neg x2
        r   = concat nx2, x1 (last axis)
        b   = mul r, sin
        out = add a, b

    `cos`/`sin` broadcast to `x` (e.g. `[D]`, `[L, D]` or `[B, 1, L, D]`,
    with the usual duplicated-halves layout `concat(f, f)`).
    """
    op = "rope"
    for arg, t in (("x", x), ("cos", cos), ("sin", sin)):
        checks.require_tensor(op, arg, t)
    checks.tracer_of(op, {"x": x, "cos": cos, "sin": sin})
    checks.require_float(op, "x", x)
    if x.rank < 1 or x.shape[-1] % 2:
        raise fail(op, "x", f"needs an even last dimension, got shape {x.shape}")
    for arg, t in (("cos", cos), ("sin", sin)):
        checks.require_same_dtype(op, arg, t, "x", x)
        checks.broadcasts_to(op, arg, t.shape, x.shape, "x")
    d = x.shape[-1]
    h = d // 2
    lead = [0] * (x.rank - 1)
    a = P.mul(x, cos)
    x1 = P.slice(x, lead + [0], list(x.shape[:-1]) + [h])
    x2 = P.slice(x, lead + [h], list(x.shape[:-1]) + [d])
    rotated = P.concat([P.neg(x2), x1], axis=-1)
    return P.add(a, P.mul(rotated, sin))


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """`x * rsqrt(mean(x^2, last axis) + eps) * weight`. Emits:

    sq = mul x, x
    ss = reduce sum sq (last axis, keepdim)
    n  = constant D;   ms = div ss, n
    e  = constant eps; v  = add ms, e
    r  = rsqrt v
    y  = mul x, r
    out = mul y, weight
    """
    op = "rms_norm"
    checks.require_tensor(op, "x", x)
    checks.require_tensor(op, "weight", weight)
    checks.tracer_of(op, {"x": x, "weight": weight})
    checks.require_float(op, "x", x)
    checks.require_same_dtype(op, "weight", weight, "x", x)
    if x.rank < 1:
        raise fail(op, "x", "must have rank >= 1")
    checks.broadcasts_to(op, "weight", weight.shape, x.shape, "x")
    if not isinstance(eps, (int, float)) or eps < 0:
        raise fail(op, "eps", f"must be a non-negative number, got {eps!r}")
    ss = P.reduce_sum(P.mul(x, x), axis=-1, keepdim=True)
    ms = P.div(ss, float(x.shape[-1]))
    r = P.rsqrt(P.add(ms, float(eps)))
    return P.mul(P.mul(x, r), weight)


def silu(x: Tensor) -> Tensor:
    """`x * logistic(x)`: `s = logistic x; out = mul x, s`."""
    op = "silu"
    checks.require_tensor(op, "x", x)
    checks.tracer_of(op, {"x": x})
    checks.require_float(op, "x", x)
    return P.mul(x, P.logistic(x))


def linear(x: Tensor, w: Tensor) -> Tensor:
    """`x @ w` with `w [in, out]` (one `matmul`, batch axes broadcast)."""
    op = "linear"
    checks.require_tensor(op, "x", x)
    checks.require_tensor(op, "w", w)
    checks.tracer_of(op, {"x": x, "w": w})
    checks.require_float(op, "x", x)
    checks.require_same_dtype(op, "w", w, "x", x)
    checks.require_rank(op, "w", w, 2)
    if x.rank < 2 or x.shape[-1] != w.shape[0]:
        raise fail(
            op, "w", f"has shape {w.shape}; its first dimension must equal x's last (x {x.shape})"
        )
    return P.matmul(x, w)


def mlp(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """SwiGLU MLP: `(silu(x @ w_gate) * (x @ w_up)) @ w_down`, emitted as
    matmul (gate), logistic, mul (silu), matmul (up), mul, matmul (down)."""
    op = "mlp"
    for arg, t in (("x", x), ("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        checks.require_tensor(op, arg, t)
    checks.tracer_of(op, {"x": x, "w_gate": w_gate, "w_up": w_up, "w_down": w_down})
    checks.require_float(op, "x", x)
    if x.rank < 2:
        raise fail(op, "x", f"must have rank >= 2, got shape {x.shape}")
    d = x.shape[-1]
    for arg, t in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        checks.require_same_dtype(op, arg, t, "x", x)
        checks.require_rank(op, arg, t, 2)
    if w_gate.shape[0] != d:
        raise fail(op, "w_gate", f"has shape {w_gate.shape}; want [{d}, F] for x {x.shape}")
    checks.require_shape(op, "w_up", w_up, w_gate.shape, "(= w_gate's)")
    if w_down.shape[0] != w_gate.shape[1]:
        raise fail(op, "w_down", f"has shape {w_down.shape}; want [{w_gate.shape[1]}, out]")
    hidden = P.mul(silu(P.matmul(x, w_gate)), P.matmul(x, w_up))
    return P.matmul(hidden, w_down)
