"""The tiled GPU prefill (TiledPrefillKernel.h) and the causal mask kind.

Every prefill form (causal and not, GQA, query lengths that are no multiple
of the row block, a chunk after a cache with the bottom-right causal
diagonal, live length, tensor masks, split and paged keys) runs on lavapipe
(raw Vulkan and wgpu) against the float64 oracle on fresh seeded inputs; the NVVM form is checked
by ptxas for sm_90; the CPU runs the causal kind through its own schedule.
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


LAVAPIPE = devices.VULKAN_LAVAPIPE

PREFILL_FORMS = [
    Form("causal_square_gqa", q_heads=8, kv_heads=2, q_len=50, key_len=50, causal=True),
    Form("causal_chunk_after_cache", q_len=37, key_len=101, causal=True),
    Form("dense_no_mask", q_heads=4, kv_heads=4, q_len=40, key_len=70),
    Form("alibi_per_head", q_len=20, key_len=60, mask="per_head"),
    Form("causal_live", q_len=24, key_len=64, causal=True, live=True),
    Form("causal_softcap_dv8", q_len=33, key_len=45, value_width=8, softcap=5.0, causal=True),
    Form("mla_split_key", q_len=19, key_len=30, key_width=12, shared_width=4, value_width=8, causal=True),
    Form("paged_causal", q_len=16, key_len=48, pool=200, causal=True),
    Form("tensor_causal_mask", q_len=18, key_len=18, mask="shared"),
    # Sliding windows: blocks whose first tiles are skipped, rows whose
    # window starts inside a tile, a chunk after a cache with a live length.
    Form("window_square_gqa", q_heads=8, kv_heads=2, q_len=70, key_len=70, causal=True, window=21),
    Form("window_chunk_live", q_len=37, key_len=101, causal=True, live=True, window=50),
    Form("window_paged_one_key", q_len=16, key_len=48, pool=200, causal=True, window=1),
]


@pytest.mark.parametrize("form", PREFILL_FORMS, ids=[f.name for f in PREFILL_FORMS])
def test_tiled_prefill_matches_oracle_on_lavapipe(form, rng, vulkan, tmp_path):
    text, inputs = build(form, rng)
    entry, out = run_on(text, inputs, LAVAPIPE, vulkan, tmp_path / "a")
    request = entry["request"]
    assert request["schedule"] == "tiled_prefill"
    assert [launch["entry"] for launch in entry["launches"]] == ["prefill"]
    rows = request["q_block"]
    assert rows <= form.q_len and request["lanes"] == 64
    assert request["grid_x"] * request["grid_y"] >= form.batch * form.q_heads * -(-form.q_len // rows)
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    # A window with a live length may leave a row no key (len before its
    # window): NaN there, as the op defines it, and the kernel must agree.
    assert not np.isnan(ref).any() or (form.window and form.live)
    assert_matches(out, ref, rtol=3e-5, atol=3e-6)


def test_row_block_not_dividing_q_len(rng, vulkan, tmp_path):
    """50 rows in blocks of 32: the second block's 14 missing rows are
    neither read nor written (the output's neighbours stay intact)."""
    form = PREFILL_FORMS[0]
    text, inputs = build(form, rng)
    entry, out = run_on(text, inputs, LAVAPIPE, vulkan, tmp_path / "a")
    assert entry["request"]["q_block"] == 32 and form.q_len % 32
    assert_matches(out, oracle.run(text, inputs, reference=True).outputs[0], rtol=3e-5, atol=3e-6)


@pytest.mark.parametrize(
    "memory, rows, tile",
    [(8 * 1024, 32, 16), (5 * 1024, 16, 16), (3584, 8, 16), (3 * 1024, 8, 8)],
)
def test_planner_sizes_tiles_to_workgroup_memory(memory, rows, tile, rng, vulkan, tmp_path):
    """Less workgroup memory: smaller blocks and tiles, same results."""
    form = Form("causal_q40", q_len=40, key_len=56, key_width=16, value_width=16, causal=True)
    text, inputs = build(form, rng)
    entry, out = run_on(text, inputs, LAVAPIPE.with_limits(workgroup_memory=memory), vulkan, tmp_path / "a")
    request = entry["request"]
    assert (request["schedule"], request["q_block"], request["key_block"]) == ("tiled_prefill", rows, tile)
    assert_matches(out, oracle.run(text, inputs, reference=True).outputs[0], rtol=3e-5, atol=3e-6)


def test_no_tile_fits_plans_streaming(rng, vulkan, tmp_path):
    """When not even an 8 x 8 tiling fits, the planner keeps the streaming
    schedule (which fits in its own, smaller state)."""
    form = Form("wide_causal", q_len=20, key_len=20, key_width=128, value_width=128, causal=True)
    text, inputs = build(form, rng)
    device = LAVAPIPE.with_limits(workgroup_memory=6 * 1024)
    entry, out = run_on(text, inputs, device, vulkan, tmp_path / "a")
    assert entry["request"]["schedule"] == "streaming"
    assert_matches(out, oracle.run(text, inputs, reference=True).outputs[0], rtol=3e-5, atol=3e-6)


def test_live_length_with_nan_past_len(rng, vulkan, tmp_path):
    form = Form("causal_live_nan", q_len=24, key_len=64, causal=True, live=True)
    text, inputs = build(form, rng)
    inputs["len"] = np.array([30, 64], dtype=np.int32)
    inputs["k"][0, :, 30:] = np.nan
    inputs["v"][0, :, 30:] = np.nan
    entry, out = run_on(text, inputs, LAVAPIPE, vulkan, tmp_path / "a")
    assert entry["request"]["schedule"] == "tiled_prefill"
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    assert not np.isnan(out).any()
    assert_matches(out, ref, rtol=3e-5, atol=3e-6)


def test_sm90_tiled_prefill_ptx_is_accepted_by_ptxas(rng, tmp_path):
    require("ptxas")
    form = Form("causal_h128", q_heads=8, kv_heads=2, q_len=256, key_len=256,
                key_width=128, value_width=128, causal=True)
    text, _ = build(form, rng)
    path = gpu.compile_gpu(text, devices.SM_90, tmp_path / "a")
    request = json.loads((path / "manifest.json").read_text())["attention"][0]["request"]
    assert request["schedule"] == "tiled_prefill" and request["lanes"] == 128
    # 48 KiB of static shared memory on sm_90 (devices.SM_90).
    from poot_mlir.compiler.devices import SM_90

    floats = (request["q_block"] * 129 + request["key_block"] * 129 + request["key_block"] * 128
              + request["q_block"] * (request["key_block"] + 1) + 3 * request["q_block"])
    assert floats * 4 <= SM_90.workgroup_memory
    ptx = next(path.glob("*.ptx"))
    text_ptx = ptx.read_text()
    assert ".target sm_90" in text_ptx and "bar.sync" in text_ptx and ".shared" in text_ptx
    subprocess.run([ptxas_path(), "-arch=sm_90", str(ptx), "-o", str(tmp_path / "k.cubin")], check=True)
    assert (tmp_path / "k.cubin").stat().st_size > 0


CPU_FORMS = [
    Form("cpu_causal_square", q_heads=8, kv_heads=2, q_len=50, key_len=50, causal=True),
    Form("cpu_causal_chunk_live", q_len=37, key_len=101, causal=True, live=True),
    Form("cpu_window_square", q_heads=8, kv_heads=2, q_len=50, key_len=50, causal=True, window=13),
    Form("cpu_window_chunk_live", q_len=37, key_len=101, causal=True, live=True, window=70),
]


@pytest.mark.parametrize("form", CPU_FORMS, ids=[f.name for f in CPU_FORMS])
def test_cpu_causal_kind_matches_oracle(form, rng, tmp_path):
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    text, inputs = build(form, rng)
    path = compile_cpu(text, tmp_path / "cpu", device=devices.CPU)
    out = CpuArtifact(path).run(inputs).outputs[0]
    ref = oracle.run(text, inputs, reference=True).outputs[0]
    assert_matches(out, ref, rtol=1e-5, atol=1e-6)
