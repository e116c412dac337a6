"""The elementwise ATen ops: arithmetic, unary functions, comparisons,
logic and selects (`where`, `masked_fill`, `triu`/`tril`), creation
(`full`, `zeros`, `arange`), dtype conversion and the identities
(`clone`, `contiguous`, `dropout` in eval)."""

from __future__ import annotations

import math
from typing import Any, Callable

from .. import composites as C
from .. import primitives as P
from ..tensor import Tensor
from ._table import Context, Emit, Meta, aten, bool_of, finish, to, zero_like


# --- elementwise arithmetic ------------------------------------------------------


def _binary(fn: Callable[[Any, Any], Tensor]) -> Emit:
    def emit(a: dict[str, Any], out: Meta, ctx: Context) -> Tensor:
        lhs, rhs = to(a["self"], out.dtype), to(a["other"], out.dtype)
        alpha = a.get("alpha", 1)
        if alpha != 1:
            rhs = P.mul(rhs, alpha) if isinstance(rhs, Tensor) else rhs * alpha
        if not isinstance(lhs, Tensor) and not isinstance(rhs, Tensor):
            raise AssertionError("binary op without a tensor operand")
        return finish(fn(lhs, rhs), out)

    return emit


aten("add")(_binary(P.add))
aten("sub")(_binary(P.sub))
aten("mul")(_binary(P.mul))
aten("maximum")(_binary(P.maximum))
aten("minimum")(_binary(P.minimum))


@aten("rsub")
def _rsub(a, out, ctx):
    """`other - alpha * self` (`1.0 - x` records rsub)."""
    x = to(a["self"], out.dtype)
    alpha = a.get("alpha", 1)
    return finish(P.sub(to(a["other"], out.dtype), x if alpha == 1 else P.mul(x, alpha)), out)


def _refuse_div(a: dict[str, Any]) -> str | None:
    if a.get("rounding_mode") is not None:
        return f"rounding_mode={a['rounding_mode']!r} (only true division maps onto poot.div)"
    return None


@aten("div", refuse=_refuse_div)
def _div(a, out, ctx):
    return _binary(P.div)(a, out, ctx)


def _unary(fn: Callable[[Tensor], Tensor]) -> Emit:
    def emit(a: dict[str, Any], out: Meta, ctx: Context) -> Tensor:
        return fn(to(a["self"], out.dtype))

    return emit


for _name, _fn in {
    "neg": P.neg, "exp": P.exp, "log": P.log, "tanh": P.tanh, "sigmoid": P.logistic,
    "rsqrt": P.rsqrt, "sqrt": P.sqrt, "abs": P.abs, "sin": P.sin, "cos": P.cos,
    "silu": C.silu,
}.items():  # fmt: skip
    aten(_name)(_unary(_fn))


@aten("reciprocal")
def _reciprocal(a, out, ctx):
    return P.div(1.0, to(a["self"], out.dtype))


@aten("relu")
def _relu(a, out, ctx):
    return P.maximum(a["self"], zero_like(a["self"]))


@aten("clamp")
def _clamp(a, out, ctx):
    x = to(a["self"], out.dtype)
    if a.get("min") is not None:
        x = P.maximum(x, to(a["min"], out.dtype))
    if a.get("max") is not None:
        x = P.minimum(x, to(a["max"], out.dtype))
    return x


_POW_MAX = 8  # exponents up to this magnitude are multiplied out


def _refuse_pow(a: dict[str, Any]) -> str | None:
    exponent = a.get("exponent")
    if isinstance(a.get("self"), (int, float)):  # pow.Scalar: base ** tensor
        return None if a["self"] > 0 else f"a base of {a['self']} (only a positive scalar base)"
    if not isinstance(exponent, (int, float)):
        return "a tensor exponent (only a Python number)"
    if exponent in (0.5, -0.5) or float(exponent).is_integer() and abs(exponent) <= _POW_MAX:
        return None
    return f"exponent {exponent!r} (only integers up to {_POW_MAX} in magnitude, 0.5 and -0.5)"


@aten("pow", refuse=_refuse_pow)
def _pow(a, out, ctx):
    base, exponent = a["self"], a["exponent"]
    if not isinstance(base, Tensor):  # base ** x = exp(x * ln(base))
        return P.exp(P.mul(to(exponent, out.dtype), math.log(base)))
    x = to(base, out.dtype)
    if exponent == 0.5:
        return P.sqrt(x)
    if exponent == -0.5:
        return P.rsqrt(x)
    n = int(abs(exponent))
    if n == 0:
        return P.constant(1, out.dtype, shape=out.shape, tracer=ctx.tracer)
    result, square = None, x
    while n:  # square-and-multiply, the fewest muls
        if n & 1:
            result = square if result is None else P.mul(result, square)
        n >>= 1
        if n:
            square = P.mul(square, square)
    return P.div(1.0, result) if exponent < 0 else result


def _refuse_gelu(a: dict[str, Any]) -> str | None:
    if a.get("approximate", "none") != "tanh":
        return (
            "approximate='none' (the exact GELU needs erf, which poot has no op for; "
            "use approximate='tanh')"
        )
    return None


