"""The wide-head decode on tensor cores (`wide_head_mma`, WideHeadMmaKernel.h) in CI: no GPU here.

What CI can check: the planner takes it for two-byte wide-group decodes on
sm_90 (`wide_head_mma=True`, the default since it verified on the H200, see
docs/wide-head-decode.md) and not otherwise (f32, `wide_head_mma=False`,
tensor_cores=False, sm_75, SPIR-V keep the FFMA `wide_head`); its PTX --
`mma.sync.aligned.m16n8k16` with f32 accumulators on bf16/f16 operands,
S split over the key's width and P V over the value's channels between the
warps of an m tile, quad shuffles for the online softmax, P rounded to the
input type, 16-byte staging loads -- is accepted by ptxas for sm_90. Its
numerics are checked on the H200 against float64 (bench/tcwide_h200.py;
bench/NOTES.md has the results).
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from attention_cases import Form, build
from system_deps import ptxas_path, require
from poot_mlir.compiler import devices, gpu

MMA = devices.SM_90.with_limits(wide_head_mma=True)
MLA = dict(q_heads=128, kv_heads=1, key_width=512, shared_width=64, value_width=512)

FORMS = [
    Form("deepseek_b1_4k", batch=1, key_len=4096, **MLA),
    Form("mqa_rep32_d128_live", batch=2, q_heads=32, kv_heads=1, key_len=2000, key_width=128,
         value_width=128, live=True),
    Form("rep32_paged_alibi_softcap", batch=2, q_heads=32, kv_heads=1, key_len=300, pool=700,
         key_width=128, value_width=128, mask="per_head", softcap=20.0),
    Form("rep16_causal_q3", batch=1, q_heads=16, kv_heads=1, q_len=3, key_len=90, key_width=48,
         shared_width=16, value_width=32, causal=True),
    Form("rep16_window_q3", batch=1, q_heads=16, kv_heads=1, q_len=3, key_len=300, key_width=48,
         shared_width=16, value_width=32, causal=True, window=70),
]


def compile_sm90(form, dtype, rng, path, device=MMA):
    text, _ = build(form, rng, dtype)
    out = gpu.compile_gpu(text, device, path)
    manifest = json.loads((out / "manifest.json").read_text())
    return manifest["attention"][0], out


def warps_per_tile(dq: int, dv: int) -> int:
    """dialect/AttentionLayout.h wideHeadMmaWarps, restated as the test's expectation."""
    for w in (4, 2):
        if dq % (16 * w) == 0 and dv % (8 * w) == 0:
            return w
    return 1


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_sm90_wide_head_mma_ptx_is_accepted_by_ptxas(form, dtype, rng, tmp_path):
    attention, path = compile_sm90(form, dtype, rng, tmp_path / "a")
    request = attention["request"]
    assert request["schedule"] == "wide_head_mma"
    dq, dv = form.key_width + form.shared_width, form.value_width
    rows, tile, w = request["q_block"], request["key_block"], warps_per_tile(dq, dv)
    assert rows in (16, 32) and tile in (16, 32) and request["lanes"] == 2 * rows * w
    # Workgroup memory: one K / V^T region, then the warps' partial scores.
    words = max(tile * (dq // 2 + 4), dv * (tile // 2 + 4)) + (w * rows * tile if w > 1 else 0)
    assert words * 4 <= devices.SM_90.workgroup_memory
    entries = [launch["entry"] for launch in attention["launches"]]
    assert entries == (["wide_head_mma", "combine"] if request["splits"] > 1 else ["wide_head_mma"])
    ptx = (path / attention["launches"][0]["kernel"]).read_text()
    assert ".target sm_90" in ptx
    # Per tile and warp: (C/8) (Dq/16/W) mma for its part of S and
    # (C/16) (Dv/8/W) for its channels of P V, straight-line in the walk.
    mma = re.findall(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{dtype}\.{dtype}\.f32", ptx)
    assert len(mma) == (tile // 8) * (dq // 16 // w) + (tile // 16) * (dv // 8 // w)
    assert "shfl.sync.bfly.b32" in ptx
    assert f"cvt.rn.{dtype}x2.f32" in ptx or f"cvt.rn.{dtype}.f32" in ptx
    # K and V are staged with 16-byte loads, K stored as 16-byte vectors
    # into the 16-byte aligned workgroup buffer.
    assert "ld.global.v4.b32" in ptx or "ld.global.nc.v4.b32" in ptx
    assert ".shared .align 16" in ptx and "st.shared.v4.b32" in ptx
    require("ptxas")
    for launch in attention["launches"]:
        subprocess.run([ptxas_path(), "-arch=sm_90", str(path / launch["kernel"]), "-o",
                        str(tmp_path / "k.cubin")], check=True)
        assert (tmp_path / "k.cubin").stat().st_size > 0


def test_wide_head_mma_is_only_planned_where_it_applies(rng, tmp_path):
    form = FORMS[1]
    cases = {
        "off": (devices.SM_90.with_limits(wide_head_mma=False), "bf16"),
        "f32": (MMA, "f32"),
        "no_tensor_cores": (MMA.with_limits(tensor_cores=False), "bf16"),
        "sm75": (MMA.with_limits(name="sm_75", chip="sm_75"), "bf16"),
    }
    # The default device plans it.
    attention, _ = compile_sm90(form, "bf16", rng, tmp_path / "default", devices.SM_90)
    assert attention["request"]["schedule"] == "wide_head_mma"
    for name, (device, dtype) in cases.items():
        attention, path = compile_sm90(form, dtype, rng, tmp_path / name, device)
        assert attention["request"]["schedule"] == "wide_head", name
        assert "mma.sync" not in (path / attention["launches"][0]["kernel"]).read_text(), name
    # Head widths that are not whole 16-byte vectors.
    odd = Form("odd", batch=1, q_heads=16, kv_heads=1, key_len=100, key_width=60, value_width=64)
    attention, _ = compile_sm90(odd, "bf16", rng, tmp_path / "odd")
    assert attention["request"]["schedule"] == "wide_head"
