"""The serving loop on the CPU target: every refusal path of a step is
typed, happens before dispatch and leaves every pool and block table as it
was; copy-on-write copies reach every pool; the serve example (mixed
prefill/decode rows, shared prefixes, adapters, a hot reload) matches
running each request alone through the float64 oracle."""

from __future__ import annotations

import copy
import dataclasses

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
from poot_mlir.errors import (
    KVCacheError,
    RangeBindError,
    SequenceFull,
    ShapeBindError,
    WriteMapError,
)
from poot_mlir.examples import serve
from poot_mlir.models.serving import compile_runner
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


def make_engine(artifact: CpuArtifact, rng: np.random.Generator, **options) -> Engine:
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
        **options,
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


# --- requests checked at submit, and cancelled (issue 28) -----------------------

V = CONFIG.vocab
BAD_REQUESTS = [
    # (request, error, message): each would be refused by every step it
    # were planned into, so it must be refused before it is queued.
    (Request("bad", [1, V, 2], 2), RangeBindError, r"'bad': prompt token 1 is 61, outside .*\[0, 60\]"),
    (Request("bad", [-1, 2], 2), RangeBindError, "prompt token 0 is -1"),
    (Request("bad", [1, 1 << 40], 2), RangeBindError, "prompt token 1"),
    (Request("bad", [1, 2.0], 2), ShapeBindError, "prompt token 1 is 2.0 .*not an integer"),
    (Request("bad", [True, 2], 2), ShapeBindError, "prompt token 0 is True"),
    (Request("bad", 7, 2), ShapeBindError, "must be a sequence of token ids"),
    (Request("bad", [1, 2], 2.5), KVCacheError, "max_new_tokens"),
    (Request("bad", [1, 2], 0), KVCacheError, "max_new_tokens"),
    (Request("bad", [], 2), KVCacheError, "needs a prompt"),
    (Request("bad", [1] * 20, 5), SequenceFull, "24 tokens"),
    (Request("bad", [1, 2], 2, "Z"), KVCacheError, "no adapter named 'Z'"),
]


@pytest.mark.parametrize(
    "request_, error, message", BAD_REQUESTS, ids=[f"{i}-{b[1].__name__}" for i, b in enumerate(BAD_REQUESTS)]
)
def test_submit_refuses_what_the_model_cannot_take(artifact, rng, request_, error, message) -> None:
    """Before issue 28 a token id outside the vocabulary was queued, and every
    later step was refused for it: the other requests never finished."""
    engine = make_engine(artifact, rng)
    with pytest.raises(error, match=message):
        engine.submit(request_)
    assert "bad" not in [r.rid for r in engine._waiting]
    assert sorted(engine.run()) == ["q0", "q1", "q2"] and engine.cache.check() == []


def test_the_vocabulary_comes_from_the_step_or_is_narrowed(artifact, rng) -> None:
    engine = make_engine(artifact, rng)
    assert engine.token_range == (0, V - 1)  # the step's declared #poot.range of tokens
    with pytest.raises(KVCacheError, match="could be refused"):
        make_engine(artifact, rng, vocab=10)  # the logits have 61 columns: a stall waiting
    engine.submit(Request("top", [V - 1], 1))
    assert "top" in engine.run()
    # The prompt is the engine's own copy: editing the caller's list later
    # cannot slip a bad token past the check.
    prompt = [1, 2, 3]
    engine.submit(Request("edited", prompt, 2))
    prompt[0] = V
    assert engine.run()["edited"].prompt == [1, 2, 3]


def test_cancel_frees_the_blocks_of_a_running_and_a_queued_request(artifact, rng) -> None:
    engine = make_engine(artifact, rng)
    allocator = engine.cache.allocator
    for _ in range(3):
        engine.step()
    running = {live.request.rid for live in engine._running}
    assert running == {"q0", "q1"} and [r.rid for r in engine._waiting] == ["q2"]
    held = len(engine.cache.table("q0").blocks)
    available = allocator.available
    engine.cancel("q0")  # running: its blocks go back
    assert "q0" not in engine.cache and allocator.available == available + held
    engine.cancel("q2")  # queued: holds nothing yet
    assert engine._waiting == type(engine._waiting)()
    completions = engine.run()
    assert sorted(completions) == ["q1"]
    # No leaked block, no held adapter slot: every block free or cached.
    assert allocator.blocks_in_use == 0
    assert allocator.free_blocks + allocator.cached_blocks == allocator.num_blocks
    assert engine.cache.check() == [] and engine.adapters._users == [0] * SHAPE.adapter_slots
    # A cancelled id may come back.
    engine.submit(Request("q0", [3, 4, 5], 2))
    assert sorted(engine.run()) == ["q0", "q1"]


