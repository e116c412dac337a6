"""Compile a whole step function for the CPU: one shared object, run in-process.

`compile_cpu(module, out_dir)` runs the attention rewrite (unless
`fuse=False`), plans every fused attention for the CPU, then runs
`poot-to-llvm-cpu` (every poot primitive to linalg, bufferized with
caller-owned outputs and the donated state in place, the attention as the
CPU's vector schedule, parallel loops as OpenMP, lowered to the LLVM
dialect), optimizes and compiles it to an object file in process (LLVM's O3
pipeline and target machine for the host CPU, the libLLVM the wheels ship)
and links it with the system C compiler:

    out_dir/step.so         exports _mlir_ciface_<name> (see runtime/cpu.py)
    out_dir/manifest.json   {"format": "poot-artifact/1", "target": "cpu",
                             "library": "step.so", "entry": "_mlir_ciface_<name>",
                             "function": {name, inputs, outputs},
                             "fusion": {enabled, attention, declined},
                             "attention": [{request, scale, location}, ...],
                             "notes": [...],
                             "parallel": "omp"|"serial", "openmp": path|null,
                             "cpu": {name, features}, "device": {...}}

Each manifest input/output carries its name (`poot.name`), shape, dtype,
slot kind, state name and declared range; a write map also carries `pool`,
the S its words must stay below, and a tensor-parallel rank program's
sharded ones their `shard` (compiler.signature). `poot_mlir.runtime.cpu`
runs the artifact with ctypes and numpy alone.

Compiled artifacts are cached by a hash of everything that determines them
(the module text, the options, the device, the host CPU, the compiler's own
binaries): `$POOT_CACHE_DIR` (default `~/.cache/poot_mlir`), `POOT_CACHE=0`
turns the cache off.
"""

from __future__ import annotations

import ctypes.util
import dataclasses
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
from ..errors import where
from ..ir import (
    ArrayAttr,
    ComplexType,
    DenseI64ArrayAttr,
    DictAttr,
    IntegerAttr,
    Module,
    ShapedType,
    StringAttr,
)
from . import devices
from .fuse import Fusion, fuse_for_compile, log, nothing_to_plan, warn_declined
from .pipeline import parse_module, run_pipeline
from .signature import function_signature
from .tensor_parallel import check_tensor_parallel, split_for_rank
from .trace import PassTrace

ARTIFACT_FORMAT = "poot-artifact/1"
LIBRARY = "step.so"
#: Bump when the artifact layout or the driver's compile steps change.
_CACHE_VERSION = "cpu-4"  # cpu-4: tensor_parallel, poot_all_reduce_hook exported
#: The global a step with `poot.all_reduce` exports: the runtime stores its
#: collective's address there (null: each all_reduce is the identity).
ALL_REDUCE_HOOK = "poot_all_reduce_hook"


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
        f" max-splits={d.max_splits} max-alloc-bytes={d.max_alloc_bytes}"
        + (" batch-invariant=1" if d.batch_invariant else "")
        # The object is emitted for this host: vdpbf16ps only where it runs
        # (LLVM cannot select the intrinsic without the feature).
        + (" bf16-dot=1" if d.bf16_dot and d.vector_width == 16 and devices.CPU.bf16_dot else "")
    )


def _lower(
    module: "Module | str | Path",
    func: str | None,
    device: "devices.Device | None",
    attention: str,
    parallel: str,
    *,
    fuse: bool,
    trace: PassTrace | None,
    tensor_parallel: "tuple[int, int] | None" = None,
) -> "tuple[Module, Lowered]":
    """The step fused, split for one tensor-parallel rank (when asked),
    planned and lowered to the LLVM dialect (a private copy of `module`),
    and what the manifest says about it."""
    mod = parse_module(module)
    fusion = fuse_for_compile(mod, fuse, "compile_cpu", trace)
    notes = split_for_rank(mod, tensor_parallel, trace)
    func_op = _select_function(mod, func)
    signature = function_signature(func_op)
    check_allocations(mod, func_op, signature, device or devices.CPU)
    options = (
        f"entry={signature['name']} attention={attention} parallel={parallel}"
        + _plan_options(device)
    )
    run_pipeline(mod, f"builtin.module(poot-to-llvm-cpu{{{options}}})", trace=trace)
    _record_in_place(mod, signature)
    planned = fused_op_records(mod)
    if not planned:
        notes.append(nothing_to_plan(signature["name"], fusion))
        log.info("compile_cpu: %s", notes[-1])
    return mod, Lowered(signature, fusion, planned, notes)


def _element_bytes(element: Any) -> int:
    """Bytes of one element as the CPU stores it: bools (i1) are bytes,
    `index` is 64-bit, a complex number two of its parts."""
    if isinstance(element, ComplexType):
        return 2 * _element_bytes(element.element_type)
    width = getattr(element, "width", None)
    return max(1, (int(width) + 7) // 8) if isinstance(width, int) and width > 0 else 8


def _size(nbytes: int) -> str:
    """`nbytes` in the largest binary unit it fills (128.0 GiB, 4.0 KiB)."""
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes} B"


