"""Two-byte matmuls on tensor cores (poot-gpu-mma-matmuls).

Which steps get the mma.sync kernel is checked here on the compile side (CI
has no GPU: the PTX and the program's launches say it); the kernel's
numbers are checked where CUDA exists (`requires("cuda")`: fresh random
inputs against float64 numpy, both weight layouts, a fused prologue, f16,
partial row tiles), from artifacts prebuilt by bench/mma_matmul_check.py
or compiled here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(Path(__file__).parent))

import mma_matmul_check as check  # noqa: E402  (the cases and their float64 reference)
from system_deps import require_compiler_for  # noqa: E402


def _launched_kernels(folder: Path) -> list[str]:
    manifest = json.loads((folder / "manifest.json").read_text())
    programs = manifest["programs"]
    return [c["launch"]["entry"] for p in programs.values() for c in p["commands"] if "launch" in c]


def _compile(case: str, device, out: Path) -> Path:
    from poot_mlir.compiler.gpu import compile_gpu

    return Path(compile_gpu(check.trace(case).finish(), device, out))


@pytest.mark.parametrize("case", ["nk_m16", "kn_m12", "kn_m8_norm", "nk_m1"])
def test_batched_two_byte_matmul_runs_on_mma_sync(case, tmp_path):
    from poot_mlir.compiler import devices

    folder = _compile(case, devices.SM_90, tmp_path / case)
    kernels = _launched_kernels(folder)
    assert any(k.startswith("mma_matmul_") for k in kernels), kernels
    ptx = (folder / "poot_mma_matmuls.ptx").read_text()
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx
    # torch's [N, K] weight is read in place: no transpose kernel copies it.
    if check.CASES[case][3] == "nk":
        assert len(kernels) <= 2, kernels  # the mma kernel and the split's final sum


@pytest.mark.parametrize(
    "changes",
    [dict(mma_matmul_rows=0), dict(batch_invariant=True), dict(tensor_cores=False),
     dict(chip="sm_75")],
    ids=["off", "batch_invariant", "no_tensor_cores", "sm_75"],
)
def test_cuda_cores_where_tensor_cores_are_off_or_absent(changes, tmp_path):
    from poot_mlir.compiler import devices

    folder = _compile("kn_m12", devices.SM_90.with_limits(**changes), tmp_path / "k")
    assert not any(k.startswith("mma_matmul_") for k in _launched_kernels(folder))
    assert not (folder / "poot_mma_matmuls.ptx").exists()


@pytest.mark.parametrize("case", ["nk_m500", "kn_m256_f16", "nk_m16"])
def test_staged_kernel_from_mma_staged_rows(case, tmp_path):
    from poot_mlir.compiler import devices

    # From 256 rows over whole 128-column tiles (nk_m500, kn_m256_f16) the
    # staged kernel: cp.async copies, ldmatrix fragments, 48 KB of
    # workgroup memory; fewer rows (nk_m16) stay on the direct kernel
    # unless the threshold comes down to them; 0 (the default): never.
    rows = check.CASES[case][0]
    for threshold, staged in ((256, rows >= 256), (1, True), (0, False)):
        device = devices.SM_90.with_limits(mma_staged_rows=threshold)
        folder = _compile(case, device, tmp_path / f"{case}_{threshold}")
        ptx = (folder / "poot_mma_matmuls.ptx").read_text()
        assert "mma.sync.aligned.m16n8k16" in ptx
        assert ("ldmatrix.sync.aligned" in ptx) == staged, threshold
        assert ("cp.async.cg.shared.global" in ptx) == staged, threshold


def test_too_few_rows_and_f32_stay_on_cuda_cores(tmp_path):
    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.frontend import Tracer, ops

    # Below a raised threshold, and f32 at the default one.
    for rows, dtype, threshold in ((4, "bf16", 8), (16, "f32", 1)):
        tr = Tracer(f"m{rows}_{dtype}")
        x = tr.input("x", (rows, 1024), dtype)
        w = tr.input("w", (1024, 512), dtype)
        tr.output("y", ops.matmul(x, w))
        device = devices.SM_90.with_limits(mma_matmul_rows=threshold)
        folder = Path(compile_gpu(tr.finish(), device, tmp_path / f"{rows}{dtype}"))
        assert not any(k.startswith("mma_matmul_") for k in _launched_kernels(folder))


# --- on a CUDA GPU --------------------------------------------------------


@pytest.fixture(scope="module")
def mma_artifacts(tmp_path_factory) -> Path:
    prebuilt = Path(os.environ.get("POOT_MMA_CHECK", REPO / "bench" / "artifacts" / "mma_check"))
    if (prebuilt / "mma").is_dir():
        return prebuilt
    require_compiler_for(prebuilt, "python bench/mma_matmul_check.py build bench/artifacts/mma_check")
    out = tmp_path_factory.mktemp("mma")
    check.build(out, list(check.CASES))
    return out


@pytest.mark.requires("cuda")
@pytest.mark.parametrize("case", list(check.CASES))
def test_mma_kernel_matches_float64_on_cuda(case, mma_artifacts):
    from poot_mlir.runtime.program import ProgramArtifact

    inputs = check.inputs(case, seed=int.from_bytes(os.urandom(2), "little"))
    want = check.reference(case, inputs)
    # The direct and staged kernels as built (`staged`: every tensor-core
    # matmul of the case on the staged kernel, where that differs).
    for variant in ("mma", "staged"):
        if not (mma_artifacts / variant / case).is_dir():
            continue
        art = ProgramArtifact(mma_artifacts / variant / case, backend="cuda")
        try:
            got = np.asarray(art.run(inputs).named["y"], np.float64)
        finally:
            art.close()
        assert np.abs(got - want).max() / np.abs(want).max() <= check.bound(case), variant
