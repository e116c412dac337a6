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


# --- the step's contract as a whole (checked when it is compiled or loaded) --


class ContractError(PootError, ValueError):
    """The step function's driver contract cannot be enforced as written;
    refused when the function is compiled or loaded, before any input is
    bound."""


class WriteMapPoolError(ContractError):
    """A write map has no pool size S to be checked against: it declares no
    range and no scatter_update uses its words as indices."""


# --- running a step ----------------------------------------------------------


class ValidationFailure(PootError, RuntimeError):
    """A `#poot.slot<validation>` output was false: the step failed and
    published no state."""


# --- planning / lowering -----------------------------------------------------


class PlanRefusal(PootError):
    """The planner refused an op for a device; `reason` is the typed name."""

    reason = "Plan"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AttentionLds(PlanRefusal):
    """Not even one lane's running state fits the device's workgroup memory."""

    reason = "AttentionLds"


class ScratchBytes(PlanRefusal):
    """The split-KV scratch buffer exceeds what the device can allocate."""

    reason = "ScratchBytes"


class BufferBytes(PlanRefusal):
    """An operand or result of an attention is larger than one device buffer
    (or, on SPIR-V, has more elements than an array can count)."""

    reason = "BufferBytes"


class DtypeLowering(PlanRefusal):
    """The target cannot lower an element type the program needs."""

    reason = "DtypeLowering"


class GridLimit(PlanRefusal):
    """The launch's workgroup count does not fit the device's 2-D grid."""

    reason = "GridLimit"


class CompileError(PootError):
    """A pass pipeline failed; the message carries MLIR's diagnostics."""


def refusal_for(reason: str) -> type[PlanRefusal]:
    """The PlanRefusal subclass for a diagnostic's reason tag."""
    for cls in (AttentionLds, ScratchBytes, BufferBytes, DtypeLowering, GridLimit):
        if cls.reason == reason:
            return cls
    return PlanRefusal