def check_allocations(
    mod: Module, func_op: Any, signature: dict[str, Any], device: "devices.Device"
) -> None:
    """Refuse a step that computes a value larger than `device.max_alloc_bytes`
    (`errors.BufferBytes`, naming the op, its source location and both sizes).

    Every value a CPU step computes becomes a buffer: a temporary the
    compiled code allocates with malloc -- which, failing, ends the process:
    the generated code does not check -- or a result the runtime allocates.
    So the limit is checked here, on the module as fused, before anything is
    lowered: a value's static type is its buffer's size. (Elementwise chains
    may share buffers after bufferization, so this bounds each buffer, not
    their sum; buffers made while lowering, such as the attention's split-KV
    scratch, are the planner's to check.) The arguments are the caller's
    buffers, already allocated."""
    limit = int(device.max_alloc_bytes)
    outputs: dict[Any, str] = {}
    body = func_op.regions[0].blocks[0]
    terminator = body.operations[len(body.operations) - 1]
    if terminator.operation.name == "func.return":
        for j, value in enumerate(terminator.operands):
            outputs.setdefault(value, signature["outputs"][j]["name"])

    def visit(op: Any) -> None:
        for i, value in enumerate(op.results):
            type_ = value.type
            if not (isinstance(type_, ShapedType) and type_.has_rank and type_.has_static_shape):
                continue
            nbytes = _element_bytes(type_.element_type)
            for d in type_.shape:
                nbytes *= int(d)
            if nbytes <= limit:
                continue
            what = (
                f"result {outputs[value]!r} of @{signature['name']}"
                if value in outputs
                else "a temporary"
            )
            location = where(op.location)
            raise errors.BufferBytes(
                f"BufferBytes: {what} ({op.name} result #{i}, {type_}) needs {nbytes} bytes "
                f"({_size(nbytes)}); the device {device.name!r} allocates at most {limit} bytes "
                f"({_size(limit)}) at once (max_alloc_bytes)",
                location,
                nbytes=nbytes,
                limit=limit,
            )
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    visit(mod.operation)


def fused_op_records(mod: Module) -> list[dict[str, Any]]:
    """What the pipeline's planner made of each fused op, in program order:
    `poot-record-fused-ops` wrote one JSON record per op on the module (its
    kind, request, scale, source location)."""
    attrs = mod.operation.attributes
    if "poot.fused_ops" not in attrs:
        return []
    return [json.loads(StringAttr(text).value) for text in ArrayAttr(attrs["poot.fused_ops"])]


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
    # `poot-cpu-plan-arena` left `poot.arena_bytes`: per function, the size
    # of the arena of temporaries it takes as its last argument.
    arenas = DictAttr(attrs["poot.arena_bytes"]) if "poot.arena_bytes" in attrs else None
    if arenas is not None and name in arenas:
        signature["arena_bytes"] = IntegerAttr(arenas[name]).value
    if table is not None and prologue in table:
        signature["validate"] = {
            "name": prologue,
            "outputs": [i for i, e in enumerate(signature["outputs"]) if e["slot"] == "validation"],
        }
        if arenas is not None and prologue in arenas:
            signature["validate"]["arena_bytes"] = IntegerAttr(arenas[prologue]).value


@dataclasses.dataclass
class Lowered:
    """The step as LLVM IR (empty until translated), with what the
    manifest says about it."""

    signature: dict[str, Any]
    fusion: Fusion
    attention: list[dict[str, Any]]
    notes: list[str]
    llvm_ir: str = ""


def lower(
    module: "Module | str | Path",
    func: str | None = None,
    device: "devices.Device | None" = None,
    attention: str = "loops",
    parallel: str = "serial",
    *,
    fuse: bool = True,
    trace: PassTrace | None = None,
    tensor_parallel: "tuple[int, int] | None" = None,
) -> Lowered:
    """Fuse (unless `fuse=False`), split for one tensor-parallel rank (see
    `compile_cpu`), plan and lower the step to LLVM IR, on a private copy
    of `module`. `device` describes the CPU to the attention planner
    (default: devices.CPU)."""
    from .._mlir_libs import _pootCPU

    tensor_parallel = check_tensor_parallel(tensor_parallel)
    mod, lowered = _lower(
        module, func, device, attention, parallel, fuse=fuse, trace=trace,
        tensor_parallel=tensor_parallel,
    )
    try:
        with mod.context:
            text = _pootCPU.translate_to_llvm_ir(mod.operation)
    except RuntimeError as exc:
        raise errors.CompileError(f"translation to LLVM IR failed: {exc}") from None
    return dataclasses.replace(lowered, llvm_ir=text)


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


def _cache_text(module: Any) -> str | None:
    """The text a compile is keyed by: MLIR text as given, a file's text, a
    Module printed with its locations (what parse_module copies); None for
    anything else (a missing file, not a module: the compile reports it)."""
    if isinstance(module, str):
        return module
    if isinstance(module, Path):
        return f"{module}\n{module.read_text()}" if module.is_file() else None
    if isinstance(module, Module):
        return module.operation.get_asm(enable_debug_info=True)
    return None


