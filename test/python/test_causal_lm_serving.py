"""`CausalLM.engine`: the driver's Engine serving a Hugging Face causal LM
(random-init small configs, nothing downloaded) through its paged step
(`models/paged.py`): requests of different lengths sharing prefixes,
arriving at different steps, each equal to transformers' greedy `generate`
of it alone; the prefix cache hit, preemption by recompute, refusals that
change nothing; the attention fused as paged `poot.attention` reading the
pools through the read map. CPU, and lavapipe through Vulkan for Llama."""

from __future__ import annotations

import numpy as np
import pytest

from system_deps import require
from test_causal_lm import COMMON, build, hf_generate

from poot_mlir import errors

VOCAB = COMMON["vocab_size"]


def requests(seed: int = 3):
    """A 20-token shared prefix (one full block and a partial one) under
    tails of different lengths, one unrelated prompt, and a late request
    with the prefix that arrives once the first has published its blocks."""
    from poot_mlir.driver import Request

    rng = np.random.default_rng(seed)

    def toks(n):
        return [int(t) for t in rng.integers(2, VOCAB, n)]

    shared = toks(20)
    return [
        Request("a", shared + toks(3), 7, arrival=0),
        Request("b", toks(5), 9, arrival=0),
        Request("c", shared + toks(13), 5, arrival=1),
        Request("d", shared + toks(1), 6, arrival=8),
    ]


def expect(hf, model, request) -> list[int]:
    """transformers' greedy tokens for the request alone."""
    torch, _ = hf
    ids = torch.tensor([request.prompt])
    return hf_generate(hf, model, ids, new=request.max_new_tokens)[0, len(request.prompt) :].tolist()


def serve(engine, reqs):
    for request in reqs:
        engine.submit(request)
    return engine.run()


@pytest.fixture(scope="module")
def llama(hf):
    from poot_mlir.models import CausalLM

    model = build(hf, "llama")
    with CausalLM.from_hf(model, "cpu", max_seq_len=48) as lm:
        yield model, lm.engine(max_batch=3, chunk=8, num_blocks=12)


@pytest.mark.parametrize("name", ["llama", "mistral", "gemma2"])
def test_engine_matches_transformers_alone(hf, llama, name) -> None:
    """Mistral's window (6) and Gemma-2's alternating sliding/global layers
    with softcaps hide keys inside these prompts: the paged step's masks are
    the model's own."""
    from poot_mlir.models import CausalLM

    if name == "llama":
        model, engine = llama
        done = serve(engine, requests())
    else:
        model = build(hf, name)
        with CausalLM.from_hf(model, "cpu", max_seq_len=48) as lm:
            engine = lm.engine(max_batch=3, chunk=8, num_blocks=12)
            done = serve(engine, requests())
    reqs = requests()
    assert sorted(done) == [r.rid for r in reqs]
    for request in reqs:
        assert done[request.rid].tokens == expect(hf, model, request), request.rid
    # The late request reused the shared prefix's full block.
    assert done["d"].reused == 16
    assert engine.cache.prefix_hits >= 1 and engine.cache.tokens_skipped >= 16
    assert engine.cache.check() == [] and engine.cache.blocks_in_use == 0


@pytest.mark.parametrize("name", ["llama", "gemma2"])
def test_engine_steps_fuse_paged_attention(hf, name) -> None:
    """Each layer's attention is one poot.attention reading the pools through
    the read map (no gathered view left). A prefill step attends under its
    mask; an sdpa model's decode step (Llama) with each row's live length
    instead (no mask: the kernel stops at the length); an eager model's
    (Gemma-2: softcaps, alternating window) under its masks."""
    from poot_mlir.compiler import fuse_attention
    from poot_mlir.models.serving import EngineShape, step_modules

    model = build(hf, name)
    shape = EngineShape(max_batch=2, chunk=4, max_seq_len=32, num_blocks=4)
    hd = model.config.head_dim
    for tokens, (module, _) in step_modules(model, shape, VOCAB).items():
        report = fuse_attention(module, remarks=True)
        assert report.attention == COMMON["num_hidden_layers"] and report.remarks == []
        ops = [line for line in str(module).splitlines() if "poot.attention" in line]
        assert len(ops) == 2 and all(" read(%arg" in op for op in ops), ops
        assert all(f"tensor<{shape.pool_slots}x2x{hd}xf32>" in op for op in ops)
        live = name == "llama" and tokens == 1
        assert all((" len(" in op) == live and (" mask(" in op) != live for op in ops), ops


