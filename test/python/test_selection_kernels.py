"""The generated block top-k and selected-attention kernels against the oracle.

Every case of selection_cases (block_topk feeding selected_attention in one
step) is compiled for the CPU (`poot-to-llvm-cpu`: the kernels' schedule as
loops) and for lavapipe (`poot-to-spirv`, the MLIR-free Vulkan runtime) for
device descriptions that force each schedule (streaming at 64, 16 and 1
lanes, split-KV, a 2-D grid fold), and compared with the float64 oracle on
fresh random inputs: the ids bit for bit, the output within tolerance. The
traced sparse chain runs end to end on the CPU after the selection pass.
PTX for sm_90 is checked by ptxas, ROCDL by its LLVM IR. Vulkan must be
present: CI installs lavapipe, so these tests never skip there.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess

import numpy as np
import pytest

from poot_mlir import errors, oracle
from poot_mlir.compiler import devices, gpu
from poot_mlir.runtime.gpu import GpuArtifact, make_device
from selection_cases import SPARSE_FORMS, SparseForm, assert_matches, build

LAVAPIPE = devices.VULKAN_LAVAPIPE
CPU = devices.CPU


def schedules(base: devices.Device, form: SparseForm) -> dict[str, devices.Device]:
    lane_bytes = (form.value_width + 2) * 4
    return {
        "stream64": base.with_limits(compute_units=1),
        "stream16": base.with_limits(compute_units=1, workgroup_memory=16 * lane_bytes),
        "stream1": base.with_limits(compute_units=1, workgroup_memory=lane_bytes),
        "split_kv": base.with_limits(compute_units=64),
        "fold2d": base.with_limits(compute_units=1, max_grid_x=3),
    }


@pytest.fixture(scope="module")
def vulkan():
    backend = make_device("lavapipe")
    yield backend
    backend.close()


def check_request(manifest: dict, form: SparseForm, schedule: str) -> None:
    """The schedule really is the one asked for."""
    topk, selected = manifest["attention"]
    assert (topk["op"], selected["op"]) == ("block_topk", "selected_attention")
    req = selected["request"]
    assert req["visited"] == (form.top_k + 1) * form.block_size
    lanes = {"stream16": 16, "stream1": 1}.get(schedule, 64)
    assert req["lanes"] == lanes
    split = schedule == "split_kv" and form.q_len == 1 and req["visited"] >= 256
    assert req["schedule"] == ("split_kv" if split else "streaming"), req
    entries = [l["entry"] for l in selected["launches"]]
    assert entries == (["partials", "combine"] if split else ["stream"])
    if schedule == "fold2d":
        assert req["grid_x"] == 3 and req["grid_y"] > 1
    # The ids never leave the device between the two ops: the top-k's output
    # buffer is the selected attention's block_ids argument (query, key,
    # value, block_ids, q_pos).
    ids = topk["launches"][0]["args"][-1]
    assert all(l["args"][3] == ids for l in selected["launches"][:1])


@pytest.mark.parametrize("schedule", ["stream64", "stream16", "stream1", "split_kv", "fold2d"])
@pytest.mark.parametrize("form", SPARSE_FORMS, ids=[f.name for f in SPARSE_FORMS])
def test_kernels_match_oracle_on_lavapipe(form, schedule, rng, vulkan, tmp_path):
    text, inputs = build(form, rng)
    path = gpu.compile_gpu(text, schedules(LAVAPIPE, form)[schedule], tmp_path / "a")
    art = GpuArtifact(path, backend=vulkan)
    check_request(art.manifest, form, schedule)
    result = art.run(inputs)
    # lavapipe's exp is within a few ULP: rtol 3e-5 as for poot.attention.
    assert_matches(result, oracle.run(text, inputs, reference=True), rtol=3e-5, atol=3e-6)


@pytest.mark.parametrize("schedule", ["stream64", "stream16", "split_kv", "fold2d"])
@pytest.mark.parametrize("form", SPARSE_FORMS, ids=[f.name for f in SPARSE_FORMS])
def test_cpu_loops_match_oracle(form, schedule, rng, tmp_path):
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    text, inputs = build(form, rng)
    path = compile_cpu(text, tmp_path / "cpu", device=schedules(CPU, form)[schedule])
    result = CpuArtifact(path).run(inputs)
    assert_matches(result, oracle.run(text, inputs, reference=True), rtol=1e-5, atol=1e-6)


def test_split_matches_streaming_on_lavapipe(rng, vulkan, tmp_path):
    form = SparseForm("split", batch=1, q_len=1, key_len=1024, block_size=64, top_k=4, ties=False)
    text, inputs = build(form, rng)
    outs = {}
    for name, cus in (("stream", 1), ("split", 64)):
        art = GpuArtifact(gpu.compile_gpu(text, LAVAPIPE.with_limits(compute_units=cus), tmp_path / name), vulkan)
        assert art.manifest["attention"][1]["request"]["splits"] == (1 if name == "stream" else 2)
        outs[name] = art.run(inputs)
    np.testing.assert_array_equal(outs["split"].named["ids"], outs["stream"].named["ids"])
    np.testing.assert_allclose(outs["split"].named["out"], outs["stream"].named["out"], rtol=2e-5, atol=2e-6)


def test_keys_outside_the_selection_are_never_read(rng, vulkan, tmp_path):
    """NaN planted in every K/V row no row selects never reaches the output
    (the dense primitive chain multiplies them by zero weights: NaN)."""
    form = SparseForm("nan_rows", q_len=2, key_len=128, block_size=8, top_k=2, ties=False)
    text, inputs = build(form, rng)
    ref = oracle.run(text, inputs, reference=True)
    visible = oracle.semantics.selected_visibility(ref.named["ids"], inputs["q_pos"], 128, 8)
    never = ~visible.any(axis=1)  # [B, Lk]
    assert never.any()
    for b, t in zip(*np.nonzero(never)):
        inputs["k"][b, :, t] = np.nan
        inputs["v"][b, :, t] = np.nan
    art = GpuArtifact(gpu.compile_gpu(text, LAVAPIPE.with_limits(compute_units=64), tmp_path / "a"), vulkan)
    result = art.run(inputs)
    assert not np.isnan(result.named["out"]).any()
    assert_matches(result, oracle.run(text, inputs, reference=True), rtol=3e-5, atol=3e-6)


def test_arbitrary_ids_are_deduplicated(rng, vulkan, tmp_path):
    """poot.selected_attention takes any ids: repeats, the own block, padding
    and ids past the last block each count once or not at all, as the op
    (any-of over the listed ids) defines."""
    text = """
