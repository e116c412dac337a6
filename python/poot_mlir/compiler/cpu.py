"""Compile a whole step function for the CPU: one shared object, run in-process.

`compile_cpu(module, out_dir)` runs `poot-to-llvm-cpu` (every poot primitive
to linalg, bufferized with caller-owned outputs, the attention as the CPU's
vector schedule, parallel loops as OpenMP, lowered to the LLVM dialect),
optimizes and compiles it to an object file in process (LLVM's O3 pipeline
and target machine for the host CPU, the libLLVM the wheels ship) and links
it with the system C compiler:

    out_dir/step.so         exports _mlir_ciface_<name> (see runtime/cpu.py)
    out_dir/manifest.json   {"format": "poot-artifact/1", "target": "cpu",
                             "library": "step.so", "entry": "_mlir_ciface_<name>",
                             "function": {name, inputs, outputs},
                             "parallel": "omp"|"serial", "openmp": path|null,
                             "cpu": {name, features}, "device": {...}}

Each manifest input/output carries its name (`poot.name`), shape, dtype,
slot kind, state name and declared range; a write map also carries `pool`,
the S its words must stay below. `poot_mlir.runtime.cpu` runs the artifact
with ctypes and numpy alone.

Compiled artifacts are cached by a hash of everything that determines them
(the module text, the options, the device, the host CPU, the compiler's own
binaries): `$POOT_CACHE_DIR` (default `~/.cache/poot_mlir`), `POOT_CACHE=0`
turns the cache off.
"""

from __future__ import annotations

import ctypes.util
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from .. import errors
from ..ir import Module, StringAttr
from . import devices
from .pipeline import parse_module, run_pipeline
from .signature import function_signature

ARTIFACT_FORMAT = "poot-artifact/1"
LIBRARY = "step.so"
#: Bump when the artifact layout or the driver's compile steps change.
_CACHE_VERSION = "cpu-1"


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


def find_openmp() -> Path | None:
    """An OpenMP runtime with LLVM's `__kmpc_*` entry points: `$POOT_OPENMP`,
    LLVM's libomp (Debian `libomp-dev`/`libomp5`), or Intel's libiomp5 (the
    `intel-openmp` wheel, in the environment's lib/). GNU libgomp does not
    qualify: MLIR's OpenMP lowering calls the LLVM runtime's ABI."""
    override = os.environ.get("POOT_OPENMP")
    if override is not None:
        if override in ("", "0", "none"):
            return None
        path = Path(override)
        if not path.is_file():
            raise errors.CompileError(f"POOT_OPENMP={override} is not a file")
        return path
    candidates = [Path(sys.prefix) / "lib" / name for name in ("libomp.so", "libomp.so.5", "libiomp5.so")]
    for pattern in ("/usr/lib/*-linux-gnu/libomp.so.5", "/usr/lib/llvm-*/lib/libomp.so.5",
                    "/usr/lib/*-linux-gnu/libomp.so", "/usr/local/lib/libomp.so*"):
        candidates += [Path(p) for p in sorted(glob.glob(pattern))]
    for name in ("omp", "iomp5"):
        found = ctypes.util.find_library(name)
        if found:
            candidates += [Path(p) for p in sorted(glob.glob(f"/usr/lib/*/{found}"))]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    return None


_WARNED_NO_OPENMP = False


def _parallel_mode(device: "devices.Device") -> tuple[str, Path | None]:
    """("omp", libomp) when the host has more than one core and an OpenMP
    runtime is installed; ("serial", None) otherwise (with a warning once
    when only the runtime is missing)."""
    global _WARNED_NO_OPENMP
    if device.compute_units <= 1:
        return "serial", None
    library = find_openmp()
    if library is None:
        if not _WARNED_NO_OPENMP:
            warnings.warn(
                "no OpenMP runtime (libomp) found: CPU steps run on one core. Install it with "
                "`apt-get install libomp-dev` (Debian/Ubuntu) or `pip install intel-openmp`, "
                "or set POOT_OPENMP to its path",
                RuntimeWarning,
                stacklevel=3,
            )
            _WARNED_NO_OPENMP = True
        return "serial", None
    return "omp", library


