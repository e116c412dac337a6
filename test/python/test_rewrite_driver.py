"""`poot_mlir.compiler.fuse_attention`: the Python face of the
poot-fuse-attention pipeline (same definition as poot-opt's), its remarks
and its typed failure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import poot_mlir
from poot_mlir import errors, ir
from poot_mlir.compiler import fuse_attention
from poot_mlir.compiler.fuse import count_ops, pipeline
from poot_mlir.frontend import Tracer, ops
from rewrite_support import copy_module


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def two_attentions() -> ir.Module:
    """One f32 prefill (fuses) and one f64 prefill (declines: the kernels
    read f32, f16 or bf16)."""
    tr = Tracer("two")
    for name, dtype in (("a", "f32"), ("b", "f64")):
        q = tr.input(f"q_{name}", (1, 2, 4, 8), dtype)
        k = tr.input(f"k_{name}", (1, 1, 4, 8), dtype)
        v = tr.input(f"v_{name}", (1, 1, 4, 8), dtype)
        tr.output(f"out_{name}", ops.attention_prefill(q, k, v))
    return tr.finish()


def test_report_counts_and_remarks() -> None:
    module = two_attentions()  # as traced, with the source locations
    report = fuse_attention(module, remarks=True)
    assert report.module is module
    assert report.attention == 1 == count_ops(module, "poot.attention")
    assert len(report.remarks) == 1
    remark = report.remarks[0]
    # The location is the user's line (the frontend's source locations).
    assert "test_rewrite_driver.py" in remark, remark
    assert "attention not fused: element type f64 is not f32, f16 or bf16" in remark, remark
    assert "see current operation" not in remark, remark


def test_remarks_off_by_default() -> None:
    report = fuse_attention(copy_module(two_attentions()))
    assert report.attention == 1 and report.remarks == []


def test_python_and_poot_opt_share_the_pipeline() -> None:
    source = str(two_attentions())
    module = copy_module(two_attentions())
    fuse_attention(module)
    # The tool lit uses (POOT_OPT), else the one inside the package, else PATH.
    bundled = Path(poot_mlir.__file__).parent / "_bin" / "poot-opt"
    tool = os.environ.get("POOT_OPT") or (bundled if bundled.exists() else shutil.which("poot-opt"))
    assert tool, "poot-opt not found"
    proc = subprocess.run(
        [str(tool), "--poot-fuse-attention"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == str(module).strip()


def test_pipeline_text() -> None:
    assert pipeline() == "builtin.module(poot-fuse-attention{remarks=false})"
    assert pipeline(True) == "builtin.module(poot-fuse-attention{remarks=true})"


def test_failure_is_a_compile_error_with_diagnostics() -> None:
    module = copy_module(two_attentions())
    # Corrupt a driver marker: the verifier after the first pass refuses it.
    func = module.body.operations[0]
    with module.context:
        args = list(func.attributes["arg_attrs"])
        args[0] = ir.DictAttr.get(
            {"poot.range": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)}
        )
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(args)
    with pytest.raises(errors.CompileError) as info:
        fuse_attention(module)
    assert "poot-fuse-attention failed" in str(info.value)
    assert "'poot.range' must be a #poot.range attribute" in str(info.value)


def test_needs_a_module() -> None:
    with pytest.raises(TypeError):
        fuse_attention("module {}")  # type: ignore[arg-type]
