"""The generated attention kernels, every form x every schedule, on lavapipe.

Each case is compiled with `compile_gpu` (the whole-step pipeline,
`poot-step-to-spirv`: an attention-only step is a program of the attention's
launches) for a real device description
(Mesa lavapipe, 32 KiB workgroup memory) varied to force each schedule the
planner can choose — streaming with 64, 16 and 4 lanes, split-KV, and a 2-D
grid fold — then run on lavapipe through the MLIR-free runtime and compared
with the float64 oracle on fresh random inputs. Without a Vulkan driver the
lavapipe tests skip (fail under CI=true, which installs lavapipe), and so do
the ptxas checks without a CUDA toolkit: see system_deps.py.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from attention_cases import FORMS, Form, assert_matches, build
from system_deps import ptxas_path, require
from poot_mlir import errors, oracle
from poot_mlir.compiler import devices, gpu
from poot_mlir.runtime.gpu import GpuArtifact

LAVAPIPE = devices.VULKAN_LAVAPIPE


def schedules(form: Form) -> dict[str, devices.Device]:
    """Device descriptions that force each schedule for `form`."""
    lane_bytes = (form.value_width + 2) * 4
    return {
        "stream64": LAVAPIPE.with_limits(compute_units=1),
        "stream16": LAVAPIPE.with_limits(compute_units=1, workgroup_memory=16 * lane_bytes),
        "stream4": LAVAPIPE.with_limits(compute_units=1, workgroup_memory=4 * lane_bytes + 3),
        "stream2": LAVAPIPE.with_limits(compute_units=1, workgroup_memory=2 * lane_bytes),
        "stream1": LAVAPIPE.with_limits(compute_units=1, workgroup_memory=lane_bytes),
        "split_kv": LAVAPIPE.with_limits(compute_units=64),
        "fold2d": LAVAPIPE.with_limits(compute_units=1, max_grid_x=3),
    }


def for_backend(device: devices.Device, backend) -> devices.Device:
    """`device` as the SPIR-V client `backend` runs (the limits are lavapipe's
    either way)."""
    return device.with_limits(client="wgpu") if backend.client == "wgpu" else device


def run_case(form, device, rng, vulkan, tmp_path):
    text, inputs = build(form, rng)
    path = gpu.compile_gpu(text, for_backend(device, vulkan), tmp_path / "artifact")
    manifest = GpuArtifact(path, backend=vulkan).manifest
    out = GpuArtifact(path, backend=vulkan).run(inputs).outputs[0]
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    return manifest, out, ref


@pytest.mark.parametrize(
    "schedule", ["stream64", "stream16", "stream4", "stream2", "stream1", "split_kv", "fold2d"]
)
@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_kernel_matches_oracle_on_lavapipe(form, schedule, rng, vulkan, tmp_path):
    device = schedules(form)[schedule]
    manifest, out, ref = run_case(form, device, rng, vulkan, tmp_path)
    request = manifest["attention"][0]["request"]
    # The schedule really is the one asked for.
    expected_lanes = {"stream16": 16, "stream4": 4, "stream2": 2, "stream1": 1}.get(schedule, 64)
    assert request["lanes"] == expected_lanes
    if schedule == "split_kv" and form.q_len == 1:
        assert request["schedule"] == "split_kv" and request["splits"] >= 2
        assert [l["entry"] for l in manifest["attention"][0]["launches"]] == ["partials", "combine"]
    else:
        assert request["schedule"] == "streaming"
    if schedule == "fold2d":
        assert request["grid_x"] == 3 and request["grid_y"] > 1
    # lavapipe's exp is within a few ULP (64 near |x| = 87): rtol 3e-5.
    assert_matches(out, ref, rtol=3e-5, atol=3e-6)
    if form.empty_row:
        # The mask's batch axis is 1: head 1 of every batch row sees nothing.
        assert np.isnan(out[:, 1]).all() and not np.isnan(out[:, [0, 2, 3]]).any()


def test_split_kv_matches_streaming(rng, vulkan, tmp_path):
    form = Form("gqa_long", q_heads=8, kv_heads=2, key_len=1000)
    text, inputs = build(form, rng)
    outs = {}
    for name, cus in (("stream", 1), ("split", 64)):
        device = for_backend(LAVAPIPE.with_limits(compute_units=cus), vulkan)
        path = gpu.compile_gpu(text, device, tmp_path / name)
        art = GpuArtifact(path, backend=vulkan)
        outs[name] = art.run(inputs).outputs[0]
        assert art.manifest["attention"][0]["request"]["splits"] == (1 if name == "stream" else 4)
    # The combine reassociates the float sums: equal within tolerance.
    np.testing.assert_allclose(outs["split"], outs["stream"], rtol=2e-5, atol=2e-6)


def test_live_length_never_reads_past_len(rng, vulkan, tmp_path):
    """NaN planted in K/V rows past len never reaches the output."""
    form = Form("live", live=True, key_len=300)
    text, inputs = build(form, rng)
    inputs["len"] = np.array([7, 300], dtype=np.int32)
    inputs["k"][0, :, 7:] = np.nan
    inputs["v"][0, :, 7:] = np.nan
    path = gpu.compile_gpu(text, for_backend(LAVAPIPE.with_limits(compute_units=64), vulkan), tmp_path / "a")
    out = GpuArtifact(path, backend=vulkan).run(inputs).outputs[0]
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    assert not np.isnan(out).any()
    assert_matches(out, ref, rtol=3e-5, atol=3e-6)


def test_bad_bind_is_refused_before_dispatch(rng, vulkan, tmp_path):
    form = Form("paged", pool=700)
    text, inputs = build(form, rng)
    path = gpu.compile_gpu(text, for_backend(LAVAPIPE, vulkan), tmp_path / "a")
    inputs["read"][1, 3] = 700  # outside the pool
    with pytest.raises(errors.RangeBindError, match="read"):
        GpuArtifact(path, backend=vulkan).run(inputs)


# --- typed refusals, each from a real device description ----------------------


def refusal_text(v_width: int = 16, dtype: str = "f32", key_len: int = 300, heads: int = 4) -> str:
    q = f"tensor<1x{heads}x1x16x{dtype}>"
    k = f"tensor<1x{heads}x{key_len}x16x{dtype}>"
    v = f"tensor<1x{heads}x{key_len}x{v_width}x{dtype}>"
    o = f"tensor<1x{heads}x1x{v_width}x{dtype}>"
    return f"""
