"""The 16-bit contract (docs/sixteen-bit-contract.md): f16/bf16 `matmul` and
`reduce sum` accumulate in f32 and round once; elementwise ops round per op.

Checked where the two possible contracts differ by percents (K = 4096:
rounding after every add loses ~sqrt(K) * 2^-9): the oracle, the CPU and
lavapipe (raw Vulkan) against float64 on fresh random inputs; the same step
for sm_90 through ptxas and for gfx942 through LLVM IR translation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from poot_mlir import oracle  # noqa: E402
from poot_mlir.compiler import compile_cpu, devices  # noqa: E402
from poot_mlir.compiler.gpu import compile_gpu  # noqa: E402
from poot_mlir.frontend import Tracer, ops  # noqa: E402
from poot_mlir.oracle import semantics  # noqa: E402
from poot_mlir.runtime.cpu import CpuArtifact  # noqa: E402
from poot_mlir.runtime.program import ProgramArtifact  # noqa: E402
from system_deps import ptxas_path, require  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
DTYPES = {"bf16": BF16, "f16": F16}
#: The unit roundoff of one rounding to the type (8- and 11-bit significands).
UNIT = {"bf16": 2.0**-8, "f16": 2.0**-11}
K = 4096


def _normal(rng, shape, dtype):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def _within_one_rounding(got, exact, name: str, scale) -> None:
    """`got` (16-bit) is `exact` (float64) rounded once, up to f32 sum
    error: |got - exact| <= u |exact| + 2^-20 * scale (the sum of |terms|)."""
    err = np.abs(got.astype(np.float64) - exact)
    bound = UNIT[name] * np.abs(exact) + 2.0**-20 * scale
    assert np.all(err <= bound), f"worst excess {float(np.max(err - bound)):.3g}"


@pytest.mark.parametrize("name", DTYPES)
def test_oracle_matmul_accumulates_in_f32_and_rounds_once(rng, name) -> None:
    dtype = DTYPES[name]
    lhs, rhs = _normal(rng, (2, 3, K), dtype), _normal(rng, (K, 8), dtype)
    got = semantics.matmul(lhs, rhs)
    assert got.dtype == dtype and got.shape == (2, 3, 8)
    wide_l, wide_r = lhs.astype(np.float64), rhs.astype(np.float64)
    _within_one_rounding(got, wide_l @ wide_r, name, np.abs(wide_l) @ np.abs(wide_r))


@pytest.mark.parametrize("name", DTYPES)
def test_oracle_sum_accumulates_in_f32_and_rounds_once(rng, name) -> None:
    dtype = DTYPES[name]
    # Terms in [0.2, 0.45]: once a 16-bit running sum reaches 1024 (f16) or
    # 128 (bf16) its ulp is 1, every term is under half of it, and the sum
    # stalls -- deterministically far from the true ~1330 (a symmetric
    # spread would round up as often as down and might not show it).
    x = rng.uniform(0.2, 0.45, size=(3, K)).astype(np.float32).astype(dtype)
    got = semantics.reduce(x, "sum", axis=1, keepdim=True)
    assert got.dtype == dtype and got.shape == (3, 1)
    wide = x.astype(np.float64)
    _within_one_rounding(got[:, 0], wide.sum(axis=1), name, np.abs(wide).sum(axis=1))
    # Rounding after every add instead would be off by far more than u.
    folded = np.zeros(3, dtype=dtype)
    for j in range(K):
        folded = (folded + x[:, j]).astype(dtype)
    assert np.max(np.abs(folded.astype(np.float64) / wide.sum(axis=1) - 1)) > 8 * UNIT[name]


def _contract_step(name: str) -> Tracer:
    """A bf16/f16 step where the contracts differ: a K = 4096 linear, an
    RMSNorm over 4096 channels (a K = 4096 sum), a SiLU and a row sum."""
    tr = Tracer("contract")
    x = tr.input("x", (2, K), name)
    w = tr.input("w", (K, 64), name)
    g = tr.input("g", (K,), name)
    y = ops.linear(x, w)
    tr.output("y", y)
    tr.output("norm", ops.linear(ops.rms_norm(x, g), w))
    tr.output("act", ops.silu(y))
    tr.output("total", ops.reduce_sum(ops.mul(x, x), axis=-1, keepdim=True))
    return tr


def _inputs(rng, name: str) -> dict[str, np.ndarray]:
    dtype = DTYPES[name]
    return {
        "x": _normal(rng, (2, K), dtype),
        # A linear's weights are ~1/sqrt(K): outputs O(1).
        "w": (rng.standard_normal((K, 64)) / np.sqrt(K)).astype(np.float32).astype(dtype),
        "g": (1.0 + 0.1 * rng.standard_normal(K)).astype(np.float32).astype(dtype),
    }


def _check_against_float64(tr_text: str, got: dict, inputs: dict, name: str) -> None:
    """Each output within a few roundings of the float64 answer for the same
    16-bit inputs (a chain rounds once per op), and close to the oracle's own
    16-bit answer (the same contract, another f32 summation order)."""
    exact = oracle.run(tr_text, inputs, reference=True).named
    mine = oracle.run(tr_text, inputs).named
    u = UNIT[name]
    for out in ("y", "norm", "act", "total"):
        g = got[out].astype(np.float64)
        want = exact[out].astype(np.float64)
        scale = float(np.max(np.abs(want)))
        # A 16-bit accumulation of 4096 terms would be ~sqrt(K) u = 64 u off.
        np.testing.assert_allclose(g, want, rtol=4 * u, atol=4 * u * scale, err_msg=out)
        np.testing.assert_allclose(g, mine[out].astype(np.float64), rtol=2 * u,
                                   atol=2 * u * scale, err_msg=f"{out} vs the oracle")


@pytest.mark.parametrize("name", DTYPES)
def test_cpu_step_follows_the_contract(tmp_path, rng, name) -> None:
    tr = _contract_step(name)
    text = tr.mlir()
    art = CpuArtifact(compile_cpu(tr.finish(), tmp_path / "step"))
    inputs = _inputs(rng, name)
    got = art.run(inputs).named
    _check_against_float64(text, got, inputs, name)


@pytest.mark.parametrize("name", DTYPES)
def test_lavapipe_step_follows_the_contract(tmp_path, rng, name) -> None:
    """Raw Vulkan (bf16 carried as i16; wgpu refuses bf16 steps)."""
    require("vulkan")
    tr = _contract_step(name)
    text = tr.mlir()
    art = ProgramArtifact(compile_gpu(tr.finish(), devices.VULKAN_LAVAPIPE, tmp_path / "step"),
                          "lavapipe")
    try:
        inputs = _inputs(rng, name)
        got = art.run(inputs).named
    finally:
        art.close()
    _check_against_float64(text, got, inputs, name)


def test_bf16_step_ptx_assembles_for_sm90(tmp_path) -> None:
    require("ptxas")
    import subprocess

    path = compile_gpu(_contract_step("bf16").finish(), devices.SM_90, tmp_path / "nvvm")
    ptx = sorted(path.glob("*.ptx"))
    assert ptx
    for file in ptx:
        text = file.read_text()
        proc = subprocess.run([ptxas_path(), "-arch=sm_90", file, "-o", tmp_path / "k.cubin"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{file.name}: {proc.stderr}"
    # The accumulators are f32: the bf16 inputs are widened (cvt.f32.bf16).
    assert any("cvt.f32.bf16" in f.read_text() or "shl.b32" in f.read_text() for f in ptx)


def test_bf16_exp_translates_for_gfx942(tmp_path) -> None:
    """A bf16 SiLU and softmax chain (math.exp at bf16) becomes LLVM IR for
    ROCDL: the math runs in f32, rounded once."""
    tr = Tracer("act")
    x = tr.input("x", (4, 256), "bf16")
    tr.output("act", ops.silu(x))
    tr.output("p", ops.softmax(x))
    path = compile_gpu(tr.finish(), devices.GFX942, tmp_path / "rocdl", fuse=False)
    lls = sorted(path.glob("*.ll"))
    assert lls
    text = "".join(f.read_text() for f in lls)
    assert "define" in text and "math.exp" not in text
