"""A whole decoder step on the CPU against the same decoder in torch eager.

    python bench/cpu_decoder.py [--threads N] [--configs small,large] [--compile-layers 8,16,32]

The decoder is `poot_mlir.examples.decoder` (traced, attention fused,
compiled by `compile_cpu` for the detected host) stepped in a
`runtime.cpu.Session`; the torch peer is the same network written in eager
torch with the same weights (`torch.inference_mode`, in-place KV-cache
writes, `F.scaled_dot_product_attention(enable_gqa=True)` over the cache up
to `pos`). Both decode from the same random cache at position `cap - 1` (a
full cache: the most K/V either reads); the logits are compared. Compile
time: the same decoder at 8/16/32 layers, cache off, with the pipeline /
object / link split the manifest records.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_common import ceilings, interleaved, machine  # noqa: E402

CONFIGS = {
    "toy": dict(layers=2, d_model=64, q_heads=4, kv_heads=2, ffn=128, cap=32, vocab=97),  # the README demo
    "small": dict(layers=8, d_model=512, q_heads=8, kv_heads=2, ffn=1408, cap=1024, vocab=4096),
    "large": dict(layers=16, d_model=1024, q_heads=16, kv_heads=4, ffn=2816, cap=4096, vocab=4096),
}


def torch_decoder(config, weights):
    """The decoder of examples/decoder.py in eager torch: returns step(token,
    pos, caches) -> logits, updating the caches in place."""
    import torch
    import torch.nn.functional as F

    w = {k: torch.from_numpy(v) for k, v in weights.items()}
    c = config
    hd = c.head_dim
    inv_freq = torch.from_numpy(c.inv_freq().astype(np.float32))

    def rms(x, weight):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + c.eps) * weight

    def rope(x, cos, sin):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def step(token, pos, caches):
        x = w["embed"][token].view(1, c.d_model)
        angle = pos * inv_freq
        angle = torch.cat([angle, angle])
        cos, sin = torch.cos(angle), torch.sin(angle)
        for l in range(c.layers):
            p = f"l{l}."
            h = rms(x, w[p + "attn_norm"])
            q = rope((h @ w[p + "wq"]).view(1, c.q_heads, 1, hd), cos, sin)
            k = rope((h @ w[p + "wk"]).view(1, c.kv_heads, 1, hd), cos, sin)
            v = (h @ w[p + "wv"]).view(1, c.kv_heads, 1, hd)
            kc, vc = caches[f"k{l}"], caches[f"v{l}"]
            kc[:, :, pos] = k[:, :, 0]
            vc[:, :, pos] = v[:, :, 0]
            a = F.scaled_dot_product_attention(q, kc[:, :, : pos + 1], vc[:, :, : pos + 1],
                                               enable_gqa=True)
            x = x + a.reshape(1, c.q_heads * hd) @ w[p + "wo"]
            h = rms(x, w[p + "mlp_norm"])
            x = x + (F.silu(h @ w[p + "w_gate"]) * (h @ w[p + "w_up"])) @ w[p + "w_down"]
        return rms(x, w["final_norm"]) @ w["lm_head"]

    return step


def build(config, out: Path, layers: int | None = None):
    from poot_mlir.compiler import fuse_attention
    from poot_mlir.compiler.cpu import compile_cpu
    from poot_mlir.examples.decoder import DecoderConfig, build_decoder

    cfg = DecoderConfig(**(config | ({"layers": layers} if layers else {})))
    module = build_decoder(cfg).finish()
    fuse_attention(module)
    start = time.perf_counter()
    path = compile_cpu(module, out)
    return cfg, path, time.perf_counter() - start


def main() -> None:
    import torch

    from poot_mlir.compiler import devices
    from poot_mlir.examples.decoder import init_weights
    from poot_mlir.runtime.cpu import CpuArtifact

    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=devices.CPU.compute_units)
    ap.add_argument("--configs", default="small,large")
    ap.add_argument("--compile-layers", default="8,16,32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    info = machine() | {"torch": torch.__version__, "threads": args.threads}
    info |= ceilings(args.threads)
    print(json.dumps(info), flush=True)
    rows = []
    rng = np.random.default_rng(0)
    for name in [n for n in args.configs.split(",") if n]:
        with tempfile.TemporaryDirectory() as tmp:
            cfg, path, seconds = build(CONFIGS[name], Path(tmp) / "a")
            art = CpuArtifact(path, threads=args.threads)
        weights = init_weights(cfg, 0)
        pos = cfg.cap - 1
        shape = (1, cfg.kv_heads, cfg.cap, cfg.head_dim)
        state = {f"{kind}{l}": rng.standard_normal(shape, dtype=np.float32)
                 for l in range(cfg.layers) for kind in "kv"}
        token = np.array([[7]], np.int32)
        sess = art.session(state)
        feed = {"pos": np.int32(pos), "token": token, **weights}
        caches = {k: torch.from_numpy(v.copy()) for k, v in state.items()}
        step = torch_decoder(cfg, weights)
        with torch.inference_mode():
            ref = step(7, pos, caches).numpy()
            ours = sess.step(feed).named["logits"].reshape(ref.shape)
            err = float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))
            times = interleaved({"poot": lambda: sess.step(feed), "torch": lambda: step(7, pos, caches)},
                                args.rounds, args.reps)
        weight_bytes = sum(v.nbytes for v in weights.values()) - weights["embed"].nbytes
        kv_bytes = cfg.layers * 2 * cfg.kv_heads * cfg.cap * cfg.head_dim * 4
        row = {"config": name, **CONFIGS[name], "compile_s": round(seconds, 2),
               "compile_split": art.manifest.get("compile_seconds"),
               "poot_ms": times["poot"], "torch_ms": times["torch"],
               "speedup": times["torch"] / times["poot"], "max_rel_err": err,
               "weights_mb": weight_bytes / 1e6, "kv_mb": kv_bytes / 1e6,
               "poot_gbps": (weight_bytes + kv_bytes) / times["poot"] / 1e6,
               "torch_gbps": (weight_bytes + kv_bytes) / times["torch"] / 1e6}
        rows.append(row)
        print(json.dumps(row), flush=True)
    os.environ["POOT_CACHE"] = "0"
    compile_rows = []
    for layers in [int(n) for n in args.compile_layers.split(",") if n]:
        with tempfile.TemporaryDirectory() as tmp:
            _, path, seconds = build(CONFIGS["small"], Path(tmp) / "a", layers)
            split = json.loads((path / "manifest.json").read_text())["compile_seconds"]
        compile_rows.append({"layers": layers, "compile_s": round(seconds, 2), **split})
        print(json.dumps(compile_rows[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "steps": rows, "compile": compile_rows},
                                        indent=2))


if __name__ == "__main__":
    main()
