"""`ops.argmax`: the first index of the maximum of the last axis as i32,
built from primitives (the fixed chain in its docstring), against numpy's
argmax (= torch's: first maximum, a NaN counts as the maximum) on fresh
random inputs with planted ties, NaNs and -inf rows -- in the float64
oracle, compiled for the CPU, and as kernels on lavapipe (raw Vulkan and
wgpu)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from system_deps import require

from poot_mlir import oracle
from poot_mlir.errors import TraceError
from poot_mlir.frontend import Tracer, ops

#: (shape, dtype): a decode step's [rows, 1, vocab] logits, 2-D rows, a
#: single row, bf16 (the CUDA bench's logits) and i32; a vocabulary the GPU
#: steps split 128 ways (the max and the first-index min over chunks: the
#: same answer as one pass, ties and NaNs included).
CASES = [
    ((4, 1, 97), "f32"),
    ((6, 300), "bf16"),
    ((1, 5), "f16"),
    ((3, 64), "i32"),
    ((8, 4096), "bf16"),
]
_NP = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16, "i32": np.int32}


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def _trace(shape, dtype, keepdim=False):
    tr = Tracer("argmax")
    x = tr.input("x", shape, dtype)
    tr.output("out", ops.argmax(x, keepdim=keepdim))
    return tr


def _input(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Small integers (many ties, and values every dtype holds exactly),
    then per row of the last axis: a planted tie of the row's maximum at a
    random later index, and in floats a NaN row, a two-NaN row, an all -inf
    row and an all-equal row."""
    rows = int(np.prod(shape[:-1]))
    n = shape[-1]
    x = rng.integers(-20, 20, (rows, n)).astype(np.float64)
    for r in range(rows):
        first = int(np.argmax(x[r]))
        if first + 1 < n:
            x[r, rng.integers(first + 1, n)] = x[r, first]  # a tie after the first maximum
    if dtype != "i32" and rows >= 3:
        x[0, rng.integers(0, n)] = np.nan
        x[1, rng.choice(n, size=min(2, n), replace=False)] = np.nan
        x[2] = -np.inf
        if rows >= 4:
            x[3] = 7.0
    return x.astype(_NP[dtype]).reshape(shape)


def _want(x: np.ndarray, keepdim=False) -> np.ndarray:
    # numpy's argmax is torch's: the first maximum, the first NaN if any.
    return np.argmax(x.astype(np.float64), axis=-1, keepdims=keepdim).astype(np.int32)


def test_shape_dtype_and_the_emitted_chain() -> None:
    tr = _trace((4, 1, 97), "f32")
    out = tr.result("out")
    assert (out.shape, out.dtype) == ((4, 1), "i32")
    body = [op.operation.name for op in tr._block.operations]
    assert body == ["poot.reduce", "poot.compare", "poot.compare", "poot.or", "poot.iota",
                    "poot.constant", "poot.select", "poot.reduce"], body  # fmt: skip
    kept = _trace((2, 5), "bf16", keepdim=True).result("out")
    assert (kept.shape, kept.dtype) == ((2, 1), "i32")


def test_refusals_name_the_argument() -> None:
    tr = Tracer("bad")
    with pytest.raises(TraceError, match="argmax: x has dtype i1"):
        ops.argmax(tr.input("b", (3,), "i1"))
    with pytest.raises(TraceError, match="argmax: x must have rank >= 1"):
        ops.argmax(tr.input("s", (), "f32"))
    with pytest.raises(TraceError, match="argmax: keepdim must be a bool"):
        ops.argmax(tr.input("k", (3,), "f32"), keepdim=1)
    with pytest.raises(TraceError, match="argmax: x must be a traced Tensor"):
        ops.argmax(np.zeros(3))
    with pytest.raises(TraceError, match="no such result"):
        tr.result("out")


@pytest.mark.parametrize("shape,dtype", CASES)
def test_oracle_and_cpu_match_numpy(tmp_path, rng, shape, dtype) -> None:
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    tr = _trace(shape, dtype)
    reference = tr.mlir()
    with CpuArtifact(compile_cpu(tr.finish(), tmp_path / "cpu")) as art:
        for _ in range(3):
            x = _input(rng, shape, dtype)
            want = _want(x)
            got = oracle.run(reference, {"x": x}, reference=True).named["out"]
            np.testing.assert_array_equal(got, want, err_msg="oracle")
            got = art.run({"x": x}).named["out"]
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, want, err_msg="cpu")


@pytest.mark.parametrize("backend", ["vulkan", "wgpu"])
def test_lavapipe_matches_numpy(tmp_path, rng, backend) -> None:
    """As kernels: the two reductions and the select between them."""
    require(backend)
    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.runtime.program import ProgramArtifact

    device, runtime = {
        "vulkan": (devices.VULKAN_LAVAPIPE, "lavapipe"),
        "wgpu": (devices.WGPU_LAVAPIPE, "wgpu-lavapipe"),
    }[backend]
    for i, (shape, dtype) in enumerate(CASES):
        if backend == "wgpu" and dtype == "bf16":
            continue  # bf16 is carried as i16, which naga lacks (a DtypeLowering refusal)
        for keepdim in (False, True):
            tr = _trace(shape, dtype, keepdim)
            path = compile_gpu(tr.finish(), device, tmp_path / f"c{i}{keepdim:d}")
            with ProgramArtifact(path, runtime) as art:
                for _ in range(2):
                    x = _input(rng, shape, dtype)
                    got = art.run({"x": x}).named["out"]
                    np.testing.assert_array_equal(got, _want(x, keepdim), err_msg=f"{shape} {dtype}")
