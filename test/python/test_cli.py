"""The command-line tools: `poot-compile` writes the artifact compile_cpu /
compile_gpu would and says what it did; `poot-run` binds .npy inputs, steps
with the state carried and writes the outputs; refusals are diagnostics and
a non-zero exit; `poot-opt --version` names poot_mlir's version.

The console scripts come with `pip install` (CI); in a build tree (no
scripts) the same entry points run as `python -m poot_mlir.cli`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from poot_mlir import __version__, oracle  # noqa: E402
from poot_mlir.frontend import Tracer, ops  # noqa: E402
from system_deps import IN_CI, require  # noqa: E402

HQ, HKV, CAP, D = 4, 2, 16, 8


def _cli(name: str, *args: str) -> subprocess.CompletedProcess:
    """Run console script `name` (next to this Python, or on PATH); in a
    build tree, its module form."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        if IN_CI:
            pytest.fail(f"{name} is not installed: `pip install .` provides it", pytrace=False)
        command = [sys.executable, "-m", "poot_mlir.cli", name.removeprefix("poot-"), *args]
    else:
        command = [found, *args]
    return subprocess.run(command, capture_output=True, text=True)


def _step_text() -> str:
    tr = Tracer("step")
    k_cache, v_cache = tr.state("k0", (1, HKV, CAP, D)), tr.state("v0", (1, HKV, CAP, D))
    pos = tr.pos(max_pos=CAP - 1)
    q = tr.input("q", (1, HQ, 1, D))
    k, v = tr.input("k", (1, HKV, 1, D)), tr.input("v", (1, HKV, 1, D))
    out, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr.mlir()


@pytest.mark.parametrize("target", ["cpu", "vulkan"])
def test_compile_then_run_three_steps_matches_the_oracle(tmp_path, rng, target) -> None:
    if target == "vulkan":
        require("vulkan")
    text = _step_text()
    (tmp_path / "step.mlir").write_text(text)
    compiled = _cli("poot-compile", str(tmp_path / "step.mlir"), "--target", target,
                    "-o", str(tmp_path / "art"))
    assert compiled.returncode == 0, compiled.stderr
    assert "fused: 1 attention" in compiled.stdout and "planned attention" in compiled.stdout
    assert (tmp_path / "art" / "manifest.json").exists()

    arrays = {
        "q": rng.standard_normal((1, HQ, 1, D)), "k": rng.standard_normal((1, HKV, 1, D)),
        "v": rng.standard_normal((1, HKV, 1, D)), "k0": rng.standard_normal((1, HKV, CAP, D)),
        "v0": rng.standard_normal((1, HKV, CAP, D)),
    }
    arrays = {name: a.astype(np.float32) for name, a in arrays.items()}
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
    ran = _cli("poot-run", str(tmp_path / "art"), "-o", str(tmp_path / "out.npz"), "--steps", "3",
               "--advance", "pos", "--input", "pos=2",
               *[f"--input={n}={tmp_path / n}.npy" for n in ("q", "k", "v")],
               *[f"--state={n}={tmp_path / n}.npy" for n in ("k0", "v0")])
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "out.npz")

    session = oracle.Session(text, {"k0": arrays["k0"], "v0": arrays["v0"]})
    for pos in (2, 3, 4):
        want = session.step({"q": arrays["q"], "k": arrays["k"], "v": arrays["v"], "pos": pos})
    np.testing.assert_allclose(got["out"], want.named["out"], rtol=1e-5, atol=1e-5)
    for name in ("k0", "v0"):
        np.testing.assert_array_equal(got[f"state.{name}"], session.state[name])