def _plan_options(device: "devices.Device | None") -> str:
    """The CPU pipeline's planner options from a device description (the
    detected host CPU by default; tests vary it to force schedules)."""
    d = device or devices.CPU
    return (
        f" workgroup-memory={d.workgroup_memory} compute-units={d.compute_units}"
        f" max-grid-x={d.max_grid_x} vector-width={d.vector_width}"
    )


def _lower(
    module: "Module | str",
    func: str | None,
    device: "devices.Device | None",
    attention: str,
    parallel: str,
) -> tuple[Module, dict[str, Any]]:
    """The step lowered to the LLVM dialect (a private copy of `module`) and
    its function signature."""
    mod = parse_module(module)
    func_op = _select_function(mod, func)
    signature = function_signature(func_op)
    _write_map_pools(func_op, signature)
    options = (
        f"entry={signature['name']} attention={attention} parallel={parallel}"
        + _plan_options(device)
    )
    run_pipeline(mod, f"builtin.module(poot-to-llvm-cpu{{{options}}})")
    return mod, signature


def lower_to_llvm_ir(
    module: "Module | str",
    func: str | None = None,
    device: "devices.Device | None" = None,
    attention: str = "loops",
    parallel: str = "serial",
) -> tuple[str, dict[str, Any]]:
    """(LLVM IR text, function signature) of the step, without touching
    `module` (the pipeline runs on a private copy). `device` describes the
    CPU to the attention planner (default: devices.CPU)."""
    from .._mlir_libs import _pootCPU

    mod, signature = _lower(module, func, device, attention, parallel)
    try:
        with mod.context:
            text = _pootCPU.translate_to_llvm_ir(mod.operation)
    except RuntimeError as exc:
        raise errors.CompileError(f"translation to LLVM IR failed: {exc}") from None
    return text, signature


def host_cpu() -> tuple[str, str]:
    """(CPU name, LLVM feature string) the object code is compiled for:
    the host's, or `$POOT_CPU_NAME` / `$POOT_CPU_FEATURES`."""
    from .._mlir_libs import _pootCPU

    name, features = _pootCPU.host_cpu()
    return os.environ.get("POOT_CPU_NAME", name), os.environ.get("POOT_CPU_FEATURES", features)


