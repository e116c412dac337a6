"""Whole BF16 and F32 decode steps on the H200 (issue 23): poot's compiled
step (every primitive and the attention as kernels, one CUDA graph per step,
KV caches resident and written in place) beside the same step written in
torch (SDPA, caches updated in place) eager and under
torch.compile(mode="reduce-overhead"), on the same weights, in one run.

Two phases, because the H200 has no MLIR:

    # build machine: compile the artifacts (and the float64 oracle's logits
    # of the small verify steps)
    python bench/decode_step_h200.py build bench/artifacts/decode_step [CASE ...]
    # H200 (the runtime imports no MLIR):
    python bench/decode_step_h200.py run bench/artifacts/decode_step [CASE ...] > out.json

Each timed case reports ms/token for poot, torch eager and torch.compile;
the bytes a step must read (the weights, and the KV cache rows up to pos:
the live KV) over the measured copy bandwidth as the floor; poot's fraction
of that floor; and the logits of poot and torch eager against a float64
torch run of the same (bf16-rounded) weights.
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

#: name -> decoder config (examples.decoder.DecoderConfig fields) and the
#: position the step is timed at.
CASES = {
    "small_bf16": (dict(layers=8, d_model=2048, q_heads=32, kv_heads=8, ffn=5632, cap=4096,
                        vocab=32000, dtype="bf16"), 4095),
    "small_f32": (dict(layers=8, d_model=2048, q_heads=32, kv_heads=8, ffn=5632, cap=4096,
                       vocab=32000, dtype="f32"), 4095),
    "llama8b_bf16": (dict(layers=4, d_model=4096, q_heads=32, kv_heads=8, ffn=14336, cap=2048,
                          vocab=128256, dtype="bf16"), 2047),
    "llama8b_f32": (dict(layers=4, d_model=4096, q_heads=32, kv_heads=8, ffn=14336, cap=2048,
                         vocab=128256, dtype="f32"), 2047),
    # Batched decode: 16 sequences in lockstep, every weight read once for
    # all of them (the serving shape).
    "small_bf16_b16": (dict(layers=8, d_model=2048, q_heads=32, kv_heads=8, ffn=5632, cap=1024,
                            vocab=32000, dtype="bf16", batch=16), 1023),
    "llama8b_bf16_b16": (dict(layers=4, d_model=4096, q_heads=32, kv_heads=8, ffn=14336,
                              cap=1024, vocab=128256, dtype="bf16", batch=16), 1023),
    "llama8b_f32_b16": (dict(layers=4, d_model=4096, q_heads=32, kv_heads=8, ffn=14336,
                             cap=1024, vocab=128256, dtype="f32", batch=16), 1023),
}
#: Small steps checked token by token against the float64 oracle of the
#: same weights (computed at build time with the numpy oracle).
VERIFY = {
    "verify_bf16": dict(layers=2, d_model=256, q_heads=8, kv_heads=2, ffn=512, cap=64, vocab=512,
                        dtype="bf16"),
    "verify_f32": dict(layers=2, d_model=256, q_heads=8, kv_heads=2, ffn=512, cap=64, vocab=512,
                       dtype="f32"),
    # 12 rows: every matmul on tensor cores (poot-gpu-mma-matmuls), a
    # partly filled m16 tile.
    "verify_bf16_b12": dict(layers=2, d_model=256, q_heads=8, kv_heads=2, ffn=512, cap=64,
                            vocab=512, dtype="bf16", batch=12),
}
VERIFY_STEPS = 8


def build(out: Path, names: list[str]) -> None:
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

    for name in names:
        fields = VERIFY[name] if name in VERIFY else CASES[name][0]
        config = DecoderConfig(**fields)
        tracer = build_decoder(config)
        t0 = time.perf_counter()
        compile_gpu(tracer.finish(), _device(), out / name)
        print(f"{name}: compiled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        meta = {**asdict(config), "weights": {k: list(v) for k, v in weight_shapes(config).items()}}
        (out / name / "config.json").write_text(json.dumps(meta))
        if name in VERIFY:
            weights = init_weights(config, 0)
            session = oracle.Session(tracer.finish(), init_state(config), reference=True)
            token = np.arange(1, config.batch + 1, dtype=np.int32).reshape(config.batch, 1)
            tokens, logits = [], []
            for step in range(VERIFY_STEPS):
                res = session.step({"pos": np.int32(step), "token": token, **weights})
                logits.append(np.asarray(res.named["logits"], np.float64))
                tokens.append(token)
                token = np.argmax(res.named["logits"], axis=-1).astype(np.int32).reshape(-1, 1)
            np.savez(out / name / "reference.npz", tokens=np.array(tokens), logits=np.stack(logits),
                     **{f"w_{k}": np.asarray(v).view(np.uint16) if v.dtype.itemsize == 2 else v
                        for k, v in weights.items()})


def _device():
    """SM_90, with the changes `$POOT_BENCH_DEVICE` (JSON) names: a baseline
    built with one knob off, e.g. '{"warp_reductions": false}'."""
    import os

    from poot_mlir.compiler import devices

    return devices.SM_90.with_limits(**json.loads(os.environ.get("POOT_BENCH_DEVICE", "{}")))


def _np_dtype(name: str):
    import ml_dtypes

    return {"bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32)}[name]


def _torch_dtype(name: str):
    import torch

    return {"bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}[name]


def verify(out: Path, name: str) -> dict:
    """The step, token by token, against the float64 oracle's logits."""
    from poot_mlir.runtime.program import ProgramArtifact

    config = json.loads((out / name / "config.json").read_text())
    dtype = _np_dtype(config["dtype"])
    ref = np.load(out / name / "reference.npz")
    weights = {k[2:]: (ref[k].view(dtype) if dtype.itemsize == 2 else ref[k])
               for k in ref.files if k.startswith("w_")}
    hd = config["d_model"] // config["q_heads"]
    art = ProgramArtifact(out / name, backend="cuda")
    batch = config.get("batch", 1)
    state = {f"{kind}{l}": np.zeros((batch, config["kv_heads"], config["cap"], hd), dtype)
             for l in range(config["layers"]) for kind in "kv"}
    sess = art.session(state, constants=weights)
    worst, agree = 0.0, 0
    for step, token in enumerate(ref["tokens"]):
        token = np.asarray(token, np.int32).reshape(batch, 1)
        got = sess.step({"pos": np.int32(step), "token": token}).named["logits"]
        want = ref["logits"][step].reshape(batch, -1)
        got = np.asarray(got, np.float64).reshape(batch, -1)
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
        agree += int((np.argmax(got, -1) == np.argmax(want, -1)).sum())
    art.close()
    bound = 2e-2 if config["dtype"] == "bf16" else 1e-5
    return {"case": name, "steps": int(len(ref["tokens"])), "rows": batch,
            "max_rel_err_vs_float64": worst, "argmax_agree": agree, "bound": bound, "ok": worst <= bound}