def test_refusals_are_diagnostics_with_a_nonzero_exit(tmp_path) -> None:
    text = _step_text()
    (tmp_path / "step.mlir").write_text(text)
    # A device too small for the step: the planner's typed refusal, exit 2.
    refused = _cli("poot-compile", str(tmp_path / "step.mlir"), "--max-alloc-bytes", "100",
                   "-o", str(tmp_path / "small"))
    assert refused.returncode == 2 and "BufferBytes" in refused.stderr, refused.stderr
    assert not (tmp_path / "small" / "manifest.json").exists()
    # Unparsable IR and an unknown device: errors, exit 1.
    (tmp_path / "bad.mlir").write_text("func.func @step(")
    bad = _cli("poot-compile", str(tmp_path / "bad.mlir"), "-o", str(tmp_path / "bad"))
    assert bad.returncode == 1 and bad.stderr.startswith("error:"), bad.stderr
    unknown = _cli("poot-compile", str(tmp_path / "step.mlir"), "--target", "tpu9", "-o",
                   str(tmp_path / "x"))
    assert unknown.returncode == 1 and "unknown device 'tpu9'" in unknown.stderr, unknown.stderr

    assert _cli("poot-compile", str(tmp_path / "step.mlir"), "-o", str(tmp_path / "art")).returncode == 0
    shapes = {"q": (1, HQ, 2, D), "k": (1, HKV, 1, D), "v": (1, HKV, 1, D),  # q: 2 rows, not 1
              "k0": (1, HKV, CAP, D), "v0": (1, HKV, CAP, D)}
    for name, shape in shapes.items():
        np.save(tmp_path / f"{name}.npy", np.ones(shape, np.float32))
    out = tmp_path / "out.npz"
    wrong = _cli("poot-run", str(tmp_path / "art"), "-o", str(out), "--input", "pos=0",
                 *[f"--input={n}={tmp_path / n}.npy" for n in ("q", "k", "v")],
                 *[f"--state={n}={tmp_path / n}.npy" for n in ("k0", "v0")])
    assert wrong.returncode == 2 and "'q'" in wrong.stderr and "shape" in wrong.stderr, wrong.stderr
    assert not out.exists()
    # Every state is needed to start a session.
    missing = _cli("poot-run", str(tmp_path / "art"), "-o", str(out), "--input", "pos=0",
                   f"--state=k0={tmp_path / 'k0'}.npy")
    assert missing.returncode == 2 and "'v0'" in missing.stderr, missing.stderr


def test_poot_opt_version_names_poot_mlir() -> None:
    tool = os.environ.get("POOT_OPT") or shutil.which("poot-opt")
    assert tool, "poot-opt not found: install the package or set POOT_OPT"
    shown = subprocess.run([tool, "--version"], capture_output=True, text=True)
    assert shown.returncode == 0 and f"poot_mlir {__version__}" in shown.stdout, shown.stdout
    assert "LLVM" in shown.stdout
    compile_version = _cli("poot-compile", "--version")
    assert f"poot_mlir {__version__}" in compile_version.stdout


MLP = """
func.func @mlp(%x: tensor<1x8xf32> {poot.name = "x"}, %wg: tensor<8x16xf32> {poot.name = "wg"},
               %wd: tensor<16x8xf32> {poot.name = "wd"}, %wl: tensor<8x7xf32> {poot.name = "lm_head"})
    -> tensor<1x7xf32> {
  %g = poot.matmul %x, %wg : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
  %s = poot.logistic %g : tensor<1x16xf32>
  %d = poot.matmul %s, %wd : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  %l = poot.matmul %d, %wl : (tensor<1x8xf32>, tensor<8x7xf32>) -> tensor<1x7xf32>
  return %l : tensor<1x7xf32>
}
"""


def test_compile_writes_a_tensor_parallel_rank_program(tmp_path) -> None:
    (tmp_path / "mlp.mlir").write_text(MLP)
    compiled = _cli("poot-compile", str(tmp_path / "mlp.mlir"), "--tensor-parallel", "1/2",
                    "-o", str(tmp_path / "art"))
    assert compiled.returncode == 0, compiled.stderr
    assert "tensor parallel: rank 1 of 2, 2 arguments sharded, 1 all_reduce(s)" in compiled.stdout
    # What stays whole is said, where and why (the 7 logits split into no 2 blocks).
    assert "stays whole on every rank: dimension 1 of size 7 does not split" in compiled.stdout
    manifest = (tmp_path / "art" / "manifest.json").read_text()
    assert '"block": 1' in manifest and '"parts": 2' in manifest
    # Not RANK/DEGREE, or a rank outside the degree: argparse's usage error.
    for spec in ("2/2", "one/two"):
        bad = _cli("poot-compile", str(tmp_path / "mlp.mlir"), "--tensor-parallel", spec,
                   "-o", str(tmp_path / "bad"))
        assert bad.returncode == 2 and "RANK" in bad.stderr, bad.stderr
        assert not (tmp_path / "bad").exists()
