"""Block-selected attention beside dense poot.attention, same Lk, on one GPU.

    PYTHONPATH=python python bench/sparse_h200.py [--artifacts bench/artifacts]
        [--only SUBSTR] [--json FILE] [--slow-limit-s 20]
    python bench/sparse_h200.py --local      # smoke test: lavapipe, --tiny artifacts

Runs on the GPU machine (torch + cuda-python, no MLIR) over the artifacts of
bench/sparse_build.py. For each form of bench/sparse_cases.py (decode and a
64-row prefill chunk at Lk 8k / 32k / 128k; block 64, K 16) it:

- checks every variant against a float64 torch reference on the device: the
  block ids bit for bit (block top-k of the same block scores), the output as
  ‖out − ref‖/‖ref‖;
- times each variant as one CUDA graph replaying the step over several input
  sets (so decode's K/V rotate through more than the L2), plus each launch on
  its own (block top-k, selected-attention partials / stream, combine);
- reports the dense time and K/V read bandwidth (all Lk keys), the sparse
  time, its block top-k and attention parts, the bandwidth of the visited
  K/V (`visited_kv_bytes` / attention time: per (batch row, query row, KV
  group) its (K + 1) * 64 keys), and the speedups dense / sparse (whole step
  and attention alone) beside the ideal Lk / ((K + 1) * 64).

`--local` runs the same code path on Mesa lavapipe through runtime.program with
numpy inputs and wall-clock timing, over `bench/sparse_build.py --tiny
--target spirv` artifacts: it checks the plumbing, not the speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent / "python"))  # after PYTHONPATH: a build package wins

import sparse_cases  # noqa: E402

L2_ROTATE_BYTES = 256 << 20  # rotate input sets until this many K/V bytes (> 4x the L2)


# --- inputs and the float64 reference ---------------------------------------------------


def host_inputs(form: sparse_cases.SparseBench, rng) -> dict[str, np.ndarray]:
    out = {}
    for key, (shape, dtype) in form.shapes().items():
        if key == "q_pos":
            out[key] = form.positions()
        else:
            out[key] = rng.standard_normal(shape, dtype=np.float32)
    if form.q_len > 1:
        out["mask"] = sparse_cases.causal_mask(form)
    return out


def torch_inputs(torch, form, rng) -> dict:
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(int(rng.integers(1 << 62)))
    out = {}
    for key, (shape, dtype) in form.shapes().items():
        if key == "q_pos":
            out[key] = torch.from_numpy(form.positions()).to(dev)
        else:
            out[key] = torch.randn(shape, device=dev, generator=g, dtype=torch.float32)
    if form.q_len > 1:
        out["mask"] = torch.from_numpy(sparse_cases.causal_mask(form)).to(dev)
    return out


def reference_torch(torch, form, t) -> tuple:
    """(ids, sparse out, dense out) in float64 on the device."""
    bs, K, Lk = form.block_size, form.top_k, form.key_len
    p = t["q_pos"].long()
    own = (p // bs)[..., None]
    blocks = torch.arange(form.blocks, device=p.device)
    keys = torch.where(blocks < own, t["scores"].double(), torch.tensor(-math.inf, device=p.device,
                                                                         dtype=torch.float64))
    order = torch.sort(keys, dim=-1, descending=True, stable=True).indices[..., :K]
    ids = torch.where(order < own, order, torch.full_like(order, -1))
    tt = torch.arange(Lk, device=p.device)
    block = tt // bs
    listed = torch.zeros(ids.shape[:2] + (Lk,), dtype=torch.bool, device=p.device)
    for slot in range(K):
        listed |= block == ids[..., slot : slot + 1]
    causal = tt <= p[..., None]
    visible = causal & (listed | (block == own))
    n_rep = form.q_heads // form.kv_heads
    sparse, dense = [], []
    for g in range(form.kv_heads):
        k, v = t["k"][:, g].double(), t["v"][:, g].double()
        for h in range(g * n_rep, (g + 1) * n_rep):
            s = (t["q"][:, h].double() @ k.transpose(-1, -2)) * form.scale
            neg = torch.tensor(-math.inf, device=p.device, dtype=torch.float64)
            sparse.append(torch.softmax(torch.where(visible, s, neg), dim=-1) @ v)
            dense.append(torch.softmax(torch.where(causal, s, neg), dim=-1) @ v)
    return ids.int(), torch.stack(sparse, dim=1), torch.stack(dense, dim=1)


def reference_numpy(form, t) -> tuple:
    """The same in numpy, one query head at a time (the CPU run and the
    --local smoke test)."""
    ids = sparse_cases.block_topk_reference(t["scores"], t["q_pos"], form.top_k, form.block_size)
    visible = sparse_cases.visibility(ids, t["q_pos"], form.key_len, form.block_size)
    causal = np.arange(form.key_len) <= t["q_pos"].astype(np.int64)[..., None]
    n_rep = form.q_heads // form.kv_heads
    sparse = np.empty(form.out_shape)
    dense = np.empty(form.out_shape)
    for g in range(form.kv_heads):
        k, v = t["k"][:, g].astype(np.float64), t["v"][:, g].astype(np.float64)
        for h in range(g * n_rep, (g + 1) * n_rep):
            s = (t["q"][:, h].astype(np.float64) @ np.swapaxes(k, -1, -2)) * form.scale
            for out, mask in ((sparse, visible), (dense, causal)):
                x = np.where(mask, s, -np.inf)
                w = np.exp(x - x.max(-1, keepdims=True))
                out[:, h] = (w / w.sum(-1, keepdims=True)) @ v
    return ids, sparse, dense


def rel_err(out, ref) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm((out - ref).ravel()) / np.linalg.norm(ref.ravel()))


# --- running a variant ---------------------------------------------------------------------


class CudaRunner:
    """Device-resident inputs, one CUDA graph over the input sets."""

    def __init__(self, args) -> None:
        import torch

        from poot_mlir.runtime import cuda as cuda_mod
        from poot_mlir.runtime.gpu import make_device

        self.torch, self.cuda = torch, cuda_mod
        self.device = make_device("cuda")  # shared by every artifact
        self.backend = self.device.backend
        self.args = args

    def inputs(self, form, rng):
        return torch_inputs(self.torch, form, rng)

    def reference(self, form, t):
        ids, sparse, dense = reference_torch(self.torch, form, t)
        return ids.cpu().numpy(), sparse, dense

    def error(self, out, ref) -> float:
        torch = self.torch
        return float(torch.linalg.norm((out.double() - ref).flatten()) / torch.linalg.norm(ref.flatten()))

    def run(self, art, sets, names) -> dict:
        torch = self.torch
        res: dict = {}
        outs = [torch.full(sets[0]["q"].shape[:3] + (sets[0]["v"].shape[-1],), float("nan"),
                           device="cuda") for _ in sets]
        produced = [{"out": o} for o in outs]
        if "ids" in {p.key for p in art.signature.results}:
            for p, t in zip(produced, sets):
                p["ids"] = torch.full(t["scores"].shape[:2] + (self.args.top_k,), -7, dtype=torch.int32,
                                      device="cuda")
        steps = [self.cuda.prepare(art, {n: t[n] for n in names}, outputs=p, check_ranges=False)
                 for t, p in zip(sets, produced)]
        t0 = time.perf_counter()
        steps[0].launch()
        self.backend.synchronize()
        first = time.perf_counter() - t0
        res["first_run_s"] = first
        res["out"], res["ids"] = outs[0], produced[0].get("ids")
        slow = first > 0.5
        if first > self.args.slow_limit_s:
            res["note"] = f"one run took {first:.1f} s; timed once"
            res["ms"] = first * 1e3
            return res
        iters = 2 if slow else (10 if first > 0.05 else 30)
        graph = self.backend.capture(lambda s: [st.launch(s) for st in steps])
        res["ms"] = graph.time(iters=iters, warmup=0 if slow else 1) / len(sets)
        res["launch_ms"] = {f"{i}:{k.entry}": p.time(iters=iters, warmup=1)
                            for i, (p, (k, *_)) in enumerate(zip(steps[0].sequence.parts(),
                                                                  steps[0].sequence._items))}
        before = outs[0].clone()
        graph.replay()
        self.backend.synchronize()
        res["repeat_bitwise"] = bool(torch.equal(before.view(torch.int32), outs[0].view(torch.int32)))
        graph.close()
        return res

    def ids_of(self, res):
        return res["ids"].cpu().numpy() if res.get("ids") is not None else None

    def device_name(self) -> str:
        return self.backend.properties()["name"]


class LocalRunner:
    """runtime.gpu on lavapipe, numpy in and out, wall-clock time."""

    def __init__(self, args) -> None:
        from poot_mlir.runtime.gpu import make_device

        self.device = make_device("lavapipe")
        self.args = args

    def inputs(self, form, rng):
        return host_inputs(form, rng)

    def reference(self, form, t):
        return reference_numpy(form, t)

    def error(self, out, ref) -> float:
        return rel_err(out, ref)

    def run(self, art, sets, names) -> dict:
        t0 = time.perf_counter()
        result = art.run({n: sets[0][n] for n in names})
        ms = (time.perf_counter() - t0) * 1e3
        return {"ms": ms, "out": result.named["out"], "ids": result.named.get("ids")}

    def ids_of(self, res):
        return res.get("ids")

    def device_name(self) -> str:
        return "lavapipe (local smoke test)"


def bench_form(runner, root: Path, index: dict, form, rng) -> dict:
    from poot_mlir.runtime.gpu import GpuArtifact

    res: dict = {"form": form.name, "shape": {k: list(v[0]) for k, v in form.shapes().items()},
                 "key_len": form.key_len, "visited": form.visited, "ideal_speedup": form.ideal_speedup,
                 "kv_bytes": form.kv_bytes(), "visited_kv_bytes": form.visited_kv_bytes(), "variants": {}}
    prefill = form.q_len > 1
    n_sets = 1 if (prefill or form.kv_bytes() >= L2_ROTATE_BYTES) else min(
        8, math.ceil(L2_ROTATE_BYTES / form.kv_bytes()))
    if isinstance(runner, LocalRunner):
        n_sets = 1
    res["input_sets"] = n_sets
    sets = [runner.inputs(form, rng) for _ in range(n_sets)]
    ids_ref, sparse_ref, dense_ref = runner.reference(form, sets[0])
    for key in [k for k in index if k.startswith(f"{form.name}@")]:
        entry = index[key]
        variant = entry["variant"]
        v: dict = {"requests": entry.get("requests"), "kind": entry["kind"]}
        res["variants"][variant] = v
        if "error" in entry:
            v["error"] = entry["error"]
            continue
        try:
            art = GpuArtifact(root / entry["path"], backend=runner.device)
            names = [p.key for p in art.signature.args]
            r = runner.run(art, sets, names)
            sparse = entry["kind"] == "sparse"
            v["ms"] = r["ms"]
            v["rel_err"] = runner.error(r["out"], sparse_ref if sparse else dense_ref)
            for k in ("first_run_s", "note", "launch_ms", "repeat_bitwise"):
                if k in r:
                    v[k] = r[k]
            if sparse:
                ids = runner.ids_of(r)
                v["ids_equal"] = bool(np.array_equal(ids, ids_ref))
                launches = v.get("launch_ms", {})
                topk = sum(ms for name, ms in launches.items() if name.endswith(":topk"))
                attn = sum(ms for name, ms in launches.items() if not name.endswith(":topk"))
                if launches:
                    v["topk_ms"], v["attention_ms"] = topk, attn
                    v["visited_TBps"] = form.visited_kv_bytes() / attn / 1e9
            else:
                v["kv_TBps"] = form.kv_bytes() / r["ms"] / 1e9
        except Exception as exc:
            v["error"] = f"{type(exc).__name__}: {exc}"
            v["trace"] = traceback.format_exc()
        print(f"  {variant:14s} {v.get('ms', float('nan')):9.3f} ms  rel={v.get('rel_err', float('nan')):.1e}"
              f"  ids={v.get('ids_equal', '-')}  {v.get('error', '')}", flush=True)
    dense = res["variants"].get("dense", {})
    for name, v in res["variants"].items():
        if v.get("kind") == "sparse" and "ms" in v and "ms" in dense:
            v["speedup"] = dense["ms"] / v["ms"]
            if "attention_ms" in v:
                v["attention_speedup"] = dense["ms"] / v["attention_ms"]
    return res


def table(results: dict) -> str:
    lines = [
        "| case | dense poot.attention | dense K/V TB/s | sparse (topk + attention) | topk | attention | "
        "visited K/V TB/s | speedup (step, attention) | ideal Lk/visited | rel err, ids |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["forms"]:
        var = r["variants"]
        d = var.get("dense", {})
        sparse = {k: x for k, x in var.items() if x.get("kind") == "sparse" and "ms" in x}
        best = min(sparse, key=lambda k: sparse[k]["ms"]) if sparse else None
        s = sparse.get(best, {}) if best else {}

        def ms(x, key="ms"):
            return f"{x[key]:.3f} ms" if key in x else x.get("error", "—")[:40]

        speed = (f"{s['speedup']:.1f}x, {s.get('attention_speedup', float('nan')):.1f}x"
                 if "speedup" in s else "—")
        lines.append(
            f"| {r['form']} | {ms(d)} | {d.get('kv_TBps', float('nan')):.2f} | {best} {ms(s)} | "
            f"{ms(s, 'topk_ms')} | {ms(s, 'attention_ms')} | {s.get('visited_TBps', float('nan')):.2f} | "
            f"{speed} | {r['ideal_speedup']:.1f}x | {s.get('rel_err', float('nan')):.1e}, {s.get('ids_equal')} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", default=str(HERE / "artifacts"))
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--slow-limit-s", type=float, default=20.0)
    ap.add_argument("--local", action="store_true", help="lavapipe smoke test over --tiny artifacts")
    args = ap.parse_args()

    root = Path(args.artifacts)
    index = json.loads((root / "sparse_index.json").read_text())
    runner = LocalRunner(args) if args.local else CudaRunner(args)
    forms = sparse_cases.tiny_forms() if args.local else sparse_cases.bench_forms()
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "device": runner.device_name(), "forms": []}
    print(f"{results['date']} {results['device']}", flush=True)
    for form in forms:
        if args.only and args.only not in form.name:
            continue
        print(f"{form.name}:", flush=True)
        args.top_k = form.top_k
        try:
            results["forms"].append(bench_form(runner, root, index, form, rng))
        except Exception as exc:
            results["forms"].append({"form": form.name, "variants": {}, "ideal_speedup": form.ideal_speedup,
                                     "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
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
