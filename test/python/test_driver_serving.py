"""The serving loop on the CPU target: every refusal path of a step is
typed, happens before dispatch and leaves every pool and block table as it
was; copy-on-write copies reach every pool; the serve example (mixed
prefill/decode rows, shared prefixes, adapters, a hot reload) matches
running each request alone through the float64 oracle."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from poot_mlir.compiler import compile_cpu, fuse_attention
from poot_mlir.driver import (
    AdapterTable,
    Copy,
    Engine,
    PagedKVCache,
    Request,
    StepShape,
    weights_fingerprint,
)
from poot_mlir.errors import RangeBindError, WriteMapError
from poot_mlir.examples import serve
from poot_mlir.examples.decoder import DecoderConfig, init_weights
from poot_mlir.examples.paged_decoder import (
    ServeShape,
    build_paged_decoder,
    effective_weights,
    init_adapter,
    init_pools,
    lora_shapes,
)
from poot_mlir.runtime import binding
from poot_mlir.runtime.cpu import CpuArtifact

CONFIG = DecoderConfig(layers=1, d_model=32, q_heads=4, kv_heads=2, ffn=64, vocab=61, cap=23)
SHAPE = ServeShape(rows=3, tokens=2, cap=24, pool_blocks=5, adapter_slots=2, lora_rank=2)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> CpuArtifact:
    module = build_paged_decoder(CONFIG, SHAPE).finish()
    assert fuse_attention(module).attention == 1
    return CpuArtifact(compile_cpu(module, tmp_path_factory.mktemp("serve") / "step"))


def make_engine(artifact: CpuArtifact, rng: np.random.Generator) -> Engine:
    weights = init_weights(CONFIG, int(rng.integers(1 << 30)))
    adapters = AdapterTable(
        weights_fingerprint(weights), SHAPE.adapter_slots, lora_shapes(CONFIG, 2)
    )
    adapters.load("A", init_adapter(CONFIG, 2, int(rng.integers(1 << 30))))
    step = StepShape(SHAPE.rows, SHAPE.tokens, SHAPE.cap)
    session = artifact.session(init_pools(CONFIG, SHAPE))
    engine = Engine(
        session,
        PagedKVCache(SHAPE.pool_blocks, max_tokens=step.max_tokens),
        step,
        weights=weights,
        pools=init_pools(CONFIG, SHAPE).keys(),
        adapters=adapters,
        bind=lambda inputs: binding.bind(artifact.signature, inputs),
    )
    for i, (n, new, adapter, arrival) in enumerate(
        [(19, 3, None, 0), (5, 4, "A", 0), (7, 2, None, 3)]
    ):
        prompt = [int(t) for t in rng.integers(0, CONFIG.vocab, n)]
        engine.submit(Request(f"q{i}", prompt, new, adapter, arrival))
    return engine


def tamper_read(inputs, s):
    inputs["read"][1, 0] = s.pool_slots  # one word past the pool


def tamper_write_twice(inputs, s):
    written = np.flatnonzero(inputs["write"] >= 0)
    inputs["write"][written[1]] = inputs["write"][written[0]]


def tamper_write_out(inputs, s):
    inputs["write"][np.flatnonzero(inputs["write"] >= 0)[-1]] = s.pool_slots


def tamper_pos(inputs, s):
    inputs["pos"][1] = s.cap - s.tokens + 1


def tamper_count(inputs, s):
    inputs["count"][0] = 0  # a live length of pos + 0: past the declared [1, T]


def tamper_count_high(inputs, s):
    inputs["count"][2] = s.tokens + 1


REFUSALS = [
    (tamper_read, RangeBindError, "'read'"),
    (tamper_write_twice, WriteMapError, "named more than once"),
    (tamper_write_out, WriteMapError, "neither -1 nor a pool slot"),
    (tamper_pos, RangeBindError, "'pos'"),
    (tamper_count, RangeBindError, "'count'"),
    (tamper_count_high, RangeBindError, "'count'"),
]


@pytest.mark.parametrize("with_copy", [False, True])
@pytest.mark.parametrize("tamper, error, message", REFUSALS, ids=[t[0].__name__ for t in REFUSALS])
def test_a_refused_step_changes_nothing(artifact, rng, tamper, error, message, with_copy) -> None:
    engine = make_engine(artifact, rng)
    for _ in range(3):  # rows at different positions, some blocks published
        assert engine.step() is not None
    pools = {k: v.copy() for k, v in engine.runner.state.items()}
    tables = copy.deepcopy(engine.cache.snapshot())
    waiting = list(engine._waiting)
    plan = engine.plan()
    assert plan is not None and len(plan.rows) == 3
    assert [live.request.rid for live in plan.admitted] == ["q2"]  # undone with the rest
    intact = {k: v.copy() for k, v in plan.inputs.items()}
    if with_copy:  # a copy-on-write into a free block must not happen either
        free = next(b for b in range(SHAPE.pool_blocks) if engine.cache.allocator.ref(b) == 0)
        plan.copies.append(Copy(0, free * 16, 16))
    tamper(plan.inputs, SHAPE)
    with pytest.raises(error, match=message):
        engine.dispatch(plan)
    for name, pool in engine.runner.state.items():
        np.testing.assert_array_equal(pool, pools[name], err_msg=name)
    after = engine.cache.snapshot()
    assert (after.allocator, after.tables) == (tables.allocator, tables.tables)
    assert list(engine._waiting) == waiting and engine.cache.check() == []
    # The same step, planned again untampered, runs.
    again = engine.plan()
    for name, value in intact.items():
        np.testing.assert_array_equal(again.inputs[name], value, err_msg=name)
    engine.dispatch(again)
    completions = engine.run()
    assert sorted(completions) == ["q0", "q1", "q2"] and engine.cache.check() == []


def test_copy_on_write_copies_reach_every_pool(artifact, rng) -> None:
    engine = make_engine(artifact, rng)
    engine.step()
    plan = engine.plan()
    free = next(b for b in range(SHAPE.pool_blocks) if engine.cache.allocator.ref(b) == 0)
    src = engine.cache.table("q0").blocks[0] * 16
    plan.copies.append(Copy(src, free * 16, 16))
    before = {k: v[src : src + 16].copy() for k, v in engine.runner.state.items()}
    engine.dispatch(plan)
    for name, pool in engine.runner.state.items():
        np.testing.assert_array_equal(pool[free * 16 : free * 16 + 16], before[name], err_msg=name)


def test_served_requests_match_the_oracle_alone(artifact, rng) -> None:
    engine = make_engine(artifact, rng)
    reports = []
    completions = engine.run(reports.append)
    kinds = {row.kind for r in reports for row in r.rows}
    assert kinds == {"prefill", "decode"}
    assert any(
        {row.kind for row in r.rows} == {"prefill", "decode"} for r in reports
    )  # mixed steps
    assert engine.cache.blocks_in_use == 0 and engine.cache.check() == []
    adapters = engine.adapters
    for c in completions.values():
        arrays = None
        if c.adapter is not None:
            slot, _ = adapters.resolve(c.adapter)
            arrays = {k: t[slot] for k, t in adapters.tables().items()}
        merged = effective_weights(engine.weights, arrays)
        ok, err, message = serve.check_completion(CONFIG, merged, c, 1e-4)
        assert ok, f"{c.rid}: {message}"


def test_the_serve_example_checks_against_the_oracle(capsys) -> None:
    assert serve.main(["--check", "--quiet", "--layers", "1", "--rows", "3", "--blocks", "10"]) == 0
    out = capsys.readouterr().out
    assert "fused 1 paged attention ops" in out
    assert "prefix hits 2, prefill tokens skipped 64" in out
    assert "every request matched running it alone through the float64 oracle" in out


def test_the_serve_example_on_vulkan_checks_against_the_oracle(capsys) -> None:
    """The same loop with the whole paged step (the paged attention with its
    live length and per-row mask, and every primitive around it) as SPIR-V
    kernels on the Vulkan device (lavapipe in CI), the pools resident there."""
    assert serve.main(["--check", "--quiet", "--layers", "1", "--target", "vulkan"]) == 0
    out = capsys.readouterr().out
    assert "(the whole step as SPIR-V)" in out
    assert "every request matched running it alone through the float64 oracle" in out
