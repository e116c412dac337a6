"""One function per poot primitive op.

Each function checks its arguments (shapes, dtypes, attributes) in Python,
raising TraceError naming the offending argument, and only then emits the op
at the user's source location. Elementwise binary ops, `compare` and `select`
broadcast with numpy rules; a Python scalar operand becomes a 0-d
`poot.constant` of the other operand's dtype (emitted just before the op).

The math of every op is the dialect's (PootOps.td); the docstrings here only
add what the Python signature decides.
"""

from __future__ import annotations

from typing import Callable, Sequence, Union

import ml_dtypes
import numpy as np

from .. import ir
from ..dialects import poot
from ..errors import TraceError
from . import checks
from .checks import fail
from .dtypes import FLOAT_DTYPES, check_dtype, element_type, tensor_type
from .tensor import Tensor
from .tracer import Tracer

Operand = Union[Tensor, int, float, bool]

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_NUMERIC = FLOAT_DTYPES + ("i32",)
_NP_DTYPES = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "i32": np.int32,
    "i1": np.bool_,
}


# --- helpers -----------------------------------------------------------------


def _wrap(tr: Tracer, value: ir.Value, op: str, shape: tuple[int, ...], dtype: str) -> Tensor:
    """Wrap an emitted result, asserting the dialect inferred what the Python
    checks predicted (a mismatch is a frontend bug, not a user error)."""
    out = Tensor(tr, value)
    if (out.shape, out.dtype) != (tuple(shape), dtype):
        raise AssertionError(
            f"{op}: inferred {out.shape} {out.dtype}, frontend expected {tuple(shape)} {dtype}"
        )
    return out


def _scalar_value(op: str, arg: str, value: object, dtype: str) -> float | int | bool:
    """A Python scalar checked against (and converted to) `dtype`."""
    if isinstance(value, (np.generic,)):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise fail(op, arg, f"must be a Tensor or a Python scalar, got {type(value).__name__}")
    if dtype in FLOAT_DTYPES:
        return float(value)
    if dtype == "i1":
        if value not in (0, 1) or isinstance(value, float) and not float(value).is_integer():
            raise fail(op, arg, f"= {value!r} is not a boolean (the other operand is i1)")
        return bool(value)
    if isinstance(value, float) and not value.is_integer():
        raise fail(op, arg, f"= {value!r} is not an integer (the other operand is {dtype})")
    ivalue = int(value)
    if not _I32_MIN <= ivalue <= _I32_MAX:
        raise fail(op, arg, f"= {ivalue} does not fit in i32")
    return ivalue


def _dense(shape: tuple[int, ...], dtype: str, value: object) -> ir.DenseElementsAttr:
    """A DenseElementsAttr (needs an active context): a splat for a scalar,
    else the array's elements."""
    ttype = tensor_type(shape, dtype)
    if isinstance(value, (bool, int, float)):
        elem = element_type(dtype)
        if dtype in FLOAT_DTYPES:
            attr = ir.FloatAttr.get(elem, float(value))
        else:
            attr = ir.IntegerAttr.get(elem, int(value))
        return ir.DenseElementsAttr.get_splat(ttype, attr)
    array = np.asarray(value)
    if dtype == "bf16":
        # bf16 through its bit pattern: ml_dtypes rounds to nearest even.
        bits = np.ascontiguousarray(array.astype(ml_dtypes.bfloat16)).view(np.uint16)
        return ir.DenseElementsAttr.get(bits, type=element_type("bf16"))
    array = np.ascontiguousarray(array.astype(_NP_DTYPES[dtype]))
    if dtype == "i1":  # numpy bools map to i1 by themselves; an explicit type is refused
        return ir.DenseElementsAttr.get(array)
    return ir.DenseElementsAttr.get(array, type=element_type(dtype))


def _emit_constant(tr: Tracer, shape: tuple[int, ...], dtype: str, value: object) -> Tensor:
    def build() -> ir.Value:
        attr = _dense(shape, dtype, value)
        return poot.constant(attr)

    return _wrap(tr, tr.emit(build), "constant", shape, dtype)


