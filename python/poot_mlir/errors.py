"""Typed errors shared by the frontend, oracle, compiler and runtimes.

Every refusal the project makes is one of these types, so callers can catch
exactly the failure they care about, and the message names the rule.
"""

from __future__ import annotations

import re
from typing import Any


class PootError(Exception):
    """Base class of every poot_mlir error."""


# --- tracing -----------------------------------------------------------------


class TraceError(PootError, ValueError):
    """A frontend call was given shapes/dtypes its op cannot take (raised at
    trace time; the message names the offending argument)."""


class TorchImportError(TraceError):
    """`frontend.torch_export` cannot import a torch.export program as
    written (an ATen op it does not map, dropout, symbolic shapes, state
    mutation). Raised before the importer returns anything; `op` is the ATen
    op (`aten.gelu.default`) or None, `node` the FX node's name, `source` the
    model's `file:line` from the node's stack trace (None when torch recorded
    none)."""

    def __init__(
        self, message: str, *, op: str | None = None, node: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(message)
        self.op = op
        self.node = node
        self.source = source


class UnsupportedTorchOp(TorchImportError):
    """An ATen op (or an argument of one: dropout_p > 0, gelu without the tanh
    approximation) the importer has no poot primitive chain for."""


class DynamicShapeError(TorchImportError):
    """The exported program has symbolic (dynamic) dimensions; poot steps are
    traced with static shapes only."""


# --- binding inputs to a step (checked before anything runs) ----------------


class BindError(PootError, ValueError):
    """An input was refused at bind time; no state was touched."""


class MissingInputError(BindError):
    """A function argument was not given a value."""


class ShapeBindError(BindError):
    """An input's shape or dtype does not match the argument's type."""


class RangeBindError(BindError):
    """A value lies outside the argument's declared `#poot.range`
    (a pos out of range, a read-map slot outside the pool, ...)."""


class WriteMapError(BindError):
    """A write map names a slot outside the pool, or one slot twice."""


class MissingStateError(MissingInputError):
    """A session was created without the initial value of some state; every
    runtime refuses it at creation, before anything is allocated or run.
    `missing` is the names of the states not given, in argument order."""

    def __init__(self, message: str, missing: "tuple[str, ...]" = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)


# --- the step's contract as a whole (checked when it is compiled or loaded) --


class ContractError(PootError, ValueError):
    """The step function's driver contract cannot be enforced as written;
    refused when the function is compiled or loaded, before any input is
    bound."""


class WriteMapPoolError(ContractError):
    """A write map has no pool size S to be checked against: it declares no
    range and no scatter_update uses its words as indices."""


# --- running a step ----------------------------------------------------------


class ClosedError(PootError, RuntimeError):
    """A session or artifact was used after `close()` (or after the artifact
    or device it runs on was closed); nothing ran."""


class ValidationFailure(PootError, RuntimeError):
    """A `#poot.slot<validation>` output was false: the step failed and
    published no state."""


class AllocationError(PootError, MemoryError):
    """A buffer the runtime allocates for a step (a result, the private copy
    of a state) could not be allocated: nothing ran and the session's state is
    as it was. `nbytes` is the size asked for, `buffer` names it. Also a
    MemoryError, so `except MemoryError` keeps working."""

    def __init__(self, message: str, *, buffer: str = "", nbytes: int = 0) -> None:
        super().__init__(message)
        self.buffer = buffer
        self.nbytes = int(nbytes)


# --- tensor-parallel steps (poot.all_reduce) -----------------------------------


class CommunicatorError(PootError, RuntimeError):
    """A tensor-parallel step cannot run with the communicator it was given:
    none for an artifact split over several ranks, one whose size or rank is
    not the artifact's, torch.distributed missing, or a collective that
    failed inside the step. The message names the fix."""


class RankRefused(PootError, RuntimeError):
    """Another rank of a tensor-parallel step refused it (its inputs failed
    to bind or validate): a step runs on every rank or on none, so this rank
    did not run it either and its state is as it was. `ranks` are the ranks
    that refused."""

    def __init__(self, message: str, ranks: "tuple[int, ...]" = ()) -> None:
        super().__init__(message)
        self.ranks = tuple(ranks)


class RankFailed(PootError, RuntimeError):
    """A rank started by `poot_mlir.runtime.distributed.spawn` raised or
    died; the message holds its traceback text. `rank` is that rank."""

    def __init__(self, message: str, rank: int) -> None:
        super().__init__(message)
        self.rank = rank


# --- artifacts on disk ----------------------------------------------------------


class ArtifactError(PootError):
    """An artifact directory cannot be loaded: no manifest, a manifest that is
    truncated, not JSON or missing a field, a file it lists that is missing
    or unreadable, or an artifact for another target. Raised before anything
    is loaded or run; `path` is the file (or directory) at fault."""

    def __init__(self, message: str, path: "str | None" = None) -> None:
        super().__init__(message)
        self.path = path


# --- the paged KV-cache driver (poot_mlir.driver) -----------------------------


class KVCacheError(PootError):
    """A paged-cache operation the driver cannot honour (an unknown or
    duplicate sequence, a sequence past the step's capacity, ...); nothing
    changed."""


class PoolExhausted(KVCacheError):
    """A block was needed, but no block is free and every cached block is
    pinned by a running sequence: nothing can be evicted."""


class SequenceFull(KVCacheError):
    """A sequence would grow past the longest one the step can attend over."""


# --- naming a device ---------------------------------------------------------


class UnknownDeviceError(PootError, KeyError):
    """A device preset or runtime backend was asked for by a name nobody
    knows; `known` lists the names that are. Also a KeyError (the preset table
    is a mapping), so `except KeyError` keeps working."""

    def __init__(self, message: str, name: str = "", known: "tuple[str, ...]" = ()) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.known = tuple(known)

    def __str__(self) -> str:
        # KeyError quotes its argument (a missing key's repr); this is a sentence.
        return self.message


# --- planning / lowering -----------------------------------------------------


class PlanRefusal(PootError):
    """The planner refused an op for a device; `reason` is the typed name.

    `location` is where the refused op came from (the user's source line for
    a traced module, `file:line:col`), or None when the IR carries none."""

    reason = "Plan"

    def __init__(self, message: str, location: str | None = None) -> None:
        super().__init__(f"{location}: {message}" if location else message)
        self.message = message
        self.location = location


class AttentionLds(PlanRefusal):
    """Not even one lane's running state fits the device's workgroup memory."""

    reason = "AttentionLds"


class ScratchBytes(PlanRefusal):
    """The split-KV scratch buffer exceeds what the device can allocate."""

    reason = "ScratchBytes"


class BufferBytes(PlanRefusal):
    """An operand or result of an attention is larger than one device buffer
    (or, on SPIR-V, has more elements than an array can count); on the CPU,
    a value the step computes (a temporary or a result) is larger than the
    device's `max_alloc_bytes`. `nbytes` is the buffer's size and `limit`
    the device's, when known."""

    def __init__(
        self, message: str, location: str | None = None, *, nbytes: int | None = None,
        limit: int | None = None,
    ) -> None:
        super().__init__(message, location)
        self.nbytes = nbytes
        self.limit = limit

    reason = "BufferBytes"


class DtypeLowering(PlanRefusal):
    """The target cannot lower an element type the program needs."""

    reason = "DtypeLowering"


class GridLimit(PlanRefusal):
    """The launch's workgroup count does not fit the device's 2-D grid."""

    reason = "GridLimit"


class CompileError(PootError):
    """A pass pipeline failed; the message carries MLIR's diagnostics, each
    with the location of the op it is about."""


class ParseError(CompileError, ValueError):
    """MLIR text given to the compiler does not parse or verify; the message
    names the line and column (`<string>:3:7` for text from a Python string)."""


class NotAModule(CompileError, TypeError):
    """The compiler was given an object that is neither a `poot_mlir.ir.Module`,
    MLIR text, nor the path of a .mlir file."""


def refusal_for(reason: str) -> type[PlanRefusal]:
    """The PlanRefusal subclass for a diagnostic's reason tag."""
    for cls in (AttentionLds, ScratchBytes, BufferBytes, DtypeLowering, GridLimit):
        if cls.reason == reason:
            return cls
    return PlanRefusal


# --- MLIR diagnostics as text (duck-typed: this module imports no MLIR) -------

_FILE_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)":(\d+):(\d+)(?: to [^)]*)?\)$')
#: The buffer name MLIR gives text parsed from a string.
_STRING_BUFFER = "-"


