"""Two-byte attention (docs/two-byte-attention.md): f16 and bf16
`poot.attention` on every target, against the oracle's contract.

The contract: Q/K/V (and the mask as given) widened exactly, scores, softmax
and P.V in f32 (float64 in the oracle), the output rounded once to the
result type, to nearest even. So a compiled output differs from the float64
answer by that one rounding -- at most the unit roundoff u of the type
relative to the value (u = 2^-8 for bf16's 8-bit significand, 2^-11 for
f16's 11 bits) -- plus the kernel's f32 math error before the rounding
(~1e-6 absolute for these O(1) outputs, far below u). And it is the
oracle's rounded answer or a neighbour of it: the f32 and the float64
values may straddle a rounding boundary, so one ulp (2u relative) apart at
most. Inputs are fresh N(0, 1) draws rounded to the type (seed printed by
conftest); never zeros.
"""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

from attention_cases import NP_FLOAT, Form, build
from system_deps import ptxas_path, require
from poot_mlir import errors, oracle
from poot_mlir.compiler import devices, gpu
from poot_mlir.compiler.cpu import compile_cpu
from poot_mlir.runtime.cpu import CpuArtifact
from poot_mlir.runtime.gpu import GpuArtifact, make_device

#: Unit roundoff of each two-byte type: the contract's one rounding.
UNIT_ROUNDOFF = {"bf16": 2.0**-8, "f16": 2.0**-11}
#: The kernels' f32 math before that rounding (absolute; outputs are O(1)).
F32_MATH = 1e-5

CASES = [
    Form("gqa_decode", q_heads=8, kv_heads=2, key_len=300, mask="per_head"),
    Form("mqa_decode_split", batch=1, q_heads=4, kv_heads=1, key_len=1100),
    Form("prefill_causal", q_len=12, key_len=12, mask="shared"),
    Form("live", live=True),
    Form("paged_live", pool=700, live=True),
    Form("mla_split_key", key_width=12, shared_width=4, value_width=8),
    Form("softcap", softcap=5.0),
]


def assert_contract(out: np.ndarray, text: str, inputs: dict, dtype: str) -> None:
    """`out` is the contract's answer: within one rounding of the float64
    reference, and within one ulp of the oracle's rounded output."""
    assert out.dtype == NP_FLOAT[dtype], out.dtype
    exact = oracle.run(text, inputs, reference=True).outputs[0].astype(np.float64)
    rounded = oracle.run(text, inputs).outputs[0]
    assert rounded.dtype == NP_FLOAT[dtype]
    got = out.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    ok = ~np.isnan(exact)
    assert np.abs(exact[ok]).max() > 1e-3  # a real answer, not zeros (long decodes average to ~0.05)
    u = UNIT_ROUNDOFF[dtype]
    error = np.abs(got[ok] - exact[ok])
    bound = u * np.abs(exact[ok]) + F32_MATH
    assert (error <= bound).all(), f"max error/bound {np.max(error / bound):.3g}"
    # The oracle's own rounding of the same float64 value is the same or
    # one ulp away (2u relative).
    wide = rounded.astype(np.float64)[ok]
    assert (np.abs(got[ok] - wide) <= 2 * u * np.abs(wide) + F32_MATH).all()
    # ...and usually exactly it: the f32 math rarely crosses a boundary.
    assert np.mean(got[ok] == wide) > 0.9


# --- the oracle ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_oracle_rounds_the_float64_answer_once(dtype, rng) -> None:
    text, inputs = build(CASES[0], rng, dtype)
    got = oracle.run(text, inputs).outputs[0]
    exact = oracle.run(text, inputs, reference=True).outputs[0]
    from poot_mlir.oracle import dtypes

    np.testing.assert_array_equal(got.view(np.uint16), dtypes.round_float64(exact, NP_FLOAT[dtype]).view(np.uint16))


# --- CPU: the tiled schedule and the seed's loops -------------------------------------