@aten("gelu", refuse=_refuse_gelu)
def _gelu(a, out, ctx):
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), torch's tanh form.
    x = a["self"]
    inner = P.mul(P.add(x, P.mul(P.mul(P.mul(x, x), x), 0.044715)), math.sqrt(2.0 / math.pi))
    return P.mul(P.mul(x, 0.5), P.add(P.tanh(inner), 1.0))


# --- comparisons, logic, selects ------------------------------------------------------


def _compare(direction: str) -> Emit:
    def emit(a: dict[str, Any], out: Meta, ctx: Context) -> Tensor:
        dtype = ctx.result_type([a["self"], a["other"]])
        return P.compare(direction, to(a["self"], dtype), to(a["other"], dtype))

    return emit


for _direction in ("eq", "ne", "lt", "le", "gt", "ge"):
    aten(_direction)(_compare(_direction))


@aten("logical_and")
def _logical_and(a, out, ctx):
    return P.and_(bool_of(a["self"]), bool_of(a["other"]))


@aten("logical_or")
def _logical_or(a, out, ctx):
    return P.or_(bool_of(a["self"]), bool_of(a["other"]))


@aten("__and__", "bitwise_and")
def _bitwise_and(a, out, ctx):
    return P.and_(to(a["self"], out.dtype), to(a["other"], out.dtype))


@aten("__or__", "bitwise_or")
def _bitwise_or(a, out, ctx):
    return P.or_(to(a["self"], out.dtype), to(a["other"], out.dtype))


@aten("logical_not", "bitwise_not")
def _logical_not(a, out, ctx):
    x = a["self"]
    if x.dtype != "i1" and out.dtype != "i1":
        raise TypeError("bitwise_not of an integer tensor (only of a bool tensor)")
    return P.eq(bool_of(x), False)


@aten("where")
def _where(a, out, ctx):
    cond = bool_of(a["condition"])
    return P.select(cond, to(a["self"], out.dtype), to(a["other"], out.dtype))


@aten("masked_fill")
def _masked_fill(a, out, ctx):
    x, mask, value = to(a["self"], out.dtype), bool_of(a["mask"]), a["value"]
    if isinstance(value, Tensor):
        return P.select(mask, to(value, out.dtype), x)
    return C.masked_fill(x, mask, value)


def _triangle(upper: bool) -> Emit:
    """triu keeps `col - row >= diagonal`, tril `col - row <= diagonal`;
    the rest becomes zero (False for bool tensors): iotas over the last two
    axes, one compare, one select (the causal-mask spelling the rewrite reads
    as an index expression)."""

    def emit(a: dict[str, Any], out: Meta, ctx: Context) -> Tensor:
        x, diagonal = a["self"], int(a.get("diagonal", 0))
        rows, cols = x.shape[-2:]
        row = P.iota((rows, cols), 0, tracer=ctx.tracer)
        col = P.iota((rows, cols), 1, tracer=ctx.tracer)
        offset = P.sub(col, row)
        keep = P.ge(offset, diagonal) if upper else P.le(offset, diagonal)
        return P.select(keep, x, zero_like(x))

    return emit


aten("triu")(_triangle(True))
aten("tril")(_triangle(False))


# --- creation -------------------------------------------------------------------------


@aten("full", "full_like", "new_full")
def _full(a, out, ctx):
    return P.constant(a["fill_value"], out.dtype, shape=out.shape, tracer=ctx.tracer)


@aten("zeros", "zeros_like", "new_zeros")
def _zeros(a, out, ctx):
    return P.constant(0, out.dtype, shape=out.shape, tracer=ctx.tracer)


@aten("ones", "ones_like", "new_ones")
def _ones(a, out, ctx):
    return P.constant(1, out.dtype, shape=out.shape, tracer=ctx.tracer)


@aten("scalar_tensor")
def _scalar_tensor(a, out, ctx):
    return P.constant(a["s"], out.dtype, tracer=ctx.tracer)


@aten("arange")
def _arange(a, out, ctx):
    start = a.get("start", 0)
    step = a.get("step", 1)
    exact_int = all(float(v).is_integer() for v in (start, step))
    index_dtype = "i32" if exact_int else out.dtype
    x = P.iota(out.shape, 0, index_dtype, tracer=ctx.tracer)
    if step != 1:
        x = P.mul(x, step)
    if start != 0:
        x = P.add(x, start)
    return to(x, out.dtype)


# --- dtype conversion and identities ----------------------------------------------------


@aten("to", "_to_copy", "type_as")
def _to(a, out, ctx):
    return to(a["self"], out.dtype)


@aten("contiguous", "clone", "alias", "detach", "lift_fresh_copy")
def _identity(a, out, ctx):
    return a["self"]


def _refuse_dropout(a: dict[str, Any]) -> str | None:
    if a.get("train", True) and a.get("p", 0.0) != 0.0:
        return (
            f"p={a['p']} in training mode (the step is deterministic: export the model "
            "in eval() mode)"
        )
    return None


@aten("dropout", refuse=_refuse_dropout)
def _dropout(a, out, ctx):
    return a["input"]
