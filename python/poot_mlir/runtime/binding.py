"""The binder every artifact runtime shares: inputs checked before anything runs.

It reads only an artifact manifest's `function` signature (plain JSON: names,
shapes, dtypes, slot kinds, state names, declared ranges, write-map pools),
never MLIR, and enforces the driver contract the oracle's binder enforces:

- every argument gets exactly one value (by its `poot.name`, else `arg{i}`; a
  state argument also answers to its state name), else `MissingInputError`;
- numpy arrays and scalars, and DLPack tensors in host memory (torch CPU
  tensors, JAX arrays, ...; read in place; a torch tensor that requires
  grad, such as a parameter, is read through `.detach()`), carry exactly
  the argument's shape and dtype (an f64 array for an f32 argument is
  refused, not rounded), else `ShapeBindError`. The one exception: int64
  values (torch's default integer, token ids) bind to an i32 argument when
  every value fits (converted, a copy), else `RangeBindError`. Untyped
  Python scalars and lists convert (ints exactly, floats rounding to nearest
  even; bools bind only to i1 arguments);
- every element of an argument with a declared `#poot.range` lies in it, else
  `RangeBindError`;
- a write map is a checked forward slot map: each word is -1 or a slot in
  `[0, S)` (S: the manifest's `pool`, always present), and no slot is named
  twice, else `WriteMapError`.

A refusal raises before any compiled code runs, so nothing is touched. A
session is refused at creation unless it is given the initial value of every
state (`check_session_state`: `MissingStateError` naming the missing ones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..oracle import dtypes
from . import dlpack
from ..errors import (
    BindError,
    MissingInputError,
    MissingStateError,
    RangeBindError,
    ShapeBindError,
    ValidationFailure,
    WriteMapError,
)

Inputs = Mapping[str, Any] | Sequence[Any]

def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of one of our element type names (the oracle's table:
    one owner for the element types)."""
    try:
        return dtypes.dtype_of_element(name)
    except TypeError:
        raise ValueError(f"unknown element type {name!r}") from None


_SHARD = re.compile(
    r"#poot\.shard<\s*dim\s*=\s*(\d+)\s*,\s*block\s*=\s*(\d+)\s*,\s*parts\s*=\s*(\d+)"
    r"(?:\s*,\s*segments\s*=\s*\[\s*([\d,\s]+?)\s*\])?\s*>"
)
_TENSOR_PARALLEL = re.compile(r"#poot\.tensor_parallel<\s*rank\s*=\s*(\d+)\s*,\s*degree\s*=\s*(\d+)\s*>")


