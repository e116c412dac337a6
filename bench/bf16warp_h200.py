"""Half-warp rows for the BF16 warp decode (docs/warp-decode.md): verify
against float64 and time beside SDPA BF16 and the default plan, on one GPU.

    # build machine (MLIR)
    source /work/venv/bin/activate; export PYTHONPATH=build/python_packages
    python bench/bf16warp_h200.py build [--out bench/artifacts/bf16warp]
    # GPU machine (torch + cuda-python, no MLIR); carry bench/artifacts/bf16warp
    PYTHONPATH=python python3 bench/bf16warp_h200.py run [--artifacts bench/artifacts/bf16warp]
        [--json FILE] [--no-bench]

`build` writes, under the artifacts folder, `bf16/` (bench/bf16_h200.py's
layout: the four decode bench forms under VARIANTS) and `verify/` (VERIFY
forms, bf16, under VERIFY_PLANS: odd lengths for the last partial
load, live lengths, paged keys, tensor masks, softcap, split and not).

`run`, in one process: every verify artifact on fresh bf16 inputs (seed
printed) against the oracle's float64 attention of the same (rounded)
inputs, within the two-byte contract's bound |out - ref| <= 2^-8 |ref| +
1e-5 everywhere and NaN exactly where the reference has NaN
(docs/two-byte-attention.md); then bench/bf16_h200.py's timing of each
decode form's plans (CUDA graphs, L2-rotating input sets) beside
F.scaled_dot_product_attention on the same bf16 tensors.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import sys
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402

#: Planner inputs per decode form: the default (scalar whole-warp rows), the
#: whole-warp vector form (8-byte loads at D = 128), the half-warp rows with
#: 1, 2, 4 loads a warp step (16-byte loads, two keys a load).
VARIANTS = [
    ("default", {}),
    ("unroll4", {"max_unroll": 4}),
    ("half1", {"max_keys_per_load": 2, "max_unroll": 1}),
    ("half2", {"max_keys_per_load": 2, "max_unroll": 2}),
    ("half4", {"max_keys_per_load": 2, "max_unroll": 4}),
]
#: Verified plans: the half-warp rows (one load a step, and 4), and the
#: whole-warp vector form (its steps are now one online step too).
VERIFY_PLANS = [v for v in VARIANTS if v[0] in ("half1", "half4", "unroll4")]

_d = dict(key_width=128, value_width=128)
#: Verification forms (bf16, D = 128: half-warp rows), each split and not.
VERIFY = [
    cases.Form("gqa_odd", batch=2, q_heads=8, kv_heads=2, key_len=1001, **_d),
    cases.Form("gqa4_4k", batch=1, q_heads=32, kv_heads=8, key_len=4096, **_d),
    cases.Form("live", batch=3, q_heads=8, kv_heads=2, key_len=2047, live=True, **_d),
    cases.Form("paged_live", batch=2, q_heads=8, kv_heads=2, key_len=1023, pool=1500, live=True, **_d),
    cases.Form("alibi", batch=2, q_heads=8, kv_heads=2, key_len=603, mask="alibi", **_d),
    cases.Form("batch_mask", batch=3, q_heads=4, kv_heads=2, key_len=301, mask="batch", **_d),
    cases.Form("softcap", batch=1, q_heads=8, kv_heads=2, key_len=1501, softcap=5.0, **_d),
    cases.Form("empty_row", batch=1, q_heads=4, kv_heads=2, key_len=515, mask="alibi", empty_row=True, **_d),
    cases.Form("short", batch=2, q_heads=4, kv_heads=1, key_len=7, **_d),
]
SPLITS = [("split", {}), ("one", {"compute_units": 1, "max_splits": 1})]
BF16_U = 2.0**-8
F32_MATH = 1e-5


def bench_decode_forms():
    return [(n, f) for n, f in cases.bench_forms() if n.startswith("decode_")]


# --- build (MLIR machine) -------------------------------------------------------------


def build(out_root: Path) -> None:
    import bf16_h200
    from _compile import compile_artifact
    from build_artifacts import ptxas_report
    from poot_mlir.compiler import devices

    bf16_h200.build(out_root, forms=bench_decode_forms(), variants=lambda form: VARIANTS)
    root = out_root / "verify"
    if root.exists():
        shutil.rmtree(root)
    index: dict[str, dict] = {}
    for form in VERIFY:
        for sname, schanges in SPLITS:
            for vname, vchanges in VERIFY_PLANS:
                key = f"{form.name}-{sname}@{vname}"
                out = root / key
                dev = devices.SM_90.with_limits(**schanges, **vchanges)
                path = compile_artifact(bf16_h200.bf16_text(form), dev, out)
                att = json.loads((path / "manifest.json").read_text())["attention"][0]
                r = att["request"]
                assert r["schedule"] == "warp_decode", r
                assert r.get("row_lanes") == (16 if vname.startswith("half") else None), r
                ptx = {}
                for launch in att["launches"]:
                    ptx.update(ptxas_report(path / launch["kernel"]))
                index[key] = {"form": dataclasses.asdict(form), "path": str(out.relative_to(out_root)),
                              "request": r, "ptxas": ptx}
                print(f"verify/{key:28s} splits={r['splits']} unroll={r.get('unroll')} "
                      f"row_lanes={r.get('row_lanes')} {ptx.get('warp', {})}", flush=True)
    (root / "index.json").write_text(json.dumps(index, indent=1))


# --- run (GPU machine) ----------------------------------------------------------------


def verify(torch, cuda_mod, device, root: Path, rng) -> list[dict]:
    from poot_mlir.runtime.gpu import GpuArtifact

    index = json.loads((root / "verify" / "index.json").read_text())
    results = []
    for key, entry in index.items():
        form = cases.Form(**entry["form"])
        res: dict = {"case": key, "request": entry["request"]}
        try:
            ins = cases.inputs(form, rng)
            dev = {}
            for name, a in ins.items():
                t = torch.from_numpy(a).cuda()
                if name in ("q", "k", "v"):
                    t = t.to(torch.bfloat16).contiguous()
                    ins[name] = t.float().cpu().numpy()  # the rounded inputs, for the reference
                dev[name] = t
            ref = cases.reference(form, ins)  # float64 of the bf16 inputs
            art = GpuArtifact(root / entry["path"], backend=device)
            out = torch.full(tuple(ref.shape), float("nan"), device="cuda", dtype=torch.bfloat16)
            step = cuda_mod.prepare(art, dev, outputs={"out": out}, check_ranges=False)
            step.launch()
            device.backend.synchronize()
            first = out.float().cpu().numpy().astype(np.float64)
            step.launch()  # the same inputs again: bitwise the same (no race)
            device.backend.synchronize()
            again = out.float().cpu().numpy().astype(np.float64)
            ok = ~np.isnan(ref)
            err = np.abs(first[ok] - ref[ok])
            bound = BF16_U * np.abs(ref[ok]) + F32_MATH
            res.update(
                nan_ok=bool(np.array_equal(np.isnan(first), np.isnan(ref))),
                in_contract=float(np.mean(err <= bound)) if err.size else 1.0,
                max_err_over_bound=float(np.max(err / bound)) if err.size else 0.0,
                rel=float(np.linalg.norm(first[ok] - ref[ok]) / (np.linalg.norm(ref[ok]) or 1.0)),
                repeat_bitwise=bool(np.array_equal(first, again, equal_nan=True)),
                max_abs_ref=float(np.max(np.abs(ref[ok]))) if err.size else 0.0,
            )
            res["ok"] = bool(res["nan_ok"] and res["in_contract"] == 1.0 and res["repeat_bitwise"]
                             and res["max_abs_ref"] > 1e-3)
        except Exception as exc:
            res.update(ok=False, error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc())
        results.append(res)
        print(f"verify {key:28s} ok={res.get('ok')} in-contract={res.get('in_contract')} "
              f"err/bound={res.get('max_err_over_bound', float('nan')):.3f} rel={res.get('rel', float('nan')):.2e} "
              f"nan_ok={res.get('nan_ok')} repeat={res.get('repeat_bitwise')} {res.get('error', '')}", flush=True)
    return results


def run(args) -> int:
    sys.path.insert(1, str(HERE.parent / "python"))
    import torch

    import bf16_h200
    from attention_h200 import ceilings
    from poot_mlir.runtime import cuda as cuda_mod
    from poot_mlir.runtime.gpu import make_device

    root = Path(args.artifacts)
    device = make_device("cuda")
    seed = int(os.environ.get("POOT_TEST_SEED", int.from_bytes(os.urandom(8), "little") >> 1))
    rng = np.random.default_rng(seed)
    props = device.backend.properties()
    results: dict = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "device": props, "torch": torch.__version__, "seed": seed}
    print(f"{results['date']} {props['name']} torch {torch.__version__} seed {seed}", flush=True)
    results["verify"] = verify(torch, cuda_mod, device, root, rng)
    n_ok = sum(bool(r.get("ok")) for r in results["verify"])
    print(f"verify: {n_ok}/{len(results['verify'])} ok", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    if not args.no_bench:
        results["ceilings"] = ceilings(torch)
        torch.cuda.empty_cache()
        print("ceilings:", json.dumps(results["ceilings"]), flush=True)
        index = json.loads((root / "bf16" / "index.json").read_text())
        results["forms"] = []
        for name, form in bench_decode_forms():
            print(f"{name}:", flush=True)
            try:
                results["forms"].append(bf16_h200.bench_form(torch, cuda_mod, device, root, index, name, form,
                                                             rng, args))
            except Exception as exc:
                results["forms"].append({"form": name, "error": f"{type(exc).__name__}: {exc}",
                                         "trace": traceback.format_exc()})
                print("  ERROR", exc, flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1, default=str))
        results["table"] = bf16_h200.table(results)
        print(results["table"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["build", "run"])
    ap.add_argument("--out", default=str(HERE / "artifacts" / "bf16warp"))
    ap.add_argument("--artifacts", default=str(HERE / "artifacts" / "bf16warp"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--prefill-limit-s", type=float, default=20.0)
    args = ap.parse_args()
    if args.mode == "build":
        build(Path(args.out))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