def _compiler_fingerprint() -> str:
    """Identifies the compiler binaries (a rebuild invalidates the cache)."""
    from .._mlir_libs import _pootCPU

    libs = Path(_pootCPU.__file__).parent
    parts = []
    for lib in sorted(libs.glob("libPootPythonCAPI*")) + [Path(_pootCPU.__file__)]:
        stat = lib.stat()
        parts.append(f"{lib.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return ";".join(parts)


def _cache_dir() -> Path | None:
    if os.environ.get("POOT_CACHE", "1") in ("0", "off", "no"):
        return None
    root = os.environ.get("POOT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "poot_mlir"
    )
    return Path(root) / "cpu"


def compile_cpu(
    module: "Module | str",
    out_dir: "str | Path",
    *,
    func: str | None = None,
    keep_ir: bool = False,
    device: "devices.Device | None" = None,
    offload_arity: "list[int] | None" = None,
    parallel: str | None = None,
    opt_level: int = 3,
) -> Path:
    """Compile the step function `func` (default: the only public one) of
    `module` into the artifact directory `out_dir`; returns its path.

    Raises CompileError when the pipeline, the object emission or the link
    fails (with their diagnostics), or when no C compiler is found. With
    `keep_ir`, `step.ll` stays beside the library.

    `device` describes the CPU (default: the detected host, devices.CPU).
    `parallel` is "omp" (OpenMP worksharing loops, needs libomp: see
    `find_openmp`) or "serial"; by default omp on a multi-core host with an
    OpenMP runtime installed.

    `offload_arity` (one argument count per poot.attention, in order) makes
    the step a host program: each attention becomes a call the runtime
    answers through the exported `poot_attention_hook` (compiler.hybrid).
    """
    from .._mlir_libs import _pootCPU

    d = device or devices.CPU
    attention = "offload" if offload_arity is not None else "loops"
    if parallel is None:
        parallel, openmp = _parallel_mode(d)
    elif parallel == "omp":
        openmp = find_openmp()
        if openmp is None:
            raise errors.CompileError(
                "parallel='omp' needs an OpenMP runtime with LLVM's ABI (libomp): "
                "`apt-get install libomp-dev` or `pip install intel-openmp`, or set POOT_OPENMP"
            )
    elif parallel == "serial":
        openmp = None
    else:
        raise errors.CompileError(f"parallel={parallel!r}: expected 'omp' or 'serial'")
    cpu_name, cpu_features = host_cpu()
    out = Path(out_dir)
    text = module if isinstance(module, str) else str(module)
    cache = _cache_dir() if not keep_ir else None
    key = None
    if cache is not None:
        key = hashlib.sha256(
            json.dumps(
                [_CACHE_VERSION, text, func, d.to_json(), offload_arity, parallel,
                 str(openmp), cpu_name, cpu_features, opt_level, _compiler_fingerprint()]
            ).encode()
        ).hexdigest()
        hit = cache / key
        if (hit / "manifest.json").is_file() and (hit / LIBRARY).is_file():
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy(hit / LIBRARY, out / LIBRARY)
            shutil.copy(hit / "manifest.json", out / "manifest.json")
            return out

    started = time.perf_counter()
    mod, signature = _lower(text, func, d, attention, parallel)
    lowered = time.perf_counter()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", signature["name"]):
        raise errors.CompileError(f"@{signature['name']} is not a C identifier")
    cc = find_cc()
    entry = f"_mlir_ciface_{signature['name']}"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="poot-cpu-") as scratch:
        obj = Path(scratch) / "step.o"
        try:
            with mod.context:
                if keep_ir:
                    (out / "step.ll").write_text(_pootCPU.translate_to_llvm_ir(mod.operation))
                obj.write_bytes(
                    _pootCPU.emit_object(mod.operation, cpu_name, cpu_features, opt_level)
                )
        except RuntimeError as exc:
            raise errors.CompileError(f"object emission failed: {exc}") from None
        emitted = time.perf_counter()
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
        libs = ["-lm"]
        if openmp is not None:
            libs = [str(openmp), f"-Wl,-rpath,{openmp.parent}", "-lm"]
        _run_tool(
            [cc, "-shared", "-fPIC", "-O2", "-o", str(out / LIBRARY), *objects,
             f"-Wl,--version-script={exports}", *libs],
            "linking step.so",
        )
    linked = time.perf_counter()
    manifest = {
        "format": ARTIFACT_FORMAT,
        "target": "cpu",
        "library": LIBRARY,
        "entry": entry,
        "abi": "destination-passing: one memref descriptor pointer per input, then per output",
        "function": signature,
        "parallel": parallel,
        "openmp": str(openmp) if openmp is not None else None,
        "cpu": {"name": cpu_name, "features": cpu_features},
        "device": d.to_json(),
        "compile_seconds": {
            "pipeline": round(lowered - started, 3),
            "object": round(emitted - lowered, 3),
            "link": round(linked - emitted, 3),
        },
    }
    if offload_arity is not None:
        manifest["offload"] = {"hook": "poot_attention_hook", "arity": list(offload_arity)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    if cache is not None and key is not None:
        _store_in_cache(cache, key, out)
    return out


def _store_in_cache(cache: Path, key: str, out: Path) -> None:
    """Publish a finished artifact under its key (atomically: a rename)."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=cache))
        shutil.copy(out / LIBRARY, staging / LIBRARY)
        shutil.copy(out / "manifest.json", staging / "manifest.json")
        try:
            staging.rename(cache / key)
        except OSError:  # another process published it first
            shutil.rmtree(staging, ignore_errors=True)
    except OSError:
        pass  # a read-only or full cache only costs the next compile


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
