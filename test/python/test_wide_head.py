"""The wide-head decode (`wide_head`, docs/wide-head-decode.md): MQA and
absorbed-MLA decode with many query heads on one KV head.

Every form runs on lavapipe (raw Vulkan and wgpu) against the float64 oracle
on fresh seeded inputs: MQA with n_rep 16 and 32, a small MLA-like split key,
the DeepSeek-V3 absorbed shape (Hq 128, Dk 512 + Ds 64, Dv 512) split over
keys, paged + live length, masks, softcap, several query rows packed across
heads, f16 and bf16. The NVVM form is checked by ptxas for sm_90. The planner's
choices and refusals are lit tests (test/Transforms/poot-plan-attention-wide-head.mlir).
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from attention_cases import Form, assert_matches, build, run_on
from system_deps import ptxas_path, require
from poot_mlir import oracle
from poot_mlir.compiler import devices, gpu
from poot_mlir.runtime.gpu import GpuArtifact

LAVAPIPE = devices.VULKAN_LAVAPIPE

FORMS = [
    Form("mqa_rep16", batch=2, q_heads=16, kv_heads=1, key_len=300, key_width=64, value_width=64),
    Form("mqa_rep32_d128", batch=1, q_heads=32, kv_heads=1, key_len=200, key_width=128, value_width=128),
    Form("mla_small", batch=2, q_heads=16, kv_heads=1, key_len=260, key_width=64, shared_width=32,
         value_width=64),
    Form("mla_32_heads_softcap", batch=1, q_heads=32, kv_heads=1, key_len=90, key_width=64, shared_width=32,
         value_width=64, softcap=5.0),
    Form("gqa_rep8_paged_live", batch=2, q_heads=16, kv_heads=2, key_len=300, pool=700, live=True),
    Form("rep8_alibi_empty_row", batch=2, q_heads=8, kv_heads=1, key_len=70, mask="per_head", empty_row=True),
    Form("rep8_shared_mask_q3", batch=2, q_heads=8, kv_heads=1, q_len=3, key_len=40, mask="shared"),
    Form("rep16_causal_q5", batch=1, q_heads=16, kv_heads=1, q_len=5, key_len=33, causal=True),
    # Packed blocks of 5-row heads: a block spanning two heads starts its
    # walk at row 0's window.
    Form("rep16_window_q5", batch=1, q_heads=16, kv_heads=1, q_len=5, key_len=70, causal=True, window=20),
]


def check_plan(request, form, device):
    """The request's packing is whole: q_block packed rows of one KV group,
    a workgroup per (group, split, block), a chunk of whole tiles."""
    n_rep = form.q_heads // form.kv_heads
    rows, tile, splits = request["q_block"], request["key_block"], request["splits"]
    assert request["schedule"] == "wide_head"
    assert rows <= 1 << (n_rep * form.q_len - 1).bit_length()
    blocks = -(-n_rep * form.q_len // rows)
    assert request["grid_x"] * request["grid_y"] >= form.batch * form.kv_heads * splits * blocks
    assert splits == 1 or request["chunk"] % tile == 0
    dq = form.key_width + form.shared_width
    slices = request["lanes"] // rows if request["lanes"] % rows == 0 else 1
    if slices < 2 or dq % slices or dq // slices > 96:
        slices = 1  # the scalar S step
    floats = (rows * (dq + 1) + tile * max(dq + 1, form.value_width) + rows * (tile + 1) + 3 * rows
              + (slices * (rows * tile + 1) if slices > 1 else 0))
    assert floats * 4 <= device.workgroup_memory


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_wide_head_matches_oracle_on_lavapipe(form, rng, vulkan, tmp_path):
    text, inputs = build(form, rng)
    entry, out = run_on(text, inputs, LAVAPIPE, vulkan, tmp_path / "a")
    check_plan(entry["request"], form, LAVAPIPE)
    expected = ["wide_head", "combine"] if entry["request"]["splits"] > 1 else ["wide_head"]
    assert [launch["entry"] for launch in entry["launches"]] == expected
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    assert np.isnan(ref).any() == form.empty_row
    assert_matches(out, ref, rtol=3e-5, atol=3e-6)


@pytest.mark.parametrize("form", [FORMS[0], FORMS[2], FORMS[4]], ids=lambda f: f.name)
def test_split_kv_matches_oracle(form, rng, vulkan, tmp_path):
    """More compute units than the group's blocks fill: the keys are split,
    partials go to the scratch and the split combine folds them."""
    text, inputs = build(form, rng)
    device = LAVAPIPE.with_limits(compute_units=64)
    entry, out = run_on(text, inputs, device, vulkan, tmp_path / "a")
    request = entry["request"]
    check_plan(request, form, device)
    assert request["splits"] >= 2 and entry["scratch_bytes"] > 0
    assert [launch["entry"] for launch in entry["launches"]] == ["wide_head", "combine"]
    assert_matches(out, oracle.run(text, inputs, reference=True).outputs[0], rtol=3e-5, atol=3e-6)


DEEPSEEK = Form("deepseek_v3_absorbed", batch=1, q_heads=128, kv_heads=1, key_len=300, key_width=512,
                shared_width=64, value_width=512)


def test_deepseek_absorbed_mla_split_kv_on_lavapipe(rng, tmp_path):
    """The DeepSeek-V3 absorbed-MLA decode (Hq 128 on one KV head, key 512 +
    rotary 64, value 512), split over keys, on raw Vulkan."""
    require("vulkan")
    form = DEEPSEEK
    text, inputs = build(form, rng)
    device = LAVAPIPE.with_limits(compute_units=32)
    with GpuArtifact(gpu.compile_gpu(text, device, tmp_path / "a"), backend="lavapipe") as art:
        entry = art.manifest["attention"][0]
        out = art.run(inputs).outputs[0]
    request = entry["request"]
    check_plan(request, form, device)
    assert request["splits"] == 2 and request["lanes"] == 64
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    assert_matches(out, ref, rtol=1e-4, atol=1e-5)


def test_f16_wide_head_meets_the_two_byte_contract(rng, vulkan, tmp_path):
    from test_two_byte_attention import assert_contract

    form = Form("mla_small_f16", batch=2, q_heads=16, kv_heads=1, key_len=260, key_width=64, shared_width=32,
                value_width=64)
    text, inputs = build(form, rng, "f16")
    entry, out = run_on(text, inputs, LAVAPIPE.with_limits(compute_units=16), vulkan, tmp_path / "a")
    assert entry["request"]["schedule"] == "wide_head" and entry["request"]["splits"] > 1
    assert_contract(out, text, inputs, "f16")


def test_bf16_wide_head_meets_the_two_byte_contract_on_vulkan(rng, tmp_path):
    """bf16 on raw Vulkan (carried as i16): widened as staged, f32 math,
    one rounding of the output."""
    from test_two_byte_attention import assert_contract

    require("vulkan")
    form = Form("mqa_rep16_bf16", batch=1, q_heads=16, kv_heads=1, key_len=300, key_width=64, value_width=64,
                mask="per_head")
    text, inputs = build(form, rng, "bf16")
    path = gpu.compile_gpu(text, LAVAPIPE.with_limits(compute_units=16), tmp_path / "a")
    with GpuArtifact(path, backend="lavapipe") as art:
        assert art.manifest["attention"][0]["request"]["schedule"] == "wide_head"
        out = art.run(inputs).outputs[0]
    assert_contract(out, text, inputs, "bf16")


def test_live_length_with_nan_past_len(rng, vulkan, tmp_path):
    """Keys past a row's length are never read: NaN there changes nothing."""
    form = Form("mqa_live_nan", batch=2, q_heads=16, kv_heads=1, key_len=200, live=True)
    text, inputs = build(form, rng)
    inputs["len"] = np.array([77, 200], dtype=np.int32)
    inputs["k"][0, :, 77:] = np.nan
    inputs["v"][0, :, 77:] = np.nan
    entry, out = run_on(text, inputs, LAVAPIPE.with_limits(compute_units=16), vulkan, tmp_path / "a")
    assert entry["request"]["schedule"] == "wide_head"
    assert not np.isnan(out).any()
    assert_matches(out, oracle.run(text, inputs, reference=True).outputs[0], rtol=3e-5, atol=3e-6)


