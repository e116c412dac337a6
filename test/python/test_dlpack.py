"""Runtimes take any DLPack tensor in host memory, in place, and return outputs
that convert to torch without a copy.

The binder (runtime/binding.py `normalize`) reads a DLPack producer through
`np.from_dlpack`, or for bfloat16 (which numpy refuses) through the capsule
itself (runtime/dlpack.py). Tested with numpy and ml_dtypes arrays, a minimal
producer object of our own, and torch CPU tensors (torch tests skip without
torch; CI installs the CPU build).
"""

from __future__ import annotations

import gc
import weakref

import ml_dtypes
import numpy as np
import pytest

from poot_mlir import errors, oracle
from poot_mlir.compiler import compile_cpu
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime import binding, dlpack
from poot_mlir.runtime.cpu import CpuArtifact
from system_deps import require

BF16 = np.dtype(ml_dtypes.bfloat16)


class Producer:
    """The smallest DLPack producer: any object with the two dunders."""

    def __init__(self, array: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self.array, self.device = array, device

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    tr = Tracer("step")
    s = tr.state("s", (4,), "f32")
    x = tr.input("x", (3, 4), "f32")
    b = tr.input("b", (3, 4), "bf16")
    h = tr.input("h", (2,), "f16")
    i = tr.input("i", (2,), "i32")
    tr.output("y", ops.add(ops.exp(x), s))
    tr.output("yb", ops.add(b, b))
    tr.output("yh", ops.mul(h, h))
    tr.output("yi", ops.add(i, i))
    tr.state_out("s", ops.add(s, s))
    module = tr.finish()
    return module, CpuArtifact(compile_cpu(module, tmp_path_factory.mktemp("dlpack") / "a"))


def _numpy_inputs(rng):
    return {
        "x": rng.standard_normal((3, 4)).astype(np.float32),
        "b": rng.standard_normal((3, 4)).astype(BF16),
        "h": rng.standard_normal(2).astype(np.float16),
        "i": rng.integers(-100, 100, 2).astype(np.int32),
        "s": rng.standard_normal(4).astype(np.float32),
    }


def _check(module, result, inputs) -> None:
    want = oracle.run(module, inputs)
    # exp + s: against the float64 reference; the rest is exact.
    ref = oracle.run(module, inputs, reference=True).named["y"]
    np.testing.assert_allclose(result.named["y"], ref, rtol=1e-5, atol=1e-6)
    for name in ("yb", "yh", "yi"):
        np.testing.assert_array_equal(result.named[name], want.named[name], err_msg=name)
    np.testing.assert_array_equal(result.state["s"], want.state["s"])


def _port(artifact, name):
    return next(p for p in artifact.signature.args if p.key == name)


def test_a_minimal_producer_is_read_in_place(artifact, rng):
    module, art = artifact
    inputs = _numpy_inputs(rng)
    wrapped = {k: Producer(v) if k != "b" else v for k, v in inputs.items()}  # numpy: no bf16 export
    _check(module, art.run(wrapped), inputs)
    bound = binding.normalize(_port(art, "x"), wrapped["x"])
    assert bound.ctypes.data == inputs["x"].ctypes.data  # the same memory, no copy


def test_a_device_tensor_is_refused_before_anything_runs(artifact, rng):
    _, art = artifact
    inputs = _numpy_inputs(rng)
    inputs["x"] = Producer(inputs["x"], device=(2, 0))  # kDLCUDA
    with pytest.raises(errors.BindError, match=r"'x' \(arg1\): a tensor in cuda:0 memory"):
        art.run(inputs)


def test_dtype_and_shape_are_still_exact(artifact, rng):
    _, art = artifact
    inputs = _numpy_inputs(rng)
    inputs["x"] = Producer(inputs["x"].astype(np.float64))
    with pytest.raises(errors.ShapeBindError, match="dtype float64"):
        art.run(inputs)
    inputs = _numpy_inputs(rng)
    inputs["x"] = Producer(inputs["x"][:2])
    with pytest.raises(errors.ShapeBindError, match=r"shape \(2, 4\)"):
        art.run(inputs)


def test_outputs_export_dlpack_without_a_copy(artifact, rng):
    _, art = artifact
    res = art.run(_numpy_inputs(rng))
    y = res.named["y"]
    again = np.from_dlpack(Producer(y))
    assert again.ctypes.data == y.ctypes.data and np.array_equal(again, y)


# --- torch -------------------------------------------------------------------------


@pytest.fixture
def torch():
    require("torch")
    import torch

    return torch


def _torch_inputs(torch, inputs):
    out = {}
    for name, value in inputs.items():
        if value.dtype == BF16:
            out[name] = torch.from_numpy(value.astype(np.float32)).to(torch.bfloat16)
        else:
            out[name] = torch.from_numpy(value.copy())
    return out


def test_torch_cpu_tensors_go_in_without_a_copy(artifact, rng, torch):
    module, art = artifact
    inputs = _numpy_inputs(rng)
    tensors = _torch_inputs(torch, inputs)
    _check(module, art.run(tensors), inputs)
    for name in ("x", "b", "h", "i"):
        bound = binding.normalize(_port(art, name), tensors[name])
        assert bound.ctypes.data == tensors[name].data_ptr(), f"{name} was copied"
    # A transposed view is not C-contiguous: copied, values intact.
    xt = torch.from_numpy(np.ascontiguousarray(inputs["x"].T)).T
    bound = binding.normalize(_port(art, "x"), xt)
    assert bound.ctypes.data != xt.data_ptr() and np.array_equal(bound, inputs["x"])


def test_bf16_views_keep_the_tensor_alive(torch):
    t = torch.randn(3, 5).to(torch.bfloat16)
    ref = weakref.ref(t)
    view = dlpack.host_array(t.T)
    expected = t.T.float().numpy()
    del t
    gc.collect()
    assert ref() is not None  # the view owns it now
    assert view.dtype == BF16 and np.array_equal(view.astype(np.float32), expected)
    del view
    gc.collect()
    assert ref() is None  # and releases it


def test_outputs_convert_to_torch_without_a_copy(artifact, rng, torch):
    _, art = artifact
    inputs = _numpy_inputs(rng)
    res = art.run(_torch_inputs(torch, inputs))
    y = torch.from_dlpack(res.named["y"])
    assert y.data_ptr() == res.named["y"].ctypes.data and y.dtype == torch.float32
    # bfloat16 (ml_dtypes) is not exportable by numpy: view the bits.
    yb = torch.from_dlpack(res.named["yb"].view(np.int16)).view(torch.bfloat16)
    assert yb.data_ptr() == res.named["yb"].ctypes.data
    assert torch.equal(yb.float(), torch.from_numpy(res.named["yb"].astype(np.float32)))


def test_a_session_takes_torch_state(artifact, rng, torch):
    module, art = artifact
    inputs = _numpy_inputs(rng)
    state = {"s": torch.from_numpy(inputs.pop("s"))}
    sess = art.session(state)
    res = sess.step(_torch_inputs(torch, inputs))
    want = oracle.run(module, {**inputs, "s": state["s"].numpy()})
    np.testing.assert_allclose(res.named["y"], want.named["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(sess.state["s"], want.state["s"])


@pytest.mark.requires("vulkan")
def test_vulkan_runtime_takes_torch_tensors(rng, torch, tmp_path):
    from attention_cases import FORMS, assert_matches, build
    from poot_mlir.compiler import compile_gpu, devices
    from poot_mlir.runtime.gpu import GpuArtifact

    text, inputs = build(FORMS[1], rng)
    path = compile_gpu(text, devices.VULKAN_LAVAPIPE, tmp_path / "a")
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
               for k, v in inputs.items()}
    with GpuArtifact(path, backend="lavapipe") as art:
        out = art.run(tensors).outputs[0]
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    assert_matches(out, ref, rtol=3e-5, atol=3e-6)
    assert torch.from_dlpack(out).data_ptr() == out.ctypes.data
