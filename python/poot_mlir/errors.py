"""Typed errors shared by the frontend, oracle, compiler and runtimes.

Every refusal the project makes is one of these types, so callers can catch
exactly the failure they care about, and the message names the rule.
"""

from __future__ import annotations


class PootError(Exception):
    """Base class of every poot_mlir error."""


# --- tracing -----------------------------------------------------------------


class TraceError(PootError, ValueError):
    """A frontend call was given shapes/dtypes its op cannot take (raised at
    trace time; the message names the offending argument)."""


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


# --- running a step ----------------------------------------------------------


class ValidationFailure(PootError, RuntimeError):
    """A `#poot.slot<validation>` output was false: the step failed and
    published no state."""


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
    for cls in (AttentionLds, ScratchBytes, DtypeLowering, GridLimit):
        if cls.reason == reason:
            return cls
    return PlanRefusal