def torch_decoder(config, w, n_rows=1):
    """The decoder of examples.decoder in torch, caches updated in place,
    computing in w's dtype (eager semantics: 16-bit matmuls accumulate in
    f32 inside cuBLAS). A module whose weights and caches are buffers, so
    torch.compile(mode="reduce-overhead") may capture it as a CUDA graph
    (mutated module buffers are static inputs; mutated closure tensors
    would make inductor skip the graph)."""
    import torch

    dev = next(iter(w.values())).device
    dtype = next(iter(w.values())).dtype
    hd = config["d_model"] // config["q_heads"]
    n_rep = config["q_heads"] // config["kv_heads"]
    eps = config["eps"]
    layers = config["layers"]

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k, v in w.items():
                self.register_buffer(k.replace(".", "_"), v, persistent=False)
            for l in range(layers):
                for kind in "kv":
                    self.register_buffer(f"{kind}{l}", torch.zeros(
                        n_rows, config["kv_heads"], config["cap"], hd, device=dev, dtype=dtype),
                        persistent=False)
            inv = 1.0 / config["rope_base"] ** (
                torch.arange(0, hd, 2, dtype=torch.float64, device=dev) / hd)
            self.register_buffer("inv", inv.to(dtype), persistent=False)
            self.register_buffer("key_pos", torch.arange(config["cap"], device=dev), persistent=False)

        def forward(self, token, pos):
            def norm(x, g):
                return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g

            def rope(x, cos, sin):
                h = x.shape[-1] // 2
                return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin

            W = lambda name: getattr(self, name.replace(".", "_"))  # noqa: E731
            x = self.embed[token].view(n_rows, 1, -1)
            angle = pos.to(dtype) * self.inv
            angle = torch.cat([angle, angle])
            cos, sin = torch.cos(angle), torch.sin(angle)
            mask = torch.where(self.key_pos <= pos, 0.0, float("-inf")).to(dtype).view(1, 1, 1, -1)
            for l in range(layers):
                p = f"l{l}."
                h = norm(x, W(p + "attn_norm"))
                q = rope((h @ W(p + "wq")).view(n_rows, 1, -1, hd).transpose(1, 2), cos, sin)
                k = rope((h @ W(p + "wk")).view(n_rows, 1, -1, hd).transpose(1, 2), cos, sin)
                v = (h @ W(p + "wv")).view(n_rows, 1, -1, hd).transpose(1, 2)
                kc, vc = getattr(self, f"k{l}"), getattr(self, f"v{l}")
                kc.index_copy_(2, pos.view(1), k)
                vc.index_copy_(2, pos.view(1), v)
                a = torch.nn.functional.scaled_dot_product_attention(
                    q, kc, vc, attn_mask=mask, enable_gqa=n_rep > 1)
                x = x + a.transpose(1, 2).reshape(n_rows, 1, -1) @ W(p + "wo")
                h = norm(x, W(p + "mlp_norm"))
                g = h @ W(p + "w_gate")
                x = x + ((g * torch.sigmoid(g)) * (h @ W(p + "w_up"))) @ W(p + "w_down")
            return norm(x, self.final_norm) @ self.lm_head

    model = Decoder()
    return model, None