def test_cancel_unsticks_a_request_every_step_refuses(artifact, rng) -> None:
    """A request whose steps are refused for a reason `submit` did not check
    (here its queued prompt is edited behind the engine's back) stalls every
    other request; cancelling it lets them finish."""
    engine = make_engine(artifact, rng)
    engine.submit(Request("poisoned", [1, 2, 3], 2))
    next(r for r in engine._waiting if r.rid == "poisoned").prompt[1] = V
    for _ in range(2):
        with pytest.raises(RangeBindError, match="'tokens'"):
            engine.step()
    engine.cancel("poisoned")
    assert sorted(engine.run()) == ["q0", "q1", "q2"]
    assert engine.cache.blocks_in_use == 0 and engine.cache.check() == []


def test_cancel_misuse_is_typed(artifact, rng) -> None:
    engine = make_engine(artifact, rng)
    with pytest.raises(KVCacheError, match="no request 'nobody'"):
        engine.cancel("nobody")
    plan = engine.plan()
    with pytest.raises(KVCacheError, match="dispatch or abort it first"):
        engine.cancel("q0")
    engine.abort(plan)
    engine.run()
    with pytest.raises(KVCacheError, match="already completed"):
        engine.cancel("q0")


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
    assert "(the whole step as kernels)" in out
    assert "every request matched running it alone through the float64 oracle" in out


# --- serving from the device (issue 25) ------------------------------------------


def _device_engine(backend: str, rng: np.random.Generator, tmp_path):
    """The test model's two buckets ([rows, 2] and [rows, 1]) as a
    DeviceRunner, and an engine with the usual three requests."""
    modules = {
        n: build_paged_decoder(CONFIG, dataclasses.replace(SHAPE, tokens=n)).finish()
        for n in (1, SHAPE.tokens)
    }
    weights = init_weights(CONFIG, int(rng.integers(1 << 30)))
    adapters = AdapterTable(weights_fingerprint(weights), SHAPE.adapter_slots, lora_shapes(CONFIG, 2))
    arrays = init_adapter(CONFIG, 2, int(rng.integers(1 << 30)))
    versions = {adapters.load("A", arrays).adapter: arrays}
    runner, _ = compile_runner(backend, modules, tmp_path, init_pools(CONFIG, SHAPE), weights)
    step = StepShape(SHAPE.rows, SHAPE.tokens, SHAPE.cap)
    engine = Engine(
        runner, PagedKVCache(SHAPE.pool_blocks, max_tokens=step.max_tokens), step,
        pools=init_pools(CONFIG, SHAPE).keys(), adapters=adapters,
    )  # fmt: skip
    for i, (n, new, adapter) in enumerate([(19, 3, None), (5, 4, "A"), (7, 2, None)]):
        prompt = [int(t) for t in rng.integers(0, CONFIG.vocab, n)]
        engine.submit(Request(f"q{i}", prompt, new, adapter, 0))
    return engine, weights, adapters, versions


@pytest.mark.parametrize("backend", ["vulkan", "wgpu"])
def test_serving_from_the_device_moves_only_each_steps_inputs_and_outputs(backend, rng, tmp_path) -> None:
    """The weights and pools are uploaded once, when the runner is made; then
    each step writes exactly its own inputs (ids, positions, maps, adapter
    tables) and reads exactly its logits: no weight upload, no pool read
    back, copy-on-write on the device. Decode-only steps run the 1-token
    bucket. Every request still matches running it alone (float64 oracle)."""
    from system_deps import require

    require(backend)
    engine, weights, adapters, versions = _device_engine(backend, rng, tmp_path)
    traffic = engine.runner.traffic
    widths = []
    while not engine.idle:
        plan = engine.plan()
        if plan is None:
            engine.step_index += 1
            continue
        inputs = {**adapters.tables(), **plan.inputs}
        written, read = traffic.written, traffic.read
        engine.dispatch(plan)
        width = plan.inputs["tokens"].shape[1]
        widths.append(width)
        assert traffic.written - written == sum(np.asarray(a).nbytes for a in inputs.values())
        assert traffic.read - read == SHAPE.rows * width * CONFIG.vocab * 4  # the logits
    assert 1 in widths and SHAPE.tokens in widths  # both buckets ran
    for rid, c in engine.completions.items():
        merged = effective_weights(weights, versions[c.identity.adapter] if c.identity.adapter else None)
        ok, err, message = serve.check_completion(CONFIG, merged, c, 1e-4)
        assert ok, f"{rid}: {message}"
    # Copy-on-write happens where the pools are: rows copied on the device.
    pools = engine.runner.state
    engine.runner.copy_rows(list(pools), [Copy(0, 16, 16)])
    for name, pool in engine.runner.state.items():
        np.testing.assert_array_equal(pool[16:32], pools[name][0:16], err_msg=name)