@pytest.mark.parametrize("device", ["tiled", "loops"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("form", CASES, ids=[f.name for f in CASES])
def test_cpu_two_byte_attention_meets_the_contract(form, dtype, device, rng, tmp_path) -> None:
    text, inputs = build(form, rng, dtype)
    target = devices.CPU if device == "tiled" else devices.CPU_SEED
    art = CpuArtifact(compile_cpu(text, tmp_path / "a", device=target))
    assert_contract(art.run(inputs).outputs[0], text, inputs, dtype)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_cpu_f32_mask_with_two_byte_qkv(dtype, rng, tmp_path) -> None:
    """The mask as given: an f32 bias beside bf16/f16 Q/K/V is added to the
    f32 scores unrounded."""
    form = CASES[0]
    text, inputs = build(form, rng, dtype, mask_dtype="f32")
    assert inputs["mask"].dtype == np.float32
    art = CpuArtifact(compile_cpu(text, tmp_path / "a"))
    assert_contract(art.run(inputs).outputs[0], text, inputs, dtype)


# --- end to end: a traced spelling, fused, compiled, run -----------------------------


def hf_upcast_prefill(dtype: str):
    """Hugging Face eager attention on a two-byte model, GQA, an additive
    causal bias in the model's dtype: `softmax(w + mask, dtype=f32).to(dtype) @ v`."""
    from poot_mlir.frontend import Tracer, ops

    B, HQ, HKV, L, D = 2, 4, 2, 6, 16
    tr = Tracer("hf_upcast")
    q = tr.input("q", (B, HQ, L, D), dtype)
    k = ops.repeat_kv(tr.input("k", (B, HKV, L, D), dtype), HQ // HKV)
    v = ops.repeat_kv(tr.input("v", (B, HKV, L, D), dtype), HQ // HKV)
    mask = tr.input("mask", (1, 1, L, L), dtype)
    w = ops.add(ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), D**-0.5), mask)
    p = ops.convert(ops.softmax(ops.convert(w, "f32")), dtype)
    tr.output("out", ops.matmul(p, v))
    return tr.finish()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_traced_hf_spelling_fuses_and_runs_on_the_cpu(dtype, rng, tmp_path) -> None:
    module = hf_upcast_prefill(dtype)
    text = str(module)
    path = compile_cpu(text, tmp_path / "a")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["fusion"]["attention"] == 1, manifest["fusion"]
    L = 6
    causal = np.where(np.arange(L)[None, :] > np.arange(L)[:, None], -np.inf, 0.0)
    inputs = {
        "q": rng.standard_normal((2, 4, L, 16)).astype(NP_FLOAT[dtype]),
        "k": rng.standard_normal((2, 2, L, 16)).astype(NP_FLOAT[dtype]),
        "v": rng.standard_normal((2, 2, L, 16)).astype(NP_FLOAT[dtype]),
        "mask": causal[None, None].astype(NP_FLOAT[dtype]),
    }
    out = CpuArtifact(path).run(inputs).outputs[0]
    # The primitive chain's exact math (float64 reference of the traced
    # module) is the contract's answer before its one rounding.
    exact = oracle.run(text, inputs, reference=True).outputs[0].astype(np.float64)
    u = UNIT_ROUNDOFF[dtype]
    assert out.dtype == NP_FLOAT[dtype] and np.abs(exact).max() > 0.1
    assert (np.abs(out.astype(np.float64) - exact) <= u * np.abs(exact) + F32_MATH).all()


# --- SPIR-V (lavapipe): f16 runs on Vulkan and wgpu, bf16 on Vulkan ---------------------


@pytest.fixture(scope="module", params=["vulkan", "wgpu"])
def lavapipe(request):
    """Lavapipe through raw Vulkan, then through wgpu (naga reads the f16
    module too)."""
    require(request.param)
    backend = make_device("wgpu-lavapipe" if request.param == "wgpu" else "lavapipe")
    yield backend
    backend.close()


LAVAPIPE_CASES = [CASES[0], CASES[1], CASES[2], CASES[4]]


@pytest.mark.parametrize("form", LAVAPIPE_CASES, ids=[f.name for f in LAVAPIPE_CASES])
def test_f16_attention_on_lavapipe(form, rng, lavapipe, tmp_path) -> None:
    text, inputs = build(form, rng, "f16")
    device = devices.VULKAN_LAVAPIPE.with_limits(compute_units=64)
    if lavapipe.client == "wgpu":
        device = device.with_limits(client="wgpu")
    path = gpu.compile_gpu(text, device, tmp_path / "a")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["function"]["outputs"][0]["dtype"] == "f16"
    out = GpuArtifact(path, backend=lavapipe).run(inputs).outputs[0]
    # lavapipe's exp is within a few ulp of f32: far inside f16's rounding.
    assert_contract(out, text, inputs, "f16")


@pytest.mark.parametrize("form", LAVAPIPE_CASES, ids=[f.name for f in LAVAPIPE_CASES])
def test_bf16_attention_on_lavapipe(form, rng, tmp_path) -> None:
    """bf16 on raw Vulkan: the kernels carry it as i16 (poot-spirv-bf16-as-
    i16), widen it exactly at each load and round once at the store."""
    require("vulkan")
    text, inputs = build(form, rng, "bf16")
    path = gpu.compile_gpu(text, devices.VULKAN_LAVAPIPE.with_limits(compute_units=64), tmp_path / "a")
    with GpuArtifact(path, backend="lavapipe") as art:
        out = art.run(inputs).outputs[0]
    assert_contract(out, text, inputs, "bf16")


def test_bf16_attention_on_wgpu_is_refused(rng, tmp_path) -> None:
    text, _ = build(CASES[0], rng, "bf16")
    with pytest.raises(errors.DtypeLowering, match="no 16-bit"):
        gpu.compile_gpu(text, devices.WGPU_LAVAPIPE, tmp_path / "a")


# --- NVVM: PTX for sm_90 accepted by ptxas ----------------------------------------------


PTX_CASES = [
    Form("warp_gqa", q_heads=8, kv_heads=2, key_width=64, value_width=32, key_len=1024),
    Form("warp_mask_live", key_width=32, value_width=32, mask="per_head", live=True),
    Form("prefill_causal", q_len=12, key_len=12, mask="shared"),
    # 256 channels: 8 two-byte values (16 bytes) per lane per pass.
    Form("warp_d256", q_heads=8, kv_heads=2, key_width=256, value_width=256, key_len=1024),
]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("form", PTX_CASES, ids=[f.name for f in PTX_CASES])
def test_sm90_two_byte_ptx_is_accepted_by_ptxas(form, dtype, rng, tmp_path) -> None:
    text, _ = build(form, rng, dtype)
    # The warp decode's 16-byte loads (the default max_unroll 4) at D = 256;
    # the others in the scalar one-key form (max_unroll 0).
    device = devices.SM_90 if form.name == "warp_d256" else devices.SM_90.with_limits(max_unroll=0)
    path = gpu.compile_gpu(text, device, tmp_path / "a")
    manifest = json.loads((path / "manifest.json").read_text())
    attention = manifest["attention"][0]
    assert manifest["function"]["outputs"][0]["dtype"] == dtype
    if form.name.startswith("warp"):
        assert attention["request"]["schedule"] == "warp_decode"
    kernel = path / attention["launches"][0]["kernel"]
    ptx = kernel.read_text()
    assert ".target sm_90" in ptx
    # Two-byte loads widened to f32, f32 math, one rounding (to nearest
    # even) at the output's two-byte store.
    assert "ld.global.b16" in ptx and f"cvt.f32.{dtype}" in ptx
    assert f"cvt.rn.{dtype}.f32" in ptx and "st.global.b16" in ptx
    if form.name == "warp_d256":  # K/V rows as 16-byte vectors (docs/warp-decode.md)
        assert re.search(r"ld\.global(\.nc)?\.v4\.b32", ptx)
    require("ptxas")
    subprocess.run(
        [ptxas_path(), "-arch=sm_90", str(kernel), "-o", str(tmp_path / "k.cubin")],
        check=True,
    )
    assert (tmp_path / "k.cubin").stat().st_size > 0


HALF_ROW_CASES = [
    # bf16/f16 D = 128: a whole warp's row would be 8-byte vectors; half-warp
    # rows read 16 lanes x 8 elements, two keys a load (docs/warp-decode.md).
    # Odd lengths end on a half-filled load; live lengths, paged keys and a
    # per-head mask take the same walk.
    Form("half_gqa_odd", q_heads=8, kv_heads=2, key_width=128, value_width=128, key_len=1001),
    Form("half_paged_live_mask", q_heads=8, kv_heads=2, key_width=128, value_width=128, key_len=333,
         pool=700, live=True, mask="per_head", softcap=9.0),
]


@pytest.mark.parametrize("unroll", [1, 4])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("form", HALF_ROW_CASES, ids=[f.name for f in HALF_ROW_CASES])
def test_sm90_half_warp_rows_read_16_byte_vectors(form, dtype, unroll, rng, tmp_path) -> None:
    """max_keys_per_load=2: the planner records row_lanes = 16 and the warp
    kernel reads each K/V row as one 16-byte vector a lane
    (ld.global.v4.b32), completes each dot product over its half warp (xor
    shuffles 8, 4, 2, 1: none crosses the halves), and ptxas accepts it."""
    text, _ = build(form, rng, dtype)
    device = devices.SM_90.with_limits(max_keys_per_load=2, max_unroll=unroll)
    path = gpu.compile_gpu(text, device, tmp_path / "a")
    attention = json.loads((path / "manifest.json").read_text())["attention"][0]
    request = attention["request"]
    assert request["schedule"] == "warp_decode"
    assert request["row_lanes"] == 16 and request["unroll"] == unroll
    kernel = path / attention["launches"][0]["kernel"]
    ptx = kernel.read_text()
    loads = re.findall(r"ld\.global(?:\.nc)?\.(v\d\.)?(b16|b32|b64|f32)", ptx)
    # K and V: one v4.b32 a lane per load, unroll loads a step plus the tail's.
    assert loads.count(("v4.", "b32")) == 2 * (unroll + 1), loads
    assert ("v2.", "b32") not in loads and ("v4.", "b16") not in loads
    offsets = {int(m) for m in re.findall(r"shfl\.sync\.bfly\.b32\s+%r\d+(?:\|%p\d+)?, %r\d+, (\d+),", ptx)}
    assert offsets == {8, 4, 2, 1}, offsets
    require("ptxas")
    subprocess.run([ptxas_path(), "-arch=sm_90", str(kernel), "-o", str(tmp_path / "k.cubin")], check=True)
    assert (tmp_path / "k.cubin").stat().st_size > 0


def test_half_warp_rows_are_the_two_byte_default(rng, tmp_path) -> None:
    """The default plan takes half-warp rows for bf16 at D = 128 (row_lanes
    16, 16-byte loads); max_keys_per_load=1 keeps whole-warp rows (no
    row_lanes, no 16-byte loads), and f32 keeps them by default."""
    text, _ = build(HALF_ROW_CASES[0], rng, "bf16")
    for name, device, half in (("default", devices.SM_90, True),
                               ("whole", devices.SM_90.with_limits(max_keys_per_load=1), False)):
        path = gpu.compile_gpu(text, device, tmp_path / name)
        attention = json.loads((path / "manifest.json").read_text())["attention"][0]
        assert attention["request"]["schedule"] == "warp_decode", name
        assert (attention["request"].get("row_lanes") == 16) == half, name
        ptx = (path / attention["launches"][0]["kernel"]).read_text()
        assert bool(re.search(r"ld\.global(\.nc)?\.v4\.b32", ptx)) == half, name
    f32, _ = build(HALF_ROW_CASES[0], rng, "f32")
    path = gpu.compile_gpu(f32, devices.SM_90, tmp_path / "f32")
    assert "row_lanes" not in json.loads((path / "manifest.json").read_text())["attention"][0]["request"]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_rocdl_two_byte_kernels_widen_and_round_once(dtype, rng, tmp_path) -> None:
    """ROCDL (gfx942) shares the LLVM lowering: half loads extended, one
    fptrunc at the output store (not run here: no AMD GPU in CI)."""
    text, _ = build(CASES[0], rng, dtype)
    path = gpu.compile_gpu(text, devices.GFX942, tmp_path / "a")
    ll = next(path.glob("*.ll")).read_text()
    llvm = {"bf16": "bfloat", "f16": "half"}[dtype]
    assert f"load {llvm}" in ll and f"fpext {llvm}" in ll
    assert ll.count(f"fptrunc float") >= 1 and f"store {llvm}" in ll


# --- the CUDA runtime binds torch bfloat16 tensors ----------------------------------


class _TorchLikeBf16:
    """What the CUDA runtime reads off a torch.bfloat16 CUDA tensor (torch
    gives bfloat16 no __cuda_array_interface__)."""

    dtype = "torch.bfloat16"
    is_cuda = True
    shape = (2, 3)

    def data_ptr(self) -> int:
        return 0x7F0000001000

    def is_contiguous(self) -> bool:
        return True


def test_cuda_runtime_reads_bfloat16_device_tensors() -> None:
    from poot_mlir.runtime import cuda

    dev = cuda.as_device(_TorchLikeBf16())
    assert dev is not None and dev.dtype == NP_FLOAT["bf16"] and dev.nbytes == 12
    assert dev.ptr == 0x7F0000001000


class _MisalignedView(_TorchLikeBf16):
    """A view one bf16 element into a tensor: its data is 2-byte aligned."""

    def data_ptr(self) -> int:
        return 0x7F0000001002


def test_cuda_runtime_refuses_device_tensors_not_16_byte_aligned() -> None:
    """The warp decode reads 16-byte vectors: a misaligned view is a typed
    bind error, not a device fault."""
    from poot_mlir.runtime import cuda

    with pytest.raises(errors.ShapeBindError, match="not 16-byte aligned"):
        cuda.as_device(_MisalignedView())
