"""Serving on the CPU: the paged-KV serving loop, poot_mlir's compiled step vs torch eager.

    python bench/serve_cpu.py [--out bench/results/serve_cpu.json] [--quick]

Both runners execute the same serving step (examples/paged_decoder.py: the
example decoder, per-row positions and lengths, paged K/V pools, per-row LoRA
slots) driven by the same `poot_mlir.driver.Engine` on the same requests:

- poot: the traced step, attention fused (paged key + live length), compiled
  with `compile_cpu`, run by `runtime.cpu.Session` (which today allocates
  fresh result pools every step);
- torch: the same math written in eager torch (float32, pools updated in
  place through `index_put_`), the strongest CPU peer in this environment.
  Its logits are checked against poot's on the first step of every run.

Both run on one thread (torch.set_num_threads(1); the compiled step is
single-threaded). Measured:

1. throughput: rows in (1, 8, 32) x 4 tokens per step, 2 x rows requests
   (prompts 16-64 tokens, 32 new tokens each, all arriving at step 0):
   generated tokens / s and processed (prefill + decode) tokens / s;
2. the prefix hit: time to first token of a 120-token prompt cold, then of a
   second request sharing its first 112 tokens (7 blocks reused);
3. decode step time vs pool size: 8 rows decoding (1 token each) at
   positions 16-30, pools of 16 .. 1024 blocks.

A third runner, `poot_unfused`, is the same compiled step without
`fuse_attention` (the attention stays the primitive chain, lowered through
linalg), to separate the fused CPU attention kernel's cost.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import torch

from poot_mlir.compiler import compile_cpu, fuse_attention
from poot_mlir.driver import (
    AdapterTable,
    Engine,
    PagedKVCache,
    Request,
    StepShape,
    weights_fingerprint,
)
from poot_mlir.examples.decoder import DecoderConfig, init_weights
from poot_mlir.examples.paged_decoder import (
    ServeShape,
    build_paged_decoder,
    init_adapter,
    init_pools,
    lora_shapes,
)
from poot_mlir.runtime import binding
from poot_mlir.runtime.cpu import CpuArtifact

ROOT = Path(__file__).resolve().parents[1]

CONFIG = DecoderConfig()  # 2 layers, d_model 64, 4 q heads / 2 kv heads, head_dim 16
TOKENS, CAP = 4, 128


class TorchStep:
    """The serving step in eager torch over numpy pools shared in place."""

    def __init__(self, config: DecoderConfig, shape: ServeShape, pools: dict[str, np.ndarray]):
        self.c, self.s = config, shape
        self.state = pools  # numpy; torch views write into them
        self._views = {k: torch.from_numpy(v) for k, v in pools.items()}
        self.inv_freq = torch.from_numpy(config.inv_freq().astype(np.float32))

    @staticmethod
    def _norm(x, w, eps):
        return x * torch.rsqrt((x * x).sum(-1, keepdim=True) / x.shape[-1] + eps) * w

    @staticmethod
    def _rope(x, cos, sin):
        h = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin

    def step(self, inputs):
        c, s = self.c, self.s
        t = {k: torch.from_numpy(np.asarray(v)) for k, v in inputs.items()}
        rows, tk = t["tokens"].shape
        hd = c.head_dim
        pos, count, read, write, adapter = (
            t["pos"],
            t["count"],
            t["read"].long(),
            t["write"],
            t["adapter"],
        )
        x = t["embed"][t["tokens"].long()]
        token_pos = (pos[:, None] + torch.arange(tk)[None]).float()
        angle = token_pos[..., None] * self.inv_freq
        angle = torch.cat([angle, angle], -1)[:, None]  # [R, 1, T, hd]
        cos, sin = torch.cos(angle), torch.sin(angle)
        key_t = torch.arange(s.cap)
        qpos = pos[:, None, None] + torch.arange(tk)[None, :, None]
        visible = (key_t[None, None] <= qpos) & (key_t[None, None] < (pos + count)[:, None, None])
        valid = write >= 0
        n_rep = c.q_heads // c.kv_heads
        idx = adapter.long()

        def project(h, name):
            y = h @ t[name]
            a = t.get(f"{name}.lora_a")
            if a is not None:
                y = y + torch.bmm(torch.bmm(h, a[idx]), t[f"{name}.lora_b"][idx])
            return y

        for layer in range(c.layers):
            p = f"l{layer}."
            h = self._norm(x, t[p + "attn_norm"], c.eps)
            q = project(h, p + "wq").reshape(rows, tk, c.q_heads, hd).transpose(1, 2)
            k = (h @ t[p + "wk"]).reshape(rows, tk, c.kv_heads, hd).transpose(1, 2)
            v = project(h, p + "wv").reshape(rows, tk, c.kv_heads, hd).transpose(1, 2)
            q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
            kp, vp = self._views[f"k{layer}"], self._views[f"v{layer}"]
            kp[write[valid].long()] = k.transpose(1, 2).reshape(rows * tk, c.kv_heads, hd)[valid]
            vp[write[valid].long()] = v.transpose(1, 2).reshape(rows * tk, c.kv_heads, hd)[valid]
            keys = kp[read].transpose(1, 2).repeat_interleave(n_rep, 1)  # [R, Hq, cap, hd]
            values = vp[read].transpose(1, 2).repeat_interleave(n_rep, 1)
            attn = torch.nn.functional.scaled_dot_product_attention(
                q, keys, values, attn_mask=visible[:, None]
            )
            x = x + attn.transpose(1, 2).reshape(rows, tk, c.q_heads * hd) @ t[p + "wo"]
            h = self._norm(x, t[p + "mlp_norm"], c.eps)
            gate = h @ t[p + "w_gate"]
            x = x + (gate * torch.sigmoid(gate) * (h @ t[p + "w_up"])) @ t[p + "w_down"]
        logits = self._norm(x, t["final_norm"], c.eps) @ t["lm_head"]
        return SimpleNamespace(named={"logits": logits.numpy()})


def compile_step(shape: ServeShape, out: Path, fuse: bool = True) -> tuple[CpuArtifact, float]:
    module = build_paged_decoder(CONFIG, shape).finish()
    if fuse:
        assert fuse_attention(module).attention == CONFIG.layers
    start = time.perf_counter()
    artifact = CpuArtifact(compile_cpu(module, out))
    return artifact, time.perf_counter() - start


def make_engine(kind: str, artifact: CpuArtifact, shape: ServeShape, weights, adapter_arrays):
    pools = init_pools(CONFIG, shape)
    if kind.startswith("poot"):
        runner = artifact.session(pools)
        bind = lambda inputs: binding.bind(artifact.signature, inputs)  # noqa: E731
    else:
        runner, bind = TorchStep(CONFIG, shape, pools), None
    adapters = AdapterTable(
        weights_fingerprint(weights), shape.adapter_slots, lora_shapes(CONFIG, shape.lora_rank)
    )
    adapters.load("A", adapter_arrays)
    step = StepShape(shape.rows, shape.tokens, shape.cap)
    cache = PagedKVCache(shape.pool_blocks, max_tokens=step.max_tokens)
    return Engine(
        runner, cache, step, weights=weights, pools=pools.keys(), adapters=adapters, bind=bind
    )


def requests(rng: np.random.Generator, n: int, new: int) -> list[Request]:
    out = []
    for i in range(n):
        prompt = [int(x) for x in rng.integers(1, CONFIG.vocab, int(rng.integers(16, 65)))]
        out.append(Request(f"r{i}", prompt, new, "A" if i % 2 else None, 0))
    return out


def throughput(kind, artifact, shape, weights, adapter, reqs) -> dict:
    engine = make_engine(kind, artifact, shape, weights, adapter)
    for r in reqs:
        engine.submit(Request(r.rid, list(r.prompt), r.max_new_tokens, r.adapter, r.arrival))
    steps = []
    start, cpu = time.perf_counter(), time.process_time()
    engine.run(lambda rep: steps.append(rep))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    busy = sum(r.seconds for r in steps)
    busy_cpu = sum(r.cpu_seconds for r in steps)
    generated = sum(len(c.tokens) for c in engine.completions.values())
    processed = sum(row.count for r in steps for row in r.rows)
    return {
        "steps": len(steps), "wall_s": wall, "cpu_s": cpu, "step_s": busy, "step_cpu_s": busy_cpu,
        "mean_step_ms": 1e3 * busy / len(steps), "mean_step_cpu_ms": 1e3 * busy_cpu / len(steps),
        "generated_tokens": generated, "processed_tokens": processed,
        "generated_per_s": generated / wall, "processed_per_s": processed / wall,
        "generated_per_cpu_s": generated / cpu, "processed_per_cpu_s": processed / cpu,
        "tokens": {rid: c.tokens for rid, c in engine.completions.items()},
    }  # fmt: skip


def first_token_time(engine: Engine, request: Request) -> tuple[float, float, int, int]:
    """(wall s, CPU s, steps, tokens reused) from submitting `request` alone to its first token."""
    engine.submit(request)
    start, cpu, steps = time.perf_counter(), time.process_time(), 0
    while request.rid not in engine.completions:
        engine.step()
        steps += 1
    reused = engine.completions[request.rid].reused
    return time.perf_counter() - start, time.process_time() - cpu, steps, reused


def prefix_hit(kind, artifact, shape, weights, adapter, rng) -> dict:
    engine = make_engine(kind, artifact, shape, weights, adapter)
    shared = [int(x) for x in rng.integers(1, CONFIG.vocab, 112)]
    tail = lambda: [int(x) for x in rng.integers(1, CONFIG.vocab, 8)]  # noqa: E731
    warmup = Request("warm", [int(x) for x in rng.integers(1, CONFIG.vocab, 20)], 1)
    first_token_time(engine, warmup)
    cold = first_token_time(engine, Request("cold", shared + tail(), 1))
    hit = first_token_time(engine, Request("hit", shared + tail(), 1))
    return {
        "cold_ms": 1e3 * cold[0], "cold_cpu_ms": 1e3 * cold[1], "cold_steps": cold[2],
        "hit_ms": 1e3 * hit[0], "hit_cpu_ms": 1e3 * hit[1], "hit_steps": hit[2],
        "hit_reused_tokens": hit[3], "saved_ms": 1e3 * (cold[0] - hit[0]),
        "saved_cpu_ms": 1e3 * (cold[1] - hit[1]),
    }  # fmt: skip


def decode_vs_pool(
    kind, blocks_list, weights, adapter, rng, tmp: Path, artifacts: dict
) -> list[dict]:
    out = []
    for blocks in blocks_list:
        shape = ServeShape(rows=8, tokens=1, cap=CAP, pool_blocks=blocks)
        if blocks not in artifacts:
            artifacts[blocks] = compile_step(shape, tmp / f"decode{blocks}")[0]
        engine = make_engine(kind, artifacts[blocks], shape, weights, adapter)
        for i in range(8):  # 16 + 16 tokens: 2 blocks a row, so 16 blocks hold all 8
            prompt = [int(x) for x in rng.integers(1, CONFIG.vocab, 16)]
            engine.submit(Request(f"d{i}", prompt, 16, None, 0))
        decode: list = []

        def keep(rep) -> None:
            if len(rep.rows) == 8 and all(r.kind == "decode" for r in rep.rows):
                decode.append((rep.seconds, rep.cpu_seconds))

        engine.run(keep)
        pool_bytes = sum(v.nbytes for v in init_pools(CONFIG, shape).values())
        wall, cpu = np.median(np.array(decode), axis=0)
        out.append(
            {
                "blocks": blocks,
                "pool_slots": shape.pool_slots,
                "pool_bytes": pool_bytes,
                "decode_steps": len(decode),
                "median_step_ms": 1e3 * float(wall),
                "median_step_cpu_ms": 1e3 * float(cpu),
            }
        )
    return out


def check_same_math(artifact, shape, weights, adapter) -> float:
    """poot and torch on the same first step: max relative logits difference."""
    engines = [make_engine(k, artifact, shape, weights, adapter) for k in ("poot", "torch")]
    logits = []
    for engine in engines:
        for r in requests(np.random.default_rng(11), shape.rows, 1):
            engine.submit(r)
        plan = engine.plan()
        inputs = {**engine.weights, **engine.adapters.tables(), **plan.inputs}
        logits.append(engine.runner.step(inputs).named["logits"])
    scale = float(np.max(np.abs(logits[0])))
    return float(np.max(np.abs(logits[0] - logits[1]))) / scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "serve_cpu.json"))
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(2026)
    weights = init_weights(CONFIG, 0)
    adapter = init_adapter(CONFIG, 4, 1)
    batches = (1, 8) if args.quick else (1, 8, 32)
    new = 8 if args.quick else 32
    blocks_list = (16, 64) if args.quick else (16, 64, 256, 1024)
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.processor() or platform.machine()} "
        f"({os.cpu_count()} CPUs), Python {platform.python_version()}, torch {torch.__version__}, "
        f"1 thread; load average at start {os.getloadavg()[0]:.1f} (shared machine)",
        "model": "examples.decoder DecoderConfig() (2 layers, d 64, 4/2 heads, head_dim 16, vocab 97), "
        f"LoRA rank 4 on wq/wv, step {TOKENS} tokens x rows, cap {CAP}",
        "throughput": [], "prefix_hit": {}, "decode_vs_pool": {},
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="poot-bench-serve-") as tmp:
        tmp = Path(tmp)
        for rows in batches:
            need = 2 * rows * 6  # 2 x rows requests, at most 96 tokens = 6 blocks each
            shape = ServeShape(rows=rows, tokens=TOKENS, cap=CAP, pool_blocks=need)
            artifact, seconds = compile_step(shape, tmp / f"rows{rows}")
            unfused, _ = compile_step(shape, tmp / f"rows{rows}-unfused", fuse=False)
            if rows == batches[0]:
                result["same_math_rel_err"] = check_same_math(artifact, shape, weights, adapter)
            reqs = requests(np.random.default_rng(rows), 2 * rows, new)
            entry = {"rows": rows, "compile_s": seconds, "requests": len(reqs)}
            for kind, art in (("poot", artifact), ("poot_unfused", unfused), ("torch", artifact)):
                entry[kind] = throughput(kind, art, shape, weights, adapter, reqs)
            tokens = [entry[k].pop("tokens") for k in ("poot", "poot_unfused", "torch")]
            entry["same_tokens"] = tokens[0] == tokens[1] == tokens[2]
            result["throughput"].append(entry)
            print(
                f"rows {rows:2d}: "
                + ", ".join(
                    f"{k} {entry[k]['generated_per_cpu_s']:6.1f} tok/cpu-s ({entry[k]['mean_step_cpu_ms']:.1f} "
                    f"cpu-ms/step)"
                    for k in ("poot", "poot_unfused", "torch")
                )
                + f"; same tokens: {entry['same_tokens']}",
                flush=True,
            )
            if rows == 8:
                shape8 = ServeShape(rows=8, tokens=TOKENS, cap=CAP, pool_blocks=need)
                for kind in ("poot", "torch"):
                    result["prefix_hit"][kind] = prefix_hit(
                        kind, artifact, shape8, weights, adapter, rng
                    )
                print(f"prefix hit: {json.dumps(result['prefix_hit'])}", flush=True)
        artifacts: dict = {}
        for kind in ("poot", "torch"):
            result["decode_vs_pool"][kind] = decode_vs_pool(
                kind, blocks_list, weights, adapter, rng, tmp, artifacts
            )
            print(
                f"decode vs pool ({kind}): "
                + ", ".join(
                    f"{e['blocks']} blocks {e['median_step_cpu_ms']:.2f} cpu-ms"
                    for e in result["decode_vs_pool"][kind]
                ),
                flush=True,
            )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
