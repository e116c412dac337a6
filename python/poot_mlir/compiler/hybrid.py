"""Compile a whole step for a GPU: the host program on the CPU, attention on the device.

GPU artifacts (compiler.gpu) hold only the fused attention kernels. For a
whole model step — RMSNorm, projections, RoPE, the MLP and the cache writes
around each attention — `compile_hybrid` builds:

    out/host/        the step compiled for the CPU (`compile_cpu`), with every
                     poot.attention turned into a call to the runtime
                     (`poot-attention-to-calls`, exported `poot_attention_hook`)
    out/attention_i/ one GPU artifact per attention: its planned, generated
                     and lowered kernels for `device` (SPIR-V, PTX)
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
from ..ir import Module, StringAttr
from . import devices
from .cpu import compile_cpu
from .fuse import fuse_for_compile
from .gpu import ARTIFACT_FORMAT, _attention_operands, attention_ops, compile_gpu
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
    result = op.results[0].type
    types = ", ".join(str(operands[n].type) for n in ("query", "key", "value"))
    return (
        f"func.func @{name}({args}) -> ({result} {{poot.name = \"out\"}}) {{\n"
        f"  %o = poot.attention %query, %key, %value {optional} {{{', '.join(attrs)}}}"
        f" : {types} -> {result}\n"
        f"  return %o : {result}\n}}\n"
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
    for index, op in enumerate(attention_ops(mod)):
        directory = f"attention_{index}"
        compile_gpu(
            standalone_attention(op, f"attention_{index}"), device, out / directory,
            fuse=False, trace=trace,
        )
        kernels.append(directory)
        arity.append(len(_attention_operands(op)) + 1)
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