func.func @step(%q: {q}, %k: {k}, %v: {v}) -> {o} {{
  %o = poot.attention %q, %k, %v {{scale = 0.25 : f64}} : {q}, {k}, {v} -> {o}
  return %o : {o}
}}"""


def test_refusal_attention_lds(tmp_path):
    # One lane of a 9000-wide value needs 36008 bytes; lavapipe has 32768.
    with pytest.raises(errors.AttentionLds, match="value width 9000.*32768 bytes"):
        gpu.compile_gpu(refusal_text(v_width=9000, key_len=4), LAVAPIPE, tmp_path)


def test_refusal_scratch_bytes(tmp_path):
    device = LAVAPIPE.with_limits(compute_units=64, max_alloc_bytes=100)
    with pytest.raises(errors.ScratchBytes, match="scratch needs"):
        gpu.compile_gpu(refusal_text(), device, tmp_path)


def test_refusal_dtype_lowering_attention(tmp_path):
    """bf16 for the wgpu client (naga has no 16-bit integers to carry it),
    f64 anywhere (f16 and raw-Vulkan bf16 run: test_two_byte_attention.py)."""
    with pytest.raises(errors.DtypeLowering, match="no 16-bit"):
        gpu.compile_gpu(refusal_text(dtype="bf16"), devices.WGPU_LAVAPIPE, tmp_path / "bf16")
    with pytest.raises(errors.DtypeLowering, match="reads f32, f16 or bf16 and computes in f32"):
        gpu.compile_gpu(refusal_text(dtype="f64"), devices.SM_90, tmp_path / "f64")


def test_refusal_grid_limit(tmp_path):
    device = LAVAPIPE.with_limits(max_grid_x=2, max_grid_y=1)
    with pytest.raises(errors.GridLimit, match="4 workgroups"):
        gpu.compile_gpu(refusal_text(), device, tmp_path)


def test_refusal_buffer_bytes(tmp_path):
    # lavapipe binds at most 128 MiB per storage buffer; k is 300 MiB.
    with pytest.raises(errors.BufferBytes, match="314572800 bytes.*134217728"):
        gpu.compile_gpu(refusal_text(key_len=4096 * 300, heads=4), LAVAPIPE, tmp_path)


def test_malformed_pipeline_options_are_compile_errors(tmp_path):
    """An option value the pipeline parser refuses (an unknown enum value, a
    chip that is not one) is a CompileError, not an abort or a bare
    ValueError."""
    from poot_mlir.compiler.pipeline import parse_module, run_pipeline

    for pipeline in ("builtin.module(poot-to-llvm-cpu{attention=gpu})",
                     "builtin.module(poot-to-nvvm{chip=sm_90})})",
                     "builtin.module(poot-to-nvvm{format=elf})"):
        with pytest.raises(errors.CompileError, match="does not parse"):
            run_pipeline(parse_module(refusal_text()), pipeline)
    with pytest.raises(errors.CompileError):
        gpu.compile_gpu(refusal_text(), devices.SM_90.with_limits(chip="sm_90}"), tmp_path, nvvm_format="isa")


def test_attention_and_a_whole_step_share_one_compile(rng, vulkan, tmp_path):
    """An attention-only module and a step with primitives around its
    attention go through the same compile_gpu, give the same artifact format
    (a program; the attention's launches recorded by C++ with its request)
    and both run on lavapipe against the float64 oracle."""
    form = Form("gqa", q_heads=8, kv_heads=2, key_len=300)
    attention, inputs = build(form, rng)
    def ty(shape):
        return "tensor<" + "x".join(map(str, shape)) + "xf32>"

    q, k, v = (ty(inputs[n].shape) for n in ("q", "k", "v"))
    o = ty(inputs["q"].shape[:3] + inputs["v"].shape[3:])
    step = f"""
func.func @step(%q: {q} {{poot.name = "q"}}, %k: {k} {{poot.name = "k"}}, %v: {v} {{poot.name = "v"}})
    -> ({o} {{poot.name = "out"}}) {{
  %e = poot.exp %q : {q}
  %a = poot.attention %e, %k, %v {{scale = 0.25 : f64}} : {q}, {k}, {v} -> {o}
  %r = poot.tanh %a : {o}
  return %r : {o}
}}"""
    step_inputs = {"q": inputs["q"] * np.float32(0.25), "k": inputs["k"], "v": inputs["v"]}
    device = for_backend(LAVAPIPE.with_limits(compute_units=64), vulkan)
    for name, text, ins, extra in (("attention", attention, inputs, 0), ("step", step, step_inputs, 2)):
        path = gpu.compile_gpu(text, device, tmp_path / name)
        art = GpuArtifact(path, backend=vulkan)
        assert art.manifest["kind"] == "program"
        (fused,) = art.manifest["attention"]
        assert fused["op"] == "attention" and fused["request"]["schedule"] == "split_kv"
        assert [l["entry"] for l in fused["launches"]] == ["partials", "combine"]
        launches = [c["launch"] for c in art.programs["step" if name == "step" else art.signature.name]["commands"]
                    if "launch" in c]
        # The attention's launches, plus one kernel per fused elementwise op around it.
        assert len(launches) == 2 + extra
        ref = oracle.run(text, ins, reference=True).outputs[0]
        assert_matches(art.run(ins).outputs[0], ref, rtol=3e-5, atol=3e-6)


# --- NVVM (PTX, cubin) and ROCDL outputs ------------------------------------------


def ptxas() -> str:
    require("ptxas")
    return ptxas_path()


WARP_FORMS = [
    Form("warp_gqa", q_heads=8, kv_heads=2, key_width=64, value_width=32, key_len=1024),
    Form("warp_alibi_softcap_live", key_width=32, value_width=32, mask="per_head", softcap=9.0, live=True),
    Form("warp_mla", key_width=32, shared_width=32, value_width=32),
    Form("warp_paged", key_width=32, value_width=32, pool=700),
    # Head widths of whole 16-byte passes (32 lanes x 4 f32): vector loads.
    Form("warp_d128_paged_live", key_width=128, value_width=128, key_len=1024, pool=1500, live=True),
    Form("warp_window", q_heads=8, kv_heads=2, key_width=64, value_width=32, key_len=1024, causal=True, window=200),
]


# max_unroll 4 (the default): 16-byte loads and unrolled keys; 0: the scalar
# one-key warp decode (both verified on the H200, docs/warp-decode.md).
PTX_PLANS = [(form, 0) for form in (FORMS[1], FORMS[7], FORMS[10], *WARP_FORMS)] + [
    (form, 4) for form in WARP_FORMS
]


@pytest.mark.parametrize("form,max_unroll", PTX_PLANS, ids=lambda p: p.name if isinstance(p, Form) else f"unroll{p}")
def test_sm90_ptx_is_accepted_by_ptxas(form, max_unroll, rng, tmp_path):
    text, _ = build(form, rng)
    path = gpu.compile_gpu(text, devices.SM_90.with_limits(max_unroll=max_unroll), tmp_path / "a")
    import json

    schedule = json.loads((path / "manifest.json").read_text())["attention"][0]["request"]["schedule"]
    assert schedule == ("warp_decode" if form.name.startswith("warp") else schedule)
    ptx_files = list(path.glob("*.ptx"))
    assert ptx_files
    ptx = ptx_files[0].read_text()
    assert ".target sm_90" in ptx and "bar.sync" in ptx
    if form.name.startswith("warp"):
        assert "shfl.sync.bfly.b32" in ptx
        # K/V rows: one 16-byte load per lane per 128 channels where the
        # widths allow (docs/warp-decode.md), 4-byte loads otherwise.
        vector = re.search(r"ld\.global(\.nc)?\.v4\.(b32|f32)", ptx)
        assert bool(vector) == (max_unroll > 0 and form.key_width % 128 == 0 and form.value_width % 128 == 0)
    subprocess.run([ptxas(), "-arch=sm_90", str(ptx_files[0]), "-o", str(tmp_path / "k.cubin")], check=True)
    assert (tmp_path / "k.cubin").stat().st_size > 0


def test_rocdl_kernels_are_llvm_dialect(rng, tmp_path):
    text, _ = build(FORMS[1], rng)
    path = gpu.compile_gpu(text, devices.GFX942, tmp_path / "a")
    ir = next(path.glob("*.rocdl.mlir")).read_text()
    assert 'rocdl.target<O = 3, chip = "gfx942">' in ir
    assert "rocdl.workitem.id.x" in ir and "rocdl.barrier" in ir or "rocdl.s.barrier" in ir
    assert "llvm.func @stream" in ir or "llvm.func @partials" in ir
    # ... and translated to LLVM IR (AMDGPU kernels calling no device library).
    ll = next(path.glob("*.ll")).read_text()
    assert "define amdgpu_kernel void @" in ll and "@llvm.amdgcn.workitem.id.x" in ll
    assert "__ocml" not in ll


def test_hsaco_needs_an_amdgpu_llvm(rng, tmp_path, monkeypatch):
    """Without an AMDGPU-enabled LLVM 22 the refusal says what is missing."""
    text, _ = build(FORMS[1], rng)
    path = gpu.compile_gpu(text, devices.GFX942, tmp_path / "a")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("POOT_AMDGPU_LLC", raising=False)
    with pytest.raises(errors.CompileError, match="AMDGPU target"):
        gpu.compile_hsaco(next(path.glob("*.ll")), chip="gfx942")


# --- the CPU form of the same kernels ---------------------------------------------

CPU = devices.CPU_SEED  # the GPU schedules as loops
HOST = devices.CPU  # the CPU's own schedule (cpu_tiled), for the detected host
CPU_TILED = ["tiled", "tiled_split", "tiled_w4", "tiled_w1_block1"]


def cpu_schedules(form: Form) -> dict[str, devices.Device]:
    """The CPU described to the planner so it picks each schedule: the GPU
    schedules run as loops (lanes, splits, grid folds), and the CPU's own
    schedule at the host's vector width, split over many cores, at 4-lane
    vectors, and with 1-lane vectors and one-vector key blocks."""
    lane_bytes = (form.value_width + 2) * 4
    return {
        "stream64": CPU,
        "stream16": CPU.with_limits(workgroup_memory=16 * lane_bytes),
        "stream4": CPU.with_limits(workgroup_memory=4 * lane_bytes + 3),
        "split_kv": CPU.with_limits(compute_units=64),
        "fold2d": CPU.with_limits(max_grid_x=3),
        "tiled": HOST,
        "tiled_split": HOST.with_limits(compute_units=64),
        "tiled_w4": HOST.with_limits(vector_width=4, workgroup_memory=4096),
        "tiled_w1_block1": HOST.with_limits(vector_width=1, workgroup_memory=1),
    }


@pytest.mark.parametrize(
    "schedule", ["stream64", "stream16", "stream4", "split_kv", "fold2d", *CPU_TILED]
)
@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_cpu_kernel_matches_oracle(form, schedule, rng, tmp_path):
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    text, inputs = build(form, rng)
    path = compile_cpu(text, tmp_path / "cpu", device=cpu_schedules(form)[schedule])
    out = CpuArtifact(path).run(inputs).outputs[0]
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    assert_matches(out, ref, rtol=1e-5, atol=1e-6)


def _need_openmp():
    """The threaded CPU schedule needs libomp; CI installs it (.ci/run), so
    there a missing runtime fails instead of skipping."""
    require("openmp")


# Each has >= 2^18 multiply-adds, so the planner gives it a thread team.
THREADED = [
    Form("gqa_long", q_heads=8, kv_heads=2, key_len=3000),
    Form("prefill_causal_long", q_len=80, key_len=80, mask="shared"),
    Form("paged_live", q_heads=8, kv_heads=2, pool=900, key_len=700, live=True),
]


@pytest.mark.parametrize("form", THREADED, ids=[f.name for f in THREADED])
def test_cpu_tiled_threads_agree(form, rng, tmp_path):
    """The CPU schedule on an OpenMP thread pool (planned for 4 cores, so a
    decode splits its keys): 1 thread and 3 threads each match the oracle
    and agree with each other."""
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    _need_openmp()
    text, inputs = build(form, rng)
    path = compile_cpu(text, tmp_path / "cpu", device=HOST.with_limits(compute_units=4),
                       parallel="omp", keep_ir=True)
    assert "__kmpc_fork_call" in (path / "step.ll").read_text()  # a thread team
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    outs = {}
    for threads in (1, 3):
        art = CpuArtifact(path, threads=threads)
        assert art.manifest["parallel"] == "omp"
        outs[threads] = art.run(inputs).outputs[0]
        assert_matches(outs[threads], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1], outs[3], rtol=1e-6, atol=1e-7)


def test_cpu_and_lavapipe_agree(rng, vulkan, tmp_path):
    """The CPU loops and the SPIR-V kernel run the same schedule: same lanes,
    splits and combine order, so they agree far below the oracle tolerance."""
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    form = Form("gqa", q_heads=8, kv_heads=2, key_len=700, softcap=7.0)
    text, inputs = build(form, rng)
    cpu_out = CpuArtifact(
        compile_cpu(text, tmp_path / "cpu", device=CPU.with_limits(compute_units=64))
    ).run(inputs).outputs[0]
    gpu_out = GpuArtifact(
        gpu.compile_gpu(text, for_backend(LAVAPIPE.with_limits(compute_units=64), vulkan), tmp_path / "gpu"),
        backend=vulkan,
    ).run(inputs).outputs[0]
    np.testing.assert_allclose(cpu_out, gpu_out, rtol=1e-5, atol=1e-7)


def test_layers_share_one_scratch_arena(rng, vulkan, tmp_path):
    """Two split-KV attentions (two layers): each one's scratch, recorded by
    poot-gpu-attention-launches, is the hand count rows * splits * (Dv + 2)
    floats; the program places both in one arena by their live ranges, so
    the arena is smaller than their sum."""
    text = """
func.func @step(%q0: tensor<1x4x1x16xf32> {poot.name = "q0"}, %k0: tensor<1x2x512x16xf32> {poot.name = "k0"},
                %v0: tensor<1x2x512x16xf32> {poot.name = "v0"}, %q1: tensor<1x4x1x16xf32> {poot.name = "q1"},
                %k1: tensor<1x2x1024x16xf32> {poot.name = "k1"}, %v1: tensor<1x2x1024x8xf32> {poot.name = "v1"})
    -> (tensor<1x4x1x16xf32> {poot.name = "o0"}, tensor<1x4x1x8xf32> {poot.name = "o1"}) {
  %o0 = poot.attention %q0, %k0, %v0 {scale = 0.25 : f64} : tensor<1x4x1x16xf32>, tensor<1x2x512x16xf32>, tensor<1x2x512x16xf32> -> tensor<1x4x1x16xf32>
  %o1 = poot.attention %q1, %k1, %v1 {scale = 0.25 : f64} : tensor<1x4x1x16xf32>, tensor<1x2x1024x16xf32>, tensor<1x2x1024x8xf32> -> tensor<1x4x1x8xf32>
  return %o0, %o1 : tensor<1x4x1x16xf32>, tensor<1x4x1x8xf32>
}"""
    shapes = {"q0": (1, 4, 1, 16), "k0": (1, 2, 512, 16), "v0": (1, 2, 512, 16),
              "q1": (1, 4, 1, 16), "k1": (1, 2, 1024, 16), "v1": (1, 2, 1024, 8)}
    inputs = {n: rng.standard_normal(s, dtype=np.float32) for n, s in shapes.items()}
    path = gpu.compile_gpu(text, for_backend(LAVAPIPE.with_limits(compute_units=64), vulkan), tmp_path / "a")
    art = GpuArtifact(path, backend=vulkan)
    fused = art.manifest["attention"]
    rows = 4
    for entry, width in zip(fused, (16, 8)):
        assert entry["scratch_bytes"] == rows * entry["request"]["splits"] * (width + 2) * 4
    scratch = [entry["scratch_bytes"] for entry in fused]
    assert all(scratch) and scratch[0] != scratch[1]
    program = art.programs["step"]
    temps = [b["bytes"] for b in program["buffers"] if b["kind"] == "temp"]
    assert max(scratch) <= program["arena_bytes"] < sum(temps)
    res = art.run(inputs)
    ref = oracle.run(text, inputs, reference=True)
    for name in ("o0", "o1"):
        assert_matches(res.named[name], ref.named[name], rtol=3e-5, atol=3e-6)
