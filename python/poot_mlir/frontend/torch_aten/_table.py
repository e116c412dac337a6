"""The registry of the ATen op table (`torch_aten`): the result metadata
an emitter gets, its context, the `@aten` decorator that fills `EMITTERS`
and `REFUSALS`, the ops that compute nothing, and the small helpers every
op family uses (dtype conversion, axis arguments, result reshapes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .. import primitives as P
from ..dtypes import FLOAT_DTYPES
from ..tensor import Tensor


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
        # The FX node being emitted and the values of the nodes before it: an
        # emitter that reads how an operand was computed (`index_copy`'s
        # contiguous `arange + start` positions) looks there.
        self.node: Any = None
        self.env: dict[str, Any] = {}


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


# Ops torch.export records that compute nothing for a stateless step.
IGNORED = frozenset({"_assert_tensor_metadata", "_assert_async", "_assert_scalar"})
