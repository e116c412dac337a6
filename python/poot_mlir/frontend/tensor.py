"""`Tensor`: a traced value with its static shape and dtype.

A Tensor wraps one SSA value of the function being traced. Arithmetic on it
emits poot ops (`+ - * / @`, unary `-`) with numpy broadcasting; a Python
scalar operand becomes a 0-d constant of the tensor's dtype. There is no
`==`/`<` overloading: comparisons are ops (`ops.gt(a, b)`), and a Tensor stays
hashable by identity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from .. import ir
from .dtypes import dtype_of

if TYPE_CHECKING:
    from .tracer import Tracer

Scalar = Union[int, float, bool]


class Tensor:
    """One traced value: `.shape` (tuple of ints), `.dtype` (e.g. "f32").

    `.declared_range` is the inclusive `(lo, hi)` of an argument declared with
    `#poot.range` (None otherwise); composites use it to refuse a program the
    binder could never run correctly (a `pos` past the cache, a read map
    reaching outside the pool).
    """

    __slots__ = ("value", "tracer", "shape", "dtype", "declared_range", "name")

    def __init__(
        self,
        tracer: "Tracer",
        value: ir.Value,
        *,
        declared_range: tuple[int, int] | None = None,
        name: str | None = None,
    ) -> None:
        self.tracer = tracer
        self.value = value
        self.shape, self.dtype = dtype_of(value.type)
        self.declared_range = declared_range
        self.name = name

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        dims = "x".join(str(d) for d in self.shape)
        return f"<Tensor{label} {dims + 'x' if dims else ''}{self.dtype}>"

    # The operators import lazily: `primitives` imports this module.
    def __add__(self, other: "Tensor | Scalar") -> "Tensor":
        from . import primitives

        return primitives.add(self, other)

    def __radd__(self, other: Scalar) -> "Tensor":
        from . import primitives

        return primitives.add(other, self)

    def __sub__(self, other: "Tensor | Scalar") -> "Tensor":
        from . import primitives

        return primitives.sub(self, other)

    def __rsub__(self, other: Scalar) -> "Tensor":
        from . import primitives

        return primitives.sub(other, self)

    def __mul__(self, other: "Tensor | Scalar") -> "Tensor":
        from . import primitives

        return primitives.mul(self, other)

    def __rmul__(self, other: Scalar) -> "Tensor":
        from . import primitives

        return primitives.mul(other, self)

    def __truediv__(self, other: "Tensor | Scalar") -> "Tensor":
        from . import primitives

        return primitives.div(self, other)

    def __rtruediv__(self, other: Scalar) -> "Tensor":
        from . import primitives

        return primitives.div(other, self)

    def __matmul__(self, other: "Tensor") -> "Tensor":
        from . import primitives

        return primitives.matmul(self, other)

    def __neg__(self) -> "Tensor":
        from . import primitives

        return primitives.neg(self)

    def __bool__(self) -> bool:
        from ..errors import TraceError

        raise TraceError(
            "a traced Tensor has no Python truth value (its value is only known at run time); "
            "use ops.select for data-dependent choices"
        )