def test_sampled_requests_are_seeded_per_request(artifact, rng) -> None:
    """A request's sampled tokens depend on its seed only: the same request
    alone or beside others, greedy or not, draws the same tokens."""
    from poot_mlir.driver.sampling import Sampling

    sampling = Sampling(True, temperature=0.7, top_k=10)

    def run(requests):
        engine = make_engine(artifact, np.random.default_rng(5))
        engine._waiting.clear()
        engine._rids.clear()
        for request in requests:
            engine.submit(request)
        while not engine.idle:
            engine.step()
        return engine.completions

    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    alone = run([Request("s", prompt, 6, sampling=sampling, seed=11)])
    batched = run([Request("g", prompt[:5], 4), Request("s", prompt, 6, sampling=sampling, seed=11),
                   Request("t", prompt[2:], 3, sampling=sampling, seed=12)])  # fmt: skip
    assert alone["s"].tokens == batched["s"].tokens
    other = run([Request("s", prompt, 6, sampling=sampling, seed=13)])
    greedy = run([Request("s", prompt, 6)])
    assert greedy["s"].tokens == [int(np.argmax(row)) for row in greedy["s"].logits]
    assert len({tuple(alone["s"].tokens), tuple(other["s"].tokens), tuple(greedy["s"].tokens)}) > 1


def test_preemption_by_recompute_when_the_pool_runs_out(artifact, rng) -> None:
    """`preempt=True` admits a request when its prompt fits (not its final
    length); when the running requests outgrow the pool, the youngest gives
    its blocks back and is recomputed later (its prompt plus what it had
    generated, its full blocks reused from the prefix cache). Every request
    still matches running it alone (float64 oracle), and more run at once
    than under reservation."""
    weights = init_weights(CONFIG, int(rng.integers(1 << 30)))
    step = StepShape(SHAPE.rows, SHAPE.tokens, SHAPE.cap)
    prompts = [[int(t) for t in rng.integers(0, CONFIG.vocab, 10)] for _ in range(3)]

    def serve_all(preempt: bool):
        engine = Engine(
            artifact.session(init_pools(CONFIG, SHAPE)),
            PagedKVCache(4, max_tokens=step.max_tokens),  # 4 blocks: 64 slots for 3 x 21 tokens
            step, weights=weights, pools=init_pools(CONFIG, SHAPE).keys(),
            adapters=AdapterTable(weights_fingerprint(weights), SHAPE.adapter_slots, lora_shapes(CONFIG, 2)),
            bind=lambda inputs: binding.bind(artifact.signature, inputs), preempt=preempt,
        )  # fmt: skip
        for i, prompt in enumerate(prompts):
            engine.submit(Request(f"p{i}", prompt, 12))
        most = 0
        while not engine.idle:
            report = engine.step()
            if report is not None:
                most = max(most, len(report.rows))
            assert not engine.cache.check()
        return engine, most

    reserved, most_reserved = serve_all(False)
    engine, most = serve_all(True)
    assert reserved.preemptions == 0 and engine.preemptions >= 1
    assert most == 3 > most_reserved
    for rid, c in engine.completions.items():
        assert c.prompt == prompts[int(rid[1:])] and len(c.tokens) == 12
        assert c.tokens == reserved.completions[rid].tokens
        ok, err, message = serve.check_completion(CONFIG, weights, c, 1e-4)
        assert ok, f"{rid}: {message}"
