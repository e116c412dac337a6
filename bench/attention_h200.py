"""poot attention kernels vs torch SDPA (F32) and the unfused eager chain, on one GPU.

    PYTHONPATH=python python bench/attention_h200.py [--artifacts bench/artifacts]
        [--only SUBSTR] [--json FILE] [--prefill-limit-s 60]

Runs on the GPU machine (torch + cuda-python, no MLIR). For each bench form of
bench/cases.py (decode B=1 Hq=32 Hkv=8 D=128 at Lk 4k/32k/128k, decode B=16
Lk=8k, causal prefill L=2k and 8k, the wide-head decodes: absorbed MLA Hq 128
(and 16) on one KV head with key 512 + 64 and value 512, MQA Hq 32 on one KV
head; SDPA and the eager chain see the split key concatenated, built once
outside the timing) it:

- checks every poot variant's output against a float64 torch reference on the
  device (‖out − ref‖/‖ref‖);
- times poot (one CUDA graph replaying the step over several input sets, so
  small shapes rotate through more than the L2), torch SDPA (enable_gqa, F32;
  is_causal for prefill) and the eager chain (repeat_kv, matmul, scale, +mask,
  max/sub/exp/sum/div, matmul), each as the median of several timed rounds
  with CUDA events;
- reports time, the K/V read bandwidth (unique K/V bytes / time) against the
  copy ceiling measured in the same run, TFLOP/s for prefill (useful causal
  FLOPs: 2·B·Hq·L(L+1)/2·(Dk+Dv)), and SDPA time / poot time.

The poot variants are the same form planned for different device descriptions
(bench/build_artifacts.py: more splits through compute_units, 32 lanes through
workgroup_memory): planner inputs, not code changes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

import cases  # noqa: E402

L2_ROTATE_BYTES = 256 << 20  # rotate input sets until this many bytes (> 4x the 60 MB L2)


def median_ms_torch(torch, fn, rounds: int, inner: int) -> float:
    """Median over `rounds` of (events around `inner` calls) / inner."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    return float(np.median(times))


def ceilings(torch) -> dict:
    n = 1 << 29  # 2 GiB of float32
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = median_ms_torch(torch, lambda: dst.copy_(src), rounds=5, inner=5)
    sum_ms = median_ms_torch(torch, lambda: src.sum(), rounds=5, inner=5)
    nbytes = n * 4
    out = {"copy_ms": copy_ms, "copy_TBps": 2 * nbytes / copy_ms / 1e9,
           "read_sum_ms": sum_ms, "read_TBps": nbytes / sum_ms / 1e9}
    return out


def torch_inputs(torch, form: cases.Form, rng) -> dict:
    """Fresh inputs drawn on the device (the distributions of cases.inputs)."""
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(int(rng.integers(1 << 62)))
    out = {}
    for key, (shape, dt) in form.shapes().items():
        if key == "mask":
            continue
        out[key] = torch.randn(shape, device=dev, generator=g, dtype=torch.float32)
    if form.mask == "causal":
        Lq, Lk = form.q_len, form.key_len
        rows = torch.arange(Lq, device=dev)[:, None]
        cols = torch.arange(Lk, device=dev)[None, :]
        m = torch.zeros((Lq, Lk), device=dev)
        m.masked_fill_(cols > rows + (Lk - Lq), float("-inf"))
        out["mask"] = m[None, None].contiguous()
    if form.shared_width:
        # The split key as SDPA and the eager chain see it: one key of width
        # Dk + Ds per KV head (built once, outside the timed calls).
        ks = out["k_shared"].expand(form.batch, form.kv_heads, form.key_len, form.shared_width)
        out["_k_full"] = torch.cat([out["k"], ks], dim=-1).contiguous()
    if form.causal:
        # The causal kind has no mask input: the eager chain and the float64
        # reference read this one ("_" inputs are not bound to poot).
        Lq, Lk = form.q_len, form.key_len
        m = torch.zeros((Lq, Lk), device=dev)
        m.masked_fill_(torch.arange(Lk, device=dev)[None, :] > torch.arange(Lq, device=dev)[:, None] + (Lk - Lq),
                       float("-inf"))
        out["_causal_mask"] = m[None, None].contiguous()
    return out


def reference64(torch, form: cases.Form, t: dict):
    """float64 attention on the device, chunked over query heads."""
    q, k, v = t["q"].double(), t.get("_k_full", t["k"]).double(), t["v"].double()
    n_rep = form.q_heads // form.kv_heads
    outs = []
    for h in range(form.q_heads):
        g = h // n_rep
        s = (q[:, h] @ k[:, g].transpose(-1, -2)) * form.scale
        m = t.get("mask", t.get("_causal_mask"))
        if m is not None:
            s = s + m[:, 0 if m.shape[1] == 1 else h].double()
        outs.append(torch.softmax(s, dim=-1) @ v[:, g])
    return torch.stack(outs, dim=1)


