"""The attention rewrite from Python.

    from poot_mlir.compiler import fuse_attention
    report = fuse_attention(module, remarks=True)   # rewrites `module` in place
    report.attention                                # poot.attention ops now in it
    report.block_topk, report.selected_attention    # the sparse indexer's fused ops
    report.remarks                                  # why each declined chain stayed

It runs the C++ pipeline `poot-fuse-attention` (canonicalize,
poot-recognize-rope, poot-attention-rewrite, poot-select-blocks, cse) -- the
same definition poot-opt registers -- and raises `errors.CompileError`
carrying MLIR's diagnostics when a pass fails. `compile_cpu` and `compile_gpu`
run it themselves (`fuse=False` turns that off).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..ir import Module, Operation
from .pipeline import run_pipeline
from .trace import PassTrace

PIPELINE = "poot-fuse-attention"

log = logging.getLogger("poot_mlir.compiler")


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


def fuse_attention(
    module: Module, remarks: bool = False, *, trace: PassTrace | None = None
) -> FuseReport:
    """Rewrites every recognized primitive attention chain of `module` into
    one `poot.attention` (the sparse indexer's block selection into
    `poot.block_topk` + `poot.selected_attention`), in place; everything else
    is left as it was.

    With `remarks=True`, every chain the rewrite declines is reported in
    `FuseReport.remarks`, naming the check that failed and where the chain
    came from. `trace` (a `PassTrace`) keeps IR dumps and pass timings.
    Raises `errors.CompileError` when a pass fails.
    """
    if not isinstance(module, Module):
        raise errors.NotAModule(
            f"fuse_attention rewrites a poot_mlir.ir.Module in place, got {type(module).__name__} "
            "(compile_cpu / compile_gpu take text and fuse it themselves)"
        )
    collected: list[str] | None = [] if remarks else None
    run_pipeline(module, pipeline(remarks), trace=trace, remarks=collected)
    return FuseReport(
        module,
        count_ops(module, "poot.attention"),
        collected or [],
        count_ops(module, "poot.block_topk"),
        count_ops(module, "poot.selected_attention"),
    )


@dataclass
class Fusion:
    """What a compile's own fusion step did (the manifest's `fusion`)."""

    enabled: bool
    attention: int
    """`poot.attention` ops in the module afterwards."""
    declined: list[str] = field(default_factory=list)
    """The rewrite's remark for every chain it left unfused."""
    block_topk: int = 0
    selected_attention: int = 0
    """The selection pass's `poot.block_topk` / `poot.selected_attention`."""

    @property
    def fused(self) -> int:
        """Fused ops of every kind (what the planner has to plan)."""
        return self.attention + self.block_topk + self.selected_attention

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "attention": self.attention,
            "block_topk": self.block_topk,
            "selected_attention": self.selected_attention,
            "declined": self.declined,
        }


def fuse_for_compile(module: Module, enabled: bool, what: str, trace: PassTrace | None) -> Fusion:
    """The fusion pipeline as the first step of a compile (on the compiler's
    private copy). A declined chain is logged as a warning: the user asked
    for a compiled attention and gets the primitive chain."""
    declined: list[str] = []
    if enabled:
        run_pipeline(module, pipeline(True), trace=trace, remarks=declined)
    fusion = Fusion(
        enabled,
        count_ops(module, "poot.attention"),
        declined,
        count_ops(module, "poot.block_topk"),
        count_ops(module, "poot.selected_attention"),
    )
    warn_declined(declined, what)
    return fusion


def warn_declined(declined: list[str], what: str) -> None:
    """Log the chains a compile left unfused (again on a cache hit: the
    user still gets the primitive chain)."""
    if declined:
        log.warning(
            "%s: %d attention chain(s) left unfused:\n%s", what, len(declined), "\n".join(declined)
        )


def nothing_to_plan(function: str, fusion: Fusion) -> str:
    """The note a compile records (and logs) when a step has no attention."""
    why = (
        "fusion found no attention chain"
        if fusion.enabled
        else "fusion was off (fuse=False) and the module has none"
    )
    return f"nothing to plan: @{function} has no poot.attention ({why})"