@dataclass(frozen=True)
class Shard:
    """`#poot.shard<dim = D, block = B, parts = P>`: a tensor-parallel rank's
    value is block B of P equal blocks along dim D of the unsharded tensor,
    `unsharded[..., B*n:(B+1)*n, ...]` with `n = unsharded.shape[D] // P`.
    With `segments = [s0, s1, ...]` (a packed projection such as
    `qkv_proj = [q | k | v]`), dim D is those segments back to back, each
    split into P blocks, and the value is block B of every segment,
    concatenated. The one reader of the attribute (compiler manifests and
    the oracle both parse it here) and the one place that slices by it."""

    dim: int
    block: int
    parts: int
    segments: tuple[int, ...] = ()

    @staticmethod
    def parse(text: str) -> "Shard":
        match = _SHARD.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"cannot read shard attribute {text!r}")
        dim, block, parts, segments = match.groups()
        sizes = tuple(int(s) for s in segments.split(",")) if segments else ()
        return Shard(int(dim), int(block), int(parts), sizes)

    @staticmethod
    def from_json(entry: "Mapping[str, Any] | None") -> "Shard | None":
        if entry is None:
            return None
        segments = tuple(int(s) for s in entry.get("segments", ()))
        return Shard(int(entry["dim"]), int(entry["block"]), int(entry["parts"]), segments)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dim": self.dim, "block": self.block, "parts": self.parts}
        if self.segments:
            out["segments"] = list(self.segments)
        return out

    def pieces(self, full_shape: Sequence[int]) -> list[tuple[tuple[slice, ...], tuple[slice, ...]]]:
        """(index in the unsharded array, index in this rank's block) of each
        piece of the block: one per segment."""
        size = int(full_shape[self.dim])
        segments = self.segments or (size,)
        if sum(segments) != size or any(s % self.parts for s in segments):
            raise ShapeBindError(
                f"dim {self.dim} of an unsharded {tuple(full_shape)} does not split into "
                f"{self.parts} equal blocks" + (f" of segments {list(segments)}" if self.segments else "")
            )
        out, start, at = [], 0, 0
        for segment in segments:
            n = segment // self.parts
            full = [slice(None)] * len(full_shape)
            full[self.dim] = slice(start + self.block * n, start + (self.block + 1) * n)
            mine = [slice(None)] * len(full_shape)
            mine[self.dim] = slice(at, at + n)
            out.append((tuple(full), tuple(mine)))
            start, at = start + segment, at + n
        return out

    def take(self, full: np.ndarray) -> np.ndarray:
        """This rank's block of the unsharded array `full` (C-contiguous)."""
        pieces = [full[index] for index, _ in self.pieces(full.shape)]
        return np.ascontiguousarray(pieces[0] if len(pieces) == 1 else np.concatenate(pieces, self.dim))


def tensor_parallel_of(text: str) -> tuple[int, int]:
    """(rank, degree) of a printed `#poot.tensor_parallel<rank = R, degree = N>`."""
    match = _TENSOR_PARALLEL.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"cannot read tensor_parallel attribute {text!r}")
    return int(match.group(1)), int(match.group(2))


@dataclass(frozen=True)
class Port:
    """One argument or result of the step, as the manifest describes it."""

    role: str  # "arg" or "result"
    index: int
    key: str  # poot.name, else arg{i} / result{i}
    name: str | None
    shape: tuple[int, ...]
    element: str
    slot: str | None = None
    state: str | None = None
    range: tuple[int, int] | None = None
    pool: int | None = None  # write maps: the S their words stay below
    in_place_of: int | None = None  # results: the argument whose buffer it is
    shard: Shard | None = None  # tensor-parallel: which block of the unsharded value

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.element)

    def spec(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.element}>"

    def describe(self) -> str:
        """`'pos' (arg2)`, `arg2`, or `'k0' (arg0 (state 'k0'))`."""
        position = f"{self.role}{self.index}"
        if self.state is not None:
            position = f"{position} (state {self.state!r})"
        return position if self.name is None else f"{self.name!r} ({position})"

    @staticmethod
    def from_json(role: str, index: int, entry: Mapping[str, Any]) -> "Port":
        declared = entry.get("name")
        name = None if declared in (None, f"{role}{index}") else str(declared)
        bounds = entry.get("range")
        return Port(
            role=role,
            index=index,
            key=name if name is not None else f"{role}{index}",
            name=name,
            shape=tuple(int(d) for d in entry["shape"]),
            element=str(entry["dtype"]),
            slot=entry.get("slot"),
            state=entry.get("state"),
            range=None if bounds is None else (int(bounds[0]), int(bounds[1])),
            pool=None if entry.get("pool") is None else int(entry["pool"]),
            in_place_of=None if entry.get("in_place_of") is None else int(entry["in_place_of"]),
            shard=Shard.from_json(entry.get("shard")),
        )


