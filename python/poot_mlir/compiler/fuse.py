"""The attention rewrite from Python.

    from poot_mlir.compiler import fuse_attention
    report = fuse_attention(module, remarks=True)   # rewrites `module` in place
    report.attention                                # poot.attention ops now in it
    report.block_topk, report.selected_attention    # the sparse indexer's fused ops
    report.remarks                                  # why each declined chain stayed

It runs the C++ pipeline `poot-fuse-attention` (canonicalize,
poot-recognize-rope, poot-attention-rewrite, poot-select-blocks, cse) -- the
same definition poot-opt registers -- and raises `errors.CompileError`
carrying MLIR's diagnostics when a pass fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import errors
from ..ir import DiagnosticSeverity, MLIRError, Module, Operation
from ..passmanager import PassManager

PIPELINE = "poot-fuse-attention"


@dataclass
class FuseReport:
    """What `fuse_attention` did to a module."""

    module: Module
    attention: int
    """Number of `poot.attention` ops in the module afterwards."""
    remarks: list[str] = field(default_factory=list)
    """One line per declined candidate ("<loc>: attention not fused: <check>",
    "block top-k not formed: ...", "selected attention not formed: ..."),
    collected only with `remarks=True`."""
    block_topk: int = 0
    """Number of `poot.block_topk` ops afterwards (the selection pass)."""
    selected_attention: int = 0
    """Number of `poot.selected_attention` ops afterwards."""


def pipeline(remarks: bool = False) -> str:
    """The textual pipeline `fuse_attention` runs."""
    return f"builtin.module({PIPELINE}{{remarks={'true' if remarks else 'false'}}})"


def count_ops(module: Module, name: str) -> int:
    """Number of ops called `name` anywhere in `module`."""

    def count(op: Operation) -> int:
        total = int(op.name == name)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    total += count(inner.operation)
        return total

    return count(module.operation)


def _diagnostic_text(diag: object) -> str:
    lines = [f"{diag.location}: {diag.message}"]
    lines.extend(
        f"  note: {note.message}"
        for note in diag.notes
        # The pass manager's own note (the op printed again) adds nothing.
        if not str(note.message).startswith("see current operation")
    )
    return "\n".join(lines)


def fuse_attention(module: Module, remarks: bool = False) -> FuseReport:
    """Rewrites every recognized primitive attention chain of `module` into
    one `poot.attention` (the sparse indexer's block selection into
    `poot.block_topk` + `poot.selected_attention`), in place; everything else
    is left as it was.

    With `remarks=True`, every chain the rewrite declines is reported in
    `FuseReport.remarks`, naming the check that failed.
    """
    if not isinstance(module, Module):
        raise TypeError(f"fuse_attention needs a poot_mlir.ir.Module, got {type(module).__name__}")
    collected: list[str] = []
    context = module.context

    def on_diagnostic(diag: object) -> bool:
        if diag.severity == DiagnosticSeverity.REMARK:
            collected.append(_diagnostic_text(diag))
            return True
        return False  # errors go to the MLIRError the pass manager raises

    with context:
        pm = PassManager.parse(pipeline(remarks))
        handler = None
        if remarks:
            # The pass manager does not release the GIL: a Python handler
            # called from a worker thread would wait forever.
            context.enable_multithreading(False)
            handler = context.attach_diagnostic_handler(on_diagnostic)
        try:
            pm.run(module.operation)
        except MLIRError as error:
            detail = "\n".join(_diagnostic_text(d) for d in error.error_diagnostics) or str(error)
            raise errors.CompileError(f"{PIPELINE} failed:\n{detail}") from None
        finally:
            if handler is not None:
                handler.detach()
                context.enable_multithreading(True)
    return FuseReport(
        module,
        count_ops(module, "poot.attention"),
        collected,
        count_ops(module, "poot.block_topk"),
        count_ops(module, "poot.selected_attention"),
    )
