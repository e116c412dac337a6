"""Block-selected attention beside dense poot.attention, same Lk, on the CPU.

    source /work/venv/bin/activate; export PYTHONPATH=<build>/python_packages
    python bench/sparse_cpu.py [--only SUBSTR] [--json FILE] [--repeat 5]

The forms of bench/sparse_cases.py compiled with `compile_cpu` (the kernels'
schedules as loops, one thread), run in-process through runtime.cpu on the
same inputs: the sparse step (block_topk + selected_attention) and the dense
poot.attention over all Lk keys. Each variant is checked against the float64
numpy reference (ids bit for bit, ‖out − ref‖/‖ref‖) and timed as the median
of `--repeat` runs (one run when a single run takes over `--slow-s`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sparse_cases  # noqa: E402
from sparse_h200 import host_inputs, reference_numpy, rel_err  # noqa: E402


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def timed(art, inputs, repeat: int, slow_s: float) -> tuple[float, object]:
    arrays = art.bind(inputs)
    t0 = time.perf_counter()
    outputs = art.call(arrays)
    first = time.perf_counter() - t0
    times = [first]
    if first < slow_s:
        for _ in range(repeat - 1):
            t0 = time.perf_counter()
            art.call(arrays)
            times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3, outputs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--slow-s", type=float, default=5.0)
    ap.add_argument("--skip-dense-over-s", type=float, default=120.0,
                    help="skip a dense run predicted (from the 8k one) to take longer")
    args = ap.parse_args()

    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": f"{cpu_model()}, {os.cpu_count()} cores (shared)",
               "forms": []}
    dense_ms_per_key_row: dict[int, float] = {}
    with TemporaryDirectory() as tmp:
        for form in sparse_cases.bench_forms():
            if args.only and args.only not in form.name:
                continue
            print(f"{form.name}:", flush=True)
            inputs = host_inputs(form, rng)
            ids_ref, sparse_ref, dense_ref = reference_numpy(form, inputs)
            res = {"form": form.name, "key_len": form.key_len, "q_len": form.q_len,
                   "ideal_speedup": form.ideal_speedup}
            t0 = time.perf_counter()
            sparse = CpuArtifact(compile_cpu(sparse_cases.sparse_text(form), Path(tmp) / f"{form.name}_s"))
            res["sparse_compile_s"] = time.perf_counter() - t0
            names = [p.key for p in sparse.signature.args]
            ms, out = timed(sparse, {n: inputs[n] for n in names}, args.repeat, args.slow_s)
            named = dict(zip([p.key for p in sparse.signature.results], out))
            res["sparse"] = {"ms": ms, "rel_err": rel_err(named["out"], sparse_ref),
                             "ids_equal": bool(np.array_equal(named["ids"], ids_ref))}
            print(f"  sparse {ms:10.2f} ms  rel={res['sparse']['rel_err']:.1e} ids={res['sparse']['ids_equal']}",
                  flush=True)
            predicted = None
            rows = form.q_len
            if form.pos is not None:
                res["dense"] = {"skipped": "verification form (rows anywhere: no dense mask)"}
                results["forms"].append(res)
                continue
            if rows in dense_ms_per_key_row:
                predicted = dense_ms_per_key_row[rows] * form.key_len / 1e3
            if predicted is not None and predicted > args.skip_dense_over_s:
                res["dense"] = {"skipped": f"predicted {predicted:.0f} s from the smaller Lk"}
                print(f"  dense  skipped (predicted {predicted:.0f} s)", flush=True)
            else:
                dense = CpuArtifact(compile_cpu(sparse_cases.dense_text(form), Path(tmp) / f"{form.name}_d"))
                names = [p.key for p in dense.signature.args]
                ms_d, out_d = timed(dense, {n: inputs[n] for n in names}, args.repeat, args.slow_s)
                dense_ms_per_key_row.setdefault(rows, ms_d / form.key_len)
                res["dense"] = {"ms": ms_d, "rel_err": rel_err(out_d[0], dense_ref)}
                res["speedup"] = ms_d / ms
                print(f"  dense  {ms_d:10.2f} ms  rel={res['dense']['rel_err']:.1e}  "
                      f"speedup {res['speedup']:.1f}x (ideal {form.ideal_speedup:.1f}x)", flush=True)
            results["forms"].append(res)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1))
    lines = ["| case | dense poot.attention | sparse (topk + selected) | speedup | ideal Lk/visited | rel err sparse, ids |",
             "|---|---|---|---|---|---|"]
    for r in results["forms"]:
        d, s = r["dense"], r["sparse"]
        dense_txt = f"{d['ms']:.1f} ms" if "ms" in d else d["skipped"]
        speed = f"{r['speedup']:.1f}x" if "speedup" in r else "—"
        lines.append(f"| {r['form']} | {dense_txt} | {s['ms']:.2f} ms | {speed} | {r['ideal_speedup']:.1f}x | "
                     f"{s['rel_err']:.1e}, {s['ids_equal']} |")
    results["table"] = "\n".join(lines)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(results["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