@dataclass(frozen=True)
class Signature:
    """The step function's arguments and results."""

    name: str
    args: tuple[Port, ...]
    results: tuple[Port, ...]
    #: The validation prologue (run before a step that writes state in
    #: place): its function name and the step results it computes.
    validate: tuple[str, tuple[int, ...]] | None = None
    #: Bytes of the arena of temporaries the step, and its validation
    #: prologue, take as their last argument (CPU: poot-cpu-plan-arena;
    #: 0: none).
    arena_bytes: int = 0
    validate_arena_bytes: int = 0
    #: A tensor-parallel rank program (`#poot.tensor_parallel`): (rank,
    #: degree); None for a step of one rank.
    tensor_parallel: tuple[int, int] | None = None
    #: How many `poot.all_reduce` the step runs (each calls the runtime's
    #: collective, in program order).
    all_reduce_sites: int = 0

    @staticmethod
    def from_json(function: Mapping[str, Any]) -> "Signature":
        prologue = function.get("validate")
        parallel = function.get("tensor_parallel")
        return Signature(
            name=str(function["name"]),
            args=tuple(Port.from_json("arg", i, e) for i, e in enumerate(function["inputs"])),
            results=tuple(Port.from_json("result", i, e) for i, e in enumerate(function["outputs"])),
            validate=None
            if prologue is None
            else (str(prologue["name"]), tuple(int(i) for i in prologue["outputs"])),
            arena_bytes=int(function.get("arena_bytes", 0)),
            validate_arena_bytes=0 if prologue is None else int(prologue.get("arena_bytes", 0)),
            tensor_parallel=None
            if parallel is None
            else (int(parallel["rank"]), int(parallel["degree"])),
            all_reduce_sites=int(function.get("all_reduce_sites", 0)),
        )

    @property
    def degree(self) -> int:
        """How many ranks run this step together (1 unless tensor-parallel)."""
        return 1 if self.tensor_parallel is None else self.tensor_parallel[1]

    @property
    def donated(self) -> frozenset[int]:
        """Arguments the step writes in place (a result is their buffer)."""
        return frozenset(r.in_place_of for r in self.results if r.in_place_of is not None)

    @property
    def state_names(self) -> tuple[str, ...]:
        """State slot names of the arguments, in argument order."""
        return tuple(a.state for a in self.args if a.state is not None)


@dataclass
class Result:
    """What a step produced: every result in order, results by `poot.name`,
    and the state results by state name (what replaces the state)."""

    outputs: list[np.ndarray]
    named: dict[str, np.ndarray] = field(default_factory=dict)
    state: dict[str, np.ndarray] = field(default_factory=dict)


def frozen(array: np.ndarray) -> np.ndarray:
    """`array`, made read-only: a Session's carried state (writing it would
    change what the next step reads)."""
    array.flags.writeable = False
    return array


def step_inputs(inputs: Any) -> dict[str, Any]:
    """A Session step's inputs as a fresh dict: they are bound by name beside
    the carried state, so a positional list cannot say which argument is
    which."""
    if not isinstance(inputs, Mapping):
        raise BindError(
            f"Session.step takes a mapping from argument names to values (the state comes "
            f"from the session), got {type(inputs).__name__}"
        )
    return dict(inputs)


def check_session_state(
    state_names: Sequence[str], given: Iterable[str], specs: Mapping[str, str] | None = None
) -> None:
    """Refuse a session's initial state unless it names every state of the
    function and nothing else: an unknown name is a BindError, a missing one
    a MissingStateError naming every missing state (with its type from
    `specs`, state name -> `tensor<...>`, when given). Every runtime's
    Session calls this at creation, before anything is allocated or run."""
    given = set(given)
    unknown = sorted(given - set(state_names))
    if unknown:
        raise BindError(f"unknown state {unknown} (the function's state: {list(state_names)})")
    missing = tuple(name for name in state_names if name not in given)
    if missing:
        specs = specs or {}
        listed = ", ".join(f"{n!r}" + (f" ({specs[n]})" if n in specs else "") for n in missing)
        example = ", ".join(f"{n!r}: ..." for n in state_names)
        raise MissingStateError(
            f"no initial value for state {listed}: a session starts from every state the "
            f"function carries; pass each one when creating it, e.g. "
            f"artifact.session({{{example}}})",
            missing,
        )


