"""Whole decoder steps on the H200: poot's compiled step (every primitive and
the attention as kernels, KV caches resident and written in place) beside
torch eager and torch.compile on the same weights, F32.

Two phases, because the H200 has no MLIR:

    # build machine: compile the artifacts, compute the float64 reference
    python bench/step_h200.py build bench/results/step_h200
    # H200 (runtime imports no MLIR):
    python bench/step_h200.py run bench/results/step_h200 > out.json

`build` writes two artifacts: `verify/` (a 2-layer decoder, cap 64, with
its weights and the float64 oracle's logits for 8 greedy steps) and
`llama/` (8 layers, d_model 4096, 32/8 heads of 128, ffn 11008, cap 8192,
vocab 32000). `run` checks `verify/` step by step against the oracle's
logits, then times `llama/` (ms/token at pos 4096) beside the same decoder
in torch eager and torch.compile(mode="reduce-overhead"), and the paged
decode step against the pool size.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "python"))  # the H200 has no build: the runtime is pure Python

LLAMA = dict(layers=8, d_model=4096, q_heads=32, kv_heads=8, ffn=11008, cap=8192, vocab=32000)
VERIFY = dict(layers=2, cap=64)


def build(out: Path) -> None:
    from poot_mlir import oracle
    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.examples.decoder import (
        DecoderConfig,
        build_decoder,
        init_state,
        init_weights,
        weight_shapes,
    )

    for name, fields in (("verify", VERIFY), ("llama", LLAMA)):
        config = DecoderConfig(**fields)
        tracer = build_decoder(config)
        t0 = time.perf_counter()
        compile_gpu(tracer.finish(), devices.SM_90, out / name)
        print(f"{name}: compiled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        # The weight shapes travel with the artifact (the H200 has no tracer).
        fields = {**asdict(config), "weights": {k: list(v) for k, v in weight_shapes(config).items()}}
        (out / name / "config.json").write_text(json.dumps(fields))
        if name == "verify":
            weights = init_weights(config, 0)
            session = oracle.Session(tracer.finish(), init_state(config), reference=True)
            token, tokens, logits = 1, [], []
            for step in range(8):
                res = session.step({"pos": np.int32(step), "token": np.array([[token]], np.int32), **weights})
                logits.append(res.named["logits"])
                tokens.append(token)
                token = int(np.argmax(res.named["logits"]))
            np.savez(out / name / "reference.npz", tokens=np.array(tokens), logits=np.stack(logits),
                     **{f"w_{k}": v for k, v in weights.items()})


def torch_decoder(config, weights, device):
    import torch

    w = {k: torch.from_numpy(v).to(device) for k, v in weights.items()}
    hd = config["d_model"] // config["q_heads"]
    inv = torch.from_numpy(
        (1.0 / 10000.0 ** (np.arange(0, hd, 2, dtype=np.float64) / hd)).astype(np.float32)).to(device)
    n_rep = config["q_heads"] // config["kv_heads"]
    caches = {f"{kind}{l}": torch.zeros(1, config["kv_heads"], config["cap"], hd, device=device)
              for l in range(config["layers"]) for kind in "kv"}
    key_pos = torch.arange(config["cap"], device=device)

    def norm(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g

    def rope(x, cos, sin):
        h = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin

    def step(token, pos):
        x = w["embed"][token].view(1, 1, -1)
        angle = pos.float() * inv
        angle = torch.cat([angle, angle])
        cos, sin = torch.cos(angle), torch.sin(angle)
        mask = torch.where(key_pos <= pos, 0.0, float("-inf")).view(1, 1, 1, -1)
        for l in range(config["layers"]):
            p = f"l{l}."
            h = norm(x, w[p + "attn_norm"])
            q = rope((h @ w[p + "wq"]).view(1, 1, -1, hd).transpose(1, 2), cos, sin)
            k = rope((h @ w[p + "wk"]).view(1, 1, -1, hd).transpose(1, 2), cos, sin)
            v = (h @ w[p + "wv"]).view(1, 1, -1, hd).transpose(1, 2)
            kc, vc = caches[f"k{l}"], caches[f"v{l}"]
            kc.index_copy_(2, pos.view(1), k)
            vc.index_copy_(2, pos.view(1), v)
            a = torch.nn.functional.scaled_dot_product_attention(
                q, kc.repeat_interleave(n_rep, 1), vc.repeat_interleave(n_rep, 1), attn_mask=mask)
            x = x + a.transpose(1, 2).reshape(1, 1, -1) @ w[p + "wo"]
            h = norm(x, w[p + "mlp_norm"])
            g = h @ w[p + "w_gate"]
            x = x + ((g * torch.sigmoid(g)) * (h @ w[p + "w_up"])) @ w[p + "w_down"]
        return norm(x, w["final_norm"]) @ w["lm_head"]

    return step


def run(out: Path, verify_only: bool = False) -> None:
    import torch

    from poot_mlir.runtime.program import ProgramArtifact

    torch.backends.cuda.matmul.allow_tf32 = False
    report: dict = {"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(),
                    "torch": torch.__version__}

    # 1. Verify the whole step against the float64 oracle (computed at build).
    ref = np.load(out / "verify" / "reference.npz")
    weights = {k[2:]: ref[k] for k in ref.files if k.startswith("w_")}
    config = json.loads((out / "verify" / "config.json").read_text())
    art = ProgramArtifact(out / "verify", backend="cuda")
    hd = config["d_model"] // config["q_heads"]
    state = {f"{kind}{l}": np.zeros((1, config["kv_heads"], config["cap"], hd), np.float32)
             for l in range(config["layers"]) for kind in "kv"}
    sess = art.session(state, constants=weights)
    worst = 0.0
    for step, token in enumerate(ref["tokens"]):
        got = sess.step({"pos": np.int32(step), "token": np.array([[token]], np.int32)}).named["logits"]
        want = ref["logits"][step]
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    report["verify"] = {"steps": int(len(ref["tokens"])), "max_rel_err_vs_float64": worst,
                        "ok": worst < 1e-4}
    print(json.dumps(report["verify"]), file=sys.stderr, flush=True)
    art.close()
    if verify_only:
        return

    # 2. The Llama-like step: poot vs torch eager vs torch.compile.
    config = json.loads((out / "llama" / "config.json").read_text())
    rng = np.random.default_rng(0)
    shapes = {k: tuple(v) for k, v in config.pop("weights").items()}
    weights = {}
    for name, shape in shapes.items():
        scale = 1.0 if name.endswith("norm") or name == "embed" else 1.0 / np.sqrt(shape[0])
        w = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        weights[name] = (w * np.float32(0.1) + 1).astype(np.float32) if name.endswith("norm") else w
    weight_bytes = sum(v.nbytes for v in weights.values())
    hd = config["d_model"] // config["q_heads"]
    art = ProgramArtifact(out / "llama", backend="cuda")
    state = {f"{kind}{l}": np.zeros((1, config["kv_heads"], config["cap"], hd), np.float32)
             for l in range(config["layers"]) for kind in "kv"}
    launches = sum(1 for c in art.programs[art.signature.name]["commands"] if "launch" in c)
    pos = 4096
    inputs = {"pos": np.int32(pos), "token": np.array([[7]], np.int32)}
    n = 10

    def per_step_ms(sess) -> float:
        for _ in range(3):
            sess.step(inputs)
        t0 = time.perf_counter()
        for _ in range(n):
            sess.step(inputs)
        return (time.perf_counter() - t0) / n * 1e3

    # Launched command by command, then replayed as one CUDA graph (the
    # session's default): step() wall time, inputs written and logits read.
    sess = art.session(state, constants=weights, graph=False)
    launches_ms = per_step_ms(sess)
    del sess
    sess = art.session(state, constants=weights)
    poot_ms = per_step_ms(sess)
    logits = sess.step(inputs).named["logits"]
    ((_, graph, _),) = sess._built.values()
    graph_device_ms = art.device.backend.time(graph.replay, iters=n)

    dev = torch.device("cuda")
    step = torch_decoder(config, weights, dev)
    tok, tpos = torch.tensor([7], device=dev), torch.tensor(pos, device=dev)
    with torch.no_grad():
        ref_logits = step(tok, tpos).cpu().numpy()
        for _ in range(3):
            step(tok, tpos)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            step(tok, tpos)
        torch.cuda.synchronize()
        eager_ms = (time.perf_counter() - t0) / n * 1e3
        compiled_ms = None
        try:
            cstep = torch.compile(step, mode="reduce-overhead")
            for _ in range(4):
                cstep(tok, tpos)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                cstep(tok, tpos)
            torch.cuda.synchronize()
            compiled_ms = (time.perf_counter() - t0) / n * 1e3
        except Exception as error:  # record why, keep the other rows
            report["torch_compile_error"] = repr(error)[:500]
    agree = float(np.abs(logits.reshape(-1) - ref_logits.reshape(-1)).max() / np.abs(ref_logits).max())
    report["llama"] = {
        "config": config, "pos": pos, "launches_per_step": launches,
        "weight_GB": weight_bytes / 1e9,
        "poot_ms_per_token": poot_ms, "poot_launches_ms": launches_ms,
        "poot_graph_device_ms": graph_device_ms,
        "torch_eager_ms": eager_ms, "torch_compile_ms": compiled_ms,
        "poot_weight_GBps": weight_bytes / poot_ms / 1e6,
        "eager_weight_GBps": weight_bytes / eager_ms / 1e6,
        "poot_vs_torch_logits_rel_diff": agree,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    what, folder = sys.argv[1], Path(sys.argv[2])
    build(folder) if what == "build" else run(folder, verify_only=what == "verify")
