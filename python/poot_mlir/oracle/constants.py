"""Dense elements attributes -> numpy arrays.

MLIR's Python API hands most dense attributes to numpy through the buffer
protocol, but not bf16 (`np.array(attr)` raises "Unsupported floating-point
type", and so does indexing). A bf16 attribute is therefore read from its
printed form: a splat through `get_splat_value()`, more than a hundred
elements as the raw little-endian hex blob the printer emits, and a short one
as its literal list (decimal values that round-trip to the element, or
`0x`-prefixed bit patterns for NaN and infinities).
"""

from __future__ import annotations

import re

import numpy as np

from . import dtypes

_HEX_BLOB = re.compile(r'^dense<"0x([0-9A-Fa-f]*)">')
_LITERAL = re.compile(r"^dense<(.*)>\s*:\s*tensor<[^>]*>$", re.S)


def _splat_value(attr: object) -> float | int | bool:
    """The Python value of a splat attribute's element."""
    value = attr.get_splat_value()  # type: ignore[attr-defined]
    return value.value


def _parse_literal(text: str, dtype: np.dtype, count: int) -> np.ndarray:
    """Elements of a printed `dense<[...]>` literal, in row-major order."""
    match = _LITERAL.match(text.strip())
    if match is None:
        raise ValueError(f"cannot read dense literal {text[:80]!r}")
    body = match.group(1).replace("[", " ").replace("]", " ")
    tokens = [tok.strip() for tok in body.split(",") if tok.strip()]
    if len(tokens) != count:
        raise ValueError(f"dense literal has {len(tokens)} elements, expected {count}")
    bits = np.zeros(count, dtype=np.uint64)
    values = np.zeros(count, dtype=np.float64)
    is_bits = np.zeros(count, dtype=bool)
    for i, tok in enumerate(tokens):
        if tok.lower().startswith("0x"):
            bits[i] = int(tok, 16)
            is_bits[i] = True
        else:
            values[i] = float(tok)
    width = np.dtype(f"u{dtype.itemsize}")
    out = dtypes.round_float64(values, dtype)
    out[is_bits] = bits[is_bits].astype(width).view(dtype)
    return out


def dense_to_numpy(attr: object, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The value of a `DenseElementsAttr` as a fresh array of `shape`/`dtype`."""
    count = int(np.prod(shape, dtype=np.int64))
    if getattr(attr, "is_splat", False):
        value = _splat_value(attr)
        if dtypes.is_float(dtype):
            elem = dtypes.round_float64(np.array([value], dtype=np.float64), dtype)
            return np.full(shape, elem[0], dtype=dtype)
        return np.full(shape, value, dtype=dtype)
    if dtype != dtypes.BF16:
        array = np.array(attr)
        if array.dtype != dtype:
            raise TypeError(f"dense attribute read as {array.dtype}, expected {dtype}")
        return array.reshape(shape).copy()
    text = str(attr)
    blob = _HEX_BLOB.match(text)
    if blob is not None:
        raw = bytes.fromhex(blob.group(1))
        flat = np.frombuffer(raw, dtype=np.dtype("<u2")).view(dtype)
        if flat.size != count:
            raise ValueError(f"hex blob holds {flat.size} elements, expected {count}")
        return flat.reshape(shape).copy()
    return _parse_literal(text, dtype, count).reshape(shape)
