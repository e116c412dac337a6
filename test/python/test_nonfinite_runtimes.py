"""NaN and infinities planted in a fused attention's queries, keys, values,
new rows and mask (the additive bias) come out the same on every runtime as
in the float64 oracle: the same elements NaN, the same infinities, the
finite rest close (issue 28, defect 1: wgpu dropped a NaN key and returned
finite numbers where the oracle, the CPU and raw Vulkan return NaN).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from poot_mlir import oracle  # noqa: E402
from poot_mlir.compiler import compile_cpu, devices  # noqa: E402
from poot_mlir.compiler.gpu import compile_gpu  # noqa: E402
from poot_mlir.frontend import Tracer, ops  # noqa: E402
from poot_mlir.runtime.cpu import CpuArtifact  # noqa: E402
from poot_mlir.runtime.program import ProgramArtifact  # noqa: E402
from system_deps import require  # noqa: E402

HQ, HKV, CAP, D, POS = 8, 2, 32, 16, 5

#: name -> (system dependency or None, device, backend)
RUNTIMES = {
    "cpu": (None, None, None),
    "vulkan": ("vulkan", devices.VULKAN_LAVAPIPE, "lavapipe"),
    "wgpu": ("wgpu", devices.WGPU_LAVAPIPE, "wgpu-lavapipe"),
}

NAN, INF = float("nan"), float("inf")

#: (input, index, value): one non-finite element planted per case. Rows up
#: to POS are live; row 20 is past it (masked).
CASES = [
    ("q", (0, 1, 0, 3), NAN),
    ("q", (0, 6, 0, 0), INF),
    ("k0", (0, 0, 2, 3), NAN),
    ("k0", (0, 1, 20, 7), NAN),
    ("k0", (0, 1, 4, 0), INF),
    ("k0", (0, 0, 1, 9), -INF),
    ("v0", (0, 1, 3, 5), NAN),
    ("v0", (0, 0, 0, 2), INF),
    ("v0", (0, 0, 20, 2), NAN),
    ("k", (0, 1, 0, 4), NAN),
    ("v", (0, 0, 0, 11), -INF),
    ("bias", (0, 2, 0, 4), NAN),
    ("bias", (0, 3, 0, 1), -INF),
    ("bias", (0, 5, 0, 2), INF),
    ("bias", (0, 4, 0, slice(None)), -INF),  # a fully masked row: NaN by the spec
]


def _traced():
    tr = Tracer("step")
    k_cache, v_cache = tr.state("k0", (1, HKV, CAP, D)), tr.state("v0", (1, HKV, CAP, D))
    pos = tr.pos(max_pos=CAP - 1)
    q = tr.input("q", (1, HQ, 1, D))
    k, v = tr.input("k", (1, HKV, 1, D)), tr.input("v", (1, HKV, 1, D))
    bias = tr.input("bias", (1, HQ, 1, CAP))
    out, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos, bias=bias)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr


@pytest.fixture(scope="module", params=list(RUNTIMES))
def compiled(request, tmp_path_factory):
    dependency, device, backend = RUNTIMES[request.param]
    if dependency is not None:
        require(dependency)
    tr = _traced()
    reference = tr.mlir()
    folder = tmp_path_factory.mktemp("nonfinite") / request.param
    module = tr.finish()
    if device is None:
        art = CpuArtifact(compile_cpu(module, folder))
    else:
        art = ProgramArtifact(compile_gpu(module, device, folder), backend)
    manifest_fused = len(art.manifest["attention"] if "attention" in art.manifest else [])
    yield reference, art, manifest_fused
    art.close()


def _inputs(rng) -> dict:
    def randn(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    return {
        "q": randn(1, HQ, 1, D), "k": randn(1, HKV, 1, D), "v": randn(1, HKV, 1, D),
        "bias": 0.5 * randn(1, HQ, 1, CAP), "pos": np.int32(POS),
        "k0": randn(1, HKV, CAP, D), "v0": randn(1, HKV, CAP, D),
    }


def _assert_same_nonfinite(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN pattern")
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want), err_msg=f"{what}: +inf")
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want), err_msg=f"{what}: -inf")
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5, err_msg=what)


def test_planted_nonfinite_values_match_the_oracle(compiled, rng) -> None:
    reference, art, fused = compiled
    assert fused == 1, "the attention must run fused (the kernel is what is tested)"
    for name, index, value in CASES:
        inputs = _inputs(rng)
        inputs[name][index] = value
        what = f"{name}{list(index)} = {value}"
        want = oracle.run(reference, inputs, reference=True)
        got = art.run(inputs)
        _assert_same_nonfinite(got.named["out"], want.named["out"], what)
        for state in ("k0", "v0"):
            _assert_same_nonfinite(got.state[state], want.state[state], f"{what}: {state}")
    # The cases do reach the output: a NaN key in a live row of KV head 0
    # makes the output of the query heads that read it NaN, and only those.
    inputs = _inputs(rng)
    inputs["k0"][0, 0, 2, 3] = NAN
    out = art.run(inputs).named["out"]
    assert np.isnan(out[0, :4]).all() and np.isfinite(out[0, 4:]).all()
