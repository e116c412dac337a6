"""Whole GPU steps at the edges of what a device buffer and grid hold
(issue 28): values no GPU buffer can hold are refused at compile time with
a typed error and never abort the interpreter; a launch larger than the
device's grid runs within it (each thread strides over the rest), checked
on lavapipe against the float64 oracle."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from poot_mlir import errors, oracle  # noqa: E402
from poot_mlir.compiler import devices  # noqa: E402
from poot_mlir.compiler.gpu import compile_gpu  # noqa: E402
from poot_mlir.runtime.program import ProgramArtifact  # noqa: E402
from system_deps import require  # noqa: E402

GPU_DEVICES = [devices.VULKAN_LAVAPIPE, devices.WGPU_LAVAPIPE, devices.SM_90, devices.GFX942]


def _step(arg_type: str) -> str:
    return f"func.func @step(%x: {arg_type}) {{\n  return\n}}\n"


@pytest.mark.parametrize("device", GPU_DEVICES, ids=lambda d: d.name)
@pytest.mark.parametrize("element", ["index", "complex<f32>"])
def test_an_element_no_buffer_holds_is_a_dtype_refusal(tmp_path, device, element) -> None:
    with pytest.raises(errors.DtypeLowering, match=f"the step argument #0 has element type '{re.escape(element)}'"):
        compile_gpu(_step(f"tensor<4x{element}>"), device, tmp_path / "step")


@pytest.mark.parametrize("device", GPU_DEVICES, ids=lambda d: d.name)
@pytest.mark.parametrize("arg_type,message", [
    ("tensor<?xf32>", "dynamically shaped"),
    ("memref<?xf32>", "ranked tensors"),
    ("tensor<*xf32>", "ranked tensors"),
])
def test_a_dynamic_shape_is_a_compile_error(tmp_path, device, arg_type, message) -> None:
    with pytest.raises(errors.CompileError, match=message):
        compile_gpu(_step(arg_type), device, tmp_path / "step")


BIG_EXP = """
func.func @step(%x: tensor<65536x65536xf32>) -> tensor<65536x65536xf32> {
  %0 = poot.exp %x : tensor<65536x65536xf32>
  return %0 : tensor<65536x65536xf32>
}
"""


@pytest.mark.parametrize("device", [devices.VULKAN_LAVAPIPE, devices.WGPU_LAVAPIPE], ids=lambda d: d.name)
def test_a_buffer_past_the_devices_limit_is_refused(tmp_path, device) -> None:
    """2^32 elements: past lavapipe's 128 MiB buffers, and past what a
    SPIR-V array counts even on a device with larger buffers."""
    with pytest.raises(errors.BufferBytes, match="4294967296 elements"):
        compile_gpu(BIG_EXP, device, tmp_path / "step")
    roomy = device.with_limits(max_buffer_bytes=1 << 40, max_alloc_bytes=1 << 40)
    with pytest.raises(errors.BufferBytes, match="2147483647 elements"):
        compile_gpu(BIG_EXP, roomy, tmp_path / "roomy")


def test_an_intermediate_past_the_limit_is_refused(tmp_path) -> None:
    """A matmul whose [65536, 65536] product no buffer of lavapipe holds,
    though its operands fit: refused at the op, typed."""
    text = """
func.func @step(%a: tensor<65536x2xf32>, %b: tensor<2x65536xf32>) -> tensor<1x65536xf32> {
  %0 = poot.matmul %a, %b : (tensor<65536x2xf32>, tensor<2x65536xf32>) -> tensor<65536x65536xf32>
  %1 = poot.slice %0 [0, 0] to [1, 65536] step [1, 1] : tensor<65536x65536xf32> -> tensor<1x65536xf32>
  return %1 : tensor<1x65536xf32>
}
"""
    with pytest.raises(errors.BufferBytes, match="result #0 of 'poot.matmul'"):
        compile_gpu(text, devices.VULKAN_LAVAPIPE, tmp_path / "step")


def test_a_launch_past_the_grid_limit_strides_within_it(tmp_path, rng) -> None:
    """tanh over [2048, 4096] needs 65536 blocks of 128 threads, one more
    than lavapipe's grid X (65535): it launches 65535 blocks whose threads
    stride over the rest, and matches the oracle."""
    require("vulkan")
    from poot_mlir.frontend import Tracer, ops

    tr = Tracer("wide")
    x = tr.input("x", (2048, 4096))
    tr.output("out", ops.tanh(x))
    reference = tr.mlir()
    art = ProgramArtifact(compile_gpu(tr.finish(), devices.VULKAN_LAVAPIPE, tmp_path / "wide"), "lavapipe")
    try:
        launches = [c["launch"] for c in art.programs["wide"]["commands"] if "launch" in c]
        assert launches and all(l["grid"][0] <= devices.VULKAN_LAVAPIPE.max_grid_x for l in launches)
        inputs = {"x": rng.standard_normal((2048, 4096), dtype=np.float32)}
        got = art.run(inputs).named["out"]
        want = oracle.run(reference, inputs, reference=True).named["out"]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    finally:
        art.close()
