"""poot_mlir.runtime.cuda: generated attention kernels on a CUDA GPU.

Runs where CUDA exists (cuda-python and a device); CI has no GPU, so there
the whole module SKIPS — the one allowed skip, with the reason printed.

Artifacts (one format: the step's program, runtime.program): compiled here
with compiler.gpu when the MLIR package is
importable (the build machine has no GPU, so that path runs on a CUDA machine
with a full build); otherwise the prebuilt ones of bench/build_artifacts.py
(POOT_CUDA_ARTIFACTS, default bench/artifacts), as on the H200 machine, which
has no MLIR. No artifacts and no compiler on a CUDA machine is a FAILURE.
Every check draws fresh random inputs and compares with the numpy oracle in
float64 (‖out − ref‖/‖ref‖ <= 1e-5, NaN where the oracle has NaN).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from poot_mlir.runtime import cuda

# CI has no GPU: without one this module skips, in CI too (system_deps.py).
pytestmark = pytest.mark.requires("cuda")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

TOL = 1e-5


def _cases():
    import cases  # bench/cases.py: forms as MLIR text, inputs, oracle reference

    return cases


def _have_compiler() -> bool:
    try:
        import poot_mlir.compiler.gpu  # noqa: F401
        import poot_mlir.ir  # noqa: F401

        return True
    except Exception:
        return False


@pytest.fixture(scope="module")
def device():
    """runtime.program's CUDA device, shared by every artifact of the module."""
    from poot_mlir.runtime.gpu import make_device

    d = make_device("cuda")
    yield d
    d.close()


@pytest.fixture(scope="module")
def backend(device):
    return device.backend


