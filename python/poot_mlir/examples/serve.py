"""Serve several requests at once from one paged KV cache (continuous batching).

    python -m poot_mlir.examples.serve [--check] [--rows 4] [--tokens 4] [--blocks 16]
    python -m poot_mlir.examples.serve --hf llama [--target cpu|vulkan|wgpu|cuda] [--check]
    python -m poot_mlir.examples.serve --hf llama --tensor-parallel 2 [--target ...] [--check]

1. traces the example decoder as a serving step (examples/paged_decoder.py:
   per-row positions and lengths, paged K/V pools, per-row LoRA slots),
   fuses every layer's attention into one paged `poot.attention` with a live
   length, and compiles the step for the CPU (`--target vulkan`: the whole
   step as SPIR-V kernels, the pools resident on the Vulkan device);
2. submits requests of different prompt lengths -- some sharing a 40-token
   prefix, some under LoRA adapters, one after its adapter was hot-reloaded
   -- arriving at different steps;
3. runs `poot_mlir.driver.Engine`: each step packs the running requests'
   prefill chunks and decode tokens into one fixed [rows, tokens] step,
   allocates 16-token blocks on demand, reuses published prefix blocks
   (same tokens *and* same weights identity), evicts cached blocks under
   pressure, and prints the batch, the blocks in use and the prefix hits;
4. with `--check`, runs every request alone through the float64 oracle (the
   dense fixed-capacity decoder of examples/decoder.py, with the request's
   adapter merged into the weights, one token at a time) and compares its
   tokens and every logits row; exits 1 on a mismatch.

`--hf llama` (or mistral, qwen2) serves the same requests (without their
adapters) from a random-init Hugging Face model instead, through
`CausalLM.engine` (the model's own forward over paged pools,
models/paged.py); `--check` then compares every request's tokens with
transformers' greedy `generate` of it alone. `--tensor-parallel N` (with
`--hf`) serves them from N ranks (`runtime.distributed.spawn`; on CUDA,
rank r on GPU r): each rank builds the same seeded model as its
`CausalLM(..., communicator=)`, whose paged step is split by heads and its
pools by KV heads, and runs the same engine; rank 0 prints the steps, and
every rank must produce the same tokens.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import oracle
from ..compiler import fuse_attention
from ..driver import (
    AdapterTable,
    Completion,
    Engine,
    PagedKVCache,
    Request,
    StepReport,
    StepShape,
    weights_fingerprint,
)
from ..models.serving import compile_runner
from .decoder import DecoderConfig, build_decoder, init_state, init_weights
from .paged_decoder import (
    ServeShape,
    build_paged_decoder,
    effective_weights,
    init_adapter,
    init_pools,
    lora_shapes,
)


@dataclass
class Scenario:
    """The requests, and the step at which adapter "A" is hot-reloaded."""

    requests: list[Request]
    reload_step: int


def scenario(vocab: int, seed: int, max_tokens: int) -> Scenario:
    """Mixed traffic: a shared 40-token system prefix, different tails and
    lengths, base and adapter requests, arrivals spread over the run."""
    rng = np.random.default_rng(seed)

    def toks(n: int) -> list[int]:
        return [int(t) for t in rng.integers(1, vocab, size=n)]

    shared = toks(40)
    tail_a, tail_b = toks(5), toks(9)
    reqs = [
        Request("r0", shared + tail_a, 6, None, arrival=0),
        Request("r1", toks(23), 8, None, arrival=0),
        Request("r2", shared + tail_b, 5, "A", arrival=1),
        Request("r3", toks(3), 10, None, arrival=2),
        # Same prefix as r0 under the same (base) weights: reuses its blocks.
        Request("r4", shared + toks(7), 6, None, arrival=14),
        # r0's exact tokens under adapter B: a different identity, no hit.
        Request("r5", shared + tail_a, 4, "B", arrival=15),
        # r2's prefix under A: a hit while A is unchanged ...
        Request("r6", shared + toks(2), 4, "A", arrival=16),
        # ... and none after A's hot reload (a fresh identity).
        Request("r7", shared + tail_b, 4, "A", arrival=26),
    ]
    for r in reqs:
        assert len(r.prompt) + r.max_new_tokens - 1 <= max_tokens, r.rid
    return Scenario(reqs, reload_step=24)


# --- the single-request reference ----------------------------------------------


def reference_logits(
    config: DecoderConfig, weights: dict[str, np.ndarray], completion: Completion
) -> list[np.ndarray]:
    """The request alone through the float64 oracle: the dense decoder, one
    token per step (prompt, then each generated token but the last)."""
    module = build_decoder(config).finish()
    session = oracle.Session(module, init_state(config), reference=True)
    feed = completion.prompt + completion.tokens[:-1]
    out = []
    for step, token in enumerate(feed):
        inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32), **weights}
        logits = session.step(inputs).named["logits"][0, 0]
        if step >= len(completion.prompt) - 1:
            out.append(np.asarray(logits, np.float64))
    return out


def check_completion(
    config: DecoderConfig, weights: dict[str, np.ndarray], completion: Completion, rtol: float
) -> tuple[bool, float, str]:
    """(ok, worst relative error, message) of one request against its reference."""
    want = reference_logits(config, weights, completion)
    worst = 0.0
    for i, (got, ref) in enumerate(zip(completion.logits, want)):
        scale = max(float(np.max(np.abs(ref))), 1e-30)
        err = float(np.max(np.abs(got - ref))) / scale
        worst = max(worst, err)
        if err > rtol:
            return False, worst, f"logits of token {i} differ (relative error {err:.2e})"
        best = int(np.argmax(ref))
        if completion.tokens[i] != best:
            top2 = np.sort(ref)[-2:]
            if (top2[1] - top2[0]) / scale > rtol:  # not a tie within tolerance
                return False, worst, f"token {i} is {completion.tokens[i]}, the oracle's is {best}"
    if len(want) != len(completion.logits):
        return False, worst, f"{len(completion.logits)} logits rows for {len(want)} reference rows"
    return True, worst, "ok"


# --- the loop --------------------------------------------------------------------


def describe(report: StepReport, rows: int) -> str:
    cells = [
        f"{r.rid} {'prefill ' + str(r.count) if r.kind == 'prefill' else 'decode'}@{r.pos}"
        for r in report.rows
    ]
    cells += ["-"] * (rows - len(cells))
    line = f"step {report.step:3d} | {', '.join(cells)} | blocks {report.blocks_in_use:2d}"
    line += f" (+{report.cached_blocks} cached)"
    for rid, reused in report.admitted:
        line += f" | admit {rid}" + (f" (prefix hit: {reused} tokens)" if reused else "")
    if report.finished:
        line += f" | done {', '.join(str(r) for r in report.finished)}"
    return line


# --- a Hugging Face model ------------------------------------------------------------

#: Small random-init configs (nothing downloaded): (config class, model
#: class, config). Mistral's window (8) is shorter than the shared prefix,
#: so it hides keys.
HF_MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 8}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
}


def hf_model(family: str, layers: int, seed: int):
    """A seeded random-init model of `family` (d_model 64, 4 query / 2 KV heads)."""
    import torch
    import transformers

    config_class, model_class, extra = HF_MODELS[family]
    config = getattr(transformers, config_class)(
        vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, **extra,
    )  # fmt: skip
    torch.manual_seed(seed)
    return getattr(transformers, model_class)(config).eval()


def serve_hf(args: argparse.Namespace) -> int:
    """The scenario's requests (adapters dropped: a Hugging Face model has
    none here) served by `CausalLM.engine` on `args.target` (on
    `args.tensor_parallel` CPU ranks when set)."""
    if args.tensor_parallel:
        return serve_hf_ranks(args)
    status, done = serve_hf_once(args)
    if status or not args.check:
        return status
    return check_hf(args, done)


def serve_hf_ranks(args: argparse.Namespace) -> int:
    """`serve_hf_once` in `args.tensor_parallel` spawned ranks; every rank
    must have produced the same tokens."""
    from ..runtime.distributed import spawn

    # NCCL sums CUDA tensors; the ranks' agreement before each step is a
    # host tensor, which the same group sums with gloo.
    backend = "cpu:gloo,cuda:nccl" if args.target == "cuda" else "gloo"
    results = spawn(_serve_rank, args.tensor_parallel, args, backend=backend)
    status, done = results[0]
    for rank, (other_status, other) in enumerate(results[1:], start=1):
        if other_status or {k: c.tokens for k, c in other.items()} != {
            k: c.tokens for k, c in done.items()
        }:
            print(f"rank {rank} served different tokens from rank 0 (or failed)")
            return 1
    if status:
        return status
    print(f"every one of {args.tensor_parallel} ranks served the same tokens")
    return check_hf(args, done) if args.check else 0


def _serve_rank(rank: int, world: int, args: argparse.Namespace) -> tuple[int, dict]:
    from ..runtime.collectives import Communicator

    if rank != 0:  # one rank speaks for all
        args = argparse.Namespace(**{**vars(args), "quiet": True, "silent": True})
    return serve_hf_once(args, Communicator())


def serve_hf_once(args: argparse.Namespace, communicator: Any = None) -> tuple[int, dict]:
    """(status, completions) of the scenario served once by `CausalLM.engine`
    (as one rank of `communicator`'s, when given)."""
    from ..models import CausalLM

    say = (lambda *a: None) if getattr(args, "silent", False) else print
    model = hf_model(args.hf, args.layers, args.seed)
    step = StepShape(args.rows, args.tokens, args.cap)
    t0 = time.perf_counter()
    where = args.target if communicator is None else f"{communicator.size} {args.target} ranks"
    lm = CausalLM.from_hf(model, args.target, max_seq_len=step.max_tokens, communicator=communicator)
    with lm:
        engine = lm.engine(
            max_batch=args.rows, chunk=args.tokens, num_blocks=args.blocks,
            max_seq_len=step.max_tokens,
        )  # fmt: skip
        say(
            f"compiled {args.hf} ({args.layers} layers, random init) as a paged step "
            f"[{args.rows} x {args.tokens}] and [{args.rows} x 1] for {where} in "
            f"{time.perf_counter() - t0:.2f} s; pool {args.blocks} blocks x 16 slots"
        )
        plan = scenario(model.config.vocab_size, args.seed, step.max_tokens)
        for request in plan.requests:
            engine.submit(dataclasses.replace(request, adapter=None))
        start = time.perf_counter()
        while not engine.idle:
            report = engine.step()
            if report is not None and not args.quiet:
                say(describe(report, args.rows))
        wall = time.perf_counter() - start
        done, cache = engine.completions, engine.cache
        generated = sum(len(c.tokens) for c in done.values())
        say(
            f"served {len(done)} requests, {generated} tokens in {wall:.2f} s "
            f"({generated / wall:.1f} tokens/s); prefix hits {cache.prefix_hits}, prefill tokens "
            f"skipped {cache.tokens_skipped}, evictions {cache.allocator.evictions}"
        )
        if cache.check():
            say(f"cache invariants broken: {cache.check()}")
            return 1, done
    return 0, done


def check_hf(args: argparse.Namespace, done: dict) -> int:
    """Every request's tokens against transformers' greedy `generate` of it alone."""
    import torch

    model = hf_model(args.hf, args.layers, args.seed)
    failed = []
    for rid, c in done.items():
        ids = torch.tensor([c.prompt])
        with torch.no_grad():
            want = model.generate(
                ids, max_new_tokens=len(c.tokens), do_sample=False, eos_token_id=None,
                pad_token_id=0,
            )[0, len(c.prompt):].tolist()  # fmt: skip
        if c.tokens != want:
            failed.append(f"{rid}: {c.tokens} != transformers' {want}")
    if failed:
        print("mismatch against transformers' generate:\n  " + "\n  ".join(failed))
        return 1
    print("every request's tokens equal transformers' greedy generate of it alone")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4, help="sequences per step")
    parser.add_argument("--tokens", type=int, default=4, help="new tokens per row per step")
    parser.add_argument(
        "--cap", type=int, default=64, help="read-map width (max sequence + tokens - 1)"
    )
    parser.add_argument("--blocks", type=int, default=12, help="16-token blocks in the pool")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="weights and prompts seed")
    parser.add_argument("--target", default="cpu", choices=["cpu", "vulkan", "wgpu", "cuda"])
    parser.add_argument(
        "--check", action="store_true", help="verify every request against the oracle"
    )
    parser.add_argument("--rtol", type=float, default=1e-4, help="logits tolerance vs the oracle")
    parser.add_argument("--quiet", action="store_true", help="no per-step lines")
    parser.add_argument(
        "--hf", choices=sorted(HF_MODELS), help="serve a random-init Hugging Face model of this "
        "family (CausalLM.engine) instead of the example decoder; --check compares each "
        "request with transformers' greedy generate of it alone",
    )  # fmt: skip
    parser.add_argument(
        "--tensor-parallel", type=int, default=0, metavar="N",
        help="with --hf: serve from N ranks (torch.distributed), the step split by heads",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.tensor_parallel:
        if args.tensor_parallel < 1:
            parser.error("--tensor-parallel: expected N >= 1 ranks")
        if not args.hf:
            parser.error("--tensor-parallel serves a Hugging Face model: add --hf llama (or another)")
    if args.hf:
        return serve_hf(args)

    shape = ServeShape(rows=args.rows, tokens=args.tokens, cap=args.cap, pool_blocks=args.blocks)
    step_shape = StepShape(shape.rows, shape.tokens, shape.cap)
    # The dense reference's capacity is the longest sequence the step allows.
    config = DecoderConfig(layers=args.layers, cap=step_shape.max_tokens)
    # Two buckets: [rows, tokens] for steps with prefill chunks, [rows, 1]
    # for steps where every row decodes (no padding tokens).
    modules = {
        n: build_paged_decoder(config, dataclasses.replace(shape, tokens=n)).finish()
        for n in sorted({1, shape.tokens})
    }
    report = fuse_attention(modules[shape.tokens])
    print(
        f"traced a {config.layers}-layer serving step [{shape.rows} rows x {shape.tokens} tokens] "
        f"(and [{shape.rows} x 1] for decode-only steps), pool {shape.pool_blocks} blocks x 16 "
        f"slots; fused {report.attention} paged attention ops"
    )

    weights = init_weights(config, args.seed)
    adapters = AdapterTable(
        weights_fingerprint(weights), shape.adapter_slots, lora_shapes(config, shape.lora_rank)
    )
    versions: dict[str, dict[str, np.ndarray]] = {}  # adapter identity -> its arrays

    def load(name: str, seed: int) -> None:
        arrays = init_adapter(config, shape.lora_rank, seed)
        versions[adapters.load(name, arrays).adapter] = arrays  # type: ignore[index]

    load("A", args.seed + 101)
    load("B", args.seed + 202)

    with tempfile.TemporaryDirectory(prefix="poot-serve-") as out:
        t0 = time.perf_counter()
        runner, where = compile_runner(
            args.target, modules, Path(out) / "step", init_pools(config, shape), weights
        )
        print(f"compiled for {where} in {time.perf_counter() - t0:.2f} s")
        cache = PagedKVCache(shape.pool_blocks, max_tokens=step_shape.max_tokens)
        engine = Engine(
            runner,
            cache,
            step_shape,
            pools=init_pools(config, shape).keys(),
            adapters=adapters,
        )
        plan = scenario(config.vocab, args.seed, step_shape.max_tokens)
        for request in plan.requests:
            engine.submit(request)
        generated, busy = 0, 0.0
        start = time.perf_counter()
        while not engine.idle:
            if engine.step_index == plan.reload_step:
                old = adapters.resolve("A")[1]
                load("A", args.seed + 303)
                stale = max(
                    len(cache.match(r.prompt, old)) for r in plan.requests if r.adapter == "A"
                )
                print(
                    f"step {engine.step_index:3d} | hot reload of adapter A: a fresh weights identity "
                    f"({stale} blocks cached under the old version will not be reused)"
                )
            step = engine.step()
            if step is None:
                continue
            busy += step.seconds
            if not args.quiet:
                print(describe(step, shape.rows))
        wall = time.perf_counter() - start
        done = engine.completions
        generated = sum(len(c.tokens) for c in done.values())
        print(
            f"served {len(done)} requests, {generated} tokens in {wall:.2f} s "
            f"({generated / wall:.1f} tokens/s; step time {busy:.2f} s); prefix hits {cache.prefix_hits}, "
            f"prefill tokens skipped {cache.tokens_skipped}, evictions {cache.allocator.evictions}"
        )
        for rid, c in done.items():
            print(
                f"  {rid}: adapter {c.adapter or '-'}, prompt {len(c.prompt)}, reused {c.reused}, "
                f"steps {c.admitted}-{c.finished}, tokens {c.tokens}"
            )
        if cache.check():
            print(f"cache invariants broken: {cache.check()}")
            return 1

    if not args.check:
        return 0
    worst, failed = 0.0, []
    for rid, c in done.items():
        merged = effective_weights(
            weights, versions[c.identity.adapter] if c.identity.adapter else None
        )
        ok, err, message = check_completion(config, merged, c, args.rtol)
        worst = max(worst, err)
        if not ok:
            failed.append(f"{rid}: {message}")
    if failed:
        print("mismatch against the float64 oracle:\n  " + "\n  ".join(failed))
        return 1
    print(
        f"every request matched running it alone through the float64 oracle (worst rel err {worst:.1e})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
