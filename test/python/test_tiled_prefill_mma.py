"""The tensor-core prefill (`tiled_prefill_mma`, TiledPrefillMmaKernel.h) in CI: no GPU here.

What CI can check: the planner picks it for two-byte prefill on sm_90 and
nothing else (f32, SPIR-V, the device's tensor_cores=False, shapes the tiles
do not take keep the FFMA tiled schedule), and its PTX -- warp-level
`mma.sync.aligned.m16n8k16` with f32 accumulators on bf16/f16 operands,
quad shuffles for the online softmax, one two-byte rounding of the output --
is accepted by ptxas for sm_90. Its numerics are checked on the H200
against float64 (bench/mma_h200.py; docs/two-byte-attention.md has the
contract and bench/NOTES.md the results).
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from attention_cases import Form, build
from system_deps import ptxas_path, require
from poot_mlir.compiler import devices, gpu

FORMS = [
    Form("causal_gqa_h128", batch=1, q_heads=8, kv_heads=2, q_len=256, key_len=256,
         key_width=128, value_width=128, causal=True),
    Form("masked_live_softcap", q_len=100, key_len=300, key_width=64, value_width=64,
         mask="per_head", live=True, softcap=30.0),
    Form("chunk_after_cache_dv24", q_len=70, key_len=90, key_width=64, value_width=24, causal=True),
    Form("window_gqa_h128", batch=1, q_heads=8, kv_heads=2, q_len=256, key_len=256,
         key_width=128, value_width=128, causal=True, window=100),
]


def compile_sm90(form, dtype, rng, path, device=devices.SM_90):
    text, _ = build(form, rng, dtype)
    out = gpu.compile_gpu(text, device, path)
    manifest = json.loads((out / "manifest.json").read_text())
    return manifest["attention"][0], out


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_sm90_mma_prefill_ptx_is_accepted_by_ptxas(form, dtype, rng, tmp_path):
    attention, path = compile_sm90(form, dtype, rng, tmp_path / "a")
    request = attention["request"]
    assert request["schedule"] == "tiled_prefill_mma"
    assert (request["lanes"], request["q_block"]) == (128, 64)
    assert request["key_block"] in (32, 64)
    # Workgroup memory: K [C x (Dq/2 + 4)] and V [C x (Dv/2 + 4)] words.
    dq, dv, c = form.key_width + form.shared_width, form.value_width, request["key_block"]
    assert (c * (dq // 2 + 4) + c * (dv // 2 + 4)) * 4 <= devices.SM_90.workgroup_memory
    launch = attention["launches"][0]
    assert launch["entry"] == "prefill_mma" and launch["block"][0] == 128
    ptx = (path / launch["kernel"]).read_text()
    assert ".target sm_90" in ptx
    # Both products on tensor cores: (Dq/16) (C/8) for S and (C/16) (Dv/8)
    # for P V per tile, emitted straight-line in the key walk.
    mma = re.findall(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{dtype}\.{dtype}\.f32", ptx)
    assert len(mma) == (dq // 16) * (c // 8) + (c // 16) * (dv // 8)
    # The quad's row max and sum: butterfly shuffles over lanes ^1 and ^2.
    assert "shfl.sync.bfly.b32" in ptx
    # P rounded to the input type (two f32 -> one packed pair) and the one
    # output rounding at the two-byte store.
    assert f"cvt.rn.{dtype}x2.f32" in ptx or f"cvt.rn.{dtype}.f32" in ptx
    assert "st.global.b16" in ptx
    require("ptxas")
    subprocess.run([ptxas_path(), "-arch=sm_90", str(path / launch["kernel"]), "-o",
                    str(tmp_path / "k.cubin")], check=True)
    assert (tmp_path / "k.cubin").stat().st_size > 0


def test_mma_prefill_is_only_planned_where_it_applies(rng, tmp_path):
    form = FORMS[0]
    # F32 stays on FFMA (TF32 would break the F32 tolerance).
    attention, _ = compile_sm90(form, "f32", rng, tmp_path / "f32")
    assert attention["request"]["schedule"] == "tiled_prefill"
    # The device's switch: the FFMA tiled schedule for the same bf16 op.
    off = devices.SM_90.with_limits(tensor_cores=False)
    attention, path = compile_sm90(form, "bf16", rng, tmp_path / "off", off)
    assert attention["request"]["schedule"] == "tiled_prefill"
    assert "mma.sync" not in next(path.glob("*.ptx")).read_text()
    # No tensor cores below sm_80.
    sm75 = devices.SM_90.with_limits(name="sm_75", chip="sm_75")
    attention, _ = compile_sm90(form, "bf16", rng, tmp_path / "sm75", sm75)
    assert attention["request"]["schedule"] == "tiled_prefill"
    # Shapes the tiles do not take: fewer than 64 rows, Dq not a multiple of 16,
    # a per-head key part not a whole number of 16-byte chunks.
    for other in (Form("short", q_len=40, key_len=40, causal=True),
                  Form("odd_dq", q_len=64, key_len=64, key_width=24, causal=True),
                  Form("odd_dk", q_len=64, key_len=64, key_width=20, shared_width=12, value_width=16,
                       causal=True)):
        attention, _ = compile_sm90(other, "bf16", rng, tmp_path / other.name)
        assert attention["request"]["schedule"] == "tiled_prefill", other.name
    # Paged and split keys take it (verified on the H200 through bench/mma_h200.py).
    for other in (Form("paged", q_len=64, key_len=96, pool=300, key_width=32, value_width=32,
                       causal=True),
                  Form("split_key", q_len=70, key_len=90, key_width=48, shared_width=16,
                       value_width=24, causal=True)):
        attention, _ = compile_sm90(other, "bf16", rng, tmp_path / other.name)
        assert attention["request"]["schedule"] == "tiled_prefill_mma", other.name