class Artifacts:
    """Artifact dirs by verify-case id: compiled now, or prebuilt."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.prebuilt = Path(os.environ.get("POOT_CUDA_ARTIFACTS", REPO / "bench" / "artifacts"))
        self.index = {}
        if (self.prebuilt / "index.json").exists():
            self.index = json.loads((self.prebuilt / "index.json").read_text())
        self.compile = _have_compiler()
        if not self.compile and not self.index:
            pytest.fail(
                "CUDA is here but there is neither the MLIR compiler nor prebuilt artifacts: run "
                "`python bench/build_artifacts.py` on the build machine and carry bench/artifacts",
                pytrace=False,
            )

    def get(self, case_id: str):
        """(artifact path, form) of a verify case."""
        cases = _cases()
        table = {cid: (form, changes) for cid, form, changes, _ in cases.verify_cases()}
        table["graph_live"] = (cases.GRAPH_FORM, {})
        form, changes = table[case_id]
        if self.compile:
            from poot_mlir.compiler import devices, gpu

            out = self.tmp / case_id
            if not (out / "manifest.json").exists():
                gpu.compile_gpu(cases.text(form), devices.SM_90.with_limits(**changes), out)
            return out, form
        entry = self.index.get(f"verify/{case_id}")
        if entry is None or "error" in entry:
            pytest.fail(f"no prebuilt artifact for {case_id} in {self.prebuilt}", pytrace=False)
        return self.prebuilt / entry["path"], form


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    return Artifacts(tmp_path_factory.mktemp("cuda_artifacts"))


def _check(out, ref):
    c = _cases().compare(out, ref)
    assert c["nan_ok"], "NaN pattern differs from the oracle"
    assert c["finite_ok"], "non-finite values where the oracle is finite"
    assert c["rel"] <= TOL, f"relative error {c['rel']:.3e} > {TOL}"


FORMS = [
    "dense-split", "dense-stream", "gqa_decode-split", "mqa-split", "alibi-split", "alibi-stream",
    "softcap-split", "dv_ne_dk-split", "split_key-split", "split_key-stream", "paged-split",
    "live-split", "live-stream", "paged_live-split", "empty_row-split", "causal_prefill",
    "lanes32-stream", "lanes8-stream", "lanes1-stream", "lanes16-split", "fold-stream", "fold-split",
    "window_decode-split", "window_decode-stream", "window_prefill",
]


@pytest.mark.parametrize("case_id", FORMS)
def test_form_matches_oracle(case_id, artifacts, device, backend, rng):
    from poot_mlir.runtime.gpu import GpuArtifact

    path, form = artifacts.get(case_id)
    art = GpuArtifact(path, backend=device)
    ins = _cases().inputs(form, rng)
    out = art.run(ins).outputs[0]
    _check(out, _cases().reference(form, ins))


def test_prepared_step_writes_every_output_and_repeats_bitwise(artifacts, device, backend, rng):
    from poot_mlir.runtime.gpu import GpuArtifact

    path, form = artifacts.get("paged_live-split")
    art = GpuArtifact(path, backend=device)
    ins = _cases().inputs(form, rng)
    step = cuda.prepare(art, ins)
    results = []
    for _ in range(3):
        step.poison()
        step.launch()
        results.append(step.result())
    assert not np.any(results[0].view(np.uint32) == np.uint32(0x7FC00001)), "unwritten outputs"
    for r in results[1:]:
        assert np.array_equal(r.view(np.uint32), results[0].view(np.uint32)), "result moved between runs"
    _check(results[0], _cases().reference(form, ins))


def test_graph_replay_follows_len(artifacts, device, backend, rng):
    """The grid does not depend on len: one capture replays correctly while
    the len buffer changes between replays."""
    from poot_mlir.runtime.gpu import GpuArtifact

    path, form = artifacts.get("graph_live")
    art = GpuArtifact(path, backend=device)
    ins = _cases().inputs(form, rng)
    step = cuda.prepare(art, ins)
    graph = step.capture()
    for lens in ([1, form.key_len], [17, 3], rng.integers(1, form.key_len + 1, size=2)):
        lens = np.asarray(lens, dtype=np.int32)
        step.write("len", lens)
        step.poison()
        graph.replay()
        _check(step.result(), _cases().reference(form, dict(ins, len=lens)))
    graph.close()


def test_len_out_of_range_is_refused_before_launch(artifacts, device, backend, rng):
    from poot_mlir.errors import RangeBindError
    from poot_mlir.runtime.gpu import GpuArtifact

    path, form = artifacts.get("live-split")
    art = GpuArtifact(path, backend=device)
    ins = _cases().inputs(form, rng)
    step = cuda.prepare(art, ins)
    with pytest.raises(RangeBindError):
        step.write("len", np.full((form.batch,), form.key_len + 1, np.int32))
    with pytest.raises(RangeBindError):
        art.run(dict(ins, len=np.zeros((form.batch,), np.int32)))


def test_torch_tensors_are_borrowed_without_copies(artifacts, device, backend, rng):
    torch = pytest.importorskip("torch", reason="torch is not installed on this CUDA machine")
    from poot_mlir.runtime.gpu import GpuArtifact

    path, form = artifacts.get("gqa_decode-split")
    art = GpuArtifact(path, backend=device)
    ins = _cases().inputs(form, rng)
    t = {k: torch.from_numpy(v).cuda() for k, v in ins.items()}
    out = torch.full(form.out_shape, float("nan"), device="cuda")
    step = cuda.prepare(art, t, outputs={"out": out})
    assert all(step.buffers[k].ptr == t[k].data_ptr() for k in t)
    assert step.outputs["out"].ptr == out.data_ptr()
    step.launch()
    backend.synchronize()
    _check(out.cpu().numpy(), _cases().reference(form, ins))
    with pytest.raises(Exception, match="shape"):
        cuda.prepare(art, dict(t, q=t["q"][..., :-1].contiguous()))


# --- block selection (issue 14): poot.block_topk feeding poot.selected_attention ---------


@pytest.mark.parametrize(
    "case_id, schedule",
    [("verify_decode_b4@sparse", "warp_decode"), ("decode_b1_32k@sparse", "warp_decode"),
     ("prefill64_8k@sparse", "streaming")],
)
def test_block_selection_matches_reference(case_id, schedule, artifacts, device, backend, rng):
    """The sparse step of bench/sparse_cases.py on the device: the ids bit for
    bit and the output within 1e-5 of the float64 reference, through the
    generic runner and through `prepare` (the ids stay on the device between
    the two ops). The decode rows include one in the first block (own block
    only) and one with fewer complete blocks than K."""
    import sparse_cases
    from sparse_h200 import host_inputs, reference_numpy

    from poot_mlir.runtime.gpu import GpuArtifact

    name = case_id.split("@")[0]
    form = next(f for f in sparse_cases.bench_forms() if f.name == name)
    if artifacts.compile:
        from poot_mlir.compiler import devices, gpu

        path = gpu.compile_gpu(sparse_cases.sparse_text(form), devices.SM_90, artifacts.tmp / case_id)
    else:
        index_path = artifacts.prebuilt / "sparse_index.json"
        if not index_path.exists():
            pytest.fail(f"no {index_path}: run `python bench/sparse_build.py` on the build machine",
                        pytrace=False)
        entry = json.loads(index_path.read_text())[case_id]
        path = artifacts.prebuilt / entry["path"]
    art = GpuArtifact(path, backend=device)
    assert art.manifest["attention"][1]["request"]["schedule"] == schedule
    ins = host_inputs(form, rng)
    ids_ref, out_ref, _ = reference_numpy(form, ins)
    # (The causal mask is the dense variant's argument, not the sparse step's.)
    ins = {k: v for k, v in ins.items() if k != "mask"}
    res = art.run(ins)
    np.testing.assert_array_equal(res.named["ids"], ids_ref)
    rel = np.linalg.norm((res.named["out"] - out_ref).ravel()) / np.linalg.norm(out_ref.ravel())
    assert rel <= TOL, f"relative error {rel:.3e} > {TOL}"
    step = cuda.prepare(art, ins)
    step.poison()
    step.launch()
    np.testing.assert_array_equal(step.result("ids"), ids_ref)
    assert np.array_equal(step.result("out"), res.named["out"])
