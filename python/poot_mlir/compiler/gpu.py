"""Compile a step function for a GPU target: one compile, one artifact format.

`compile_gpu(module, device, out_dir)` runs `poot-step-to-<target>`
(spirv, nvvm, rocdl): the attention rewrite (unless `fuse=False`), every
fused op (poot.attention, poot.block_topk, poot.selected_attention)
planned and generated, every other primitive lowered through linalg,
bufferized with the donated state in place, mapped to blocks and threads
and outlined into kernels. Whatever `compile_cpu` accepts, this accepts: an
attention-only module is a step whose program is the attention's launches.
It writes

    out_dir/<module>.spv | .ptx | .rocdl.mlir   one file per kernel module
                                                (ROCDL adds <module>.ll, and
                                                <module>.hsaco when an AMDGPU
                                                llc and ld.lld are there)
    out_dir/manifest.json   {"format": "poot-artifact/1", "kind": "program",
                             "target", "device", "function": signature,
                             "fusion", "attention": [fused op, ...],
                             "programs": {<function>: program},
                             "notes": [what the compile wants said]}

A program is written once, on the IR, by `poot-gpu-serialize-program`: the
step's buffers (arguments, arena temporaries with their offsets, constants
with their bytes), its commands in order (kernel launches with grid, block
and buffer arguments; buffer copies; a tensor-parallel rank program's
all_reduce of a buffer over the ranks), the buffers of the results that are
not written in place, the arena's size, and `fused_ops`: per fused op the
record `poot-gpu-attention-launches` wrote (its kind, request, scale,
source location, scratch bytes) and the ids of its launch commands. The
manifest's `attention` list is that record with the launches copied in, for
reports; nothing here is re-derived from printed IR. A step with a
validation output and state gets a second program, its validation prologue,
which the runtime runs first. `poot_mlir.runtime.program.ProgramArtifact`
runs it without MLIR.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from .. import errors
from ..ir import ArrayAttr, DictAttr, Module, StringAttr
from . import devices
from .cpu import _record_in_place, _select_function
from .fuse import fuse_for_compile, nothing_to_plan
from .pipeline import parse_module, run_pipeline
from .signature import function_signature
from .tensor_parallel import check_tensor_parallel, split_for_rank
from .trace import PassTrace

ARTIFACT_FORMAT = "poot-artifact/1"


def _kernel_objects(module: Module, target: str) -> dict[str, Any]:
    """Compiled kernel payloads by gpu.module name."""
    from .._mlir_libs import _pootTargets

    found: dict[str, Any] = {}
    for op in module.body.operations:
        name = op.operation.name
        if target == "spirv" and name == "spirv.module":
            sym = StringAttr(op.attributes["sym_name"]).value
            found[sym.removeprefix("__spv__")] = _pootTargets.serialize_spirv(op.operation)
        elif target == "nvvm" and name == "gpu.binary":
            from ..dialects import gpu

            sym = StringAttr(op.attributes["sym_name"]).value
            obj = gpu.ObjectAttr(ArrayAttr(op.attributes["objects"])[0])
            found[sym] = bytes(obj.object)
        elif target == "rocdl" and name == "gpu.module":
            sym = StringAttr(op.attributes["sym_name"]).value
            found[sym] = str(op).encode()
            found[sym + ".ll"] = _translate_kernel_module(module, op, sym)
    return found


def _translate_kernel_module(module: Module, op: Any, sym: str) -> bytes:
    """A ROCDL kernel module as LLVM IR text; a failed translation (an op
    with no LLVM translation left in a kernel) is a CompileError that
    carries MLIR's diagnostics."""
    from .._mlir_libs import _pootCPU

    diagnostics: list[str] = []

    def on_diagnostic(diag: Any) -> bool:
        diagnostics.append("\n".join(errors.diagnostic_lines(diag)))
        return True

    context = module.context
    with context:
        handler = context.attach_diagnostic_handler(on_diagnostic)
        try:
            return _pootCPU.translate_to_llvm_ir(op.operation).encode()
        except RuntimeError:  # the extension's untyped failure
            detail = "\n".join(diagnostics) or "no diagnostic"
            raise errors.CompileError(
                f"kernel module {sym} cannot be translated to LLVM IR for ROCDL:\n{detail}"
            ) from None
        finally:
            handler.detach()


