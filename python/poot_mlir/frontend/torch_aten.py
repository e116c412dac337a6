"""The ATen op table of `torch_export`: one emitter per ATen op packet.

Each emitter receives the node's arguments bound to the op's schema names
(`a["self"]`, `a["dim"]`, ...; FX nodes already replaced by the traced
Tensors), and the node's result metadata (`out.shape`, `out.dtype`: what
torch.export says the result is), and emits the poot primitive chain of the
op through `primitives` / `composites`. A check (`refuse`) runs on every node
before anything is emitted, so an argument the table cannot honour
(`dropout_p > 0`, `gelu` without the tanh approximation) is refused before
the importer builds anything.

Dtype promotion is torch's: the result dtype comes from the node's metadata,
and every tensor operand is converted to it first (an f32 mask added to bf16
scores gives f32 scores, as in torch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import composites as C
from . import primitives as P
from .dtypes import FLOAT_DTYPES
from .tensor import Tensor


@dataclass(frozen=True)
class Meta:
    """A node result's static shape and frontend dtype (from node.meta["val"])."""

    shape: tuple[int, ...]
    dtype: str


Emit = Callable[[dict[str, Any], Meta, "Context"], Any]
Refuse = Callable[[dict[str, Any]], "str | None"]


class Context:
    """What an emitter may ask beyond its arguments: the tracer (for ops with
    no tensor operand), the result metadata of operand tensors, and the
    compute dtype torch's promotion picks for a set of operands."""

    def __init__(self, tracer, result_type: Callable[[list[Any]], str]) -> None:
        self.tracer = tracer
        self.result_type = result_type
        self.packet = ""  # the op packet being emitted (one emitter may serve two)


EMITTERS: dict[str, Emit] = {}
REFUSALS: dict[str, Refuse] = {}


def aten(*names: str, refuse: Refuse | None = None) -> Callable[[Emit], Emit]:
    """Register an emitter for ATen op packets `names` (`"add"` covers
    `aten.add.Tensor` and `aten.add.Scalar`)."""

    def register(fn: Emit) -> Emit:
        for name in names:
            EMITTERS[name] = fn
            if refuse is not None:
                REFUSALS[name] = refuse
        return fn

    return register


# --- helpers -------------------------------------------------------------------


def to(x: Any, dtype: str) -> Any:
    """`x` converted to `dtype` (a Python scalar passes through: the
    primitive lifts it into the other operand's dtype)."""
    if isinstance(x, Tensor) and x.dtype != dtype:
        return P.convert(x, dtype)
    return x


