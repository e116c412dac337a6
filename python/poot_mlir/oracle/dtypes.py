"""Element types of poot tensors as numpy dtypes, and exact conversions.

The oracle stores every tensor as a numpy array whose dtype *is* the MLIR
element type (`bf16` through `ml_dtypes.bfloat16`). Conversions between them
follow `poot.convert` exactly; numpy and ml_dtypes do not always do that on
their own (ml_dtypes rounds float64 -> bfloat16 and int32 -> bfloat16 through
float32, which rounds twice), so every conversion the oracle makes goes
through `convert` here.
"""

from __future__ import annotations

from typing import Final

import ml_dtypes
import numpy as np

BF16: Final = np.dtype(ml_dtypes.bfloat16)
F16: Final = np.dtype(np.float16)
F32: Final = np.dtype(np.float32)
F64: Final = np.dtype(np.float64)
I32: Final = np.dtype(np.int32)
I1: Final = np.dtype(np.bool_)

#: MLIR element type spelling -> numpy dtype.
ELEMENT_DTYPES: Final[dict[str, np.dtype]] = {
    "f64": F64,
    "f32": F32,
    "f16": F16,
    "bf16": BF16,
    "i32": I32,
    "i1": I1,
}

FLOAT_DTYPES: Final = frozenset({F64, F32, F16, BF16})
#: Float types too narrow for numpy to accumulate in faithfully by default.
HALF_DTYPES: Final = frozenset({F16, BF16})

_I32_MIN: Final = float(np.iinfo(np.int32).min)
_I32_MAX: Final = float(np.iinfo(np.int32).max)


def dtype_of_element(element: str) -> np.dtype:
    """The numpy dtype of an MLIR element type spelled `element` ("f32")."""
    try:
        return ELEMENT_DTYPES[element]
    except KeyError:
        raise TypeError(
            f"poot tensors hold f64, f32, f16, bf16, i32 or i1; got {element!r}"
        ) from None


def element_of_dtype(dtype: np.dtype) -> str:
    """The MLIR spelling of a numpy dtype the oracle uses."""
    for name, candidate in ELEMENT_DTYPES.items():
        if candidate == dtype:
            return name
    raise TypeError(f"no poot element type for numpy dtype {dtype}")


def is_float(dtype: np.dtype) -> bool:
    """True for the four float element types."""
    return np.dtype(dtype) in FLOAT_DTYPES


def _round_f64_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd (truncate, then set the last bit when
    the result is inexact). Rounding that to a narrower format with the same
    exponent range (bfloat16) is then correctly rounded: round-to-odd at 24
    bits keeps enough information for a single correct rounding to 8 bits."""
    nearest = x.astype(F32)
    wide = nearest.astype(F64)
    inexact = (wide != x) & np.isfinite(nearest)
    even = (nearest.view(np.uint32) & np.uint32(1)) == 0
    toward = np.where(x > wide, np.float32(np.inf), np.float32(-np.inf))
    stepped = np.nextafter(nearest, toward)
    return np.where(inexact & even, stepped, nearest)


def round_float64(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round float64 values to the float `dtype`, to nearest even, once."""
    x = np.asarray(x, dtype=F64)
    dtype = np.dtype(dtype)
    if dtype == F64:
        return x.copy()
    if dtype == BF16:
        with np.errstate(all="ignore"):
            return _round_f64_to_odd_f32(x).astype(BF16)
    # numpy converts float64 straight to float32 / float16 with one rounding.
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def _float_to_i32(x: np.ndarray) -> np.ndarray:
    """Truncate toward zero. Outside the documented domain the oracle
    saturates (+-inf and out-of-range values to the i32 bounds) and maps NaN to
    0, so the result never depends on the host's undefined cast."""
    wide = np.asarray(x).astype(F64)
    with np.errstate(all="ignore"):
        truncated = np.trunc(wide)
        clipped = np.clip(np.nan_to_num(truncated, nan=0.0), _I32_MIN, _I32_MAX)
    return clipped.astype(I32)


def convert(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`poot.convert`: float -> float rounds to nearest even, int -> float is
    exact where representable (then rounds once), float -> int truncates toward
    zero, i1 maps to 0/1. Converting to i1 tests `!= 0` (the oracle's choice;
    the op leaves it open)."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x.copy()
    if dtype == I1:
        return x != 0
    if x.dtype == I1:
        return x.astype(dtype)
    if dtype == I32:
        return _float_to_i32(x)
    # Target is a float: every source (i32 and every float type) widens to
    # float64 exactly, then rounds once.
    return round_float64(x.astype(F64), dtype)


def compute_dtype(dtype: np.dtype, reference: bool) -> np.dtype:
    """The dtype a value of element type `dtype` is held in: its own, or
    float64 for every float type in reference mode."""
    dtype = np.dtype(dtype)
    if reference and dtype in FLOAT_DTYPES:
        return F64
    return dtype