_SUFFIX = {"spirv": ".spv", "nvvm": ".ptx", "rocdl": ".rocdl.mlir"}


def compile_gpu(
    module: Any,
    device: devices.Device,
    out_dir: "str | Path",
    *,
    func: str | None = None,
    nvvm_format: str = "isa",
    fuse: bool = True,
    trace: "PassTrace | None" = None,
    tensor_parallel: "tuple[int, int] | None" = None,
) -> Path:
    """Compile the step `func` (default: the only public function) of
    `module` for `device` (a GPU description) into `out_dir`. The compile
    starts with the attention rewrite (off with `fuse=False`); `module`
    itself is never changed. The planner's refusals are its typed errors
    (`errors.PlanRefusal` subclasses); `trace` (a `PassTrace`) keeps IR
    dumps and pass timings.

    `tensor_parallel=(rank, degree)` compiles rank `rank`'s program of the
    step split over `degree` ranks, as `compile_cpu` does (the same pass
    after the fusion, the same CompileError for anything but two ints with
    0 <= rank < degree; docs/tensor-parallel.md): the manifest's function
    record carries `tensor_parallel`, `all_reduce_sites` and each sharded
    port's `shard`, and each `poot.all_reduce` is an `all_reduce` command of
    the program, which `runtime.program` runs on its communicator."""
    tensor_parallel = check_tensor_parallel(tensor_parallel)
    if device.target not in _SUFFIX:
        raise errors.CompileError(f"{device.name} is not a GPU target ({device.target})")
    mod = parse_module(module)
    fusion = fuse_for_compile(mod, fuse, "compile_gpu", trace)
    split_notes = split_for_rank(mod, tensor_parallel, trace)
    func_op = _select_function(mod, func)
    signature = function_signature(func_op)
    options = device.pipeline_options()
    if device.target == "nvvm":
        options += f" format={nvvm_format}"
    run_pipeline(mod, f"builtin.module(poot-step-to-{device.target}{{{options}}})", trace=trace)
    _record_in_place(mod, signature)

    table = DictAttr(mod.operation.attributes["poot.programs"])
    wanted = [signature["name"]] + ([signature["validate"]["name"]] if "validate" in signature else [])
    programs = {name: json.loads(StringAttr(table[name]).value) for name in wanted}

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    objects = _kernel_objects(mod, device.target)
    suffix = _SUFFIX[device.target]
    for launch in _launches(programs):
        module_name = launch["module"]
        if module_name not in objects:
            raise errors.CompileError(f"kernel module {module_name} was not produced")
        launch["kernel"] = module_name + suffix
        (out / launch["kernel"]).write_bytes(objects[module_name])
        if device.target == "rocdl":
            (out / f"{module_name}.ll").write_bytes(objects[module_name + ".ll"])
    notes = split_notes + ([] if fusion.fused else [nothing_to_plan(signature["name"], fusion)])
    if device.target == "rocdl":
        notes.append(_write_hsaco(out, programs, device.chip or "gfx942"))
    manifest = {
        "format": ARTIFACT_FORMAT,
        "kind": "program",
        "target": device.target,
        "device": device.to_json(),
        "function": signature,
        "fusion": fusion.to_json(),
        "attention": fused_ops(programs[signature["name"]]),
        "programs": programs,
        "notes": notes,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out


def fused_ops(program: dict[str, Any]) -> list[dict[str, Any]]:
    """The program's record of its fused ops, in program order, each with
    its launch commands copied in (`launches`: kernel, entry, grid, block,
    buffer ids) for reports and benchmarks."""
    commands = program["commands"]
    out = []
    for record in program.get("fused_ops", []):
        entry = {k: v for k, v in record.items() if k != "commands"}
        entry["launches"] = [commands[i]["launch"] for i in record["commands"]]
        out.append(entry)
    return out


def _launches(programs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every kernel launch command of every program, in order."""
    for program in programs.values():
        for command in program["commands"]:
            if "launch" in command:
                yield command["launch"]


def _amdgpu_tools() -> "tuple[str, str] | None":
    """An llc with the AMDGPU target that reads this LLVM's IR, and ld.lld:
    `POOT_AMDGPU_LLC` / `POOT_LLD`, else Debian's `llc-22` / `ld.lld-22`."""
    import os
    import shutil

    llc = os.environ.get("POOT_AMDGPU_LLC") or shutil.which("llc-22")
    lld = os.environ.get("POOT_LLD") or shutil.which("ld.lld-22") or shutil.which("ld.lld")
    return (llc, lld) if llc and lld else None


def _write_hsaco(out: Path, programs: dict[str, Any], chip: str) -> str:
    """Each kernel module's HSACO code object beside its LLVM IR, named in
    its launches (`"hsaco"`), when the AMDGPU tools are there; the note the
    manifest keeps says what was written and how to run it."""
    if _amdgpu_tools() is None:
        return (
            "no HSACO: this needs an LLVM 22 llc with the AMDGPU target and ld.lld "
            "(Debian: apt-get install llvm-22 lld-22, or set POOT_AMDGPU_LLC / POOT_LLD); "
            f"each kernel module's LLVM IR is <module>.ll (gpu.compile_hsaco(path, '{chip}'))"
        )
    written: dict[str, str] = {}
    for launch in _launches(programs):
        module = launch["module"]
        if module not in written:
            written[module] = compile_hsaco(out / f"{module}.ll", chip).name
        launch["hsaco"] = written[module]
    return (
        f"HSACO code objects for {chip} (<module>.hsaco, one per kernel module). poot_mlir has "
        "no HIP runtime (no AMD hardware to test it on): load each with hipModuleLoad and, for "
        "every command of the program in order, launch its entry with its grid and block over "
        "the buffers it names (copies as hipMemcpy)"
    )


def compile_hsaco(ll_path: "str | Path", chip: str = "gfx942") -> Path:
    """An HSACO code object from a ROCDL artifact's LLVM IR (`<module>.ll`).

    Needs an LLVM whose llc has the AMDGPU target and that reads this LLVM's
    IR (22.x), plus ld.lld: `POOT_AMDGPU_LLC` / `POOT_LLD`, else `llc-22` and
    `ld.lld-22` on PATH (Debian's llvm-22, lld-22). The pinned PyPI LLVM has no
    AMDGPU target, so without them this raises CompileError saying so.
    """
    import subprocess

    ll = Path(ll_path)
    tools = _amdgpu_tools()
    if tools is None:
        raise errors.CompileError(
            "HSACO needs an LLVM 22 llc with the AMDGPU target and ld.lld (Debian: llvm-22, "
            "lld-22; or set POOT_AMDGPU_LLC / POOT_LLD). The pinned xtc-llvm wheels have no "
            f"AMDGPU target. The kernels' LLVM IR is at {ll}."
        )
    llc, lld = tools
    obj, hsaco = ll.with_suffix(".o"), ll.with_suffix(".hsaco")
    for argv, what in (
        ([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={chip}", "-O3", "-filetype=obj", str(ll), "-o", str(obj)], "llc"),
        ([lld, "-shared", str(obj), "-o", str(hsaco)], "ld.lld"),
    ):
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode:
            raise errors.CompileError(f"{what} failed on {ll}:\n{proc.stderr[-4000:]}")
    return hsaco
