"""Values the importer holds that are not poot Tensors.

* `Empty`: a zero-sized intermediate (Phi-3's rotary split `q[..., rot:]`
  when the rotary dimension is the whole head). poot tensors have no
  zero-sized axes, so nothing is emitted for it; the importer lets one exist
  only where every reader is a `cat`, which drops it (torch_export's
  `_check_node`). Any other reader is refused there.
* `Complex`: a complex64 intermediate as a (real, imaginary) pair of f32
  Tensors (poot has no complex type): DeepSeek-V2's RoPE,
  `view_as_real(view_as_complex(x) * polar(1, angle))`. `polar`,
  `view_as_complex`, `view_as_real`, complex `mul`/`add`/`sub` and the
  shape ops on one are emitted as real arithmetic on the pair; any other op
  reading a Complex is refused (UnsupportedTorchOp naming it).

Importing this module wraps every emitter of the table with that dispatch,
so it is imported after the op families (torch_aten/__init__.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import primitives as P
from ..tensor import Tensor
from ._table import EMITTERS, Context, Emit, Meta, aten, to

COMPLEX = "c64"  # the Meta dtype of a complex64 node (its parts are f32)
PART = "f32"


@dataclass(frozen=True)
class Empty:
    """A zero-sized intermediate: its shape and dtype, no IR."""

    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Complex:
    """A complex64 value: real and imaginary f32 Tensors of one shape."""

    re: Tensor
    im: Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return self.re.shape

    @property
    def dtype(self) -> str:
        return COMPLEX


# The ops that read a zero-sized value (and drop it).
DROPS_EMPTY = frozenset({"cat", "concat"})

# Ops that move elements without arithmetic: on a Complex, the same op on
# each part (`to` between complex64 and itself is the identity).
_PARTWISE = frozenset({
    "view", "reshape", "_unsafe_view", "flatten", "unflatten", "squeeze", "unsqueeze",
    "expand", "expand_as", "broadcast_to", "permute", "transpose", "slice", "select",
    "clone", "contiguous", "alias", "detach", "lift_fresh_copy", "cat", "concat", "stack",
    "to", "_to_copy", "repeat", "split", "split_with_sizes", "chunk", "unbind",
})  # fmt: skip


def _has_complex(value: Any) -> bool:
    if isinstance(value, Complex):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(v, Complex) for v in value)


def _part(value: Any, name: str) -> Any:
    """The real or imaginary part of every Complex in `value`."""
    if isinstance(value, Complex):
        return getattr(value, name)
    if isinstance(value, (list, tuple)):
        return type(value)(_part(v, name) for v in value)
    return value


def _pair(re: Any, im: Any) -> Any:
    """Complex(re, im), or a list of them for a multi-result op (split)."""
    if isinstance(re, (list, tuple)):
        return [Complex(r, i) for r, i in zip(re, im)]
    return Complex(re, im)


def _dispatch(packet: str, emit: Emit) -> Emit:
    """`emit` for real operands; for complex ones the partwise op, or a
    refusal naming the op."""

    def dispatched(a: dict[str, Any], out: Meta, ctx: Context) -> Any:
        if not any(_has_complex(v) for v in a.values()) and (out is None or out.dtype != COMPLEX):
            return emit(a, out, ctx)
        if packet not in _PARTWISE:
            raise TypeError(
                f"a complex operand or result of aten.{packet} (the importer carries complex "
                "values as (re, im) pairs through polar, view_as_complex/view_as_real, "
                "mul/add/sub and shape ops only)"
            )
        if packet in ("to", "_to_copy"):
            x = a["self"]
            if out.dtype != COMPLEX:  # complex to real keeps the real part, as torch
                return to(x.re, out.dtype)
            # complex64 to itself, or a real tensor widened to complex
            return x if isinstance(x, Complex) else Complex(*(
                _materialize(p, out, ctx) for p in _parts(x)))  # fmt: skip
        part = None if out is None else Meta(out.shape, PART)
        re = emit({k: _part(v, "re") for k, v in a.items()}, part, ctx)
        im = emit({k: _part(v, "im") for k, v in a.items()}, part, ctx)
        return _pair(re, im)

    return dispatched


# --- complex arithmetic ------------------------------------------------------------


def _parts(x: Any) -> tuple[Any, Any]:
    """(re, im) of a Complex, a real Tensor (im 0) or a real Python number."""
    if isinstance(x, Complex):
        return x.re, x.im
    if isinstance(x, Tensor):
        return to(x, PART), 0.0
    if isinstance(x, complex):
        return x.real, x.imag
    return float(x), 0.0


def _is_zero(x: Any) -> bool:
    """The literal 0.0 of a real operand's imaginary part (nothing to emit)."""
    return not isinstance(x, Tensor) and x == 0.0


