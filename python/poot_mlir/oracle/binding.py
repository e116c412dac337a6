"""Bind inputs to a function's arguments, refusing bad ones before anything runs.

This is the oracle's copy of the binder contract every runtime enforces:
each argument gets exactly one value of its declared shape and element type,
every declared `#poot.range` holds, and every write map is a checked forward
slot map (no word outside the pool but -1, no slot twice). A refusal raises a
`BindError` subclass and touches nothing.

Typing rule: numpy arrays and numpy scalars must carry the argument's dtype
exactly (a float64 array for an f32 argument is refused, not rounded).
Python scalars and nested lists are untyped, so they are converted to the
argument's dtype: ints must convert exactly, floats round to nearest even,
and bools bind only to i1 arguments (True is not a position).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import BindError, MissingInputError, RangeBindError, ShapeBindError, WriteMapError
from . import dtypes
from .program import Port, Program

Inputs = Mapping[str, Any] | Sequence[Any]


def _python_value(port: Port, value: Any) -> np.ndarray:
    """Convert an untyped Python scalar / nested list to the port's dtype."""
    dtype = port.spec.dtype
    try:
        raw = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise ShapeBindError(f"{port.describe()}: cannot read {value!r} as an array") from exc
    if raw.dtype == object or raw.dtype.kind not in "biuf":
        raise ShapeBindError(f"{port.describe()}: expected numbers, got {raw.dtype}")
    if raw.dtype.kind == "b" and port.spec.element != "i1":
        # True is not a position or a number: a bool where a value belongs
        # is a bug in the caller, not 1.
        raise ShapeBindError(
            f"{port.describe()}: expected {port.spec.element} values, got bools {value!r}"
        )
    if dtypes.is_float(dtype):
        return dtypes.round_float64(raw.astype(np.float64), dtype)
    if raw.dtype.kind == "f":
        raise ShapeBindError(
            f"{port.describe()}: expected {port.spec.element} values, got floats {value!r}"
        )
    converted = raw.astype(dtype)
    if not np.array_equal(converted.astype(np.int64), raw.astype(np.int64)):
        raise ShapeBindError(f"{port.describe()}: {value!r} does not fit {port.spec.element}")
    return converted


def normalize(port: Port, value: Any) -> np.ndarray:
    """The input for `port` as an array of exactly its shape and dtype."""
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype != port.spec.dtype:
            raise ShapeBindError(
                f"{port.describe()}: dtype {array.dtype} does not match {port.spec} "
                f"(expected {port.spec.dtype})"
            )
    else:
        array = _python_value(port, value)
    if array.shape != port.spec.shape:
        raise ShapeBindError(f"{port.describe()}: shape {array.shape} does not match {port.spec}")
    return array


def _check_range(port: Port, array: np.ndarray) -> None:
    """Every element lies in the declared inclusive range."""
    lo, hi = port.range  # type: ignore[misc]
    wide = array.astype(np.int64)
    # Flat search, then unravel: np.argwhere loses the hit of a 0-d array.
    bad = np.flatnonzero((wide < lo) | (wide > hi))
    if bad.size:
        index = tuple(int(i) for i in np.unravel_index(int(bad[0]), wide.shape))
        raise RangeBindError(
            f"{port.describe()}: value {int(wide[index])} at index {index} is outside "
            f"its declared range #poot.range<{lo}, {hi}>"
        )


def _check_write_map(port: Port, array: np.ndarray, pool: int) -> None:
    """A forward slot map: each word is -1 or a pool slot in [0, S), and no
    slot appears twice."""
    words = array.astype(np.int64).reshape(-1)
    limit = f"[0, {pool})"
    for flat, word in enumerate(words.tolist()):
        if word == -1:
            continue
        if word < 0 or word >= pool:
            index = tuple(int(i) for i in np.unravel_index(flat, array.shape))
            raise WriteMapError(
                f"{port.describe()}: word {word} at index {index} is neither -1 nor a "
                f"pool slot in {limit}"
            )
    slots = words[words != -1]
    unique, counts = np.unique(slots, return_counts=True)
    if np.any(counts > 1):
        twice = int(unique[counts > 1][0])
        where = [int(i) for i in np.nonzero(words == twice)[0]]
        raise WriteMapError(f"{port.describe()}: slot {twice} is named more than once (at {where})")


def _lookup(program: Program, inputs: Mapping[str, Any], port: Port) -> Any:
    """The value bound to `port`: by its key (poot.name or arg{i}); a state
    argument also answers to its state name."""
    names = [port.key]
    if port.state is not None and port.state != port.key:
        names.append(port.state)
    given = [n for n in names if n in inputs]
    if not given:
        alias = f" or state {port.state!r}" if port.state is not None else ""
        raise MissingInputError(f"no value for argument {port.describe()}{alias}")
    if len(given) > 1:
        raise BindError(f"argument {port.describe()} is given twice, as {given}")
    return inputs[given[0]]


def _accepted_keys(program: Program) -> set[str]:
    keys = {port.key for port in program.args}
    keys.update(port.state for port in program.args if port.state is not None)
    return keys


def bind(program: Program, inputs: Inputs) -> list[np.ndarray]:
    """Check `inputs` against the signature; the argument arrays in order.

    Raises MissingInputError, ShapeBindError, RangeBindError or WriteMapError
    (all BindErrors) for the first argument that is refused.
    """
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - _accepted_keys(program))
        if unknown:
            expected = ", ".join(port.key for port in program.args)
            raise BindError(f"unknown inputs {unknown} (arguments: {expected})")
        raw = [_lookup(program, inputs, port) for port in program.args]
    else:
        raw = list(inputs)
        if len(raw) < len(program.args):
            missing = program.args[len(raw)]
            raise MissingInputError(
                f"{len(raw)} inputs for {len(program.args)} arguments: no value for "
                f"{missing.describe()}"
            )
        if len(raw) > len(program.args):
            raise BindError(f"{len(raw)} inputs for {len(program.args)} arguments")
    arrays = [normalize(port, value) for port, value in zip(program.args, raw)]
    for port, array in zip(program.args, arrays):
        if port.slot == "write_map":
            _check_write_map(port, array, program.write_map_pools[port.index])
        if port.range is not None:
            _check_range(port, array)
    return arrays
