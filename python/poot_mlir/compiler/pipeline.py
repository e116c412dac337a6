"""Running pass pipelines from Python, with MLIR errors turned into types.

Every pipeline the compiler runs goes through `run_pipeline`, so a planner
refusal surfaces as its PlanRefusal subclass (AttentionLds, ScratchBytes,
DtypeLowering, GridLimit) and any other failure as CompileError, each with
MLIR's diagnostics and the location of the op they are about -- for a
traced module, the user's Python line. `parse_module` is the one way the
compiler reads its input: it keeps those locations (a Module is copied with
its debug info, not re-parsed from plain text) and turns unparseable text
into `errors.ParseError`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from .. import errors
from ..ir import Context, DiagnosticSeverity, Location, MLIRError, Module
from ..passmanager import PassManager
from .trace import PassTrace, captured_stderr, configure

_REFUSAL = re.compile(r"^(AttentionLds|ScratchBytes|DtypeLowering|GridLimit):")
_FILE_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)":(\d+):(\d+)(?: to [^)]*)?\)$')
#: The buffer name MLIR gives text parsed from a string.
_STRING_BUFFER = "-"


def where(location: "Location | str") -> str | None:
    """`file:line:col` of a location (None when unknown). Text parsed from a
    Python string is called `<string>`, as Python names its own."""
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
    """`<where>: <message>` for a diagnostic, then its notes (without the pass
    manager's 'see current operation' note, which prints the op again)."""
    place = where(diag.location)
    lines = [f"{place}: {diag.message}" if place else str(diag.message)]
    for note in diag.notes:
        if str(note.message).startswith("see current operation"):
            continue
        note_place = where(note.location)
        text = f"{note_place}: {note.message}" if note_place else str(note.message)
        lines.append(f"  note: {text}")
    return lines


def parse_module(module: "Module | str | Path", context: Context | None = None) -> Module:
    """A fresh, independent copy of `module` in `context` (a new one by
    default): a Module (printed with its locations and parsed again, so
    diagnostics keep pointing at the user's source), MLIR text, or the path
    of a `.mlir` file. Raises `errors.ParseError` when the text does not
    parse, `errors.NotAModule` for any other object."""
    ctx = context or Context()
    if isinstance(module, Module):
        text, source = module.operation.get_asm(enable_debug_info=True, assume_verified=True), None
    elif isinstance(module, str):
        text, source = module, None
    elif isinstance(module, Path):
        if not module.is_file():
            raise errors.ParseError(f"{module}: no such file")
        text, source = None, module
    else:
        raise errors.NotAModule(
            "expected a poot_mlir.ir.Module, MLIR text or a pathlib.Path of a .mlir file, "
            f"got {type(module).__name__}"
        )
    with ctx:
        try:
            return Module.parse(text) if source is None else Module.parseFile(str(source))
        except MLIRError as error:
            detail = "\n".join(
                line for diag in error.error_diagnostics for line in diagnostic_lines(diag)
            )
            what = f"{source}" if source is not None else "the module text"
            raise errors.ParseError(f"cannot parse {what}:\n{detail or error}") from None


def _typed_error(error: MLIRError, pipeline: str) -> errors.PootError:
    """The PlanRefusal subclass of a planner refusal, else CompileError."""
    for diag in error.error_diagnostics:
        match = _REFUSAL.match(str(diag.message))
        if match:
            cls = errors.refusal_for(match.group(1))
            return cls(str(diag.message), location=where(diag.location))
    detail = "\n".join(line for diag in error.error_diagnostics for line in diagnostic_lines(diag))
    name = re.sub(r"^builtin\.module\(", "", pipeline).split("{")[0].split("(")[0].rstrip(")")
    return errors.CompileError(f"{name} failed (pipeline {pipeline}):\n{detail or error}")


def run_pipeline(
    module: Module,
    pipeline: str,
    *,
    trace: PassTrace | None = None,
    remarks: list[str] | None = None,
) -> None:
    """Runs `pipeline` (textual, anchored on builtin.module) on `module` in
    place. With `remarks`, every remark the passes emit is appended to it as
    `<where>: <message>`; with `trace`, the IR dumps and timings it asks for
    are recorded there."""
    context = module.context

    def on_diagnostic(diag: Any) -> bool:
        if remarks is not None and diag.severity == DiagnosticSeverity.REMARK:
            remarks.append("\n".join(diagnostic_lines(diag)))
            return True
        return False  # errors go to the MLIRError the pass manager raises

    with context:
        try:
            pm = PassManager.parse(pipeline)
        except ValueError as error:
            raise errors.CompileError(f"cannot parse the pipeline {pipeline!r}: {error}") from None
        # The pass manager does not release the GIL: a Python diagnostic
        # handler called from a worker thread would wait forever. Module-scope
        # IR printing needs one thread too (MLIR aborts otherwise).
        single_thread = remarks is not None or (trace is not None and trace.wants_ir)
        handler = None
        if single_thread:
            context.enable_multithreading(False)
        if remarks is not None:
            handler = context.attach_diagnostic_handler(on_diagnostic)
        try:
            if trace is None:
                pm.run(module.operation)
            else:
                configure(pm, trace)
                captured: list[str] = []
                try:
                    with captured_stderr() as captured:
                        try:
                            pm.run(module.operation)
                        finally:
                            del pm  # it prints the timing report when destroyed
                finally:
                    # Kept on failure too: the IR up to the failing pass.
                    rest = trace._record(pipeline, captured[0] if captured else "")
                    if rest.strip():
                        sys.stderr.write(rest)
        except MLIRError as error:
            raise _typed_error(error, pipeline) from None
        finally:
            if handler is not None:
                handler.detach()
            if single_thread:
                context.enable_multithreading(True)
