"""Batch invariance (issue 24 item 5): with `Device.batch_invariant` every
reduction order a row sees (the attention's split-KV count and chunks, a
whole GPU step's matmul split ratios) is chosen for one row, so a request's
output is bit-identical alone or batched.

Each test runs one row alone (B = 1) and the same row inside a batch of 16
whose other rows are fresh random draws (never zeros), on the CPU and on
lavapipe: with the option on, the row's outputs are bit-identical
(np.array_equal) and the plans record the same split; with it off, at
shapes where the defaults differ, the plans record different splits and the
row's bits differ (what the option fixes).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from attention_cases import Form, build, run_on  # noqa: E402
from poot_mlir.compiler import devices  # noqa: E402
from system_deps import require  # noqa: E402

B, ROW = 16, 5

#: Decodes whose split differs alone and in a batch of 16 on the devices
#: below (one row's heads leave cores idle, sixteen rows' fill them).
FORMS = [
    Form("decode", batch=B, q_heads=4, kv_heads=2, key_len=4096, key_width=64, value_width=64),
    Form("decode_live_gqa", batch=B, q_heads=8, kv_heads=2, key_len=4096, key_width=32,
         value_width=32, live=True),
]

#: CPU devices: the CPU schedule (8 cores: one row's 2 work items split 8
#: ways, sixteen rows' 32 items not at all) and the GPU schedules as loops
#: (64 compute units: one row's heads split_kv, sixteen rows' streaming).
CPU_DEVICES = {
    "cpu_tiled": devices.CPU.with_limits(compute_units=8, vector_width=8, workgroup_memory=49152),
    "cpu_seed": devices.CPU_SEED.with_limits(compute_units=64),
}

#: lavapipe described with 64 compute units, so one row splits its keys.
LAVAPIPE = devices.VULKAN_LAVAPIPE.with_limits(compute_units=64)


def _pair(form: Form, rng: np.random.Generator):
    """(text for B = 1, text for B = 16, inputs of row ROW alone, inputs of
    the batch): the batch's inputs are fresh draws, the lone row is its row
    ROW."""
    text16, inputs16 = build(form, rng)
    if "len" in inputs16:
        # The lone row's keys span every split (a random length inside one
        # split's chunk would be summed in the same order either way, and
        # the default's bits would not move: a flaky check).
        inputs16["len"][ROW] = form.key_len
    text1, _ = build(dataclasses.replace(form, batch=1), np.random.default_rng(0))
    inputs1 = {name: np.ascontiguousarray(value[ROW:ROW + 1]) for name, value in inputs16.items()}
    return text1, text16, inputs1, inputs16


def _check(request1: dict, out1: np.ndarray, request16: dict, out16: np.ndarray, invariant: bool) -> None:
    alone, batched = out1[0], out16[ROW]
    assert np.isfinite(alone).all()
    if invariant:
        assert (request1["splits"], request1["chunk"]) == (request16["splits"], request16["chunk"])
        np.testing.assert_array_equal(batched, alone)
    else:
        # The defaults split one row and not the batch: the row is summed
        # in other chunks, and its bits move.
        assert request1["splits"] > 1 and request16["splits"] == 1, (request1, request16)
        assert not np.array_equal(batched, alone)
        np.testing.assert_allclose(batched, alone, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("invariant", [False, True], ids=["default", "batch_invariant"])
@pytest.mark.parametrize("device_name", list(CPU_DEVICES))
@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_cpu_attention_row_alone_or_batched(form, device_name, invariant, rng, tmp_path) -> None:
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    device = CPU_DEVICES[device_name].with_limits(batch_invariant=invariant)
    text1, text16, inputs1, inputs16 = _pair(form, rng)
    results = []
    for name, text, inputs in (("one", text1, inputs1), ("batch", text16, inputs16)):
        art = CpuArtifact(compile_cpu(text, tmp_path / name, device=device))
        results.append((art.manifest["attention"][0]["request"], art.run(inputs).outputs[0]))
    (request1, out1), (request16, out16) = results
    _check(request1, out1, request16, out16, invariant)


@pytest.mark.parametrize("invariant", [False, True], ids=["default", "batch_invariant"])
@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_lavapipe_attention_row_alone_or_batched(form, invariant, rng, vulkan, tmp_path) -> None:
    device = LAVAPIPE.with_limits(batch_invariant=invariant)
    text1, text16, inputs1, inputs16 = _pair(form, rng)
    record1, out1 = run_on(text1, inputs1, device, vulkan, tmp_path / "one")
    record16, out16 = run_on(text16, inputs16, device, vulkan, tmp_path / "batch")
    _check(record1["request"], out1, record16["request"], out16, invariant)


# A small decoder step: norms, projections, RoPE, the cache writes, the
# attention over a 2048-slot cache, the MLP and the LM head.
DECODER = dict(layers=1, d_model=128, q_heads=4, kv_heads=2, ffn=256, cap=2048, vocab=97)


def _decoder_inputs(rng: np.random.Generator):
    """(config for B = 1, for B = 16, the lone row's inputs and state, the
    batch's): random weights, caches, tokens and position; the lone row is
    the batch's row ROW."""
    from poot_mlir.examples.decoder import DecoderConfig, init_weights

    one, batch = DecoderConfig(**DECODER, batch=1), DecoderConfig(**DECODER, batch=B)
    weights = init_weights(batch, int(rng.integers(0, 2**31)))
    shape = (B, batch.kv_heads, batch.cap, batch.head_dim)
    state16 = {f"{kind}{layer}": rng.standard_normal(shape, dtype=np.float32)
               for layer in range(batch.layers) for kind in "kv"}
    pos = np.int32(rng.integers(batch.cap // 2, batch.cap))
    tokens = rng.integers(0, batch.vocab, size=(B, 1)).astype(np.int32)
    inputs16 = {"pos": pos, "token": tokens, **weights}
    inputs1 = {"pos": pos, "token": np.ascontiguousarray(tokens[ROW:ROW + 1]), **weights}
    state1 = {name: np.ascontiguousarray(value[ROW:ROW + 1]) for name, value in state16.items()}
    return one, batch, (inputs1, state1), (inputs16, state16)


def _check_step(results, invariant: bool) -> None:
    """results: (splits, logits, state) alone and batched."""
    (splits1, logits1, state1), (splits16, logits16, state16) = results
    assert np.isfinite(logits1).all()
    if invariant:
        assert splits1 == splits16
        np.testing.assert_array_equal(logits16[ROW], logits1[0])
        for name in state1:
            np.testing.assert_array_equal(state16[name][ROW], state1[name][0], err_msg=name)
    else:
        assert splits1 != splits16, (splits1, splits16)
        assert not np.array_equal(logits16[ROW], logits1[0])
        np.testing.assert_allclose(logits16[ROW], logits1[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("invariant", [False, True], ids=["default", "batch_invariant"])
def test_cpu_decoder_step_row_alone_or_batched(invariant, rng, tmp_path) -> None:
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.examples.decoder import build_decoder
    from poot_mlir.runtime.cpu import CpuArtifact

    device = CPU_DEVICES["cpu_tiled"].with_limits(batch_invariant=invariant)
    one, batch, alone, batched = _decoder_inputs(rng)
    results = []
    for name, config, (inputs, state) in (("one", one, alone), ("batch", batch, batched)):
        art = CpuArtifact(compile_cpu(build_decoder(config).finish(), tmp_path / name, device=device))
        splits = [a["request"]["splits"] for a in art.manifest["attention"]]
        sess = art.session(state)
        logits = sess.step(inputs).named["logits"]
        results.append((splits, logits, sess.state))
    _check_step(results, invariant)


@pytest.mark.parametrize("invariant", [False, True], ids=["default", "batch_invariant"])
def test_lavapipe_decoder_step_row_alone_or_batched(invariant, rng, tmp_path) -> None:
    """The whole step on lavapipe: attention kernels, and every matmul and
    norm split by poot-gpu-split-reductions (by default a batch's matmuls
    jam 8 rows a thread and cap their partials, so they split less than a
    lone row's: the row's sums move)."""
    require("vulkan")
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.examples.decoder import build_decoder
    from poot_mlir.runtime.program import ProgramArtifact

    device = LAVAPIPE.with_limits(batch_invariant=invariant)
    one, batch, alone, batched = _decoder_inputs(rng)
    results = []
    for name, config, (inputs, state) in (("one", one, alone), ("batch", batch, batched)):
        path = compile_gpu(build_decoder(config).finish(), device, tmp_path / name)
        manifest = json.loads((path / "manifest.json").read_text())
        splits = [a["request"]["splits"] for a in manifest["attention"]]
        art = ProgramArtifact(path, "lavapipe")
        try:
            sess = art.session(state)
            logits = sess.step(inputs).named["logits"]
            results.append((splits, logits, {k: np.array(v) for k, v in sess.state.items()}))
        finally:
            art.close()
    _check_step(results, invariant)


@pytest.mark.parametrize("invariant", [False, True], ids=["default", "batch_invariant"])
def test_lavapipe_matmul_row_alone_or_batched(invariant, rng, tmp_path) -> None:
    """poot-gpu-split-reductions alone (no attention): a decode matmul
    [rows, 2048] x [2048, 256]. One row splits its reduction
    min(131072 / 64 threads, 2048 / 32) = 64 ways; by default a batch of 16
    jams 8 rows a thread and caps its partials at a quarter of the weight
    (32 ways), so the row is summed in other chunks; batch-invariant splits
    the batch 64 ways too (16 x 64 x 256 partials) and the row's bits
    match."""
    require("vulkan")
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.frontend import Tracer, ops
    from poot_mlir.runtime.program import ProgramArtifact

    k, n = 2048, 256
    device = devices.VULKAN_LAVAPIPE.with_limits(batch_invariant=invariant)
    x = rng.standard_normal((B, k), dtype=np.float32)
    w = rng.standard_normal((k, n), dtype=np.float32)
    outs, temps = [], []
    for rows, xs in ((1, x[ROW:ROW + 1]), (B, x)):
        tr = Tracer("gemm")
        tr.output("out", ops.matmul(tr.input("x", (rows, k)), tr.input("w", (k, n))))
        art = ProgramArtifact(compile_gpu(tr.finish(), device, tmp_path / f"rows{rows}"), "lavapipe")
        try:
            temps.append({b["bytes"] for b in art.programs["gemm"]["buffers"] if b["kind"] == "temp"})
            outs.append(art.run({"x": np.ascontiguousarray(xs), "w": w}).named["out"])
        finally:
            art.close()
    assert 64 * 1 * n * 4 in temps[0], temps[0]
    if invariant:
        assert 64 * B * n * 4 in temps[1], temps[1]
        np.testing.assert_array_equal(outs[1][ROW], outs[0][0])
    else:
        assert 32 * B * n * 4 in temps[1], temps[1]
        assert not np.array_equal(outs[1][ROW], outs[0][0])
        np.testing.assert_allclose(outs[1][ROW], outs[0][0], rtol=1e-4, atol=1e-4)
