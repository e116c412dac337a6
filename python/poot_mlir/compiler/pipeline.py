"""Running pass pipelines from Python, with MLIR errors turned into types.

Every pipeline the compiler runs goes through `run_pipeline`, so a planner
refusal surfaces as its PlanRefusal subclass (AttentionLds, ScratchBytes,
BufferBytes, DtypeLowering, GridLimit) and any other failure as CompileError, each with
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
from ..errors import diagnostic_lines, where  # noqa: F401  (re-exported)
from ..ir import Context, DiagnosticSeverity, MLIRError, Module
from ..passmanager import PassManager
from .trace import PassTrace, captured_stderr, configure

_REFUSAL = re.compile(r"^(AttentionLds|ScratchBytes|BufferBytes|DtypeLowering|GridLimit):")


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
    if not isinstance(module, Module):  # a Module is verified already
        _refuse_upstream_aborts(text if source is None else source.read_text(errors="replace"),
                                str(source) if source is not None else "<string>", ctx)
    with ctx:
        try:
            return Module.parse(text) if source is None else Module.parseFile(str(source))
        except MLIRError as error:
            what = f"{source}" if source is not None else "the module text"
            raise errors.parse_error(error, what) from None


def _refuse_upstream_aborts(text: str, what: str, context: Context) -> None:
    """A ParseError for input MLIR 22 aborts on instead of diagnosing (an
    abort would end the interpreter): an `!spirv.array` count past 2^32 - 1,
    a reshape's negative reassociation index, ... The checks have one owner,
    lib/Support/InputGuards.cpp, which poot-opt calls too."""
    from .._mlir_libs import _pootTargets

    found = _pootTargets.find_upstream_abort(context, text, what)
    if found is not None:
        raise errors.ParseError(found)


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
        except (MLIRError, ValueError) as error:  # an unknown enum value, a malformed chip
            raise errors.CompileError(f"pipeline {pipeline!r} does not parse: {error}") from None
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
