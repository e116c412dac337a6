"""The elementwise ATen ops: arithmetic, unary functions, comparisons,
logic and selects (`where`, `masked_fill`, `triu`/`tril`), creation
(`full`, `zeros`, `arange`), dtype conversion and the identities
(`clone`, `contiguous`, `dropout` in eval)."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from .. import composites as C
from .. import primitives as P
from ..dtypes import FLOAT_DTYPES
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
    base, exponent = a.get("self"), a.get("exponent")
    if isinstance(base, (int, float)) and isinstance(exponent, (int, float)):
        return "pow of two Python numbers (not a tensor op)"
    return None


@aten("pow", refuse=_refuse_pow)
def _pow(a, out, ctx):
    """Small integer exponents multiplied out, 0.5 / -0.5 as sqrt / rsqrt, a
    positive scalar base as `exp(x ln b)`; every other case (a tensor
    exponent: Bloom's ALiBi slopes `pow(base, arange)`, a fractional one, a
    negative base) through `_general_pow`."""
    base, exponent = a["self"], a["exponent"]
    small = isinstance(exponent, (int, float)) and float(exponent).is_integer()
    if out.dtype not in FLOAT_DTYPES and not (small and 0 <= exponent <= _POW_MAX):
        raise TypeError(f"an integer pow other than x ** 0..{_POW_MAX} ({out.dtype} result)")
    if not isinstance(base, Tensor) and base > 0:  # base ** x = exp(x * ln(base))
        return P.exp(P.mul(to(exponent, out.dtype), math.log(base)))
    if isinstance(exponent, Tensor) or not isinstance(base, Tensor):
        return _general_pow(to(base, out.dtype), to(exponent, out.dtype), out, ctx)
    x = to(base, out.dtype)
    if exponent == 0.5:
        return P.sqrt(x)
    if exponent == -0.5:
        return P.rsqrt(x)
    if not (float(exponent).is_integer() and abs(exponent) <= _POW_MAX):
        return _general_pow(x, exponent, out, ctx)
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


# Beyond 2^24 every f32 is an even integer: the parity test clamps to it.
_PARITY_RANGE = float(2**24)


def _is_integer(y: Tensor) -> Tensor:
    """`y` is integer-valued (within +-2^24, truncation through i32)."""
    clamped = P.minimum(P.maximum(y, -_PARITY_RANGE), _PARITY_RANGE)
    return P.eq(P.convert(P.convert(clamped, "i32"), y.dtype), clamped)


def _general_pow(x: Any, y: Any, out: Meta, ctx: Context) -> Tensor:
    """torch's `x ** y` for any float operands: `exp(y ln|x|)`, negated for
    a negative base and an odd integer exponent, NaN for a negative base and
    a fractional exponent, 1 where `y == 0` (torch's `0 ** 0 = nan ** 0 =
    1`); `0 ** y` is 0 or inf through `ln 0 = -inf`. Relative error about
    `|y ln x|` f32 ulps (exp of a rounded product)."""
    if not isinstance(x, Tensor):
        x = P.constant(x, out.dtype, shape=out.shape, tracer=ctx.tracer)
    if not isinstance(y, Tensor):
        y = P.constant(y, out.dtype, shape=out.shape, tracer=ctx.tracer)
    x, y = P.broadcast_to(x, out.shape), P.broadcast_to(y, out.shape)
    magnitude = P.exp(P.mul(y, P.log(P.abs(x))))
    integer = _is_integer(y)
    odd = P.and_(integer, P.eq(_is_integer(P.mul(y, 0.5)), False))
    negative = P.select(integer, P.select(odd, P.neg(magnitude), magnitude), float("nan"))
    result = P.select(P.lt(x, 0.0), negative, magnitude)
    return P.select(P.eq(y, 0.0), 1.0, result)


# --- erf and the exact GELU --------------------------------------------------------------
#
# poot has no erf op: it is emitted from polynomials (mul, add, select), accurate to f32.
#  * |x| < 0.75: the Taylor series erf(x) = 2/sqrt(pi) sum_n (-1)^n x^(2n+1) / (n! (2n+1)),
#    10 terms (truncation < 1e-10 there): odd by construction, and relatively
#    accurate near 0 (erf(x) ~ 1.128 x).
#  * 0.75 <= |x| < 4: sign(x) (1 - erfc(|x|)), erfc by a degree-9 polynomial on each of
#    [0.75, 1.5], [1.5, 2.5], [2.5, 4] (Chebyshev fits to math.erfc, computed once at
#    import; fit error < 6e-10 absolute). erfc is small there, so its f32 rounding
#    is far below 1's half ulp (6e-8), which `1 - erfc` rounds to.
#  * |x| >= 4: exactly +-1 (erfc(4) = 1.5e-8, below f32's half ulp of 1).
# No exp: every poot.exp reached from a matmul is an attention candidate, and the
# rewrite would remark on each GELU's exp as an unfused softmax.
# Measured against math.erf on 2.2 million points of [-6, 6] plus 0, +-1e-30, +-1e30,
# +-3e38, +-inf: max abs error 1.6e-8 evaluated in float64 (the approximation's
# bound), 1.3e-7 evaluated in float32 (2 ulp: f32 rounding of the Taylor terms near
# 0.6); NaN stays NaN. f16/bf16 inputs compute in f32 and round once; f64 inputs
# get the approximation's 1.6e-8, not f64 accuracy.

_ERF_SPLIT = 0.75
_ERF_SATURATED = 4.0
_ERF_TAYLOR = [
    2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(10)
]
_ERFC_PIECES = ((0.75, 1.5), (1.5, 2.5), (2.5, 4.0))
_ERFC_DEGREE = 9


@functools.cache
def _erfc_fits() -> list[tuple[float, float, float, list[float]]]:
    """(lo, center, 1 / half-width, monomial coefficients in u = (z - center) /
    half-width) of erfc on each piece: a Chebyshev interpolant at 64 nodes."""
    from numpy.polynomial import chebyshev

    fits = []
    for lo, hi in _ERFC_PIECES:
        center, half = (lo + hi) / 2, (hi - lo) / 2
        nodes = np.cos(np.pi * (np.arange(64) + 0.5) / 64)
        values = [math.erfc(center + half * u) for u in nodes]
        series = chebyshev.chebfit(nodes, values, _ERFC_DEGREE)
        fits.append((lo, center, 1.0 / half, [float(c) for c in chebyshev.cheb2poly(series)]))
    return fits


def _horner(x: Tensor, coefficients: list[float]) -> Tensor:
    """sum_i c_i x^i (lowest degree first)."""
    acc = P.add(P.mul(x, coefficients[-1]), coefficients[-2])
    for c in reversed(coefficients[:-2]):
        acc = P.add(P.mul(acc, x), c)
    return acc


def erf(x: Tensor) -> Tensor:
    """erf(x) to f32 accuracy (see above), in x's dtype."""
    dtype = x.dtype
    if dtype in ("f16", "bf16"):
        x = P.convert(x, "f32")
    small = P.mul(x, _horner(P.mul(x, x), _ERF_TAYLOR))
    z = P.minimum(P.abs(x), _ERF_SATURATED)
    erfc = None
    for lo, center, inverse, coefficients in _erfc_fits():
        piece = _horner(P.mul(P.sub(z, center), inverse), coefficients)
        erfc = piece if erfc is None else P.select(P.ge(z, lo), piece, erfc)
    erfc = P.select(P.ge(z, _ERF_SATURATED), 0.0, erfc)
    large = P.sub(1.0, erfc)
    large = P.select(P.lt(x, 0.0), P.neg(large), large)
    y = P.select(P.lt(z, _ERF_SPLIT), small, large)
    y = P.select(P.ne(x, x), x, y)  # NaN stays NaN, whatever min does with it
    return y if y.dtype == dtype else P.convert(y, dtype)


@aten("erf", "special_erf")
def _erf(a, out, ctx):
    return erf(to(a["self"], out.dtype))


@aten("gelu")
def _gelu(a, out, ctx):
    x = a["self"]
    if a.get("approximate", "none") == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), torch's tanh form.
        inner = P.mul(P.add(x, P.mul(P.mul(P.mul(x, x), x), 0.044715)), math.sqrt(2.0 / math.pi))
        return P.mul(P.mul(x, 0.5), P.add(P.tanh(inner), 1.0))
    # The exact GELU: 0.5 x (1 + erf(x / sqrt(2))).
    return P.mul(P.mul(x, 0.5), P.add(erf(P.mul(x, 1.0 / math.sqrt(2.0))), 1.0))


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
    if x.shape != out.shape:  # out of place, torch broadcasts x with the mask (Falcon's ALiBi)
        x = P.broadcast_to(x, out.shape)
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


@aten("empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided")
def _empty(a, out, ctx):
    """An uninitialized tensor: torch leaves its contents unspecified (a model
    writes every element before reading: DeepSeek's `new_empty` + `copy_`
    into slices, functionalized to slice_scatter); zeros are one such content."""
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