def axis(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def axes(dim: Any, rank: int) -> list[int]:
    """A reduction's `dim` argument as sorted non-negative axes (None or []
    means every axis, as in torch)."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(rank))
    if isinstance(dim, int):
        dim = [dim]
    return sorted({axis(d, rank) for d in dim})


def zero_like(x: Tensor) -> float | int | bool:
    return False if x.dtype == "i1" else 0.0 if x.dtype in FLOAT_DTYPES else 0


def finish(x: Tensor, out: Meta) -> Tensor:
    """Reshape to the node's result shape when only unit axes differ (a
    reduction's keepdim, a select's dropped axis)."""
    return x if x.shape == out.shape else P.reshape(x, out.shape)


def bool_of(x: Tensor) -> Tensor:
    return x if x.dtype == "i1" else P.ne(x, zero_like(x))


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


# --- shape and data movement -------------------------------------------------------------


@aten("view", "reshape", "_unsafe_view", "view_copy", "flatten", "unflatten", "squeeze",
      "unsqueeze", "view_as", "reshape_as")  # fmt: skip
def _reshape(a, out, ctx):
    x = a["self"]
    return x if x.shape == out.shape else P.reshape(x, out.shape)


@aten("expand", "expand_as", "broadcast_to", "expand_copy")
def _expand(a, out, ctx):
    x = a["self"]
    return x if x.shape == out.shape else P.broadcast_to(x, out.shape)


@aten("permute")
def _permute(a, out, ctx):
    x = a["self"]
    return P.transpose(x, [axis(d, x.rank) for d in a["dims"]])


@aten("transpose", "swapaxes")
def _transpose(a, out, ctx):
    x = a["self"]
    if x.rank < 2:
        return x
    d0 = axis(a.get("dim0", a.get("axis0")), x.rank)
    d1 = axis(a.get("dim1", a.get("axis1")), x.rank)
    perm = list(range(x.rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return x if d0 == d1 else P.transpose(x, perm)


@aten("t", "numpy_T")
def _t(a, out, ctx):
    x = a["self"]
    return x if x.rank < 2 else P.transpose(x, list(range(x.rank))[::-1])


def _slice_of(x: Tensor, dim: int, start: int, stop: int, step: int = 1) -> Tensor:
    if (start, stop, step) == (0, x.shape[dim], 1):
        return x
    lo, hi = [0] * x.rank, list(x.shape)
    steps = [1] * x.rank
    lo[dim], hi[dim], steps[dim] = start, stop, step
    return P.slice(x, lo, hi, steps)


def _refuse_slice(a: dict[str, Any]) -> str | None:
    if a.get("step", 1) is not None and a.get("step", 1) < 1:
        return f"step={a['step']} (torch allows only positive steps)"
    return None


@aten("slice", "slice_copy", refuse=_refuse_slice)
def _slice(a, out, ctx):
    x = a["self"]
    dim = axis(a.get("dim", 0), x.rank)
    n = x.shape[dim]
    start, end, step = a.get("start"), a.get("end"), a.get("step", 1) or 1
    start = 0 if start is None else start
    end = n if end is None else end
    start, end = (min(max(v + n if v < 0 else v, 0), n) for v in (start, end))
    if end <= start:
        raise ValueError(
            f"an empty slice [{start}:{end}] of axis {dim} (poot tensors have no zero-sized axes)"
        )
    return _slice_of(x, dim, start, end, step)


@aten("select", "select_copy")
def _select(a, out, ctx):
    x = a["self"]
    dim = axis(a["dim"], x.rank)
    index = a["index"] + x.shape[dim] if a["index"] < 0 else a["index"]
    return finish(_slice_of(x, dim, index, index + 1), out)


@aten("cat", "concat")
def _cat(a, out, ctx):
    tensors = [to(t, out.dtype) for t in a["tensors"]]
    if len(tensors) == 1:
        return tensors[0]
    return P.concat(tensors, axis(a.get("dim", 0), tensors[0].rank))


@aten("stack")
def _stack(a, out, ctx):
    tensors = [to(t, out.dtype) for t in a["tensors"]]
    dim = axis(a.get("dim", 0), tensors[0].rank + 1)
    lifted = [P.reshape(t, t.shape[:dim] + (1,) + t.shape[dim:]) for t in tensors]
    return lifted[0] if len(lifted) == 1 else P.concat(lifted, dim)


def _pieces(x: Tensor, dim: int, sizes: list[int]) -> list[Tensor]:
    out, start = [], 0
    for size in sizes:
        out.append(_slice_of(x, dim, start, start + size))
        start += size
    return out


@aten("split", "split_with_sizes", "chunk", "unbind", "tensor_split")
def _split(a, out, ctx):
    x = a["self"]
    dim = axis(a.get("dim", 0), x.rank)
    n = x.shape[dim]
    if "split_sizes" in a:
        sizes = list(a["split_sizes"])
    elif "split_size" in a:
        size = a["split_size"]
        sizes = [min(size, n - s) for s in range(0, n, size)]
    elif "chunks" in a:
        size = -(-n // a["chunks"])
        sizes = [min(size, n - s) for s in range(0, n, size)]
    elif "sections" in a:
        k = a["sections"]
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    elif "indices" in a:
        bounds = [0] + [min(max(i + n if i < 0 else i, 0), n) for i in a["indices"]] + [n]
        sizes = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    elif "tensor_indices_or_sections" in a:
        raise TypeError("tensor_split by a tensor of indices (only by Python ints)")
    else:  # unbind: every index, the axis dropped
        return [P.reshape(p, x.shape[:dim] + x.shape[dim + 1 :]) for p in _pieces(x, dim, [1] * n)]
    if 0 in sizes:
        raise ValueError(f"a zero-sized piece of axis {dim} (sizes {sizes})")
    return _pieces(x, dim, sizes)


@aten("diff")
def _diff(a, out, ctx):
    """`x[1:] - x[:-1]` along `dim`, n times, after concatenating `prepend`
    and `append` (torch.diff)."""
    x = a["self"]
    dim = axis(a.get("dim", -1), x.rank)
    pieces = [t for t in (a.get("prepend"), x, a.get("append")) if t is not None]
    x = P.concat(pieces, dim) if len(pieces) > 1 else x
    for _ in range(a.get("n", 1)):
        n = x.shape[dim]
        later, earlier = _slice_of(x, dim, 1, n), _slice_of(x, dim, 0, n - 1)
        x = P.ne(later, earlier) if x.dtype == "i1" else P.sub(later, earlier)
    return x


@aten("cumsum")
def _cumsum(a, out, ctx):
    """poot has no scan: the running sum along `dim` is a matmul by the upper
    triangle of ones (`out[i] = sum_{j <= i} x[j]`), in f32 for a bool input
    (counts up to the axis length, exact) and in the dtype for floats; an
    integer input is refused (its sums could pass f32's exact range)."""
    x = a["self"]
    if x.dtype == "i32":
        raise TypeError("cumsum of an integer tensor (only bool or float: poot has no scan, the "
                        "importer sums through a matmul)")  # fmt: skip
    dim = axis(a["dim"], x.rank)
    work = "f32" if x.dtype == "i1" else out.dtype
    n = x.shape[dim]
    triangle = P.constant(np.triu(np.ones((n, n))), work, tracer=ctx.tracer)
    perm = list(range(x.rank))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    moved = P.transpose(to(x, work), perm) if dim != x.rank - 1 else to(x, work)
    rows = P.reshape(moved, (-1, n))
    summed = P.reshape(P.matmul(rows, triangle), moved.shape)
    back = P.transpose(summed, perm) if dim != x.rank - 1 else summed
    return to(back, out.dtype)


@aten("index")
def _index(a, out, ctx):
    """`x[i0, i1, ...]` with integer index tensors on the leading axes
    (broadcast together; negative indices wrap): one gather over those axes
    flattened."""
    x, indices = a["self"], list(a["indices"])
    while indices and indices[-1] is None:
        indices.pop()
    if not indices or any(i is None for i in indices) or any(i.dtype == "i1" for i in indices):
        raise TypeError("indexing other than by integer tensors on the leading axes "
                        "(no None between them, no bool masks)")  # fmt: skip
    k = len(indices)
    linear = None
    for d, index in enumerate(indices):
        size = x.shape[d]
        index = P.select(P.lt(index, 0), P.add(index, size), index)
        linear = index if linear is None else P.add(P.mul(linear, size), index)
    flat = P.reshape(x, (math.prod(x.shape[:k]),) + x.shape[k:])
    return P.gather(flat, linear, 0)


@aten("embedding")
def _embedding(a, out, ctx):
    return P.gather(a["weight"], to(a["indices"], "i32"), 0)


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


# --- reductions and normalizations --------------------------------------------------------------


def _reduce_axes(x: Tensor, dims: list[int], reduce: Callable[..., Tensor]) -> Tensor:
    for d in dims:
        x = reduce(x, axis=d, keepdim=True)
    return x


def _count(x: Tensor, dims: list[int]) -> int:
    return math.prod(x.shape[d] for d in dims)


@aten("sum")
def _sum(a, out, ctx):
    x = to(a["self"], out.dtype)
    return finish(_reduce_axes(x, axes(a.get("dim"), x.rank), P.reduce_sum), out)


@aten("mean")
def _mean(a, out, ctx):
    x = to(a["self"], out.dtype)
    dims = axes(a.get("dim"), x.rank)
    return finish(P.div(_reduce_axes(x, dims, P.reduce_sum), float(_count(x, dims))), out)


def _refuse_max(a: dict[str, Any]) -> str | None:
    if "dim" in a:
        return "max/min over a dim returns indices too (use amax/amin)"
    return None


@aten("max", "min", refuse=_refuse_max)
def _max(a, out, ctx):
    """max.other / min.other elementwise, max.default / min.default over
    every element (the op is told apart by its schema: `other` or none)."""
    x, is_max = a["self"], ctx.packet == "max"
    if "other" in a:
        dtype = out.dtype
        return (P.maximum if is_max else P.minimum)(to(x, dtype), to(a["other"], dtype))
    reduce = P.reduce_max if is_max else P.reduce_min
    return finish(_reduce_axes(x, list(range(x.rank)), reduce), out)


@aten("amax")
def _amax(a, out, ctx):
    x = a["self"]
    return finish(_reduce_axes(x, axes(a.get("dim"), x.rank), P.reduce_max), out)


@aten("amin")
def _amin(a, out, ctx):
    x = a["self"]
    return finish(_reduce_axes(x, axes(a.get("dim"), x.rank), P.reduce_min), out)


@aten("any", "all")
def _any(a, out, ctx):
    """any: max of the 0/1 words > 0; all: their min > 0 (poot reduces
    numbers, not i1)."""
    x = to(bool_of(a["self"]), "i32")
    reduce = P.reduce_max if ctx.packet == "any" else P.reduce_min
    return finish(P.gt(_reduce_axes(x, axes(a.get("dim"), x.rank), reduce), 0), out)


def _variance(x: Tensor, dims: list[int], correction: float) -> Tensor:
    """`sum((x - mean)^2) / (N - correction)`, keepdim."""
    n = _count(x, dims)
    centered = P.sub(x, P.div(_reduce_axes(x, dims, P.reduce_sum), float(n)))
    return P.div(_reduce_axes(P.mul(centered, centered), dims, P.reduce_sum), float(n - correction))


@aten("var")
def _var(a, out, ctx):
    x = to(a["self"], out.dtype)
    dims = axes(a.get("dim"), x.rank)
    if "correction" in a:
        correction = 1 if a["correction"] is None else a["correction"]
    else:
        correction = 1 if a.get("unbiased", True) else 0
    return finish(_variance(x, dims, correction), out)


def _softmax_last(x: Tensor, dim: int, body: Callable[[Tensor], Tensor]) -> Tensor:
    """`body` (a last-axis softmax) over axis `dim`, transposing around it."""
    d = axis(dim, x.rank)
    if d == x.rank - 1:
        return body(x)
    perm = list(range(x.rank))
    perm[d], perm[-1] = perm[-1], perm[d]
    return P.transpose(body(P.transpose(x, perm)), perm)


@aten("softmax", "_softmax")
def _softmax(a, out, ctx):
    return _softmax_last(to(a["self"], out.dtype), a["dim"], C.softmax)


def _log_softmax_body(x: Tensor) -> Tensor:
    shifted = P.sub(x, P.reduce_max(x, axis=-1, keepdim=True))
    return P.sub(shifted, P.log(P.reduce_sum(P.exp(shifted), axis=-1, keepdim=True)))


@aten("log_softmax", "_log_softmax")
def _log_softmax(a, out, ctx):
    return _softmax_last(to(a["self"], out.dtype), a["dim"], _log_softmax_body)


def _normalized_axes(x: Tensor, normalized_shape: list[int]) -> list[int]:
    return list(range(x.rank - len(normalized_shape), x.rank))


@aten("layer_norm")
def _layer_norm(a, out, ctx):
    x = a["input"]
    dims = _normalized_axes(x, a["normalized_shape"])
    mean = P.div(_reduce_axes(x, dims, P.reduce_sum), float(_count(x, dims)))
    centered = P.sub(x, mean)
    var = P.div(_reduce_axes(P.mul(centered, centered), dims, P.reduce_sum), float(_count(x, dims)))
    y = P.mul(centered, P.rsqrt(P.add(var, float(a.get("eps", 1e-5)))))
    if a.get("weight") is not None:
        y = P.mul(y, a["weight"])
    if a.get("bias") is not None:
        y = P.add(y, a["bias"])
    return y


# torch.finfo(dtype).eps, rms_norm's default.
_EPS = {"f32": 2.0**-23, "f16": 2.0**-10, "bf16": 2.0**-7, "f64": 2.0**-52}


@aten("rms_norm")
def _rms_norm(a, out, ctx):
    x = a["input"]
    dims = _normalized_axes(x, a["normalized_shape"])
    eps = a.get("eps")
    eps = _EPS[x.dtype] if eps is None else eps
    ms = P.div(_reduce_axes(P.mul(x, x), dims, P.reduce_sum), float(_count(x, dims)))
    y = P.mul(x, P.rsqrt(P.add(ms, float(eps))))
    return y if a.get("weight") is None else P.mul(y, a["weight"])


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


# Ops torch.export records that compute nothing for a stateless step.
IGNORED = frozenset({"_assert_tensor_metadata", "_assert_async", "_assert_scalar"})

__all__ = ["EMITTERS", "IGNORED", "REFUSALS", "Context", "Meta", "aten"]
