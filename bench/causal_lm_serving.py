"""Serve many requests at once from a Hugging Face Llama (issue 25): poot's
`Engine` over the model's paged step (`CausalLM.engine`: continuous
batching, paged KV pools, prefill chunks beside decode rows) beside
transformers' batched `generate` with a static cache (torch.compile'd by
generate on a GPU), on the same weights in the same run.

Workload: `--requests` prompts (default 64) of random lengths in
`[--prompt-min, --prompt-max]` (128-512) and random token ids, each
generating `--new` tokens (128), greedy, all arriving at once; a
Llama-3-8B-shaped config with `--layers` layers (4), BF16, random init.
poot serves them with up to `--max-batch` rows per step (all of them by
default) and prefill chunks of `--chunk` tokens; transformers generates
them as one left-padded batch. Throughput: generated tokens / wall time of
the whole run (prefill included), after a warm-up run of each. Latency, per
request: time to first token from the run's start (`ttft_ms_*`) and the
mean time per output token after it (`tpot_ms_*`), mean and p90 (poot: from
the steps that returned each token; transformers: from a streamer on one
more, synchronized run -- one batch, so every row's times are the same).
Agreement:
per request, how many leading greedy tokens poot and transformers share
(bf16 rounding and left padding may split a near tie). On CUDA also the
copy bandwidth and the decode floor: the bytes one all-rows decode step
must read (every weight but the embedding, and the live KV at the mean
length) over it, as tokens/s.

    # here (no GPU): the whole path end to end on a tiny config
    python bench/causal_lm_serving.py --target cpu --tiny
    # CUDA, two phases (the GPU machine has no MLIR):
    python bench/causal_lm_serving.py --target cuda --phase build --artifacts bench/artifacts/serving
    python bench/causal_lm_serving.py --target cuda --phase run --artifacts bench/artifacts/serving > out.json
    # CUDA on a machine that has both: --phase all (the default)

The result is one JSON object on stdout (progress on stderr).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "python"))  # the GPU machine has no build: the runtime is pure Python
sys.path.append(str(ROOT / "bench"))

LLAMA8B = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
               num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
               rope_theta=500000.0)  # fmt: skip
TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)  # fmt: skip
#: --tiny's workload (each overridable): small enough for two CPU cores.
TINY_WORKLOAD = dict(requests=8, prompt_min=12, prompt_max=40, new=16, chunk=16)
#: --small: the CPU benchmark's size (a Llama of d 512: ~22M parameters).
SMALL = dict(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=1024)  # fmt: skip
SMALL_WORKLOAD = dict(requests=16, prompt_min=32, prompt_max=128, new=32, chunk=32)


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def options(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[1:]))  # fmt: skip
    p.add_argument("--target", choices=["cpu", "cuda"], default="cuda")
    p.add_argument("--phase", choices=["all", "build", "run"], default="all",
                   help="cuda: build the steps (needs MLIR), run them (needs the GPU), or both")
    p.add_argument("--artifacts", type=Path, default=ROOT / "bench" / "artifacts" / "serving",
                   help="where cuda's build phase writes and its run phase reads the steps")
    p.add_argument("--tiny", action="store_true",
                   help=f"a tiny config ({TINY['num_hidden_layers']} layers, d{TINY['hidden_size']}) "
                        f"and workload {TINY_WORKLOAD}: the CPU check")  # fmt: skip
    p.add_argument("--small", action="store_true",
                   help=f"a small config (d{SMALL['hidden_size']}, vocab {SMALL['vocab_size']}) and "
                        f"workload {SMALL_WORKLOAD}: the CPU benchmark")  # fmt: skip
    p.add_argument("--layers", type=int, help="decoder layers (default 4; --tiny 2)")
    p.add_argument("--requests", type=int, help="concurrent requests (default 64)")
    p.add_argument("--prompt-min", type=int, help="shortest prompt (default 128)")
    p.add_argument("--prompt-max", type=int, help="longest prompt (default 512)")
    p.add_argument("--new", type=int, help="tokens generated per request (default 128)")
    p.add_argument("--max-batch", type=int, help="rows per poot step (default: every request)")
    p.add_argument("--chunk", type=int, help="prefill tokens per row per step (default 64)")
    p.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    p.add_argument("--seed", type=int, default=0, help="weights and prompts")
    p.add_argument("--repeat", type=int, default=2, help="timed runs of each (the best counts)")
    args = p.parse_args(argv)
    if args.tiny and args.small:
        p.error("--tiny or --small, not both")
    defaults = dict(requests=64, prompt_min=128, prompt_max=512, new=128, chunk=64)
    chosen = TINY_WORKLOAD if args.tiny else SMALL_WORKLOAD if args.small else defaults
    for name, value in chosen.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.layers is None:
        args.layers = _config(args)["num_hidden_layers"]
    args.max_batch = args.max_batch or args.requests
    if not 1 <= args.prompt_min <= args.prompt_max:
        p.error("need 1 <= --prompt-min <= --prompt-max")
    return args


def _config(args) -> dict:
    return TINY if args.tiny else SMALL if args.small else LLAMA8B


def config_dict(args) -> dict:
    return {**_config(args), "num_hidden_layers": args.layers}


def engine_shape(args):
    """The engine's shape (its one owner: models.serving.EngineShape): every
    request fits its longest sequence, and the pool holds `max_batch` of them."""
    from poot_mlir.driver import BLOCK_SIZE
    from poot_mlir.models.serving import EngineShape

    longest = args.prompt_max + args.new
    return EngineShape(args.max_batch, args.chunk, longest, args.max_batch * -(-longest // BLOCK_SIZE))


def workload(args, vocab: int) -> list[list[int]]:
    import numpy as np

    rng = np.random.default_rng(args.seed + 1)
    lengths = rng.integers(args.prompt_min, args.prompt_max + 1, args.requests)
    return [[int(t) for t in rng.integers(0, vocab, n)] for n in lengths]


def torch_dtype(args):
    import torch

    return torch.bfloat16 if args.dtype == "bf16" else torch.float32


def make_model(args, device: str):
    import torch
    import transformers

    config = transformers.LlamaConfig(**config_dict(args))
    torch.manual_seed(args.seed)
    with torch.device(device):
        return transformers.LlamaForCausalLM(config).to(torch_dtype(args)).eval()


# --- poot -------------------------------------------------------------------------------


def serve(engine, prompts: list[list[int]], new: int, tag: str) -> tuple[dict, dict]:
    """Every prompt submitted at once and served to completion: (tokens by
    request, the run's counters)."""
    from poot_mlir.driver import Request

    for i, prompt in enumerate(prompts):
        engine.submit(Request(f"{tag}{i}", prompt, new, arrival=engine.step_index))
    steps, step_s, prefill_steps = 0, 0.0, 0
    # A device runner counts the bytes it reads back: greedy steps read
    # their tokens only (max_batch x 4 bytes), never the logits.
    traffic = getattr(engine.runner, "traffic", None)
    read = traffic.read if traffic is not None else 0
    prompt_len = {f"{tag}{i}": len(p) for i, p in enumerate(prompts)}
    emitted: dict[str, list[float]] = {rid: [] for rid in prompt_len}  # when each token came back
    start = time.perf_counter()
    while not engine.idle:
        report = engine.step()
        if report is None:
            continue
        now = time.perf_counter() - start
        steps += 1
        step_s += report.seconds
        prefill_steps += any(r.kind == "prefill" for r in report.rows)
        for row in report.rows:
            # A decode row, or the chunk that ends its prompt, got a token.
            if row.kind == "decode" or row.pos + row.count >= prompt_len[row.rid]:
                emitted[row.rid].append(now)
    wall = time.perf_counter() - start
    tokens = {i: engine.completions[f"{tag}{i}"].tokens for i in range(len(prompts))}
    generated = sum(len(t) for t in tokens.values())
    stats = {"wall_s": wall, "tokens_per_s": generated / wall, "steps": steps,
             "prefill_steps": prefill_steps, "step_s": step_s, "host_s": wall - step_s,
             **latency(list(emitted.values()))}  # fmt: skip
    if traffic is not None:
        stats["read_back_bytes_per_step"] = (traffic.read - read) / max(steps, 1)
    return tokens, stats


def latency(emitted: list[list[float]]) -> dict:
    """Time to first token (from the run's start: every request arrives at
    once) and time per output token after it (a request's mean gap between
    tokens), in ms, each as the mean and p90 over the requests."""
    ttft = sorted(1e3 * times[0] for times in emitted if times)
    tpot = sorted(1e3 * (times[-1] - times[0]) / (len(times) - 1) for times in emitted if len(times) > 1)

    def p90(values: list[float]) -> float:
        return values[min(len(values) - 1, int(0.9 * len(values)))] if values else math.nan

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else math.nan

    return {"ttft_ms_mean": mean(ttft), "ttft_ms_p90": p90(ttft),
            "tpot_ms_mean": mean(tpot), "tpot_ms_p90": p90(tpot)}  # fmt: skip


def timed_serve(engine, prompts, new: int, repeat: int) -> tuple[dict, dict]:
    serve(engine, prompts[:2], 4, "warm")  # both buckets run (and capture) once
    best = None
    for r in range(repeat):
        # Cold every run: the last run's published blocks would otherwise
        # skip every prompt's prefill.
        engine.reset_prefix_cache()
        tokens, stats = serve(engine, prompts, new, f"run{r}.")
        if best is None or stats["wall_s"] < best[1]["wall_s"]:
            best = tokens, stats
        log(f"poot run {r}: {stats}")
    return best


def build_cuda(args, out: Path) -> None:
    """The two buckets compiled for sm_90 from a meta-device model (no
    weight memory), with what the run phase needs to bind them."""
    import torch

    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.frontend.torch_export import packed_weights
    from poot_mlir.models.paged import pool_shapes
    from poot_mlir.models.serving import step_modules

    model = make_model(args, "meta")
    shape = engine_shape(args)
    t0 = time.perf_counter()
    built = step_modules(model, shape, model.config.vocab_size, device="meta")
    packed = set()
    for tokens, (module, ep) in built.items():
        packed |= packed_weights(ep)
        # `$POOT_BENCH_DEVICE` (JSON): device changes for a baseline build,
        # e.g. '{"mma_matmul_rows": 0}' (every matmul on CUDA cores).
        device = devices.SM_90.with_limits(**json.loads(os.environ.get("POOT_BENCH_DEVICE", "{}")))
        path = compile_gpu(module, device, out / f"t{tokens}")
        log(f"t{tokens}: {time.perf_counter() - t0:.1f} s -> {path}")
    pools = {}
    for i, (k, v) in enumerate(pool_shapes(model, shape.pool_slots)):
        pools[f"k{i}"], pools[f"v{i}"] = list(k), list(v)
    (out / "case.json").write_text(json.dumps(
        {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
         "shape": dataclasses.asdict(shape),
         "buckets": shape.buckets(), "packed": sorted(packed), "pools": pools,
         "torch": torch.__version__}, indent=1))  # fmt: skip


def cuda_engine(out: Path, model, case: dict):
    """An Engine over the prebuilt steps, the weights borrowed from the torch
    model on the GPU (no copy; the packed ones transposed once)."""
    import ml_dtypes
    import numpy as np
    import torch

    from poot_mlir.driver import Engine, PagedKVCache, WeightsIdentity
    from poot_mlir.driver.runners import DeviceRunner
    from poot_mlir.models.hf_export import NEXT_TOKEN
    from poot_mlir.models.serving import EngineShape
    from poot_mlir.runtime.program import ProgramArtifact, make_device

    backend = make_device("cuda")
    artifacts = {n: ProgramArtifact(out / f"t{n}", backend=backend) for n in case["buckets"]}
    shape = EngineShape(**case["shape"])
    inputs = {"tokens", "pos", "count", "read", "write"}
    named = dict(model.named_parameters()) | dict(model.named_buffers())
    packed = set(case["packed"])
    widest = artifacts[max(artifacts)]
    constants = {}
    for port in widest.signature.args:
        if port.key in inputs or port.state is not None:
            continue
        tensor = named[port.key.removeprefix("model.")]  # the step wraps the model as `model`
        constants[port.key] = (tensor.t() if port.key in packed else tensor).contiguous()
    dtype = np.dtype(ml_dtypes.bfloat16) if model.dtype == torch.bfloat16 else np.dtype(np.float32)
    state = {name: np.zeros(dims, dtype) for name, dims in case["pools"].items()}
    runner = DeviceRunner(artifacts, state, constants)
    del state
    s = shape.step
    cache = PagedKVCache(shape.num_blocks, max_tokens=s.max_tokens)
    # The weights are a function of the seed and the config: that is their identity.
    identity = WeightsIdentity(f"bench-llama seed={case['args']['seed']} {case['shape']}")
    # Every request is greedy and no logits are kept: each step reads back
    # its `next_token` alone (max_batch x 4 bytes), never the logits.
    return Engine(runner, cache, s, pools=list(case["pools"]), base=identity, keep_logits=False,
                  next_token=NEXT_TOKEN)  # fmt: skip


# --- transformers -------------------------------------------------------------------------


def hf_batched(model, prompts: list[list[int]], new: int, device: str, repeat: int) -> tuple[list, dict]:
    """One left-padded batch through generate with a static cache (on a GPU
    generate torch.compiles the decode step itself)."""
    import torch

    width = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, p in enumerate(prompts):
        ids[r, width - len(p):] = torch.tensor(p)
        mask[r, width - len(p):] = 1
    ids, mask = ids.to(device), mask.to(device)

    def run():
        with torch.no_grad():
            # No eos: every row generates `new` tokens, none suppressed
            # (min_new_tokens would mask the eos logit and change argmaxes).
            out = model.generate(ids, attention_mask=mask, max_new_tokens=new, eos_token_id=None,
                                 do_sample=False, cache_implementation="static", pad_token_id=0)  # fmt: skip
        if device == "cuda":
            torch.cuda.synchronize()
        return out

    run()  # warm: compiles on a GPU
    best = math.inf
    for r in range(repeat):
        t0 = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - t0)
        log(f"transformers run {r}: {time.perf_counter() - t0:.3f} s")
    tokens = out[:, width:].cpu().tolist()
    # Latency from one more run with a streamer that notes when each step's
    # tokens exist (synchronized: that run's throughput is not reported).
    stamps: list[float] = []

    class Clock:
        def put(self, value) -> None:
            if device == "cuda":
                torch.cuda.synchronize()
            stamps.append(time.perf_counter())

        def end(self) -> None:
            pass

    t0 = time.perf_counter()
    with torch.no_grad():
        model.generate(ids, attention_mask=mask, max_new_tokens=new, eos_token_id=None, do_sample=False,
                       cache_implementation="static", pad_token_id=0, streamer=Clock())  # fmt: skip
    # The first put is the prompt; each later one a step's tokens, every row's.
    times = [t - t0 for t in stamps[1:]]
    return tokens, {"wall_s": best, "tokens_per_s": len(prompts) * new / best,
                    "compiled": device == "cuda", **latency([times] * len(prompts))}  # fmt: skip


