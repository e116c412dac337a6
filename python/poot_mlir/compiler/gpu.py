"""Compile the fused attention of a step function for a GPU target.

`compile_gpu(module, device, out_dir)` runs `poot-to-{spirv,nvvm,rocdl}` (plan,
generate, lower), then writes a self-contained artifact: one kernel file per
fused op (SPIR-V binary, PTX, or ROCDL LLVM-dialect text) and `manifest.json`
— the function signature and, per fused op in program order (the list is
called "attention"), its kind (`op`: attention, block_topk,
selected_attention), request, operands, result buffer (`out`: dtype and
element count, `value`: its name for later ops) and launch sequence (kernel,
entry, grid, block, buffer names). A runtime that imports no MLIR
(poot_mlir.runtime.gpu) executes it.

GPU artifacts cover the fused ops: every operand must be a function argument
or the result of an earlier fused op (block_topk's ids feeding
selected_attention stay on the device), and every result must be a function
result or feed a later fused op. A step whose other primitives must also run
on the device is refused with CompileError (run it on the CPU target, or
`compile_hybrid`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .. import errors
from ..ir import ArrayAttr, BlockArgument, Module, OpResult, StringAttr
from . import devices
from .fuse import fuse_for_compile, nothing_to_plan
from .pipeline import parse_module, run_pipeline, where
from .signature import function_signature
from .trace import PassTrace

ARTIFACT_FORMAT = "poot-artifact/1"
_REQUEST = re.compile(r"(\w+) = (\w+)")
_OPERANDS = ("query", "key", "value", "mask", "key_shared", "read", "len")


def parse_request(text: str) -> dict[str, Any]:
    """`#poot.attention_request<batch = 1, ...>` as a dict (ints as ints)."""
    body = text[text.index("<") + 1 : text.rindex(">")]
    return {k: int(v) if v.lstrip("-").isdigit() else v for k, v in _REQUEST.findall(body)}


def fold_grid(count: int, grid_x: int) -> tuple[int, int, int]:
    """The planner's (x, y) fold of `count` workgroups over an X limit."""
    x = min(count, grid_x)
    return (x, -(-count // x), 1)


def launch_plan(
    request: dict[str, Any],
    operands: list[str],
    kernels: list[tuple[str, str]],
    order: "tuple[str, ...] | None" = None,
):
    """The launches of one attention (mirrors KernelSignature's arg order).

    Every schedule starts with one launch over the planner's grid (streaming,
    split-KV partials, warp decode); a split schedule (splits > 1) writes the
    scratch and adds the combine launch, one workgroup per row."""
    inputs = [name for name in (order or _ARG_ORDER) if name in operands]
    rows = request["batch"] * request["q_heads"] * request["q_len"]
    block = [request["lanes"], 1, 1]
    split = request["splits"] > 1
    (file, entry) = kernels[0]
    launches = [
        {
            "kernel": file,
            "entry": entry,
            "grid": [request["grid_x"], request["grid_y"], 1],
            "block": block,
            "args": inputs + (["scratch"] if split else ["out"]),
        }
    ]
    if split:
        (file, entry) = kernels[1]
        launches.append(
            {
                "kernel": file,
                "entry": entry,
                "grid": list(fold_grid(rows, request["grid_x"])),
                "block": block,
                "args": ["scratch", "out"],
            }
        )
    return launches


#: Kernel argument order of the inputs (KernelSignature in C++).
_ARG_ORDER = ("query", "key", "value", "key_shared", "mask", "read", "len")

#: Operand names of the selection ops, in op (and kernel-argument) order
#: (SelectionSignature in C++).
_SELECTION_OPERANDS = {
    "block_topk": ("scores", "q_pos"),
    "selected_attention": ("query", "key", "value", "block_ids", "q_pos"),
}


def selection_launch_plan(kind: str, request: dict[str, Any], kernels: list[tuple[str, str]]):
    """The launches of a poot.block_topk (one: a workgroup per (batch row,
    query row)) or a poot.selected_attention (the planner's grid, then the
    combine when split: the attention schedules' rule)."""
    if kind == "block_topk":
        (file, entry) = kernels[0]
        return [
            {
                "kernel": file,
                "entry": entry,
                "grid": [request["grid_x"], request["grid_y"], 1],
                "block": [request["lanes"], 1, 1],
                "args": ["scores", "q_pos", "out"],
            }
        ]
    return launch_plan(request, list(_SELECTION_OPERANDS[kind]), kernels, order=_SELECTION_OPERANDS[kind])


def _scratch_floats(request: dict[str, Any]) -> int:
    """The split-KV scratch of an attention schedule (0 when not split)."""
    if request.get("splits", 1) <= 1:
        return 0
    rows = request["batch"] * request["q_heads"] * request["q_len"]
    return rows * request["splits"] * (request["value_width"] + 2)


def _attention_operands(op) -> dict[str, Any]:
    """Operand name -> Value of a poot.attention (optional ones present)."""
    segments = list(op.attributes["operandSegmentSizes"]) if "operandSegmentSizes" in op.attributes else None
    values = list(op.operands)
    if segments is None:
        # Properties-backed segment sizes: read them through the op view.
        view = op.opview
        named = {
            "query": view.query,
            "key": view.key,
            "value": view.value,
            "mask": view.mask,
            "key_shared": view.key_shared,
            "read": view.read,
            "len": view.length,
        }
        return {k: v for k, v in named.items() if v is not None}
    out, pos = {}, 0
    for name, count in zip(_OPERANDS, segments):
        if count:
            out[name] = values[pos]
        pos += count
    return out


#: The fused ops a GPU artifact runs, by the manifest's "op" kind.
FUSED_OPS = {
    "poot.attention": "attention",
    "poot.block_topk": "block_topk",
    "poot.selected_attention": "selected_attention",
}


def attention_ops(module: Module, kinds: "tuple[str, ...]" = ("poot.attention",)) -> list[Any]:
    """Every op named in `kinds` (default: poot.attention) in the functions
    of `module`, in program order (the order poot-attention-to-calls numbers
    its calls)."""
    found = []
    for func_op in module.body.operations:
        if func_op.operation.name != "func.func" or not func_op.regions[0].blocks:
            continue
        for op in func_op.regions[0].blocks[0].operations:
            if op.operation.name in kinds:
                found.append(op)
    return found


def attention_entry(op) -> dict[str, Any]:
    """What every manifest says about a planned fused op: its kind, request,
    scale (block_topk has none), and where it came from (the user's source
    line when traced)."""
    entry = {
        "op": FUSED_OPS[op.operation.name],
        "request": parse_request(str(op.attributes["poot.request"])),
        "location": where(op.location),
    }
    if "scale" in op.attributes:
        entry["scale"] = float(str(op.attributes["scale"]).split(" ")[0])
    return entry


def _find_func(module: Module, name: str | None):
    for op in module.body.operations:
        if op.operation.name == "func.func":
            sym = StringAttr(op.attributes["sym_name"]).value
            if name is None or sym == name:
                return op
    raise errors.CompileError(f"no func.func {name or ''} in the module")


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
            from .._mlir_libs import _pootCPU

            sym = StringAttr(op.attributes["sym_name"]).value
            found[sym] = str(op).encode()
            with module.context:
                found[sym + ".ll"] = _pootCPU.translate_to_llvm_ir(op.operation).encode()
    return found


_SUFFIX = {"spirv": ".spv", "nvvm": ".ptx", "rocdl": ".rocdl.mlir"}


def compile_gpu(
    module: "Module | str",
    device: devices.Device,
    out_dir: "str | Path",
    *,
    func: str | None = None,
    nvvm_format: str = "isa",
    fuse: bool = True,
    trace: PassTrace | None = None,
) -> Path:
    """Compiles every poot.attention of `func` for `device` into `out_dir`.

    Like `compile_cpu`, it starts with the attention rewrite (`fuse=False`
    turns it off) and records it in the manifest's `fusion`; a step left
    with no poot.attention is refused (there is nothing to plan). `trace`
    (a `PassTrace`) keeps IR dumps and pass timings."""
    if device.target not in _SUFFIX:
        raise errors.CompileError(f"{device.name} is not a GPU target ({device.target})")
    mod = parse_module(module)
    fusion = fuse_for_compile(mod, fuse, "compile_gpu", trace)
    options = device.pipeline_options()
    if device.target == "nvvm":
        options += f" format={nvvm_format}"
    run_pipeline(mod, f"builtin.module(poot-to-{device.target}{{{options}}})", trace=trace)
    # (After the pipeline: the planner's refusals name their cause first.)
    func_op = _find_func(mod, func)
    if not fusion.fused:
        name = StringAttr(func_op.attributes["sym_name"]).value
        declined = "".join(f"\n  {remark}" for remark in fusion.declined)
        raise errors.CompileError(
            f"{nothing_to_plan(name, fusion)}: GPU artifacts hold the fused attention kernels "
            "only; compile this step for the CPU target (compile_cpu) or the CPU and a GPU "
            f"(compile_hybrid){declined}"
        )
    signature = function_signature(func_op)
    arg_names = [entry["name"] for entry in signature["inputs"]]
    result_names = [entry["name"] for entry in signature["outputs"]]
    returned = {}
    for op in func_op.regions[0].blocks[0].operations:
        if op.operation.name == "func.return":
            for index, value in enumerate(op.operands):
                returned.setdefault(_value_key(value), []).append(result_names[index])

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    objects = _kernel_objects(mod, device.target)
    attentions = []
    produced: dict[str, str] = {}  # result of an earlier fused op -> its value name
    for op in func_op.regions[0].blocks[0].operations:
        name = op.operation.name
        if name in ("func.return",):
            continue
        if name not in FUSED_OPS:
            raise errors.CompileError(
                f"GPU targets run the fused attention only; {name} must run on the "
                "CPU target (compile this step with target='cpu')"
            )
        kind = FUSED_OPS[name]
        request = parse_request(str(op.attributes["poot.request"]))
        if kind == "attention":
            named = _attention_operands(op)
        else:
            named = dict(zip(_SELECTION_OPERANDS[kind], op.operands))
        operands = {}
        for key, value in named.items():
            if isinstance(value, BlockArgument):
                operands[key] = arg_names[BlockArgument(value).arg_number]
            elif _value_key(value) in produced:
                operands[key] = produced[_value_key(value)]
            else:
                raise errors.CompileError(
                    f"{name} operand {key} is computed in the step; GPU artifacts need "
                    "it to be a function argument or the result of an earlier fused op"
                )
        outputs = returned.get(_value_key(op.results[0]), [])
        value_name = f"%{len(attentions)}"
        produced[_value_key(op.results[0])] = value_name
        kernels = []
        for ref in ArrayAttr(op.attributes["poot.kernels"]):
            module_name, entry = re.findall(r"@\"?([\w.]+)\"?", str(ref))
            file = module_name + _SUFFIX[device.target]
            (out / file).write_bytes(objects[module_name])
            if device.target == "rocdl":
                # The LLVM IR of the kernels (amdgpu_kernel), for compile_hsaco.
                (out / f"{module_name}.ll").write_bytes(objects[module_name + ".ll"])
            kernels.append((file, entry))
        result_type = op.results[0].type
        entry = {
            **attention_entry(op),
            "operands": operands,
            "outputs": outputs,
            "value": value_name,
            "out": {
                # The result's own element type: two-byte attention stores
                # f16/bf16 (rounded once in the kernel).
                "dtype": _element_name(result_type),
                "count": _element_count(result_type),
            },
            "launches": (
                launch_plan(request, list(operands), kernels)
                if kind == "attention"
                else selection_launch_plan(kind, request, kernels)
            ),
            "scratch_floats": 0 if kind == "block_topk" else _scratch_floats(request),
        }
        attentions.append(entry)
    used = {source for a in attentions for source in a["operands"].values()}
    for entry in attentions:
        if not entry["outputs"] and entry["value"] not in used:
            raise errors.CompileError(
                f"a fused {entry['op']}'s result is neither a function result nor used by a "
                "later fused op"
            )
    manifest = {
        "format": ARTIFACT_FORMAT,
        "target": device.target,
        "device": device.to_json(),
        "function": signature,
        "fusion": fusion.to_json(),
        "attention": attentions,
        "buffer_plan": buffer_plan(signature, attentions),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return out


def buffer_plan(signature: dict[str, Any], attentions: list[dict[str, Any]]) -> dict[str, Any]:
    """The step's device memory: every argument and result, plus one scratch
    arena. Each split-KV scratch lives exactly as long as its attention and
    is never an export, so consecutive attentions (layers) share one arena
    slot sized for the largest: the arena does not grow with the layer count.
    """
    itemsize = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i1": 1}

    def nbytes(entry: dict[str, Any]) -> int:
        count = 1
        for dim in entry["shape"]:
            count *= dim
        return count * itemsize[entry["dtype"]]

    arena = max((a["scratch_floats"] * 4 for a in attentions), default=0)
    io = sum(nbytes(e) for e in signature["inputs"]) + sum(nbytes(e) for e in signature["outputs"])
    return {"scratch_arena_bytes": arena, "peak_bytes": io + arena}


def _element_name(tensor_type) -> str:
    """Element type of a static tensor type ("f32", "bf16", "i32"), from its
    printed form."""
    return str(tensor_type).rstrip(">").rsplit("x", 1)[-1]


def _element_count(tensor_type) -> int:
    """Element count of a static tensor type, from its printed form."""
    dims = str(tensor_type)[len("tensor<") :].split("x")[:-1]
    count = 1
    for dim in dims:
        count *= int(dim)
    return count


def _value_key(value) -> str:
    """A hashable identity for an ir.Value within one function."""
    return value.get_name()


def compile_hsaco(ll_path: "str | Path", chip: str = "gfx942") -> Path:
    """An HSACO code object from a ROCDL artifact's LLVM IR (`<module>.ll`).

    Needs an LLVM whose llc has the AMDGPU target and that reads this LLVM's
    IR (22.x), plus ld.lld: `POOT_AMDGPU_LLC` / `POOT_LLD`, else `llc-22` and
    `ld.lld-22` on PATH (Debian's llvm-22, lld-22). The pinned PyPI LLVM has no
    AMDGPU target, so without them this raises CompileError saying so.
    """
    import os
    import shutil
    import subprocess

    ll = Path(ll_path)
    llc = os.environ.get("POOT_AMDGPU_LLC") or shutil.which("llc-22")
    lld = os.environ.get("POOT_LLD") or shutil.which("ld.lld-22") or shutil.which("ld.lld")
    if not llc or not lld:
        raise errors.CompileError(
            "HSACO needs an LLVM 22 llc with the AMDGPU target and ld.lld (Debian: llvm-22, "
            "lld-22; or set POOT_AMDGPU_LLC / POOT_LLD). The pinned xtc-llvm wheels have no "
            f"AMDGPU target. The kernels' LLVM IR is at {ll}."
        )
    obj, hsaco = ll.with_suffix(".o"), ll.with_suffix(".hsaco")
    for argv, what in (
        ([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={chip}", "-O3", "-filetype=obj", str(ll), "-o", str(obj)], "llc"),
        ([lld, "-shared", str(obj), "-o", str(hsaco)], "ld.lld"),
    ):
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode:
            raise errors.CompileError(f"{what} failed on {ll}:\n{proc.stderr[-4000:]}")
    return hsaco