func.func @step(%q: tensor<1x2x3x8xf32> {poot.name = "q"}, %k: tensor<1x1x32x8xf32> {poot.name = "k"},
                %v: tensor<1x1x32x8xf32> {poot.name = "v"}, %ids: tensor<1x3x4xi32> {poot.name = "ids_in"},
                %p: tensor<1x3xi32> {poot.name = "q_pos"}) -> (tensor<1x2x3x8xf32> {poot.name = "out"}) {
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 4 {scale = 0.5 : f64}
      : tensor<1x2x3x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x32x8xf32>, tensor<1x3x4xi32>, tensor<1x3xi32> -> tensor<1x2x3x8xf32>
  return %o : tensor<1x2x3x8xf32>
}"""
    inputs = {
        "q": rng.standard_normal((1, 2, 3, 8), dtype=np.float32),
        "k": rng.standard_normal((1, 1, 32, 8), dtype=np.float32),
        "v": rng.standard_normal((1, 1, 32, 8), dtype=np.float32),
        # row 0: a repeat; row 1: its own block (5) listed, padding, 99;
        # row 2: later blocks than its own (their keys are past q_pos).
        "ids_in": np.array([[[2, 2, 0, 2], [5, -1, 99, 1], [7, 6, 0, -3]]], np.int32),
        "q_pos": np.array([[20, 22, 9]], np.int32),
    }
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    ref = oracle.run(text, inputs, reference=True).outputs[0]
    gpu_out = GpuArtifact(gpu.compile_gpu(text, LAVAPIPE, tmp_path / "gpu"), backend=vulkan).run(inputs)
    cpu_out = CpuArtifact(compile_cpu(text, tmp_path / "cpu")).run(inputs)
    np.testing.assert_allclose(gpu_out.outputs[0], ref, rtol=3e-5, atol=3e-6)
    np.testing.assert_allclose(cpu_out.outputs[0], ref, rtol=1e-5, atol=1e-6)


def test_block_topk_kernel_orders_nan_like_the_chain(rng, vulkan, tmp_path):
    """NaN block scores rank below every number and below the non-candidates'
    -inf; equal scores (-0.0 and 0.0 too) go to the lower id."""
    form = SparseForm("nan_topk", batch=1, q_len=4, key_len=64, block_size=8, top_k=6)
    text, inputs = build(form, rng)
    inputs["q_pos"] = np.array([[63, 63, 40, 63]], np.int32)
    scores = inputs["scores"]
    scores[0, 0] = [np.nan, 1, np.nan, 1, -0.0, 0.0, -np.inf, 2]
    scores[0, 1] = np.nan
    scores[0, 2, 1] = np.nan
    ref = oracle.run(text, inputs, reference=True)
    # By hand, own block 7, candidates 0..6. Row 0: 1 and 3 (score 1), -0.0
    # and 0.0 tie (4, 5), -inf ties (6, then the non-candidate 7 -> -1), the
    # NaN candidates 0 and 2 last. Row 1 (all NaN): the non-candidate 7 is the
    # only number, so it leads (-1), then the NaN candidates by id.
    assert ref.named["ids"][0, 0].tolist() == [1, 3, 4, 5, 6, -1]
    assert ref.named["ids"][0, 1].tolist() == [-1, 0, 1, 2, 3, 4]
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    gpu_ids = GpuArtifact(gpu.compile_gpu(text, LAVAPIPE, tmp_path / "gpu"), backend=vulkan).run(inputs)
    cpu_ids = CpuArtifact(compile_cpu(text, tmp_path / "cpu")).run(inputs)
    np.testing.assert_array_equal(gpu_ids.named["ids"], ref.named["ids"])
    np.testing.assert_array_equal(cpu_ids.named["ids"], ref.named["ids"])


@dataclasses.dataclass(frozen=True)
class IndexerShape:
    """A traced indexer step's shape: batch, heads, rows, keys, head width,
    block size and top-k."""

    B: int
    Hq: int
    Hkv: int
    Lq: int
    Lk: int
    D: int
    bs: int
    K: int


def indexer_step(shape: IndexerShape, softcap: "float | None" = None):
    """The frontend's sparse_selected_attention over 4-wide index scores,
    traced (the primitive chain the selection pass fuses)."""
    from poot_mlir.frontend import Tracer, ops

    s = shape
    tr = Tracer("sparse")
    q = tr.input("q", (s.B, s.Hq, s.Lq, s.D))
    k = tr.input("k", (s.B, s.Hkv, s.Lk, s.D))
    v = tr.input("v", (s.B, s.Hkv, s.Lk, s.D))
    qi, ki = tr.input("q_idx", (s.B, s.Lq, 4)), tr.input("k_idx", (s.B, s.Lk, 4))
    qpos = tr.input("q_pos", (s.B, s.Lq), "i32", range=(0, s.Lk - 1))
    scores = ops.indexer_scores(qi, ki)
    tr.output("out", ops.sparse_selected_attention(
        q, k, v, scores, qpos, block_size=s.bs, top_k=s.K, softcap=softcap))
    return tr.finish()


def indexer_inputs(rng, shape: IndexerShape, positions) -> dict:
    """Fresh random inputs of an indexer step, the query rows at `positions`."""
    s = shape
    return {
        "q": rng.standard_normal((s.B, s.Hq, s.Lq, s.D), dtype=np.float32),
        "k": rng.standard_normal((s.B, s.Hkv, s.Lk, s.D), dtype=np.float32),
        "v": rng.standard_normal((s.B, s.Hkv, s.Lk, s.D), dtype=np.float32),
        "q_idx": rng.standard_normal((s.B, s.Lq, 4), dtype=np.float32),
        "k_idx": rng.standard_normal((s.B, s.Lk, 4), dtype=np.float32),
        "q_pos": np.array(positions, np.int32),
    }


def test_traced_chain_runs_on_the_cpu(rng, tmp_path):
    """The frontend's sparse_selected_attention: fused by the selection pass,
    compiled for the CPU (the kernels' loops), equal to the oracle of the
    traced (primitive) program."""
    from poot_mlir.compiler import compile_cpu, fuse_attention
    from poot_mlir.runtime.cpu import CpuArtifact
    from rewrite_support import copy_module

    shape = IndexerShape(B=2, Hq=4, Hkv=2, Lq=3, Lk=64, D=16, bs=8, K=3)
    traced = indexer_step(shape, softcap=6.0)
    fused = copy_module(traced)
    report = fuse_attention(fused)
    assert (report.block_topk, report.selected_attention) == (1, 1)
    inputs = indexer_inputs(rng, shape, [[2, 63, 30], [9, 17, 44]])
    got = CpuArtifact(compile_cpu(fused, tmp_path / "cpu")).run(inputs).outputs[0]
    want = oracle.run(traced, inputs, reference=True).outputs[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- typed refusals -----------------------------------------------------------------


def one_op_text(dtype: str = "f32", value_width: int = 16, rows: int = 4) -> str:
    q, k = f"tensor<1x2x{rows}x16x{dtype}>", f"tensor<1x2x64x16x{dtype}>"
    v, o = f"tensor<1x2x64x{value_width}x{dtype}>", f"tensor<1x2x{rows}x{value_width}x{dtype}>"
    s, p, ids = f"tensor<1x{rows}x8x{dtype}>", f"tensor<1x{rows}xi32>", f"tensor<1x{rows}x2xi32>"
    return f"""
func.func @step(%q: {q}, %k: {k}, %v: {v}, %s: {s}, %p: {p}) -> {o} {{
  %ids = poot.block_topk %s, %p k = 2 block_size = 8 : {s}, {p} -> {ids}
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 8 {{scale = 0.25 : f64}} : {q}, {k}, {v}, {ids}, {p} -> {o}
  return %o : {o}
}}"""


def test_refusal_dtype_lowering(tmp_path):
    with pytest.raises(errors.DtypeLowering, match="block top-k kernel is f32 only"):
        gpu.compile_gpu(one_op_text(dtype="f16"), LAVAPIPE, tmp_path)


def test_refusal_attention_lds(tmp_path):
    with pytest.raises(errors.AttentionLds, match="value width 9000"):
        gpu.compile_gpu(one_op_text(value_width=9000), LAVAPIPE, tmp_path)


def test_refusal_scratch_bytes(tmp_path):
    """A split decode whose scratch the device cannot allocate (ScratchBytes)."""
    # 2 rows, (K + 1) * 128 = 384 visited positions: 3 splits, 432 bytes.
    text = (
        one_op_text(rows=1)
        .replace("tensor<1x2x64x", "tensor<1x2x512x")
        .replace("tensor<1x1x8xf32>", "tensor<1x1x4xf32>")
        .replace("block_size = 8", "block_size = 128")
    )
    with pytest.raises(errors.ScratchBytes, match="split-KV scratch needs 432 bytes"):
        gpu.compile_gpu(text, LAVAPIPE.with_limits(compute_units=64, max_alloc_bytes=100), tmp_path)


def test_refusal_grid_limit(tmp_path):
    with pytest.raises(errors.GridLimit, match="workgroups do not fit a 2 x 1 grid"):
        gpu.compile_gpu(one_op_text(), LAVAPIPE.with_limits(max_grid_x=2, max_grid_y=1), tmp_path)


# --- NVVM (PTX) and ROCDL ---------------------------------------------------------------


SPLIT_FORM = SparseForm("decode_split", q_len=1, key_len=1024, block_size=32, top_k=8)
WARP_FORM = SparseForm(
    "decode_warp", batch=2, q_len=1, q_heads=8, kv_heads=2, key_width=32, value_width=32,
    key_len=2048, block_size=32, top_k=8,
)


@pytest.mark.parametrize(
    "form, schedule",
    [(SPLIT_FORM, "split_kv"), (SPARSE_FORMS[2], "streaming"), (WARP_FORM, "warp_decode")],
    ids=lambda x: getattr(x, "name", x),
)
def test_sm90_ptx_is_accepted_by_ptxas(form, schedule, rng, tmp_path):
    """sm_90 PTX of both ops assembles; a decode with warp-wide heads gets the
    warp-decode schedule over its visited positions (xor shuffles)."""
    from test_attention_kernels import ptxas

    text, _ = build(form, rng)
    path = gpu.compile_gpu(text, devices.SM_90, tmp_path / "a")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["attention"][1]["request"]["schedule"] == schedule
    entries = [l["entry"] for a in manifest["attention"] for l in a["launches"]]
    assert entries[0] == "topk"
    ptx_files = sorted(path.glob("*.ptx"))
    assert len(ptx_files) == 2
    for ptx in ptx_files:
        text_ptx = ptx.read_text()
        assert ".target sm_90" in text_ptx and "bar.sync" in text_ptx
        if schedule == "warp_decode" and "selected" in ptx.name:
            assert "shfl.sync.bfly.b32" in text_ptx
        subprocess.run([ptxas(), "-arch=sm_90", str(ptx), "-o", str(tmp_path / "k.cubin")], check=True)
        assert (tmp_path / "k.cubin").stat().st_size > 0


def test_rocdl_kernels_are_llvm_dialect(rng, tmp_path):
    text, _ = build(SPARSE_FORMS[0], rng)
    path = gpu.compile_gpu(text, devices.GFX942, tmp_path / "a")
    irs = {p.name: p.read_text() for p in path.glob("*.ll")}
    assert len(irs) == 2
    for name, ll in irs.items():
        assert "define amdgpu_kernel void @" in ll and "@llvm.amdgcn.workitem.id.x" in ll, name
        assert "__ocml" not in ll


def test_traced_chain_runs_as_a_whole_step_on_lavapipe(rng, tmp_path):
    """The whole traced sparse step on the device (compile_gpu): the
    index scores and block scoring as step kernels, poot.block_topk and
    poot.selected_attention as their generated kernels, equal to the oracle
    of the traced (primitive) program; the commands are launches only."""
    from poot_mlir.runtime.program import ProgramArtifact

    shape = IndexerShape(B=1, Hq=4, Hkv=2, Lq=2, Lk=96, D=16, bs=8, K=3)
    traced = indexer_step(shape)
    path = gpu.compile_gpu(traced, LAVAPIPE.with_limits(compute_units=64), tmp_path / "step")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["fusion"]["block_topk"] == 1 and manifest["fusion"]["selected_attention"] == 1
    art = ProgramArtifact(path, "lavapipe")
    try:
        for positions in ([5, 95], [0, 40]):
            inputs = indexer_inputs(rng, shape, [positions])
            got = art.run(inputs).outputs[0]
            want = oracle.run(traced, inputs, reference=True).outputs[0]
            np.testing.assert_allclose(got, want, rtol=3e-5, atol=3e-6)
    finally:
        art.close()