def _operand_dtype(op: str, operands: dict[str, Operand]) -> str:
    """The dtype every operand takes: that of the Tensor operands, which must
    agree (scalars adopt it)."""
    tensors = {a: v for a, v in operands.items() if isinstance(v, Tensor)}
    if not tensors:
        raise TraceError(f"{op}: at least one of {', '.join(operands)} must be a traced Tensor")
    first_arg, first = next(iter(tensors.items()))
    for arg, t in tensors.items():
        checks.require_same_dtype(op, arg, t, first_arg, first)
    return first.dtype


def _lift_all(tr: Tracer, op: str, operands: dict[str, Operand], dtype: str) -> list[Tensor]:
    """Check every scalar operand, then emit its constant (so a bad scalar
    emits nothing)."""
    values = {
        a: (v if isinstance(v, Tensor) else _scalar_value(op, a, v, dtype))
        for a, v in operands.items()
    }
    return [
        v if isinstance(v, Tensor) else _emit_constant(tr, (), dtype, v) for v in values.values()
    ]


def _shape_of(v: Operand) -> tuple[int, ...]:
    return v.shape if isinstance(v, Tensor) else ()


# --- constants and index generators -------------------------------------------


def constant(
    value: object,
    dtype: str | None = None,
    *,
    shape: Sequence[int] | None = None,
    tracer: Tracer | None = None,
) -> Tensor:
    """`poot.constant`: a Python scalar (0-d, or a splat of `shape`) or an
    array-like. `dtype` defaults to the numpy array's or scalar's own dtype
    (float64 -> f64, float32 -> f32, float16 -> f16, integers -> i32, bool ->
    i1) and, for Python numbers and lists, to f32 / i32 / i1. Emits into
    `tracer` (default: the current one).
    """
    op = "constant"
    tr = tracer if tracer is not None else Tracer.current()
    if tr.finished:
        raise TraceError(f"{op}: Tracer {tr.name!r} is finished")
    is_scalar = isinstance(value, (bool, int, float, np.generic))
    if dtype is None:
        kind = np.asarray(value).dtype
        typed = isinstance(value, (np.ndarray, np.generic))
        if kind == np.bool_:
            dtype = "i1"
        elif np.issubdtype(kind, np.integer):
            dtype = "i32"
        elif typed and kind == np.float64:
            dtype = "f64"
        elif typed and kind == np.float16:
            dtype = "f16"
        elif np.issubdtype(kind, np.floating):
            dtype = "f32"
        else:
            raise fail(op, "value", f"has unsupported element kind {kind}")
    check_dtype(dtype, op)
    if is_scalar:
        scalar = _scalar_value(op, "value", value, dtype)
        dims = () if shape is None else checks.static_shape(op, shape)
        return _emit_constant(tr, dims, dtype, scalar)
    array = np.asarray(value)
    if 0 in array.shape:
        raise fail(op, "value", f"has shape {array.shape}, with a zero-sized dimension")
    if shape is not None and tuple(shape) != array.shape:
        raise fail(op, "shape", f"{tuple(shape)} does not match the value's shape {array.shape}")
    if dtype not in FLOAT_DTYPES and array.dtype.kind == "f" and not np.all(np.mod(array, 1) == 0):
        raise fail(op, "value", f"holds non-integer entries for dtype {dtype}")
    if dtype == "i1" and not np.all((array == 0) | (array == 1)):
        raise fail(op, "value", "holds entries other than 0/1 for dtype i1")
    if dtype == "i32" and array.size and (array.min() < _I32_MIN or array.max() > _I32_MAX):
        raise fail(op, "value", "has entries that do not fit in i32")
    return _emit_constant(tr, tuple(int(d) for d in array.shape), dtype, array)


def iota(
    shape: Sequence[int], dim: int, dtype: str = "i32", *, tracer: Tracer | None = None
) -> Tensor:
    """`poot.iota`: `result[i_0, ..., i_n] = i_dim` as `dtype`."""
    op = "iota"
    tr = tracer if tracer is not None else Tracer.current()
    if tr.finished:
        raise TraceError(f"{op}: Tracer {tr.name!r} is finished")
    dims = checks.static_shape(op, shape)
    check_dtype(dtype, op)
    if dtype == "i1":
        raise fail(op, "dtype", "must be numeric, got i1")
    axis = checks.normalize_axis(op, "dim", dim, len(dims))
    value = tr.emit(lambda: poot.iota(tensor_type(dims, dtype), axis))
    return _wrap(tr, value, op, dims, dtype)


