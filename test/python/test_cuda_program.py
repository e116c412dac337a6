"""A whole decoder step on a CUDA GPU: CUDA-graph replay and device tensors.

Runs where CUDA exists (cuda-python and a device); CI has no GPU, so there
the module SKIPS (the one allowed skip, with its reason printed).

The artifact is bench/step_h200.py's `verify` decoder (2 layers, cap 64) with
its float64 oracle logits for 8 greedy steps, prebuilt on the build machine
(`python bench/step_h200.py build bench/artifacts/step_h200`; the H200 has no
MLIR), or compiled here when the compiler is importable. No artifact and no
compiler on a CUDA machine is a FAILURE.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from poot_mlir import errors

sys.path.insert(0, str(Path(__file__).parent))
from system_deps import require_compiler_for  # noqa: E402

pytestmark = pytest.mark.requires("cuda")

REPO = Path(__file__).resolve().parents[2]
TOL = 1e-4  # F32 kernels vs the float64 oracle over 2 layers (measured 6e-7)


def _compile(out: Path) -> Path:
    sys.path.insert(0, str(REPO / "bench"))
    import step_h200  # noqa: E402  (bench/step_h200.py: the same build as the H200 run)

    step_h200.build(out)
    return out / "verify"


@pytest.fixture(scope="module")
def verify_dir(tmp_path_factory) -> Path:
    prebuilt = Path(os.environ.get("POOT_CUDA_STEP", REPO / "bench" / "artifacts" / "step_h200")) / "verify"
    if (prebuilt / "manifest.json").exists():
        return prebuilt
    require_compiler_for(prebuilt, "python bench/step_h200.py build bench/artifacts/step_h200")
    return _compile(tmp_path_factory.mktemp("step"))


@pytest.fixture(scope="module")
def case(verify_dir):
    from poot_mlir.runtime.program import ProgramArtifact

    ref = np.load(verify_dir / "reference.npz")
    config = json.loads((verify_dir / "config.json").read_text())
    weights = {k[2:]: ref[k] for k in ref.files if k.startswith("w_")}
    hd = config["d_model"] // config["q_heads"]
    state = {f"{kind}{l}": np.zeros((1, config["kv_heads"], config["cap"], hd), np.float32)
             for l in range(config["layers"]) for kind in "kv"}
    art = ProgramArtifact(verify_dir, backend="cuda")
    yield art, ref, weights, state
    art.close()


def _rel(got, want) -> float:
    return float(np.abs(np.asarray(got) - want).max() / np.abs(want).max())


def _inputs(step: int, token: int) -> dict:
    return {"pos": np.int32(step), "token": np.array([[token]], np.int32)}


def test_graph_replay_matches_the_oracle_and_the_eager_launches(case):
    """8 steps replayed as one CUDA graph (pos changes between replays) match
    the float64 oracle and, bit for bit, the same session launched command by
    command."""
    art, ref, weights, state = case
    graphed = art.session(state, constants=weights, graph=True)
    eager = art.session(state, constants=weights, graph=False)
    for step, token in enumerate(ref["tokens"]):
        a = graphed.step(_inputs(step, int(token))).named["logits"]
        b = eager.step(_inputs(step, int(token))).named["logits"]
        assert _rel(a, ref["logits"][step]) <= TOL, f"step {step}"
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"graph and launches differ at step {step}"
    assert len(graphed._built) == 1, "pos changes must not recapture the graph"
    for name in graphed.state:
        assert np.array_equal(graphed.state[name], eager.state[name])


def test_cuda_tensors_in_and_out_without_copies(case):
    """Weights and inputs as torch CUDA tensors are read where they are (the
    session's argument buffer is the tensor's memory); outputs come back as
    DLPack/`__cuda_array_interface__` views of the session's buffers."""
    torch = pytest.importorskip("torch")
    art, ref, weights, state = case
    dev_weights = {k: torch.from_numpy(v).cuda() for k, v in weights.items()}
    sess = art.session(state, constants=dev_weights)
    names = [p.key for p in art.signature.args]
    embed = names.index("embed")
    assert sess._fixed[embed].ptr == dev_weights["embed"].data_ptr(), "the weight was copied"
    token = torch.zeros((1, 1), dtype=torch.int32, device="cuda")
    pos = torch.zeros((), dtype=torch.int32, device="cuda")
    for step, tok in enumerate(ref["tokens"]):
        token.fill_(int(tok))
        pos.fill_(step)
        res = sess.step({"pos": pos, "token": token}, device_outputs=True)
        logits = res.named["logits"]
        shared = torch.from_dlpack(logits)
        assert shared.is_cuda and shared.data_ptr() == logits.ptr, "DLPack export copied"
        assert torch.as_tensor(logits, device="cuda").data_ptr() == logits.ptr
        assert _rel(shared.cpu().numpy(), ref["logits"][step]) <= TOL, f"step {step}"
        assert _rel(logits.numpy(), ref["logits"][step]) <= TOL
    # The same tensors every step: one graph.
    assert len(sess._built) == 1


def test_bad_device_bind_is_refused_before_anything_runs(case):
    torch = pytest.importorskip("torch")
    art, ref, weights, state = case
    sess = art.session(state, constants=weights)
    sess.step(_inputs(0, int(ref["tokens"][0])))
    before = sess.state
    with pytest.raises(errors.ShapeBindError):
        sess.step({"pos": np.int32(1), "token": torch.zeros((1, 1), dtype=torch.int64, device="cuda")})
    with pytest.raises(errors.RangeBindError):
        sess.step({"pos": torch.tensor(10**6, dtype=torch.int32, device="cuda"),
                   "token": np.array([[1]], np.int32)})
    after = sess.state
    for name in before:
        assert np.array_equal(before[name], after[name]), f"state {name} changed by a refused step"


def test_a_session_outliving_its_closed_artifact_is_collected_safely(verify_dir, case):
    """Graphs die with their context: collecting a session after its
    artifact (and CUDA context) closed must not touch the driver."""
    import gc

    from poot_mlir.runtime.program import ProgramArtifact

    _, ref, weights, state = case
    art = ProgramArtifact(verify_dir, backend="cuda")
    sess = art.session(state, constants=weights)
    sess.step(_inputs(0, int(ref["tokens"][0])))
    art.close()
    del sess
    gc.collect()
