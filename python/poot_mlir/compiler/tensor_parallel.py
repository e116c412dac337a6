"""What every target's compile does for a tensor-parallel rank program
(issue 29, docs/tensor-parallel.md): one owner for `compile_cpu`'s and
`compile_gpu`'s `tensor_parallel=(rank, degree)`.

    tensor_parallel = check_tensor_parallel(tensor_parallel)   # before compiling
    fusion = fuse_for_compile(mod, ...)
    split_for_rank(mod, tensor_parallel, trace)                 # after the fusion

The pass marks the split in the IR (`poot.shard`, `poot.tensor_parallel`);
`compiler.signature` copies that into the manifest, so nothing here writes
the manifest.
"""

from __future__ import annotations

import operator
from typing import Any

from .. import errors
from ..ir import Module
from .pipeline import run_pipeline
from .trace import PassTrace


def check_tensor_parallel(value: Any) -> "tuple[int, int] | None":
    """`tensor_parallel` as (rank, degree), or None; a CompileError naming
    the fix for anything else."""
    if value is None:
        return None
    try:
        rank, degree = value
    except (TypeError, ValueError):
        raise errors.CompileError(
            f"tensor_parallel={value!r}: expected (rank, degree), e.g. tensor_parallel=(0, 2) "
            "for rank 0 of a step split over 2 ranks"
        ) from None
    try:
        if isinstance(rank, bool) or isinstance(degree, bool):
            raise TypeError
        rank, degree = operator.index(rank), operator.index(degree)
    except TypeError:
        raise errors.CompileError(f"tensor_parallel={value!r}: rank and degree are ints") from None
    if degree < 1 or not 0 <= rank < degree:
        raise errors.CompileError(
            f"tensor_parallel={value!r}: expected degree >= 1 and 0 <= rank < degree "
            f"(ranks 0..{max(degree, 1) - 1} of a step split over {max(degree, 1)})"
        )
    return int(rank), int(degree)


def split_for_rank(
    mod: Module, tensor_parallel: "tuple[int, int] | None", trace: "PassTrace | None"
) -> list[str]:
    """Rewrite `mod` (in place) into rank `rank`'s program of the step split
    over `degree` ranks; nothing when `tensor_parallel` is None. Returns the
    manifest notes: each group of projections the pass left whole on every
    rank, where and why (the pass's remarks), so a partial split is said.

    Run it after the attention fusion: the split cuts each fused attention
    by heads, so every rank still runs one planned kernel per layer."""
    if tensor_parallel is None:
        return []
    rank, degree = tensor_parallel
    remarks: list[str] = []
    run_pipeline(
        mod, f"builtin.module(poot-tensor-parallel{{degree={degree} rank={rank}}})",
        trace=trace, remarks=remarks,
    )  # fmt: skip
    return [f"tensor parallel: {remark.splitlines()[0]}" for remark in remarks]