# --- elementwise ---------------------------------------------------------------


def _binary(
    op: str,
    build: Callable[[ir.Value, ir.Value], ir.Value],
    lhs: Operand,
    rhs: Operand,
    allowed: Sequence[str],
) -> Tensor:
    tr = checks.tracer_of(op, {"lhs": lhs, "rhs": rhs})
    dtype = _operand_dtype(op, {"lhs": lhs, "rhs": rhs})
    arg = "lhs" if isinstance(lhs, Tensor) else "rhs"
    if dtype not in allowed:
        raise fail(op, arg, f"has dtype {dtype}; expected {' or '.join(allowed)}")
    shape = checks.broadcast_shapes(op, {"lhs": _shape_of(lhs), "rhs": _shape_of(rhs)})
    a, b = _lift_all(tr, op, {"lhs": lhs, "rhs": rhs}, dtype)
    return _wrap(tr, tr.emit(lambda: build(a.value, b.value)), op, shape, dtype)


def add(lhs: Operand, rhs: Operand) -> Tensor:
    """`lhs + rhs` (numpy broadcasting)."""
    return _binary("add", poot.add, lhs, rhs, _NUMERIC)


def sub(lhs: Operand, rhs: Operand) -> Tensor:
    """`lhs - rhs` (numpy broadcasting)."""
    return _binary("sub", poot.sub, lhs, rhs, _NUMERIC)


def mul(lhs: Operand, rhs: Operand) -> Tensor:
    """`lhs * rhs` (numpy broadcasting)."""
    return _binary("mul", poot.mul, lhs, rhs, _NUMERIC)


def div(lhs: Operand, rhs: Operand) -> Tensor:
    """`lhs / rhs`; on i32 floor division, and division by zero gives 0."""
    return _binary("div", poot.div, lhs, rhs, _NUMERIC)


def maximum(lhs: Operand, rhs: Operand) -> Tensor:
    """Elementwise max (NaN propagates)."""
    return _binary("maximum", poot.max, lhs, rhs, _NUMERIC)


def minimum(lhs: Operand, rhs: Operand) -> Tensor:
    """Elementwise min (NaN propagates)."""
    return _binary("minimum", poot.min, lhs, rhs, _NUMERIC)


def and_(lhs: Operand, rhs: Operand) -> Tensor:
    """Bitwise and (logical on i1)."""
    return _binary("and_", poot.and_, lhs, rhs, ("i32", "i1"))


def or_(lhs: Operand, rhs: Operand) -> Tensor:
    """Bitwise or (logical on i1)."""
    return _binary("or_", poot.or_, lhs, rhs, ("i32", "i1"))


def _unary(
    op: str, build: Callable[[ir.Value], ir.Value], x: Tensor, allowed: Sequence[str]
) -> Tensor:
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    checks.require_dtype(op, "x", x, allowed)
    return _wrap(tr, tr.emit(lambda: build(x.value)), op, x.shape, x.dtype)


def exp(x: Tensor) -> Tensor:
    """e^x (exp(-inf) = 0)."""
    return _unary("exp", poot.exp, x, FLOAT_DTYPES)


def log(x: Tensor) -> Tensor:
    return _unary("log", poot.log, x, FLOAT_DTYPES)


def tanh(x: Tensor) -> Tensor:
    return _unary("tanh", poot.tanh, x, FLOAT_DTYPES)


def logistic(x: Tensor) -> Tensor:
    """1 / (1 + e^-x)."""
    return _unary("logistic", poot.logistic, x, FLOAT_DTYPES)


def sqrt(x: Tensor) -> Tensor:
    return _unary("sqrt", poot.sqrt, x, FLOAT_DTYPES)


def rsqrt(x: Tensor) -> Tensor:
    """1 / sqrt(x)."""
    return _unary("rsqrt", poot.rsqrt, x, FLOAT_DTYPES)


