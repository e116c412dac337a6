"""Element types the tracer speaks, by their short names.

A frontend dtype is one of the strings in `DTYPES`; they are exactly the MLIR
element type spellings (`str(ir.F32Type.get()) == "f32"`), so a dtype name
round-trips through the printed IR unchanged.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from ..errors import TraceError
from .. import ir

FLOAT_DTYPES: Final = ("f64", "f32", "f16", "bf16")
INT_DTYPES: Final = ("i32",)
BOOL_DTYPES: Final = ("i1",)
DTYPES: Final = FLOAT_DTYPES + INT_DTYPES + BOOL_DTYPES

# The most negative finite value of each float dtype. The fixed-capacity
# causal mask adds this ("a large negative past pos") rather than -inf: the
# exponent underflows to exactly 0 either way, but a finite value keeps
# `score + mask` free of inf arithmetic in the primitive decomposition.
LOWEST_FINITE: Final[dict[str, float]] = {
    "f64": float(np.finfo(np.float64).min),
    "f32": float(np.finfo(np.float32).min),  # -3.4028234663852886e38
    "f16": float(np.finfo(np.float16).min),  # -65504
    "bf16": -3.3895313892515355e38,  # (2 - 2**-7) * 2**127
}


def check_dtype(dtype: str, what: str) -> str:
    """Return `dtype` if it is a frontend dtype name, else raise TraceError."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise TraceError(f"{what}: unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return dtype


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def element_type(dtype: str) -> ir.Type:
    """The MLIR element type of a dtype name (needs an active Context)."""
    if dtype == "f64":
        return ir.F64Type.get()
    if dtype == "f32":
        return ir.F32Type.get()
    if dtype == "f16":
        return ir.F16Type.get()
    if dtype == "bf16":
        return ir.BF16Type.get()
    if dtype == "i32":
        return ir.IntegerType.get_signless(32)
    if dtype == "i1":
        return ir.IntegerType.get_signless(1)
    raise TraceError(f"unknown dtype {dtype!r}")


def tensor_type(shape: tuple[int, ...], dtype: str) -> ir.RankedTensorType:
    """`tensor<shape x dtype>` (needs an active Context)."""
    return ir.RankedTensorType.get(list(shape), element_type(dtype))


def dtype_of(type_: ir.Type) -> tuple[tuple[int, ...], str]:
    """(shape, dtype name) of a ranked tensor type."""
    ranked = ir.RankedTensorType(type_)
    name = str(ranked.element_type)
    if name not in DTYPES:
        raise TraceError(f"element type {name} is not one the tracer uses")
    return tuple(int(d) for d in ranked.shape), name
