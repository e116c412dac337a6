"""Compiling bench artifacts (build machine only: needs the MLIR package).

`compile_artifact(text, device, out_dir)` is `compiler.gpu.compile_gpu`. When
the in-process pipeline cannot run the NVVM lowering (a Python package built
before its ConvertToLLVM interfaces were registered aborts with an LLVM
ERROR), set POOT_VIA_TOOL=1: the pipeline then runs in the `poot-opt` tool
of the same build and the module is parsed back, so the rest of compile_gpu
(manifest, kernel files) is unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def _tool() -> str:
    import poot_mlir

    for root in poot_mlir.__path__:  # the package dir itself (not symlink-resolved)
        path = Path(root) / "_bin" / "poot-opt"
        if path.exists():
            return str(path)
    found = shutil.which("poot-opt")
    if not found:
        raise RuntimeError("no poot-opt tool found")
    return found


def _run_via_tool(module, pipeline: str, *, trace=None, remarks=None) -> None:
    # (compile_gpu's trace/remarks are not supported through the tool.)
    from poot_mlir import errors
    from poot_mlir.ir import Module

    proc = subprocess.run([_tool(), f"--pass-pipeline={pipeline}"], input=str(module),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        import re

        m = re.search(r"error: (AttentionLds|ScratchBytes|DtypeLowering|GridLimit):.*", proc.stderr)
        if m:
            raise errors.refusal_for(m.group(1))(m.group(0)[len("error: "):])
        raise errors.CompileError(f"poot-opt {pipeline!r} failed:\n{proc.stderr}")
    with module.context:
        new = Module.parse(proc.stdout)
        for op in list(module.body.operations):
            op.operation.erase()
        for op in list(new.body.operations):
            module.body.append(op.operation)
        attrs = new.operation.attributes
        for i in range(len(attrs)):
            named = attrs[i]
            module.operation.attributes[named.name] = named.attr


def compile_artifact(text: str, device, out_dir, **kw) -> Path:
    from poot_mlir.compiler import gpu

    if os.environ.get("POOT_VIA_TOOL") == "1":
        saved = gpu.run_pipeline
        gpu.run_pipeline = _run_via_tool
        try:
            return gpu.compile_gpu(text, device, out_dir, **kw)
        finally:
            gpu.run_pipeline = saved
    return gpu.compile_gpu(text, device, out_dir, **kw)
