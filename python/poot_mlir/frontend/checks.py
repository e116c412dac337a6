"""Trace-time shape and dtype rules, each failure a TraceError naming its argument.

Every op function runs its checks before it emits anything, so a refused call
leaves the function being traced unchanged. The rules mirror the dialect's
verifiers (PootOps.td); checking them in Python gives the user a message that
names their argument instead of an MLIR diagnostic about an SSA value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

from ..errors import TraceError
from .dtypes import FLOAT_DTYPES
from .tensor import Tensor

if TYPE_CHECKING:
    from .tracer import Tracer


def fail(op: str, arg: str, message: str) -> TraceError:
    """A TraceError whose text starts with `op: arg ...`."""
    return TraceError(f"{op}: {arg} {message}")


def require_tensor(op: str, arg: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise fail(op, arg, f"must be a traced Tensor, got {type(value).__name__}")
    return value


def tracer_of(op: str, tensors: dict[str, object]) -> "Tracer":
    """The one tracer every Tensor argument belongs to (a Python scalar
    belongs to none); refuses a mix or a finished tracer.

    In a mix, the tracer being traced into is the current one when some
    argument belongs to it (the user is writing that function; the stray
    value came from another one), else the first argument's; the message
    names an argument that does not belong to it."""
    from .tracer import _ACTIVE, Tracer

    owners = [(arg, v.tracer) for arg, v in tensors.items() if isinstance(v, Tensor)]
    if not owners:
        found = Tracer.current()
    else:
        current = _ACTIVE[-1] if _ACTIVE else None
        found = current if any(t is current for _, t in owners) else owners[0][1]
        for arg, tracer in owners:
            if tracer is not found:
                raise fail(
                    op,
                    arg,
                    f"was traced by another Tracer ({tracer.name!r}, not {found.name!r})",
                )
    if found.finished:
        raise TraceError(f"{op}: Tracer {found.name!r} is finished")
    return found


def require_dtype(op: str, arg: str, t: Tensor, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    if t.dtype not in allowed:
        raise fail(op, arg, f"has dtype {t.dtype}; expected {' or '.join(allowed)}")


def require_float(op: str, arg: str, t: Tensor) -> None:
    require_dtype(op, arg, t, FLOAT_DTYPES)


def require_same_dtype(op: str, arg: str, t: Tensor, ref_arg: str, ref: Tensor) -> None:
    if t.dtype != ref.dtype:
        raise fail(op, arg, f"has dtype {t.dtype} but {ref_arg} has {ref.dtype}")


def require_rank(op: str, arg: str, t: Tensor, rank: int) -> None:
    if t.rank != rank:
        raise fail(op, arg, f"must have rank {rank}, got shape {t.shape}")


def require_shape(op: str, arg: str, t: Tensor, shape: Sequence[int], layout: str = "") -> None:
    if t.shape != tuple(shape):
        want = f" {layout}" if layout else ""
        raise fail(op, arg, f"must have shape {tuple(shape)}{want}, got {t.shape}")


def require_int(op: str, arg: str, value: object, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(op, arg, f"must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise fail(op, arg, f"must be >= {minimum}, got {value}")
    return value


def normalize_axis(op: str, arg: str, axis: object, rank: int) -> int:
    """`axis` in `[-rank, rank)` as a non-negative axis."""
    require_int(op, arg, axis)
    assert isinstance(axis, int)
    if not -rank <= axis < rank:
        raise fail(op, arg, f"= {axis} is out of range for rank {rank}")
    return axis % rank


def broadcast_shapes(op: str, shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """numpy broadcasting of several shapes (aligned at the trailing
    dimension; each pair equal or one of them 1)."""
    rank = max((len(s) for s in shapes.values()), default=0)
    out = [1] * rank
    owner = [""] * rank
    for arg, shape in shapes.items():
        for i, d in enumerate(shape):
            j = rank - len(shape) + i
            if d == out[j]:
                owner[j] = owner[j] or arg
            elif out[j] == 1:
                out[j], owner[j] = d, arg
            elif d != 1:
                raise fail(
                    op,
                    arg,
                    f"has shape {shape}, which does not broadcast with {owner[j]} "
                    f"(dimension {d} vs {out[j]})",
                )
    return tuple(out)


def broadcasts_to(
    op: str, arg: str, shape: tuple[int, ...], target: tuple[int, ...], target_name: str
) -> None:
    """`shape` broadcasts to exactly `target` (numpy broadcast_to rules)."""
    ok = len(shape) <= len(target) and all(
        d == 1 or d == t for d, t in zip(reversed(shape), reversed(target))
    )
    if not ok:
        raise fail(
            op, arg, f"has shape {shape}, which does not broadcast to {target_name} {target}"
        )


def static_shape(what: str, shape: object) -> tuple[int, ...]:
    """A shape as a tuple of static sizes >= 1 (`what` prefixes the error).
    Zero-sized dimensions are refused, as the dialect's tensor types refuse
    them (PootBase.td): there is nothing to compute on an empty tensor."""
    try:
        dims = tuple(int(d) for d in shape)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise TraceError(f"{what}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 1 for d in dims) or any(isinstance(d, bool) for d in shape):  # type: ignore[union-attr]
        raise TraceError(
            f"{what}: shape must hold static sizes >= 1 (no zero-sized dimension), "
            f"got {tuple(shape)}"  # type: ignore[arg-type]
        )
    return dims


def shape_size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