# --- normalizing one value ------------------------------------------------------


def _round_float(raw: np.ndarray, element: str) -> np.ndarray:
    """float64 values rounded to nearest even in `element`, once (bf16 too:
    the oracle's rounding, not a double rounding through f32)."""
    return dtypes.round_float64(raw.astype(np.float64), numpy_dtype(element))


def _python_value(port: Port, value: Any) -> np.ndarray:
    """An untyped Python scalar / nested list converted to the port's dtype."""
    try:
        raw = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise ShapeBindError(f"{port.describe()}: cannot read {value!r} as an array") from exc
    if raw.dtype == object or raw.dtype.kind not in "biuf":
        raise ShapeBindError(f"{port.describe()}: expected numbers, got {raw.dtype}")
    if raw.dtype.kind == "b" and port.element != "i1":
        # True is not a position or a number: a bool where a value belongs
        # is a bug in the caller, not 1.
        raise ShapeBindError(f"{port.describe()}: expected {port.element} values, got bools {value!r}")
    if dtypes.is_float(port.dtype):
        return _round_float(raw, port.element)
    if raw.dtype.kind == "f":
        raise ShapeBindError(f"{port.describe()}: expected {port.element} values, got floats {value!r}")
    converted = raw.astype(port.dtype)
    if not np.array_equal(converted.astype(np.int64), raw.astype(np.int64)):
        raise ShapeBindError(f"{port.describe()}: {value!r} does not fit {port.element}")
    return converted


_I32 = np.iinfo(np.int32)


def _narrow_int64(port: Port, array: np.ndarray) -> np.ndarray:
    """int64 values (torch's default integer: token ids, positions) for an
    i32 argument, converted when every value fits. A value outside the
    argument's declared range, or outside i32, is a RangeBindError naming the
    argument (the same refusal an i32 value outside its range gets)."""
    if port.slot == "write_map":
        check_write_map(port, array)
    if port.range is not None:
        check_range(port, array)
    bad = np.flatnonzero((array < _I32.min) | (array > _I32.max))
    if bad.size:
        index = tuple(int(i) for i in np.unravel_index(int(bad[0]), array.shape))
        raise RangeBindError(
            f"{port.describe()}: int64 value {int(array[index])} at index {index} does not fit "
            f"{port.spec()} (int64 values bind to an i32 argument only when each fits "
            f"[{_I32.min}, {_I32.max}])"
        )
    return array.astype(np.int32)


def host_value(value: Any) -> Any:
    """A DLPack tensor in host memory (torch CPU, JAX, ...) as a numpy array
    over the same memory; any other value as it is. Raises BindError for a
    tensor in device memory."""
    if isinstance(value, (np.ndarray, np.generic)) or not dlpack.is_dlpack(value):
        return value
    try:
        return dlpack.host_array(value)
    except dlpack.NotHostMemory as error:
        raise BindError(str(error)) from None


def normalize(port: Port, value: Any) -> np.ndarray:
    """The value for `port` as a C-contiguous array of exactly its shape and
    dtype. A DLPack tensor (torch, JAX, ...) is read in place; it is copied
    only when it is not C-contiguous, like a numpy array."""
    try:
        value = host_value(value)
    except BindError as error:
        raise BindError(f"{port.describe()}: {error}") from None
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype == np.int64 and port.dtype == np.int32:
            array = _narrow_int64(port, array)
        if array.dtype != port.dtype:
            raise ShapeBindError(
                f"{port.describe()}: dtype {array.dtype} does not match {port.spec()} "
                f"(expected {port.dtype})"
            )
    else:
        array = _python_value(port, value)
    if array.shape != port.shape:
        raise ShapeBindError(f"{port.describe()}: shape {array.shape} does not match {port.spec()}")
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one.)
    return array if array.flags.c_contiguous else array.copy(order="C")


# --- the checks -----------------------------------------------------------------