def _mul(x: Any, y: Any) -> Any:
    if _is_zero(x) or _is_zero(y):
        return 0.0
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        return x * y
    return P.mul(x, y)


def _add(x: Any, y: Any, sign: float = 1.0) -> Any:
    """x + sign * y, skipping literal zeros."""
    if _is_zero(y):
        return x
    if _is_zero(x):
        return y if sign == 1.0 else _mul(y, -1.0)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        return x + sign * y
    return P.add(x, y) if sign == 1.0 else P.sub(x, y)


def _materialize(x: Any, out: Meta, ctx: Context) -> Tensor:
    if isinstance(x, Tensor):
        return x if x.shape == out.shape else P.broadcast_to(x, out.shape)
    return P.constant(x, PART, shape=out.shape, tracer=ctx.tracer)


def _complex_binary(packet: str) -> Emit:
    """(a + bi) op (c + di) for mul/add/sub (with `alpha`), a real operand
    having d = 0: `(ac - bd) + (ad + bc)i` for mul."""

    def emit(a: dict[str, Any], out: Meta, ctx: Context) -> Complex:
        (xr, xi), (yr, yi) = _parts(a["self"]), _parts(a["other"])
        alpha = a.get("alpha", 1)
        if alpha != 1:
            yr, yi = _mul(yr, float(alpha)), _mul(yi, float(alpha))
        if packet == "mul":
            re = _add(_mul(xr, yr), _mul(xi, yi), -1.0)
            im = _add(_mul(xr, yi), _mul(xi, yr))
        else:
            sign = 1.0 if packet == "add" else -1.0
            re, im = _add(xr, yr, sign), _add(xi, yi, sign)
        return Complex(_materialize(re, out, ctx), _materialize(im, out, ctx))

    return emit


def _with_complex(packet: str, real: Emit) -> Emit:
    complex_emit = _complex_binary(packet)

    def emit(a: dict[str, Any], out: Meta, ctx: Context) -> Any:
        if out.dtype == COMPLEX:
            return complex_emit(a, out, ctx)
        return real(a, out, ctx)

    return emit


@aten("polar")
def _polar(a, out, ctx):
    """polar(abs, angle) = abs cos(angle) + abs sin(angle) i."""
    r, theta = to(a["abs"], PART), to(a["angle"], PART)
    return Complex(P.mul(r, P.cos(theta)), P.mul(r, P.sin(theta)))


@aten("view_as_complex")
def _view_as_complex(a, out, ctx):
    """x[..., 2] read as x[..., 0] + x[..., 1] i."""
    x = a["self"]
    lo, hi = [0] * x.rank, list(x.shape)
    parts = []
    for k in (0, 1):
        lo[-1], hi[-1] = k, k + 1
        parts.append(P.reshape(P.slice(x, list(lo), list(hi), [1] * x.rank), out.shape))
    return Complex(*parts)


@aten("view_as_real")
def _view_as_real(a, out, ctx):
    """re and im stacked on a new last axis of 2."""
    c = a["self"]
    lifted = [P.reshape(p, c.shape + (1,)) for p in (c.re, c.im)]
    return P.concat(lifted, len(c.shape))


def install() -> None:
    """Complex mul/add/sub, then the dispatch around every emitter (once)."""
    for packet in ("mul", "add", "sub"):
        EMITTERS[packet] = _with_complex(packet, EMITTERS[packet])
    for packet, emit in list(EMITTERS.items()):
        if packet in ("mul", "add", "sub", "polar", "view_as_complex", "view_as_real"):
            continue
        EMITTERS[packet] = _dispatch(packet, emit)


install()