def _cache_dir() -> Path | None:
    if os.environ.get("POOT_CACHE", "1") in ("0", "off", "no"):
        return None
    root = os.environ.get("POOT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "poot_mlir"
    )
    return Path(root) / "cpu"


def compile_cpu(
    module: "Module | str | Path",
    out_dir: "str | Path",
    *,
    func: str | None = None,
    keep_ir: bool = False,
    device: "devices.Device | None" = None,
    fuse: bool = True,
    trace: PassTrace | None = None,
    parallel: str | None = None,
    opt_level: int = 3,
    tensor_parallel: "tuple[int, int] | None" = None,
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
    planning or the pipeline fails, CompileError when the object emission or
    the link fails or no C compiler is found. With `keep_ir`, `step.ll` stays
    beside the library (and the cache is bypassed); `trace` (a `PassTrace`)
    keeps IR dumps and pass timings.

    `device` describes the CPU (default: the detected host, devices.CPU).
    `parallel` is "omp" (OpenMP worksharing loops, needs libomp: see
    `find_openmp`) or "serial"; by default omp on a multi-core host with an
    OpenMP runtime installed.

    `tensor_parallel=(rank, degree)` compiles rank `rank`'s program of the
    step split over `degree` ranks (`poot-tensor-parallel`, after the
    fusion; docs/tensor-parallel.md): the manifest then records
    `tensor_parallel` and each sharded argument's `shard`, and the library
    exports `poot_all_reduce_hook`, which `runtime.cpu` points at its
    communicator. Anything but two ints with 0 <= rank < degree is a
    CompileError before anything is compiled.
    """
    from .._mlir_libs import _pootCPU

    tensor_parallel = check_tensor_parallel(tensor_parallel)
    d = device or devices.CPU
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
    text = _cache_text(module)
    cache = _cache_dir() if not (keep_ir or trace is not None) else None
    key = None
    if cache is not None and text is not None:
        key = hashlib.sha256(
            json.dumps(
                [_CACHE_VERSION, text, func, d.to_json(), parallel, fuse,
                 str(openmp), cpu_name, cpu_features, opt_level, _compiler_fingerprint(),
                 list(tensor_parallel) if tensor_parallel is not None else None]
            ).encode()
        ).hexdigest()
        hit = cache / key
        cached = _cached_manifest(hit)
        if cached is not None:
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy(hit / LIBRARY, out / LIBRARY)
            # Said in the manifest, so a caller timing the compile can tell a
            # cache hit from a compile (`compile_seconds` is the original's).
            (out / "manifest.json").write_text(json.dumps({**cached, "from_cache": True}, indent=2))
            warn_declined(cached.get("fusion", {}).get("declined", []), "compile_cpu")
            for note in cached.get("notes", []):
                log.info("compile_cpu: %s", note)
            return out

    started = time.perf_counter()
    mod, lowered = _lower(
        module, func, d, "loops", parallel, fuse=fuse, trace=trace, tensor_parallel=tensor_parallel
    )
    signature = lowered.signature
    lowered_at = time.perf_counter()
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
        if "validate" in signature:
            exported += f"; _mlir_ciface_{signature['validate']['name']}"
        if signature.get("all_reduce_sites"):
            exported += f"; {ALL_REDUCE_HOOK}"  # the runtime sets it (runtime/cpu.py)
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
        "fusion": lowered.fusion.to_json(),
        "attention": lowered.attention,
        "notes": lowered.notes,
        "parallel": parallel,
        "openmp": str(openmp) if openmp is not None else None,
        "cpu": {"name": cpu_name, "features": cpu_features},
        "device": d.to_json(),
        "compile_seconds": {
            "pipeline": round(lowered_at - started, 3),
            "object": round(emitted - lowered_at, 3),
            "link": round(linked - emitted, 3),
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    if cache is not None and key is not None:
        _store_in_cache(cache, key, out)
    return out


def _cached_manifest(hit: Path) -> dict[str, Any] | None:
    """The manifest of the cached artifact `hit`, or None when there is none
    or it is damaged (a truncated or hand-edited file, a missing library):
    the compile then runs again and replaces it, instead of copying a broken
    artifact out or failing on a JSONDecodeError."""
    try:
        if not (hit / LIBRARY).is_file():
            return None
        manifest = json.loads((hit / "manifest.json").read_text())
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == ARTIFACT_FORMAT else None


def _store_in_cache(cache: Path, key: str, out: Path) -> None:
    """Publish a finished artifact under its key (atomically: a rename)."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=cache))
        shutil.copy(out / LIBRARY, staging / LIBRARY)
        shutil.copy(out / "manifest.json", staging / "manifest.json")
        if (cache / key).exists() and _cached_manifest(cache / key) is None:
            shutil.rmtree(cache / key, ignore_errors=True)  # a damaged entry: replaced
        try:
            staging.rename(cache / key)
        except OSError:  # another process published it first
            shutil.rmtree(staging, ignore_errors=True)
    except OSError:
        pass  # a read-only or full cache only costs the next compile