def test_preemption_recomputes_and_matches(hf) -> None:
    """Three requests that outgrow a 5-block pool together: the youngest is
    preempted (recomputed later from its prompt and generated tokens) and
    every one still equals transformers alone."""
    from poot_mlir.driver import Request
    from poot_mlir.models import CausalLM

    model = build(hf, "llama")
    rng = np.random.default_rng(5)
    reqs = [Request(f"p{i}", [int(t) for t in rng.integers(2, VOCAB, 14)], 12) for i in range(3)]
    with CausalLM.from_hf(model, "cpu", max_seq_len=32) as lm:
        engine = lm.engine(max_batch=3, chunk=8, num_blocks=5, preempt=True)
        done = serve(engine, reqs)
        assert engine.preemptions >= 1
    for request in reqs:
        assert done[request.rid].tokens == expect(hf, model, request), request.rid


def test_bad_requests_refused_and_nothing_changes(hf, llama) -> None:
    from poot_mlir.driver import Request

    model, engine = llama
    before = (engine.cache.allocator.snapshot(), engine.step_index, dict(engine.completions))
    with pytest.raises(errors.RangeBindError):
        engine.submit(Request("x", [1, 2, VOCAB], 3))  # a token outside the vocabulary
    with pytest.raises(errors.SequenceFull):
        engine.submit(Request("y", [1] * 40, 10))  # 49 tokens > max_seq_len 48
    with pytest.raises(errors.ShapeBindError):
        engine.submit(Request("z", [1, 2.5], 3))
    assert engine.idle
    assert (engine.cache.allocator.snapshot(), engine.step_index, dict(engine.completions)) == before
    # Refused ids were never taken: they submit and serve afterwards.
    good = Request("x", [3, 4, 5, 6], 4)
    assert serve(engine, [good])["x"].tokens == expect(hf, model, good)


def test_llama_engine_on_lavapipe(hf) -> None:
    """The whole paged step as Vulkan kernels, pools resident on the device."""
    require("vulkan")
    from poot_mlir.models import CausalLM

    model = build(hf, "llama")
    reqs = requests()
    with CausalLM.from_hf(model, "vulkan", max_seq_len=48) as lm:
        engine = lm.engine(max_batch=3, chunk=8, num_blocks=12)
        done = serve(engine, reqs)
        assert engine.cache.prefix_hits >= 1
    for request in reqs:
        assert done[request.rid].tokens == expect(hf, model, request), request.rid


def test_prefix_cache_hits_and_resets(hf, llama) -> None:
    """A repeated prompt reuses its full blocks; after `reset_prefix_cache`
    it is computed again, with the same tokens."""
    from poot_mlir.driver import Request

    model, engine = llama
    prompt = [int(t) for t in np.random.default_rng(9).integers(2, VOCAB, 37)]
    first = serve(engine, [Request("h0", prompt, 5)])["h0"]
    again = serve(engine, [Request("h1", prompt, 5)])["h1"]
    assert (first.reused, again.reused) == (0, 32)
    assert engine.reset_prefix_cache() >= 2 and engine.cache.allocator.cached_blocks == 0
    cold = serve(engine, [Request("h2", prompt, 5)])["h2"]
    assert cold.reused == 0
    assert first.tokens == again.tokens == cold.tokens == expect(hf, model, Request("-", prompt, 5))


def test_serve_example_serves_a_hugging_face_model(hf) -> None:
    """`python -m poot_mlir.examples.serve --hf mistral --check`: the example's
    mixed traffic (shared prefixes, arrivals over 26 steps) from a
    random-init Mistral, each request equal to transformers alone."""
    from poot_mlir.examples import serve as example

    assert example.main(["--hf", "mistral", "--check", "--quiet", "--layers", "1"]) == 0