def sin(x: Tensor) -> Tensor:
    return _unary("sin", poot.sin, x, FLOAT_DTYPES)


def cos(x: Tensor) -> Tensor:
    return _unary("cos", poot.cos, x, FLOAT_DTYPES)


def neg(x: Tensor) -> Tensor:
    return _unary("neg", poot.neg, x, _NUMERIC)


def abs(x: Tensor) -> Tensor:  # noqa: A001 - the op's name
    return _unary("abs", poot.abs, x, _NUMERIC)


_DIRECTIONS = ("eq", "ne", "lt", "le", "gt", "ge")


def compare(direction: str, lhs: Operand, rhs: Operand) -> Tensor:
    """`lhs <direction> rhs` as i1, direction one of eq ne lt le gt ge
    (numpy broadcasting; any comparison with NaN is false except ne)."""
    op = "compare"
    if direction not in _DIRECTIONS:
        raise fail(op, "direction", f"must be one of {', '.join(_DIRECTIONS)}, got {direction!r}")
    tr = checks.tracer_of(op, {"lhs": lhs, "rhs": rhs})
    dtype = _operand_dtype(op, {"lhs": lhs, "rhs": rhs})
    shape = checks.broadcast_shapes(op, {"lhs": _shape_of(lhs), "rhs": _shape_of(rhs)})
    a, b = _lift_all(tr, op, {"lhs": lhs, "rhs": rhs}, dtype)

    def build() -> ir.Value:
        attr = ir.Attribute.parse(f"#poot<compare_direction {direction}>")
        return poot.compare(attr, a.value, b.value)

    return _wrap(tr, tr.emit(build), op, shape, "i1")


def eq(lhs: Operand, rhs: Operand) -> Tensor:
    return compare("eq", lhs, rhs)


def ne(lhs: Operand, rhs: Operand) -> Tensor:
    return compare("ne", lhs, rhs)


def lt(lhs: Operand, rhs: Operand) -> Tensor:
    return compare("lt", lhs, rhs)


def le(lhs: Operand, rhs: Operand) -> Tensor:
    return compare("le", lhs, rhs)


def gt(lhs: Operand, rhs: Operand) -> Tensor:
    return compare("gt", lhs, rhs)


def ge(lhs: Operand, rhs: Operand) -> Tensor:
    return compare("ge", lhs, rhs)


def select(cond: Tensor, on_true: Operand, on_false: Operand) -> Tensor:
    """`cond ? on_true : on_false`, all three broadcast together. A true
    select: the unchosen value never reaches the result (NaN-safe)."""
    op = "select"
    checks.require_tensor(op, "cond", cond)
    tr = checks.tracer_of(op, {"cond": cond, "on_true": on_true, "on_false": on_false})
    checks.require_dtype(op, "cond", cond, ("i1",))
    dtype = _operand_dtype(op, {"on_true": on_true, "on_false": on_false})
    shape = checks.broadcast_shapes(
        op, {"cond": cond.shape, "on_true": _shape_of(on_true), "on_false": _shape_of(on_false)}
    )
    a, b = _lift_all(tr, op, {"on_true": on_true, "on_false": on_false}, dtype)
    return _wrap(tr, tr.emit(lambda: poot.select(cond.value, a.value, b.value)), op, shape, dtype)


def where(cond: Tensor, on_true: Operand, on_false: Operand) -> Tensor:
    """`torch.where(cond, on_true, on_false)`: the same `poot.select`."""
    return select(cond, on_true, on_false)


