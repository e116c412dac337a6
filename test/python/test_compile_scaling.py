"""Compile time grows linearly with a step's length (issue 28, defect 5: an
elementwise chain of 1,000 ops took 90 s in one-shot bufferization, whose
analysis was superlinear once CSE had merged every `tensor.empty` into one
destination and every `* 0.5` into one constant; `poot-untie-shared-tensors`
gives each op its own again).

The bound is loose on purpose (CI runs on 2 shared cores): the cubic
compile took over 120 s for 2,000 ops, so a 10,000-op chain under a minute
can only be near-linear. The step also has to compute the right thing.
(One function argument read by thousands of ops is still quadratic in the
upstream analysis: see the pass's description.) The GPU step pipeline fused
the same chain with upstream's uncapped elementwise fusion, quadratic in the
fused payload (2,000 ops 7.4 s, 10,000 about 150 s); it now uses
poot-fuse-elementwise-chains too (10,000 ops about 5 s for lavapipe).
"""

from __future__ import annotations

import time

import numpy as np

from poot_mlir.compiler import compile_cpu, devices
from poot_mlir.compiler.gpu import compile_gpu
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime.cpu import CpuArtifact
from poot_mlir.runtime.program import ProgramArtifact
from system_deps import require

OPS = 10_000


def _chain(n: int):
    """y = x, then n ops cycling through tanh, a scale by 0.5 and adding 1
    (every op reads the one before; the constants are shared until
    poot-untie-shared-tensors)."""
    tr = Tracer("step")
    x = tr.input("x", (16, 16), "f32")
    y = x
    for i in range(n):
        y = ops.tanh(y) if i % 3 == 0 else (y * 0.5 if i % 3 == 1 else y + 1.0)
    tr.output("y", y)
    return tr.finish()


def _reference(x: np.ndarray, n: int) -> np.ndarray:
    y = x.astype(np.float64)
    for i in range(n):
        y = np.tanh(y) if i % 3 == 0 else (y * 0.5 if i % 3 == 1 else y + 1.0)
    return y


def test_a_long_elementwise_chain_compiles_in_linear_time(tmp_path, rng, monkeypatch) -> None:
    monkeypatch.setenv("POOT_CACHE", "0")  # time the compile, not a cache hit
    module = _chain(OPS)
    started = time.perf_counter()
    path = compile_cpu(module, tmp_path / "chain", parallel="serial")
    seconds = time.perf_counter() - started
    assert seconds < 20, f"compile_cpu of a {OPS}-op chain took {seconds:.1f} s"
    x = rng.standard_normal((16, 16)).astype(np.float32)
    got = CpuArtifact(path).run({"x": x}).named["y"]
    np.testing.assert_allclose(got, _reference(x, OPS), rtol=1e-4, atol=1e-5)


def test_a_long_elementwise_chain_compiles_for_the_gpu_in_linear_time(tmp_path, rng, monkeypatch) -> None:
    require("vulkan")
    monkeypatch.setenv("POOT_CACHE", "0")
    module = _chain(OPS)
    started = time.perf_counter()
    path = compile_gpu(module, devices.VULKAN_LAVAPIPE, tmp_path / "chain")
    seconds = time.perf_counter() - started
    assert seconds < 30, f"compile_gpu of a {OPS}-op chain took {seconds:.1f} s"
    x = rng.standard_normal((16, 16)).astype(np.float32)
    art = ProgramArtifact(path, "lavapipe")
    try:
        got = art.run({"x": x}).named["y"]
    finally:
        art.close()
    np.testing.assert_allclose(got, _reference(x, OPS), rtol=1e-4, atol=1e-5)