def rel_err(torch, out, ref) -> float:
    return float(torch.linalg.norm((out.double() - ref).flatten()) / torch.linalg.norm(ref.flatten()))


def sdpa_fn(torch, form, t, out_holder):
    F = torch.nn.functional
    causal = form.mask == "causal" or form.causal

    def fn():
        out_holder[0] = F.scaled_dot_product_attention(
            t["q"], t.get("_k_full", t["k"]), t["v"], scale=form.scale, is_causal=causal, enable_gqa=True)
    return fn


def eager_fn(torch, form, t, out_holder):
    n_rep = form.q_heads // form.kv_heads

    def repeat_kv(x):
        b, h, l, d = x.shape
        return x[:, :, None].expand(b, h, n_rep, l, d).reshape(b, h * n_rep, l, d)

    def fn():
        k = repeat_kv(t.get("_k_full", t["k"]))
        v = repeat_kv(t["v"])
        s = torch.matmul(t["q"], k.transpose(-1, -2))
        s = s * form.scale
        if "mask" in t or "_causal_mask" in t:
            s = s + t.get("mask", t.get("_causal_mask"))
        m = s.amax(dim=-1, keepdim=True)
        ex = torch.exp(s - m)
        p = ex / ex.sum(dim=-1, keepdim=True)
        out_holder[0] = torch.matmul(p, v)
    return fn


def bench_form(torch, cuda_mod, device, root: Path, index: dict, name: str, form: cases.Form,
               rng, args) -> dict:
    from poot_mlir.runtime.gpu import GpuArtifact

    backend = device.backend

    res: dict = {"form": name, "shape": {k: list(v[0]) for k, v in form.shapes().items()},
                 "kv_bytes": form.kv_bytes(), "variants": {}}
    per_set = form.kv_bytes()
    prefill = form.q_len > 1
    # Decode streams K/V once: rotate input sets so that small shapes are not
    # served from the L2. Prefill re-reads K/V per query row by design.
    n_sets = 1 if (prefill or per_set >= L2_ROTATE_BYTES) else min(8, math.ceil(L2_ROTATE_BYTES / per_set))
    res["input_sets"] = n_sets
    sets = [torch_inputs(torch, form, rng) for _ in range(n_sets)]
    ref = reference64(torch, form, sets[0])
    torch.cuda.synchronize()
    flops = 0.0
    if prefill:
        L = form.q_len
        flops = 2.0 * form.batch * form.q_heads * (L * (L + 1) / 2) * (form.key_width + form.value_width)
        res["useful_flops"] = flops

    def summarize(ms: float) -> dict:
        d = {"ms": ms, "kv_TBps": per_set / ms / 1e9}
        if prefill:
            d["TFLOPs"] = flops / ms / 1e9
        return d

    # --- poot variants -----------------------------------------------------------
    keys = [k for k in index if k.startswith(f"bench/{name}@")]
    for key in keys:
        entry = index[key]
        vname = key.split("@", 1)[1]
        v: dict = {"request": entry.get("request")}
        res["variants"][vname] = v
        if "error" in entry:
            v["error"] = entry["error"]
            continue
        try:
            art = GpuArtifact(root / entry["path"], backend=device)
            outs = [torch.full(form.out_shape, float("nan"), device="cuda") for _ in sets]
            steps = [cuda_mod.prepare(art, {k: t[k] for k in t if not k.startswith("_")}, outputs={"out": o}, check_ranges=False)
                     for t, o in zip(sets, outs)]
            t0 = time.perf_counter()
            steps[0].launch()
            backend.synchronize()
            first_s = time.perf_counter() - t0
            v["first_run_s"] = first_s
            v["rel_err"] = rel_err(torch, outs[0], ref)
            v["kernels"] = {k[1]: kk.attributes for k, kk in art._kernels.items()}
            if prefill and first_s > args.prefill_limit_s:
                v["note"] = f"one run took {first_s:.1f} s; timed once"
                v.update(summarize(first_s * 1e3))
                continue
            slow = first_s > 0.5
            iters = 2 if slow else (10 if first_s > 0.05 else 30)
            graph = backend.capture(lambda s: [st.launch(s) for st in steps])
            ms = graph.time(iters=iters, warmup=0 if slow else 1) / n_sets
            v.update(summarize(ms))
            if not slow:
                v["enqueue_ms"] = steps[0].time(iters=iters, warmup=1)
            if len(steps[0].sequence) > 1 and not slow:
                v["launch_ms"] = [p.time(iters=iters, warmup=1) for p in steps[0].sequence.parts()]
            # Bitwise repeatability across the timed replays (a moving result is a race).
            before = outs[0].clone()
            graph.replay()
            backend.synchronize()
            v["repeat_bitwise"] = bool(torch.equal(before.view(torch.int32), outs[0].view(torch.int32)))
            graph.close()
        except Exception as exc:
            v["error"] = f"{type(exc).__name__}: {exc}"
            v["trace"] = traceback.format_exc()
        print(f"  poot {vname:16s} {v.get('ms', float('nan')):9.3f} ms  "
              f"{v.get('kv_TBps', float('nan')):6.3f} TB/s  rel={v.get('rel_err', float('nan')):.1e} "
              f"{v.get('error', '')}", flush=True)

    # --- torch -------------------------------------------------------------------
    for label, maker in (("sdpa", sdpa_fn), ("eager", eager_fn)):
        holder = [None]
        fns = [maker(torch, form, t, holder) for t in sets]
        d: dict = {}
        try:
            fns[0]()
            torch.cuda.synchronize()
            d["rel_err"] = rel_err(torch, holder[0], ref)
            t0 = time.perf_counter()
            fns[0]()
            torch.cuda.synchronize()
            once = time.perf_counter() - t0
            rounds, inner = (3, 1) if once > 0.5 else (7, 3)

            def all_sets():
                for f in fns:
                    f()
            ms = median_ms_torch(torch, all_sets, rounds=rounds, inner=inner) / n_sets
            d.update(summarize(ms))
        except Exception as exc:
            d["error"] = f"{type(exc).__name__}: {exc}"
        holder[0] = None
        torch.cuda.empty_cache()
        res[label] = d
        print(f"  {label:21s} {d.get('ms', float('nan')):9.3f} ms  {d.get('kv_TBps', float('nan')):6.3f} TB/s  "
              f"rel={d.get('rel_err', float('nan')):.1e} {d.get('error', '')}", flush=True)
    del sets, ref
    torch.cuda.empty_cache()
    return res