def _weights(config, dtype_name: str, seed: int):
    """Random weights on the GPU (linear layers ~ 1/sqrt(fan-in), norms ~ 1)."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    out = {}
    for name, shape in config["weights"].items():
        w = torch.randn(*shape, generator=gen, device="cuda", dtype=torch.float32)
        if name.endswith("norm"):
            w = 1 + 0.1 * w
        elif name != "embed":
            w = w / shape[0] ** 0.5
        out[name] = w.to(_torch_dtype(dtype_name)).contiguous()
    return out


def _copy_bandwidth() -> float:
    """Measured device copy bandwidth, bytes/s (read + write of 4 GiB)."""
    import torch

    n = 1 << 29
    a = torch.empty(n, dtype=torch.float64, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        b.copy_(a)
    end.record()
    torch.cuda.synchronize()
    sec = start.elapsed_time(end) / 1e3 / 10
    return 2 * a.numel() * 8 / sec


def _ms(fn, n: int = 20) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


def _baseline(name: str, state: dict, w: dict, inputs: dict):
    """The same case from `$POOT_BENCH_BASELINE` (artifacts built with another
    device setting, `_device`), timed on the same weights right after poot's:
    (ms, launches, logits), or None."""
    import os

    from poot_mlir.runtime.program import ProgramArtifact

    folder = os.environ.get("POOT_BENCH_BASELINE")
    if not folder or not (Path(folder) / name).is_dir():
        return None
    art = ProgramArtifact(Path(folder) / name, backend="cuda")
    launches = sum(1 for c in art.programs[art.signature.name]["commands"] if "launch" in c)
    sess = art.session({k: v.copy() for k, v in state.items()}, constants=w)
    ms = _ms(lambda: sess.step(inputs, device_outputs=True))
    logits = np.asarray(sess.step(inputs).named["logits"], np.float64).reshape(-1)
    art.close()
    return ms, launches, logits


def time_case(out: Path, name: str, bandwidth: float) -> dict:
    import torch

    from poot_mlir.runtime.program import ProgramArtifact

    config = json.loads((out / name / "config.json").read_text())
    pos = CASES[name][1]
    dtype = config["dtype"]
    w = _weights(config, dtype, seed=0)
    weight_bytes = sum(t.numel() * t.element_size() for t in w.values())
    # Read per step: every weight but the embedding table (one row), and the
    # live KV rows.
    hd = config["d_model"] // config["q_heads"]
    rows = config.get("batch", 1)
    esize = w["lm_head"].element_size()
    live_kv = 2 * rows * config["layers"] * config["kv_heads"] * (pos + 1) * hd * esize
    step_bytes = weight_bytes - w["embed"].numel() * esize + live_kv
    floor_ms = step_bytes / bandwidth * 1e3

    art = ProgramArtifact(out / name, backend="cuda")
    launches = sum(1 for c in art.programs[art.signature.name]["commands"] if "launch" in c)
    state = {f"{kind}{l}": np.zeros((rows, config["kv_heads"], config["cap"], hd), _np_dtype(dtype))
             for l in range(config["layers"]) for kind in "kv"}
    sess = art.session(state, constants=w)
    # The timed step reads pos + 1 cache rows whatever they hold (zeros and
    # the new row): the same bytes as a filled cache.
    tokens = (7 + 131 * np.arange(rows)) % config["vocab"]
    inputs = {"pos": np.int32(pos), "token": tokens.reshape(rows, 1).astype(np.int32)}
    poot_ms = _ms(lambda: sess.step(inputs, device_outputs=True))
    logits = np.asarray(sess.step(inputs).named["logits"], np.float64).reshape(-1)
    art.close()
    del sess, art
    base = _baseline(name, state, w, inputs)

    tok, tpos = torch.tensor(tokens, device="cuda"), torch.tensor(pos, device="cuda")
    row = {"case": name, "config": {k: v for k, v in config.items() if k != "weights"},
           "pos": pos, "rows": rows, "launches_per_step": launches, "weight_GB": weight_bytes / 1e9,
           "live_kv_GB": live_kv / 1e9, "step_GB": step_bytes / 1e9,
           "copy_TBps": bandwidth / 1e12, "floor_ms": floor_ms, "poot_ms": poot_ms}
    with torch.no_grad():
        # float64 reference on the same (rounded) weights.
        w64 = {k: v.double() for k, v in w.items()}
        step64, _ = torch_decoder(config, w64, rows)
        exact = step64(tok, tpos).double().reshape(-1).cpu().numpy()
        del w64, step64
        torch.cuda.empty_cache()
        step, _ = torch_decoder(config, w, rows)
        eager_logits = step(tok, tpos).double().reshape(-1).cpu().numpy()
        row["torch_eager_ms"] = _ms(lambda: step(tok, tpos))
        try:
            cstep = torch.compile(step, mode="reduce-overhead")
            row["torch_compile_ms"] = _ms(lambda: cstep(tok, tpos))
        except Exception as error:  # record why, keep the other rows
            row["torch_compile_ms"] = None
            row["torch_compile_error"] = repr(error)[:300]
    scale = float(np.abs(exact).max())
    if base:
        row["poot_base_ms"], row["poot_base_launches"] = base[0], base[1]
        row["poot_base_logits_rel_err"] = float(np.abs(base[2] - exact).max() / scale)
    row["poot_logits_rel_err"] = float(np.abs(logits - exact).max() / scale)
    row["eager_logits_rel_err"] = float(np.abs(eager_logits - exact).max() / scale)
    row["poot_argmax_ok"] = bool(np.array_equal(np.argmax(logits.reshape(rows, -1), -1),
                                                np.argmax(exact.reshape(rows, -1), -1)))
    row["poot_TBps"] = step_bytes / poot_ms / 1e9
    row["poot_fraction_of_floor"] = floor_ms / poot_ms
    if row.get("torch_compile_ms"):
        row["poot_vs_compile"] = row["torch_compile_ms"] / poot_ms
    row["poot_vs_eager"] = row["torch_eager_ms"] / poot_ms
    return row


def run(out: Path, names: list[str]) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    report: dict = {"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(),
                    "torch": torch.__version__, "verify": [], "steps": []}
    for name in [n for n in names if n in VERIFY]:
        report["verify"].append(verify(out, name))
        print(json.dumps(report["verify"][-1]), file=sys.stderr, flush=True)
    bandwidth = _copy_bandwidth()
    report["copy_TBps"] = bandwidth / 1e12
    for name in [n for n in names if n in CASES]:
        row = time_case(out, name, bandwidth)
        report["steps"].append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v)
                          for k, v in row.items() if k != "config"}), file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    print(json.dumps(report, indent=1))


def profile(out: Path, name: str) -> None:
    """One step launched command by command (no graph), for a profiler:
    `ncu --metrics gpu__time_duration.sum --csv python ... profile DIR CASE`."""
    import torch

    from poot_mlir.runtime.program import ProgramArtifact

    config = json.loads((out / name / "config.json").read_text())
    pos = CASES[name][1]
    hd = config["d_model"] // config["q_heads"]
    w = _weights(config, config["dtype"], seed=0)
    art = ProgramArtifact(out / name, backend="cuda")
    batch = config.get("batch", 1)
    state = {f"{kind}{l}": np.zeros((batch, config["kv_heads"], config["cap"], hd),
                                    _np_dtype(config["dtype"]))
             for l in range(config["layers"]) for kind in "kv"}
    sess = art.session(state, constants=w, graph=False)
    sess.step({"pos": np.int32(pos), "token": np.full((batch, 1), 7, np.int32)},
              device_outputs=True)
    torch.cuda.synchronize()


if __name__ == "__main__":
    what, folder = sys.argv[1], Path(sys.argv[2])
    chosen = sys.argv[3:] or [*VERIFY, *CASES]
    if what == "build":
        build(folder, chosen)
    elif what == "profile":
        profile(folder, chosen[0])
    else:
        run(folder, chosen)
