"""BF16 attention: poot's two-byte kernels beside torch SDPA BF16, on one GPU.

    # build machine (MLIR): bf16 artifacts of the bench forms, for SM_90
    source /work/venv/bin/activate; export PYTHONPATH=build/python_packages
    python bench/bf16_h200.py build [--out bench/artifacts]
    # GPU machine (torch + cuda-python, no MLIR)
    PYTHONPATH=python python bench/bf16_h200.py run [--artifacts bench/artifacts]
        [--only SUBSTR] [--json FILE] [--prefill-limit-s 20]

The forms are bench/cases.py's bench forms (decode B=1 Hq=32 Hkv=8 D=128 at
Lk 4k/32k/128k, B=16 Lk=8k, causal prefill L=2k/8k) with bf16 Q, K, V and
output (the causal mask stays f32: two-byte attention adds it as given,
docs/two-byte-attention.md). `build` writes bench/artifacts/bf16/<form>@<plan>/
and bench/artifacts/bf16/index.json (each plan's request and ptxas report);
the plans are bench/build_artifacts.py's planner inputs (default SM_90 first).

`run`, in one process on the GPU: inputs drawn on the device in f32 and
rounded to bf16 (fresh seed each run, printed), then per form

- verify: every poot plan's output against float64 attention of the same
  bf16 inputs (the contract's reference): ‖out − ref‖/‖ref‖, and the share of
  elements inside the contract's bound |out − ref| <= 2^-8 |ref| + 1e-5 (one
  bf16 rounding plus f32 math; the tensor-core prefill `tiled_prefill_mma`
  also rounds P: + 2^-8 (softmax . |V|)); torch SDPA BF16's error beside it;
- time: poot (a CUDA graph over several input sets, as bench/attention_h200.py)
  and `F.scaled_dot_product_attention` on the bf16 tensors (enable_gqa,
  is_causal for prefill; whichever backend torch picks, recorded), medians of
  CUDA-event rounds; K/V bandwidth counts the bf16 bytes (2 per element)
  against the copy ceiling measured in the same run.

The table prints SDPA BF16 time / poot time per form (>= 1.0: poot faster).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402

BF16_U = 2.0**-8  # bf16's unit roundoff: the contract's one output rounding
F32_MATH = 1e-5
#: The schedules that round P to the input type for P V (docs/two-byte-attention.md).
TENSOR_CORE_SCHEDULES = ("tiled_prefill_mma", "wide_head_mma")


def bf16_text(form: cases.Form) -> str:
    """cases.text(form) with Q, K, V and the output in bf16 (mask kept f32)."""
    text = cases.text(form)
    shapes = form.shapes()
    two_byte = {shapes["q"][0], shapes["k"][0], shapes["v"][0], form.out_shape}
    if "k_shared" in shapes:  # the split key's shared part: the query's type
        two_byte.add(shapes["k_shared"][0])
    for shape in two_byte:
        f32 = "tensor<" + "x".join(map(str, shape)) + "xf32>"
        text = text.replace(f32, f32[: -len("f32>")] + "bf16>")
    return text


def kv_bytes_bf16(form: cases.Form) -> int:
    return form.kv_bytes() // 2  # cases counts 4-byte elements


# --- build (MLIR machine) -------------------------------------------------------------


def build(out_root: Path, forms=None, variants=None) -> None:
    """Artifacts of `forms` (default: the bench forms) under each of
    `variants(form)` (default: build_artifacts.bench_variants)."""
    from _compile import compile_artifact
    from build_artifacts import bench_variants, ptxas_report
    from poot_mlir.compiler import devices

    root = out_root / "bf16"
    root.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict] = {}
    variants = variants or bench_variants()
    for name, form in forms or cases.bench_forms():
        for vname, changes in variants(form):
            key = f"{name}@{vname}"
            out = root / key
            if out.exists():
                shutil.rmtree(out)
            dev = devices.SM_90.with_limits(**changes) if changes else devices.SM_90
            entry: dict = {"form": dataclasses.asdict(form), "device_changes": changes,
                           "path": str(out.relative_to(out_root))}
            try:
                path = compile_artifact(bf16_text(form), dev, out)
                manifest = json.loads((path / "manifest.json").read_text())
                att = manifest["attention"][0]
                out_dtype = manifest["function"]["outputs"][0]["dtype"]
                assert out_dtype == "bf16", out_dtype
                entry["request"] = att["request"]
                entry["launches"] = [{k: l[k] for k in ("entry", "grid", "block")} for l in att["launches"]]
                for launch in att["launches"]:
                    entry["ptxas"] = ptxas_report(path / launch["kernel"])
            except Exception as exc:  # a planner refusal is a result too
                entry["error"] = f"{type(exc).__name__}: {exc}"
            r = entry.get("request", {})
            if r and any(e.get("request") == r for k, e in index.items() if k.startswith(f"{name}@")):
                shutil.rmtree(out)  # the same plan as an earlier variant: timed once
                continue
            index[key] = entry
            print(f"bf16/{key:32s} {r.get('schedule')} lanes={r.get('lanes')} splits={r.get('splits')} "
                  f"{entry.get('error', '')}", flush=True)
    (root / "index.json").write_text(json.dumps(index, indent=1))
    print(f"wrote {root / 'index.json'} ({len(index)} entries)")


# --- run (GPU machine) ----------------------------------------------------------------


def bench_form(torch, cuda_mod, device, root: Path, index: dict, name: str, form: cases.Form,
               rng, args) -> dict:
    backend = device.backend  # runtime.cuda.CudaBackend of the shared device
    from attention_h200 import L2_ROTATE_BYTES, median_ms_torch, reference64, rel_err, torch_inputs
    from poot_mlir.runtime.gpu import GpuArtifact

    per_set = kv_bytes_bf16(form)
    prefill = form.q_len > 1
    n_sets = 1 if (prefill or per_set >= L2_ROTATE_BYTES) else min(8, math.ceil(L2_ROTATE_BYTES / per_set))
    res: dict = {"form": name, "kv_bytes_bf16": per_set, "input_sets": n_sets, "variants": {}}
    sets = []
    for _ in range(n_sets):
        t = torch_inputs(torch, form, rng)
        for key in ("q", "k", "v", "k_shared", "_k_full"):
            if key in t:
                t[key] = t[key].to(torch.bfloat16).contiguous()
        sets.append(t)
    ref = reference64(torch, form, sets[0])  # float64 of the bf16 inputs
    torch.cuda.synchronize()
    flops = 0.0
    if prefill:
        L = form.q_len
        flops = 2.0 * form.batch * form.q_heads * (L * (L + 1) / 2) * (form.key_width + form.value_width)

    def summarize(ms: float) -> dict:
        d = {"ms": ms, "kv_TBps": per_set / ms / 1e9}
        if prefill:
            d["TFLOPs"] = flops / ms / 1e9
        return d

    # The tensor-core schedule rounds P to bf16 for P V (docs/two-byte-attention.md): its bound
    # adds u times the attention of |V| (the float64 reference with |V|).
    ref_abs = None
    if any((index[k].get("request") or {}).get("schedule") in TENSOR_CORE_SCHEDULES
           for k in index if k.startswith(f"{name}@")):
        ref_abs = reference64(torch, form, {**sets[0], "v": sets[0]["v"].abs()})

    def contract_share(out, mma: bool = False) -> float:
        o, r = out.double(), ref
        ok = ~torch.isnan(r)
        bound = BF16_U * r.abs() + F32_MATH
        if mma:
            bound = bound + BF16_U * ref_abs
        inside = (o - r).abs() <= bound
        return float(inside[ok].double().mean())

    for key in [k for k in index if k.startswith(f"{name}@")]:
        entry = index[key]
        vname = key.split("@", 1)[1]
        v: dict = {"request": entry.get("request")}
        res["variants"][vname] = v
        if "error" in entry:
            v["error"] = entry["error"]
            continue
        try:
            art = GpuArtifact(root / entry["path"], backend=device)
            outs = [torch.full(form.out_shape, float("nan"), device="cuda", dtype=torch.bfloat16) for _ in sets]
            steps = [cuda_mod.prepare(art, {k: t[k] for k in t if not k.startswith("_")},
                                      outputs={"out": o}, check_ranges=False)
                     for t, o in zip(sets, outs)]
            t0 = time.perf_counter()
            steps[0].launch()
            backend.synchronize()
            first_s = time.perf_counter() - t0
            v["first_run_s"] = first_s
            v["rel_err"] = rel_err(torch, outs[0], ref)
            v["in_contract"] = contract_share(
                outs[0], mma=(entry.get("request") or {}).get("schedule") in TENSOR_CORE_SCHEDULES)
            if prefill and first_s > args.prefill_limit_s:
                v["note"] = f"one run took {first_s:.1f} s; timed once"
                v.update(summarize(first_s * 1e3))
                continue
            slow = first_s > 0.5
            iters = 2 if slow else (10 if first_s > 0.05 else 30)
            graph = backend.capture(lambda s: [st.launch(s) for st in steps])
            v.update(summarize(graph.time(iters=iters, warmup=0 if slow else 1) / n_sets))
            graph.close()
        except Exception as exc:
            v["error"] = f"{type(exc).__name__}: {exc}"
            v["trace"] = traceback.format_exc()
        print(f"  poot bf16 {vname:16s} {v.get('ms', float('nan')):9.3f} ms  "
              f"{v.get('kv_TBps', float('nan')):6.3f} TB/s  rel={v.get('rel_err', float('nan')):.1e} "
              f"in-contract={v.get('in_contract', float('nan')):.4f} {v.get('error', '')}", flush=True)

    F = torch.nn.functional
    holder = [None]

    def sdpa(t):
        return lambda: holder.__setitem__(0, F.scaled_dot_product_attention(
            t["q"], t.get("_k_full", t["k"]), t["v"], scale=form.scale, is_causal=form.mask == "causal" or form.causal,
            enable_gqa=True))

    d: dict = {}
    try:
        fns = [sdpa(t) for t in sets]
        fns[0]()
        torch.cuda.synchronize()
        d["rel_err"] = rel_err(torch, holder[0], ref)
        d["in_contract"] = contract_share(holder[0])
        d.update(summarize(median_ms_torch(torch, lambda: [f() for f in fns], rounds=7, inner=3) / n_sets))
    except Exception as exc:
        d["error"] = f"{type(exc).__name__}: {exc}"
    res["sdpa_bf16"] = d
    print(f"  sdpa bf16 {'':16s} {d.get('ms', float('nan')):9.3f} ms  {d.get('kv_TBps', float('nan')):6.3f} TB/s  "
          f"rel={d.get('rel_err', float('nan')):.1e} in-contract={d.get('in_contract', float('nan')):.4f} "
          f"{d.get('error', '')}", flush=True)
    holder[0] = None
    del sets, ref
    torch.cuda.empty_cache()
    return res


def table(results: dict) -> str:
    ceil = results["ceilings"]["copy_TBps"]
    lines = ["| case | poot BF16 (default plan) | best poot plan | K/V TB/s (best) | rel err | SDPA BF16 | "
             "SDPA rel err | SDPA / poot (default, best) |", "|---|---|---|---|---|---|---|---|"]
    for r in results["forms"]:
        var = r.get("variants", {})
        d = var.get("default", {})
        timed = {k: x for k, x in var.items() if "ms" in x}
        best = min(timed, key=lambda k: timed[k]["ms"]) if timed else None
        b = timed.get(best, {}) if best else {}
        sd = r.get("sdpa_bf16", {})

        def ms(x):
            return f"{x['ms']:.3f} ms" if "ms" in x else x.get("error", "—")[:40]

        bw = f"{b['kv_TBps']:.3f} ({100 * b['kv_TBps'] / ceil:.0f}%)" if "ms" in b else "—"
        ratio = (f"{sd['ms'] / d['ms']:.2f}x, {sd['ms'] / b['ms']:.2f}x"
                 if "ms" in sd and "ms" in d and "ms" in b else "—")
        lines.append(f"| {r['form']} | {ms(d)} | {best} {ms(b)} | {bw} | {d.get('rel_err', float('nan')):.1e} | "
                     f"{ms(sd)} | {sd.get('rel_err', float('nan')):.1e} | {ratio} |")
    return "\n".join(lines)


def run(args) -> int:
    # The GPU machine runs the package from the source tree (no MLIR); the
    # build machine's PYTHONPATH (build/python_packages) is left alone.
    sys.path.insert(1, str(HERE.parent / "python"))
    import torch

    from attention_h200 import ceilings
    from poot_mlir.runtime import cuda as cuda_mod
    from poot_mlir.runtime.gpu import make_device

    root = Path(args.artifacts)
    index = json.loads((root / "bf16" / "index.json").read_text())
    device = make_device("cuda")  # shared by every artifact
    backend = device.backend
    seed = int.from_bytes(os.urandom(8), "little")
    rng = np.random.default_rng(seed)
    props = backend.properties()
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "device": props, "torch": torch.__version__, "seed": seed, "forms": []}
    print(f"{results['date']} {props['name']} torch {torch.__version__} seed {seed}", flush=True)
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
            results["forms"].append({"form": name, "error": f"{type(exc).__name__}: {exc}",
                                     "trace": traceback.format_exc()})
            print("  ERROR", exc, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    results["table"] = table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print(results["table"])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["build", "run"])
    ap.add_argument("--out", default=str(HERE / "artifacts"))
    ap.add_argument("--artifacts", default=str(HERE / "artifacts"))
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--prefill-limit-s", type=float, default=20.0)
    args = ap.parse_args()
    if args.mode == "build":
        build(Path(args.out))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