def where(location: Any) -> str | None:
    """`file:line:col` of an MLIR location (None when unknown). Text parsed
    from a Python string is called `<string>`, as Python names its own."""
    text = str(location)
    if text == "loc(unknown)":
        return None
    match = _FILE_LOC.match(text)
    if match:
        file = match.group(1)
        file = "<string>" if file == _STRING_BUFFER else file
        return f"{file}:{match.group(2)}:{match.group(3)}"
    return text[4:-1] if text.startswith("loc(") and text.endswith(")") else text


def diagnostic_lines(diag: Any) -> list[str]:
    """`<where>: <message>` for an MLIR diagnostic, then its notes (without the
    pass manager's 'see current operation' note, which prints the op again)."""
    place = where(diag.location)
    lines = [f"{place}: {diag.message}" if place else str(diag.message)]
    for note in diag.notes:
        if str(note.message).startswith("see current operation"):
            continue
        note_place = where(note.location)
        text = f"{note_place}: {note.message}" if note_place else str(note.message)
        lines.append(f"  note: {text}")
    return lines


def parse_error(error: Any, what: str) -> ParseError:
    """The ParseError for an MLIRError raised while parsing `what`."""
    detail = "\n".join(line for diag in error.error_diagnostics for line in diagnostic_lines(diag))
    return ParseError(f"cannot parse {what}:\n{detail or error}")