# --- shape and data movement ---------------------------------------------------


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Row-major reshape; one entry of `shape` may be -1 (inferred)."""
    op = "reshape"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    try:
        dims = [int(d) for d in shape]
    except TypeError:
        raise fail(op, "shape", f"must be a sequence of ints, got {shape!r}") from None
    if dims.count(-1) > 1 or any(d < -1 or d == 0 for d in dims):
        raise fail(
            op, "shape", f"{tuple(dims)} may hold at most one -1 and no other size below 1"
        )
    if -1 in dims:
        known = checks.shape_size([d for d in dims if d != -1])
        if known == 0 or x.size % known:
            raise fail(
                op, "shape", f"{tuple(dims)} cannot hold the {x.size} elements of x {x.shape}"
            )
        dims[dims.index(-1)] = x.size // known
    if checks.shape_size(dims) != x.size:
        raise fail(
            op,
            "shape",
            f"{tuple(dims)} holds {checks.shape_size(dims)} elements but x {x.shape} holds {x.size}",
        )
    out = tuple(dims)
    return _wrap(
        tr, tr.emit(lambda: poot.reshape(tensor_type(out, x.dtype), x.value)), op, out, x.dtype
    )


def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """numpy `broadcast_to(x, shape)` (explicit `poot.broadcast`)."""
    op = "broadcast_to"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    out = checks.static_shape(op, shape)
    checks.broadcasts_to(op, "x", x.shape, out, "shape")
    return _wrap(
        tr, tr.emit(lambda: poot.broadcast(tensor_type(out, x.dtype), x.value)), op, out, x.dtype
    )


def transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    """numpy `transpose(x, perm)`: `result.shape[d] = x.shape[perm[d]]`."""
    op = "transpose"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    try:
        p = [int(d) for d in perm]
    except TypeError:
        raise fail(op, "perm", f"must be a sequence of ints, got {perm!r}") from None
    if sorted(p) != list(range(x.rank)):
        raise fail(
            op, "perm", f"{tuple(p)} is not a permutation of the {x.rank} axes of x {x.shape}"
        )
    out = tuple(x.shape[d] for d in p)
    return _wrap(tr, tr.emit(lambda: poot.transpose(x.value, p)), op, out, x.dtype)


def concat(inputs: Sequence[Tensor], axis: int) -> Tensor:
    """numpy `concatenate(inputs, axis)`."""
    op = "concat"
    inputs = list(inputs)
    if not inputs:
        raise fail(op, "inputs", "must hold at least one Tensor")
    named = {
        f"inputs[{i}]": checks.require_tensor(op, f"inputs[{i}]", t) for i, t in enumerate(inputs)
    }
    tr = checks.tracer_of(op, named)
    first = inputs[0]
    ax = checks.normalize_axis(op, "axis", axis, first.rank)
    for arg, t in named.items():
        checks.require_same_dtype(op, arg, t, "inputs[0]", first)
        if t.rank != first.rank or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != ax
        ):
            raise fail(
                op,
                arg,
                f"has shape {t.shape}, which differs from inputs[0] {first.shape} off axis {ax}",
            )
    out = list(first.shape)
    out[ax] = sum(t.shape[ax] for t in inputs)
    return _wrap(
        tr, tr.emit(lambda: poot.concat([t.value for t in inputs], ax)), op, tuple(out), first.dtype
    )


def slice(  # noqa: A001 - the op's name
    x: Tensor, start: Sequence[int], limit: Sequence[int], strides: Sequence[int] | None = None
) -> Tensor:
    """`x[start[0]:limit[0]:strides[0], ...]` with `0 <= start < limit <= dim`."""
    op = "slice"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    steps = [1] * x.rank if strides is None else [int(s) for s in strides]
    lo, hi = [int(s) for s in start], [int(s) for s in limit]
    for arg, vals in (("start", lo), ("limit", hi), ("strides", steps)):
        if len(vals) != x.rank:
            raise fail(op, arg, f"has {len(vals)} entries but x {x.shape} has rank {x.rank}")
    for d in range(x.rank):
        if not 0 <= lo[d] < hi[d] <= x.shape[d]:
            raise fail(
                op,
                "start",
                f"and limit [{lo[d]}, {hi[d]}) on axis {d} must select at least one of "
                f"0..{x.shape[d]} of x {x.shape}",
            )
        if steps[d] < 1:
            raise fail(op, "strides", f"must be >= 1, got {steps[d]} on axis {d}")
    out = tuple((hi[d] - lo[d] + steps[d] - 1) // steps[d] for d in range(x.rank))
    return _wrap(tr, tr.emit(lambda: poot.slice(x.value, lo, hi, steps)), op, out, x.dtype)


def convert(x: Tensor, dtype: str) -> Tensor:
    """Element type conversion (float->float rounds to nearest even, float->int
    truncates toward zero, i1 maps to 0/1)."""
    op = "convert"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    check_dtype(dtype, op)
    return _wrap(
        tr, tr.emit(lambda: poot.convert(tensor_type(x.shape, dtype), x.value)), op, x.shape, dtype
    )


def gather(x: Tensor, indices: Tensor, axis: int = 0) -> Tensor:
    """`numpy.take(x, clip(indices, 0, dim - 1), axis)`; the result shape is
    `x.shape[:axis] + indices.shape + x.shape[axis+1:]`."""
    op = "gather"
    checks.require_tensor(op, "x", x)
    checks.require_tensor(op, "indices", indices)
    tr = checks.tracer_of(op, {"x": x, "indices": indices})
    checks.require_dtype(op, "indices", indices, ("i32",))
    ax = checks.normalize_axis(op, "axis", axis, x.rank)
    out = x.shape[:ax] + indices.shape + x.shape[ax + 1 :]
    return _wrap(tr, tr.emit(lambda: poot.gather(x.value, indices.value, ax)), op, out, x.dtype)


def scatter_update(x: Tensor, indices: Tensor, updates: Tensor) -> Tensor:
    """`x` with row `indices[i]` (axis 0) replaced by `updates[i]`; an index
    outside `[0, x.shape[0])` (the padding `-1`) writes nothing."""
    op = "scatter_update"
    for arg, t in (("x", x), ("indices", indices), ("updates", updates)):
        checks.require_tensor(op, arg, t)
    tr = checks.tracer_of(op, {"x": x, "indices": indices, "updates": updates})
    if x.rank < 1:
        raise fail(op, "x", "must have rank >= 1")
    checks.require_dtype(op, "indices", indices, ("i32",))
    checks.require_rank(op, "indices", indices, 1)
    checks.require_same_dtype(op, "updates", updates, "x", x)
    checks.require_shape(
        op, "updates", updates, indices.shape + x.shape[1:], "= indices.shape + x.shape[1:]"
    )
    return _wrap(
        tr,
        tr.emit(lambda: poot.scatter_update(x.value, indices.value, updates.value)),
        op,
        x.shape,
        x.dtype,
    )


def dynamic_update_slice(x: Tensor, update: Tensor, start: Tensor, axis: int) -> Tensor:
    """`x` with `update` written at offset `clamp(start, 0, dim - n)` along
    `axis` (`start` is a 0-d i32 tensor)."""
    op = "dynamic_update_slice"
    for arg, t in (("x", x), ("update", update), ("start", start)):
        checks.require_tensor(op, arg, t)
    tr = checks.tracer_of(op, {"x": x, "update": update, "start": start})
    checks.require_same_dtype(op, "update", update, "x", x)
    if start.shape != () or start.dtype != "i32":
        raise fail(op, "start", f"must be a 0-d i32 tensor, got {start.shape} {start.dtype}")
    ax = checks.normalize_axis(op, "axis", axis, x.rank)
    if update.rank != x.rank or any(
        u != d for i, (u, d) in enumerate(zip(update.shape, x.shape)) if i != ax
    ):
        raise fail(
            op, "update", f"has shape {update.shape}; it must match x {x.shape} off axis {ax}"
        )
    if update.shape[ax] > x.shape[ax]:
        raise fail(
            op, "update", f"is {update.shape[ax]} long on axis {ax}, longer than x ({x.shape[ax]})"
        )
    value = tr.emit(lambda: poot.dynamic_update_slice(x.value, update.value, start.value, ax))
    return _wrap(tr, value, op, x.shape, x.dtype)


# --- contractions and reductions -------------------------------------------------


def matmul(lhs: Tensor, rhs: Tensor) -> Tensor:
    """numpy `matmul` over the last two axes; batch axes broadcast."""
    op = "matmul"
    checks.require_tensor(op, "lhs", lhs)
    checks.require_tensor(op, "rhs", rhs)
    tr = checks.tracer_of(op, {"lhs": lhs, "rhs": rhs})
    checks.require_float(op, "lhs", lhs)
    checks.require_same_dtype(op, "rhs", rhs, "lhs", lhs)
    for arg, t in (("lhs", lhs), ("rhs", rhs)):
        if t.rank < 2:
            raise fail(op, arg, f"must have rank >= 2, got shape {t.shape}")
    if lhs.shape[-1] != rhs.shape[-2]:
        raise fail(
            op,
            "rhs",
            f"has shape {rhs.shape}; its dimension -2 ({rhs.shape[-2]}) must equal lhs's last ({lhs.shape[-1]}, lhs {lhs.shape})",
        )
    try:
        batch = checks.broadcast_shapes(op, {"lhs": lhs.shape[:-2], "rhs": rhs.shape[:-2]})
    except TraceError:
        raise fail(
            op,
            "rhs",
            f"has batch dimensions {rhs.shape[:-2]}, which do not broadcast with lhs's {lhs.shape[:-2]}",
        ) from None
    out = batch + (lhs.shape[-2], rhs.shape[-1])
    return _wrap(tr, tr.emit(lambda: poot.matmul(lhs.value, rhs.value)), op, out, lhs.dtype)


def _reduce(op: str, kind: str, x: Tensor, axis: int, keepdim: bool) -> Tensor:
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    checks.require_dtype(op, "x", x, _NUMERIC)
    ax = checks.normalize_axis(op, "axis", axis, x.rank)
    out = (
        tuple(1 if i == ax else d for i, d in enumerate(x.shape))
        if keepdim
        else x.shape[:ax] + x.shape[ax + 1 :]
    )

    def build() -> ir.Value:
        attr = ir.Attribute.parse(f"#poot<reduce_kind {kind}>")
        return poot.reduce(attr, x.value, ax, keepdim=bool(keepdim))

    return _wrap(tr, tr.emit(build), op, out, x.dtype)


def reduce_max(x: Tensor, axis: int = -1, keepdim: bool = False) -> Tensor:
    """numpy `max(x, axis, keepdims=keepdim)`."""
    return _reduce("reduce_max", "max", x, axis, keepdim)


def reduce_sum(x: Tensor, axis: int = -1, keepdim: bool = False) -> Tensor:
    """numpy `sum(x, axis, keepdims=keepdim)` (accumulated in the dtype; f16/bf16
    in float32, rounded once: docs/sixteen-bit-contract.md)."""
    return _reduce("reduce_sum", "sum", x, axis, keepdim)


def reduce_min(x: Tensor, axis: int = -1, keepdim: bool = False) -> Tensor:
    """numpy `min(x, axis, keepdims=keepdim)`."""
    return _reduce("reduce_min", "min", x, axis, keepdim)


def top_k(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """(values, indices) of the `k` largest entries of the last axis,
    descending, ties to the lower index; indices are i32."""
    op = "top_k"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    checks.require_float(op, "x", x)
    if x.rank < 1:
        raise fail(op, "x", "must have rank >= 1")
    checks.require_int(op, "k", k, minimum=1)
    if k > x.shape[-1]:
        raise fail(op, "k", f"= {k} exceeds the last dimension of x {x.shape}")
    out = x.shape[:-1] + (k,)
    results = tr.emit(lambda: poot.top_k(x.value, k))
    return _wrap(tr, results[0], op, out, x.dtype), _wrap(tr, results[1], op, out, "i32")


# --- runtime checks --------------------------------------------------------------


def index_guard(x: Tensor, min: int, max: int) -> tuple[Tensor, Tensor]:  # noqa: A002
    """(clamp(x, min, max), all(min <= x <= max) as a 0-d i1 witness). Return
    the witness with `tracer.validation` when correctness relies on the clamp."""
    op = "index_guard"
    checks.require_tensor(op, "x", x)
    tr = checks.tracer_of(op, {"x": x})
    checks.require_dtype(op, "x", x, ("i32",))
    checks.require_int(op, "min", min)
    checks.require_int(op, "max", max)
    if min > max:
        raise fail(op, "min", f"= {min} exceeds max = {max}")
    results = tr.emit(lambda: poot.index_guard(x.value, min, max))
    return _wrap(tr, results[0], op, x.shape, "i32"), _wrap(tr, results[1], op, (), "i1")
