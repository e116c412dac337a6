"""Running pass pipelines from Python, with MLIR errors turned into types.

Every pipeline the compiler runs goes through `run_pipeline`, so a planner
refusal surfaces as its PlanRefusal subclass (AttentionLds, ScratchBytes,
BufferBytes, DtypeLowering, GridLimit) and any other failure as
CompileError, both with MLIR's diagnostics in the message.
"""

from __future__ import annotations

import re

from .. import errors
from ..ir import Context, MLIRError, Module
from ..passmanager import PassManager

_REFUSAL = re.compile(r"^(AttentionLds|ScratchBytes|BufferBytes|DtypeLowering|GridLimit):")


def parse_module(module: "Module | str", context: Context | None = None) -> Module:
    """A fresh, independent copy of `module` (text or Module) in `context`."""
    text = module if isinstance(module, str) else str(module)
    ctx = context or Context()
    with ctx:
        return Module.parse(text)


def _messages(error: MLIRError) -> list[str]:
    out = []
    for diag in error.error_diagnostics:
        out.append(str(diag.message))
        out.extend(str(note.message) for note in diag.notes)
    return out


def run_pipeline(module: Module, pipeline: str) -> None:
    """Runs `pipeline` (textual, anchored on builtin.module) in place."""
    with module.context:
        try:
            pm = PassManager.parse(pipeline)
        except (MLIRError, ValueError) as error:
            # A pipeline or option the registry refuses (an unknown enum
            # value, a malformed chip): the parser's message says which.
            raise errors.CompileError(f"pipeline {pipeline!r} does not parse: {error}") from None
        try:
            pm.run(module.operation)
        except MLIRError as error:
            messages = _messages(error)
            for message in messages:
                match = _REFUSAL.match(message)
                if match:
                    raise errors.refusal_for(match.group(1))(message) from None
            detail = "\n".join(messages) or str(error)
            raise errors.CompileError(f"pipeline {pipeline!r} failed:\n{detail}") from None
