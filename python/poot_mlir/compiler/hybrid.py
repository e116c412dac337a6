"""Compile a whole step for a GPU: the host program on the CPU, attention on the device.

GPU artifacts (compiler.gpu) hold only the fused attention kernels. For a
whole model step — RMSNorm, projections, RoPE, the MLP and the cache writes
around each attention — `compile_hybrid` builds:

    out/host/        the step compiled for the CPU (`compile_cpu`), with every
                     fused op (poot.attention, poot.block_topk,
                     poot.selected_attention) turned into a call to the runtime
                     (`poot-attention-to-calls`, exported `poot_attention_hook`)
    out/attention_i/ one GPU artifact per fused op, in program order: its
                     planned, generated and lowered kernels for `device`
                     (SPIR-V, PTX)
    out/manifest.json

`runtime.hybrid.HybridArtifact` runs it: the host step calls back into the
runtime at each attention, which launches that attention's kernels on the
device over the host's buffers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import errors
from ..ir import IntegerAttr, Module, StringAttr
from . import devices
from .cpu import compile_cpu
from .fuse import fuse_for_compile
from .gpu import (
    _SELECTION_OPERANDS,
    ARTIFACT_FORMAT,
    FUSED_OPS,
    _attention_operands,
    attention_ops,
    compile_gpu,
)
from .pipeline import parse_module
from .trace import PassTrace

#: Operand names in the kernels' argument order (KernelSignature in C++).
KERNEL_ORDER = ("query", "key", "value", "key_shared", "mask", "read", "len")
#: The op's assembly order of the optional operands.
ASSEMBLY_ORDER = ("mask", "key_shared", "read", "len")


def standalone_attention(op, name: str) -> str:
    """MLIR text of a function holding just this poot.attention, with its
    operands as arguments named like the kernel arguments."""
    operands = _attention_operands(op)
    present = [n for n in KERNEL_ORDER if n in operands]
    args = ", ".join(f'%{n}: {operands[n].type} {{poot.name = "{n}"}}' for n in present)
    optional = " ".join(f"{n}(%{n} : {operands[n].type})" for n in ASSEMBLY_ORDER if n in operands)
    attrs = [f"scale = {op.attributes['scale']}"]
    if "softcap" in op.attributes:
        attrs.append(f"softcap = {op.attributes['softcap']}")
    if "causal" in op.attributes:
        attrs.append("causal")
    result = op.results[0].type
    types = ", ".join(str(operands[n].type) for n in ("query", "key", "value"))
    return (
        f"func.func @{name}({args}) -> ({result} {{poot.name = \"out\"}}) {{\n"
        f"  %o = poot.attention %query, %key, %value {optional} {{{', '.join(attrs)}}}"
        f" : {types} -> {result}\n"
        f"  return %o : {result}\n}}\n"
    )


def standalone_selection(op, name: str) -> str:
    """MLIR text of a function holding just this poot.block_topk or
    poot.selected_attention, its operands as arguments named like the
    kernel arguments."""
    kind = op.operation.name.removeprefix("poot.")
    names = _SELECTION_OPERANDS[kind]
    operands = dict(zip(names, op.operands))
    args = ", ".join(f'%{n}: {operands[n].type} {{poot.name = "{n}"}}' for n in names)
    result = op.results[0].type
    uses = ", ".join(f"%{n}" for n in names)
    types = ", ".join(str(operands[n].type) for n in names)
    bs = IntegerAttr(op.attributes["block_size"]).value
    if kind == "block_topk":
        k = IntegerAttr(op.attributes["k"]).value
        body = f"%o = poot.block_topk {uses} k = {k} block_size = {bs} : {types} -> {result}"
    else:
        attrs = [f"scale = {op.attributes['scale']}"]
        if "softcap" in op.attributes:
            attrs.append(f"softcap = {op.attributes['softcap']}")
        body = f"%o = poot.selected_attention {uses} block_size = {bs} {{{', '.join(attrs)}}} : {types} -> {result}"
    return (
        f"func.func @{name}({args}) -> ({result} {{poot.name = \"out\"}}) {{\n"
        f"  {body}\n  return %o : {result}\n}}\n"
    )


def compile_hybrid(
    module: "Module | str | Path",
    device: devices.Device,
    out_dir: "str | Path",
    *,
    func: str | None = None,
    fuse: bool = True,
    trace: PassTrace | None = None,
) -> Path:
    """Compiles `module`'s step: host program for the CPU, attention for
    `device`. It fuses first, once for the whole step (`fuse=False` turns it
    off); `trace` (a `PassTrace`) keeps IR dumps and pass timings of every
    part."""
    if device.target == "cpu":
        raise errors.CompileError("compile_hybrid offloads attention to a GPU device; use compile_cpu")
    mod = parse_module(module)
    fusion = fuse_for_compile(mod, fuse, "compile_hybrid", trace)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kernels, arity = [], []
    for index, op in enumerate(attention_ops(mod, tuple(FUSED_OPS))):
        directory = f"attention_{index}"
        if op.operation.name == "poot.attention":
            text, operands = standalone_attention(op, directory), len(_attention_operands(op))
        else:
            text, operands = standalone_selection(op, directory), len(op.operands)
        compile_gpu(text, device, out / directory, fuse=False, trace=trace)
        kernels.append(directory)
        arity.append(operands + 1)
    compile_cpu(mod, out / "host", func=func, offload_arity=arity, fuse=False, trace=trace)
    manifest = {
        "format": ARTIFACT_FORMAT,
        "target": "hybrid",
        "device": device.to_json(),
        "host": "host",
        "fusion": fusion.to_json(),
        "attention": kernels,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return out