# --- the run ------------------------------------------------------------------------------


def agreement(poot: dict, hf: list) -> dict:
    shared = []
    for i, want in enumerate(hf):
        got = poot[i]
        n = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        shared.append(n)
    return {"greedy_tokens_shared_min": min(shared), "greedy_tokens_shared_mean": sum(shared) / len(shared),
            "requests_all_equal": sum(s == len(hf[0]) for s in shared)}  # fmt: skip


def decode_floor(model, prompts, new: int, bandwidth: float) -> float:
    """Tokens/s of an all-rows decode step that only reads what it must
    (every weight but the embedding, and the live KV at the mean length)."""
    c = model.config
    esize = model.dtype.itemsize
    weights = sum(p.numel() for p in model.parameters()) * esize
    embed = model.model.embed_tokens.weight.numel() * esize
    mean = sum(len(p) for p in prompts) / len(prompts) + new / 2
    hd = c.hidden_size // c.num_attention_heads
    kv = 2 * len(prompts) * c.num_hidden_layers * c.num_key_value_heads * mean * hd * esize
    return len(prompts) / ((weights - embed + kv) / bandwidth)


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    out = args.artifacts
    if args.target == "cuda" and args.phase in ("all", "build"):
        out.mkdir(parents=True, exist_ok=True)
        build_cuda(args, out)
        if args.phase == "build":
            return 0
    import torch
    import transformers

    device = args.target
    if device == "cuda":
        case = json.loads((out / "case.json").read_text())
        for name in ("layers", "requests", "prompt_min", "prompt_max", "new", "max_batch", "chunk",
                     "dtype", "seed", "tiny", "small"):  # fmt: skip
            # the workload the steps were built for (no "small" before it existed)
            setattr(args, name, case["args"].get(name, False))
    model = make_model(args, device)
    prompts = workload(args, model.config.vocab_size)
    row = {"target": device, "config": config_dict(args), "dtype": args.dtype,
           "requests": args.requests, "prompt_range": [args.prompt_min, args.prompt_max],
           "prompt_tokens": sum(len(p) for p in prompts), "new": args.new,
           "max_batch": args.max_batch, "chunk": args.chunk,
           "torch": torch.__version__, "transformers_version": transformers.__version__}  # fmt: skip
    if device == "cuda":
        from decode_step_h200 import _copy_bandwidth  # one probe of the copy ceiling for the benches

        bandwidth = _copy_bandwidth()
        row["device"] = torch.cuda.get_device_name()
        row["copy_TBps"] = bandwidth / 1e12
        row["decode_floor_tokens_per_s"] = decode_floor(model, prompts, args.new, bandwidth)
        engine = cuda_engine(out, model, case)
        lm = None
    else:
        from poot_mlir.models import CausalLM

        shape = engine_shape(args)
        t0 = time.perf_counter()
        lm = CausalLM.from_hf(model, "cpu", max_seq_len=shape.max_seq_len)
        engine = lm.engine(max_batch=shape.max_batch, chunk=shape.chunk, num_blocks=shape.num_blocks,
                           max_seq_len=shape.max_seq_len, keep_logits=False)  # fmt: skip
        row["device"] = "cpu"
        row["poot_compile_s"] = time.perf_counter() - t0
    try:
        poot_tokens, row["poot"] = timed_serve(engine, prompts, args.new, args.repeat)
        row["poot"]["preemptions"] = engine.preemptions
    finally:
        engine.close()
        if lm is not None:
            lm.close()
    try:
        hf_tokens, row["transformers"] = hf_batched(model, prompts, args.new, device, args.repeat)
        row["agreement"] = agreement(poot_tokens, hf_tokens)
        row["speedup_vs_transformers"] = row["poot"]["tokens_per_s"] / row["transformers"]["tokens_per_s"]
    except Exception as error:  # report, keep poot's numbers
        row["transformers_error"] = f"{type(error).__name__}: {error}"[:400]
    row["date"] = time.strftime("%Y-%m-%d")
    print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
