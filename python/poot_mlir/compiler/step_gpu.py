"""Compile a whole step function for a GPU: every primitive and the attention
as kernels, the state resident on the device and written in place.

`compile_step_gpu(module, device, out_dir)` runs `poot-step-to-<target>`
(the fused attention planned and generated, every other primitive lowered
through linalg, bufferized with the donated state in place, mapped to blocks
and threads and outlined into kernels) and writes an artifact:

    out_dir/<module>.spv | .ptx | .rocdl.mlir   one file per kernel module
    out_dir/manifest.json   {"format": "poot-artifact/1", "kind": "program",
                             "target", "device", "function": signature,
                             "programs": {<function>: program}}

A program (written once, on the IR, by `poot-gpu-serialize-program`) is the
step's buffers (arguments, arena temporaries with their offsets, constants
with their bytes), its commands in order (kernel launches with grid, block
and buffer arguments; buffer copies), the buffers of the results that are not
written in place, and the arena's size. `poot_mlir.runtime.program` runs it
without MLIR. A step with a validation output and state gets a second
program, its validation prologue, which the runtime runs first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import errors
from ..ir import DictAttr, StringAttr
from . import devices
from .cpu import _record_in_place, _select_function
from .fuse import fuse_for_compile
from .gpu import _SUFFIX, _kernel_objects
from .pipeline import parse_module, run_pipeline
from .signature import function_signature
from .trace import PassTrace


def compile_step_gpu(
    module: Any,
    device: devices.Device,
    out_dir: "str | Path",
    *,
    func: str | None = None,
    nvvm_format: str = "isa",
    fuse: bool = True,
    trace: "PassTrace | None" = None,
) -> Path:
    """Compile the step `func` (default: the only public function) of
    `module` for `device` (a GPU description) into `out_dir`. The compile
    starts with the attention rewrite (off with `fuse=False`); `module`
    itself is never changed."""
    if device.target not in _SUFFIX:
        raise errors.CompileError(f"{device.name} is not a GPU target ({device.target})")
    mod = parse_module(module)
    fusion = fuse_for_compile(mod, fuse, "compile_step_gpu", trace)
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
    for program in programs.values():
        for command in program["commands"]:
            launch = command.get("launch")
            if launch is None:
                continue
            module_name = launch["module"]
            if module_name not in objects:
                raise errors.CompileError(f"kernel module {module_name} was not produced")
            launch["kernel"] = module_name + suffix
            (out / launch["kernel"]).write_bytes(objects[module_name])
            if device.target == "rocdl":
                (out / f"{module_name}.ll").write_bytes(objects[module_name + ".ll"])
    manifest = {
        "format": "poot-artifact/1",
        "kind": "program",
        "target": device.target,
        "device": device.to_json(),
        "function": signature,
        "fusion": fusion.to_json(),
        "programs": programs,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out