PTX_FORMS = [
    DEEPSEEK,
    Form("mqa_rep32_d128_32k", batch=1, q_heads=32, kv_heads=1, key_len=32768, key_width=128, value_width=128),
    Form("mqa_rep16_paged_live", batch=2, q_heads=16, kv_heads=1, key_len=1024, pool=4096, live=True,
         key_width=128, value_width=128),
]


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("form", PTX_FORMS, ids=[f.name for f in PTX_FORMS])
def test_sm90_wide_head_ptx_is_accepted_by_ptxas(form, dtype, rng, tmp_path):
    text, _ = build(form, rng, dtype)
    # The CUDA-core form (two-byte wide groups plan wide_head_mma by default:
    # test_wide_head_mma.py).
    device = devices.SM_90.with_limits(wide_head_mma=False)
    path = gpu.compile_gpu(text, device, tmp_path / "a")
    entry = json.loads((path / "manifest.json").read_text())["attention"][0]
    request = entry["request"]
    check_plan(request, form, device)
    assert request["lanes"] == 128 and request["splits"] > 1
    ptx = (path / entry["launches"][0]["kernel"]).read_text()
    assert ".target sm_90" in ptx and "bar.sync" in ptx and ".shared" in ptx
    require("ptxas")
    subprocess.run([ptxas_path(), "-arch=sm_90", str(path / entry["launches"][0]["kernel"]), "-o",
                    str(tmp_path / "k.cubin")], check=True)
    assert (tmp_path / "k.cubin").stat().st_size > 0


def test_rocdl_plans_wide_head(rng, tmp_path):
    """gfx942 (64 KiB LDS, 128 threads) plans the same schedule; its LLVM IR
    is produced (no AMD GPU in CI)."""
    text, _ = build(DEEPSEEK, rng)
    path = gpu.compile_gpu(text, devices.GFX942, tmp_path / "a")
    request = json.loads((path / "manifest.json").read_text())["attention"][0]["request"]
    check_plan(request, DEEPSEEK, devices.GFX942)
    assert request["lanes"] == 128
    assert "barrier" in next(path.glob("*.ll")).read_text()