def check_range(port: Port, array: np.ndarray) -> None:
    """Every element lies in the declared inclusive range."""
    lo, hi = port.range  # type: ignore[misc]
    wide = array.astype(np.int64)
    bad = np.flatnonzero((wide < lo) | (wide > hi))
    if bad.size:
        index = tuple(int(i) for i in np.unravel_index(int(bad[0]), wide.shape))
        raise RangeBindError(
            f"{port.describe()}: value {int(wide[index])} at index {index} is outside "
            f"its declared range #poot.range<{lo}, {hi}>"
        )


def check_write_map(port: Port, array: np.ndarray) -> None:
    """A forward slot map: each word is -1 or a pool slot in [0, S), and no
    slot appears twice."""
    words = array.astype(np.int64).reshape(-1)
    pool = port.pool
    if pool is None:
        # compile_* always writes one (compiler.signature refuses a write map
        # without a pool); a manifest without it cannot be checked.
        raise WriteMapError(
            f"{port.describe()}: the artifact's manifest gives this write map no pool size"
        )
    limit = f"[0, {pool})"
    bad = (words < -1) | (words >= pool)
    if np.any(bad):
        flat = int(np.flatnonzero(bad)[0])
        index = tuple(int(i) for i in np.unravel_index(flat, array.shape))
        raise WriteMapError(
            f"{port.describe()}: word {int(words[flat])} at index {index} is neither -1 nor "
            f"a pool slot in {limit}"
        )
    slots = words[words != -1]
    unique, counts = np.unique(slots, return_counts=True)
    if np.any(counts > 1):
        twice = int(unique[counts > 1][0])
        where = [int(i) for i in np.nonzero(words == twice)[0]]
        raise WriteMapError(f"{port.describe()}: slot {twice} is named more than once (at {where})")


def _accepted_keys(signature: Signature) -> set[str]:
    keys = {port.key for port in signature.args}
    keys.update(port.state for port in signature.args if port.state is not None)
    return keys


def _lookup(inputs: Mapping[str, Any], port: Port) -> Any:
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


def bind(signature: Signature, inputs: Inputs) -> list[np.ndarray]:
    """Check `inputs` against the signature; the argument arrays in order
    (C-contiguous, exact dtype). Raises the BindError subclass of the first
    refusal."""
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - _accepted_keys(signature))
        if unknown:
            expected = ", ".join(port.key for port in signature.args)
            raise BindError(f"unknown inputs {unknown} (arguments: {expected})")
        raw = [_lookup(inputs, port) for port in signature.args]
    else:
        raw = list(inputs)
        if len(raw) < len(signature.args):
            missing = signature.args[len(raw)]
            raise MissingInputError(
                f"{len(raw)} inputs for {len(signature.args)} arguments: no value for "
                f"{missing.describe()}"
            )
        if len(raw) > len(signature.args):
            raise BindError(f"{len(raw)} inputs for {len(signature.args)} arguments")
    arrays = [normalize(port, value) for port, value in zip(signature.args, raw)]
    for port, array in zip(signature.args, arrays):
        if port.slot == "write_map":
            check_write_map(port, array)
        if port.range is not None:
            check_range(port, array)
    return arrays


def check_validation(signature: Signature, outputs: Sequence[np.ndarray]) -> None:
    """Raise ValidationFailure when a validation output is false."""
    for port, value in zip(signature.results, outputs):
        if port.slot == "validation" and not bool(np.all(value)):
            raise ValidationFailure(
                f"validation output {port.describe()} of @{signature.name} is false: "
                "the step failed and publishes no state"
            )


def package(signature: Signature, outputs: list[np.ndarray]) -> Result:
    """Sort a step's outputs into a Result."""
    named = {p.key: v for p, v in zip(signature.results, outputs) if p.name is not None}
    state = {p.state: v for p, v in zip(signature.results, outputs) if p.state is not None}
    return Result(outputs, named, state)