def table(results: dict) -> str:
    ceil = results["ceilings"]["copy_TBps"]
    lines = [
        "| case | poot (default plan) | K/V TB/s | best poot plan | K/V TB/s | SDPA F32 | eager | SDPA / poot (default, best) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["forms"]:
        var = r["variants"]
        d = var.get("default", {})
        timed = {k: x for k, x in var.items() if "ms" in x}
        best_k = min(timed, key=lambda k: timed[k]["ms"]) if timed else None
        b = timed.get(best_k, {}) if best_k else {}
        sd, eg = r.get("sdpa", {}), r.get("eager", {})

        def ms(x):
            return f"{x['ms']:.3f} ms" if "ms" in x else x.get("error", "—")[:40]

        def bw(x):
            if "ms" not in x:
                return "—"
            s = f"{x['kv_TBps']:.3f} ({100 * x['kv_TBps'] / ceil:.0f}%)"
            if "TFLOPs" in x:
                s += f", {x['TFLOPs']:.2f} TFLOP/s"
            return s

        ratio = "—"
        if "ms" in sd and "ms" in d and "ms" in b:
            ratio = f"{sd['ms'] / d['ms']:.2f}x, {sd['ms'] / b['ms']:.2f}x"
        lines.append(f"| {r['form']} | {ms(d)} | {bw(d)} | {best_k} {ms(b)} | {bw(b)} | {ms(sd)} | {ms(eg)} | {ratio} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", default=str(HERE / "artifacts"))
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--prefill-limit-s", type=float, default=20.0)
    args = ap.parse_args()

    import torch

    from poot_mlir.runtime import cuda as cuda_mod
    from poot_mlir.runtime.gpu import make_device

    root = Path(args.artifacts)
    index = json.loads((root / "index.json").read_text())
    device = make_device("cuda")  # shared by every artifact
    backend = device.backend
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    props = backend.properties()
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,"
                              "power.draw,temperature.gpu", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as exc:
        smi = str(exc)
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": props, "nvidia_smi": smi, "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "forms": [],
    }
    print(f"{results['date']} {props['name']} ({smi}) torch {torch.__version__}", flush=True)
    results["ceilings"] = ceilings(torch)
    torch.cuda.empty_cache()
    print("ceilings:", json.dumps(results["ceilings"]), flush=True)
    for name, form in cases.bench_forms():
        if args.only and args.only not in name:
            continue
        print(f"{name}:", flush=True)
        try:
            results["forms"].append(bench_form(torch, cuda_mod, device, root, index, name, form, rng, args))
        except Exception as exc:
            results["forms"].append({"form": name, "variants": {}, "error": f"{type(exc).__name__}: {exc}",
                                     "trace": traceback.format_exc()})
            print("  ERROR", exc, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    results["table"] = table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print(results["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