@pytest.mark.parametrize("target", ["cpu", "vulkan"])
def test_greedy_steps_read_tokens_not_logits(hf, target) -> None:
    """keep_logits=False: a step whose rows that get a token are all greedy
    takes them from the step's own argmax (`next_token`). On the device the
    host then reads back max_batch x 4 bytes of tokens, not the logits, and
    nothing at all from a step of inner prefill chunks; the steps where a
    sampled request draws read the logits. The greedy requests still equal
    transformers; the sampled one draws what it draws served alone (its own
    seed), which is not the greedy continuation."""
    if target != "cpu":
        require(target)
    from poot_mlir.driver import Request
    from poot_mlir.driver.sampling import Sampling
    from poot_mlir.models import CausalLM

    model = build(hf, "llama")
    greedy = requests()
    sampling = Sampling(do_sample=True, temperature=1.0)
    prompt = greedy[1].prompt
    sampled = Request("s", prompt, 8, arrival=2, sampling=sampling, seed=11)
    # Alone, a 20-token prompt's first two chunks (8 + 8) get no token.
    lone = Request("lone", [int(t) for t in np.random.default_rng(4).integers(2, VOCAB, 20)], 3)
    rows = 3
    with CausalLM.from_hf(model, target, max_seq_len=48) as lm:
        engine = lm.engine(max_batch=rows, chunk=8, num_blocks=12, keep_logits=False)
        traffic = getattr(engine.runner, "traffic", None)
        lengths = {r.rid: len(r.prompt) for r in greedy + [sampled, lone]}
        kinds = []

        def counted(reqs):
            """Serve `reqs`, checking each step's bytes read back."""
            last = traffic.read if traffic else 0

            def on_step(report):
                nonlocal last
                choosers = [r.rid for r in report.rows
                            if r.kind == "decode" or r.pos + r.count == lengths[r.rid]]  # fmt: skip
                if "s" in choosers:  # the logits (f32) and the tokens
                    want, kind = rows * VOCAB * 4 + rows * 4, "logits"
                else:
                    want, kind = (rows * 4, "tokens") if choosers else (0, "nothing")
                kinds.append(kind)
                if traffic is not None:
                    assert traffic.read - last == want, (kind, choosers, traffic.read - last)
                    last = traffic.read

            for request in reqs:
                engine.submit(request)
            return engine.run(on_step)

        done = dict(counted(greedy + [sampled]))
        done.update(counted([lone]))
        assert set(kinds) == {"logits", "tokens", "nothing"}, kinds
        engine.reset_prefix_cache()
        alone = serve(engine, [Request("s2", prompt, 8, sampling=sampling, seed=11)])["s2"]
    for request in greedy + [lone]:
        assert done[request.rid].tokens == expect(hf, model, request), request.rid
    assert done["s"].tokens == alone.tokens
    assert done["s"].tokens != expect(hf, model, Request("-", prompt, 8))
    assert all(completion.logits == [] for completion in done.values())


def test_engine_refuses_a_next_token_the_step_lacks(llama) -> None:
    """next_token must name the step's [rows] i32 result: its tokens replace
    the host's argmax, so a missing or mistyped one is refused up front."""
    from poot_mlir.driver import Engine, PagedKVCache

    _, engine = llama
    assert engine.next_token == "next_token"
    for name, match in (("nope", "no result of that name"), ("logits", "one per row")):
        with pytest.raises(errors.KVCacheError, match=match):
            Engine(engine.runner, PagedKVCache(12, max_tokens=engine.shape.max_tokens), engine.shape,
                   pools=engine.pools, base=engine.base, next_token=name)  # fmt: skip


def test_eos_ends_a_request_like_transformers(hf, llama) -> None:
    """A request with `eos_token_id` ends right after generating one (the
    eos kept, `finish_reason` "eos") with transformers' tokens for it
    alone; its blocks go back at once, and a request without it, or whose
    eos never comes, runs to `max_new_tokens` ("length")."""
    from poot_mlir.driver import Request

    model, engine = llama
    base = requests(seed=11)
    # The eos: the third token the first request generates greedily (its
    # first occurrence ends the request there or earlier).
    free_run = expect(hf, model, Request("-", base[0].prompt, 8))
    eos = free_run[2]
    stop = free_run.index(eos) + 1
    reqs = [
        Request("e", base[0].prompt, 8, eos_token_id=eos),
        Request("f", base[1].prompt, 6, eos_token_id=[VOCAB - 1, eos]),
        Request("g", base[2].prompt, 5),
    ]
    done = serve(engine, reqs)
    torch, _ = hf
    for request in reqs:
        ids = torch.tensor([request.prompt])
        want = hf_generate(hf, model, ids, new=request.max_new_tokens,
                           eos_token_id=request.eos_token_id)[0, len(request.prompt):].tolist()  # fmt: skip
        if request.eos_token_id is not None:  # transformers pads the rest of the row
            eos_ids = np.atleast_1d(request.eos_token_id)
            cut = next((i + 1 for i, t in enumerate(want) if t in eos_ids), len(want))
            want = want[:cut]
        assert done[request.rid].tokens == want, request.rid
    assert done["e"].tokens == free_run[:stop] and done["e"].finish_reason == "eos"
    assert done["g"].finish_reason == "length" and len(done["g"].tokens) == 5
    assert engine.cache.check() == [] and engine.cache.blocks_in_use == 0


def test_bad_eos_is_refused(llama) -> None:
    from poot_mlir.driver import Request

    _, engine = llama
    for eos in ("2", [1.5], object()):
        with pytest.raises(errors.ShapeBindError, match="eos_token_id"):
            engine.submit(Request("bad", [3, 4], 2, eos_token_id=eos))
    assert engine.idle
