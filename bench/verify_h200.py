"""Verify the generated attention kernels on a GPU against the numpy oracle.

    PYTHONPATH=python python bench/verify_h200.py [--artifacts bench/artifacts]
        [--backend cuda|vulkan|lavapipe] [--only SUBSTR] [--no-torch] [--json FILE]

Every verify case of bench/artifacts/index.json (built here by
bench/build_artifacts.py: each attention form under split-KV and streaming,
several lane counts, a 2-D grid fold, a cubin) runs on fresh random inputs
(seed printed; POOT_TEST_SEED reproduces) and is compared with
`oracle.semantics.attention` in float64: ‖out − ref‖/‖ref‖ <= 1e-5, NaN
exactly where the reference has NaN. On CUDA each case also runs through the
device-resident path (`runtime.cuda.prepare`: the artifact's program bound
to device buffers once, its launches packed once): outputs poisoned with a NaN
pattern first (every element must be written), the result must be bitwise
equal to the first run (a moving result is a race), and live forms are
re-run with new lengths written into the same step. Then the CUDA-graph demo:
one capture of a live decode step, replayed while len changes, each replay
checked; with torch, the same with K/V/len as torch tensors (no copies).

Needs no MLIR (runs with PYTHONPATH=python on the GPU machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

import cases  # noqa: E402

TOL = 1e-5


def form_of(entry: dict) -> cases.Form:
    return cases.Form(**entry["form"])


def check(form, out, ref) -> dict:
    c = cases.compare(out, ref)
    c["ok"] = bool(c["rel"] <= TOL and c["nan_ok"] and c["finite_ok"])
    return c


def verify_case(name: str, entry: dict, root: Path, backend, rng, cuda_mod) -> dict:
    from poot_mlir.runtime.gpu import GpuArtifact

    form = form_of(entry)
    res: dict = {"case": name, "request": entry.get("request"), "format": entry.get("format")}
    if "error" in entry:
        res.update(ok=False, error="compile: " + entry["error"])
        return res
    sched = entry["request"]["schedule"]
    # warp_decode is the planner's NVIDIA decode schedule: it stands in for
    # split_kv (splits > 1) and streaming (one split).
    family = {"warp_decode": "split_kv" if entry["request"]["splits"] > 1 else "streaming"}
    res["schedule_ok"] = entry.get("expected_schedule", sched) in (sched, family.get(sched, sched))
    art = GpuArtifact(root / entry["path"], backend=backend)
    ins = cases.inputs(form, rng)
    ref = cases.reference(form, ins)
    t0 = time.perf_counter()
    out = art.run(ins).outputs[0]
    res["run_s"] = round(time.perf_counter() - t0, 4)
    res.update(check(form, out, ref))
    ok = res["ok"] and res["schedule_ok"]
    if cuda_mod is not None:
        step = cuda_mod.prepare(art, ins)
        step.poison()
        step.launch()
        again = step.result()
        res["poison_written"] = bool(
            not np.any(again.view(np.uint32) == np.uint32(0x7FC00001)))
        res["repeat_bitwise"] = bool(np.array_equal(again.view(np.uint32), out.view(np.uint32)))
        ok = ok and res["poison_written"] and res["repeat_bitwise"]
        if form.live:
            worst = 0.0
            lens_tried = []
            for trial in range(4):
                lens = rng.integers(1, form.key_len + 1, size=(form.batch,)).astype(np.int32)
                if trial == 0:
                    lens[:] = 1
                if trial == 1:
                    lens[:] = form.key_len
                ins2 = dict(ins, len=lens)
                step.write("len", lens)
                step.poison()
                step.launch()
                c = check(form, step.result(), cases.reference(form, ins2))
                worst = max(worst, c["rel"])
                ok = ok and c["ok"]
                lens_tried.append(lens.tolist())
            res["relaunch_lens"] = lens_tried
            res["relaunch_worst_rel"] = worst
        res["kernels"] = {k[1]: v.attributes for k, v in art._kernels.items()}
    res["ok"] = bool(ok)
    return res


def graph_demo(root: Path, index: dict, backend, rng, cuda_mod, use_torch: bool) -> dict:
    """One capture of a live decode step; len changes between replays."""
    from poot_mlir.runtime.gpu import GpuArtifact

    entry = index["verify/graph_live"]
    form = form_of(entry)
    art = GpuArtifact(root / entry["path"], backend=backend)
    ins = cases.inputs(form, rng, lens=[form.key_len, 1])
    out: dict = {"request": entry["request"], "replays": []}
    step = cuda_mod.prepare(art, ins)
    graph = step.capture()
    out["graph_nodes"] = graph.nodes
    ok = True
    schedule = [[1, 1], [17, 4096], [128, 129], [4095, 1000], [4096, 4096],
                rng.integers(1, form.key_len + 1, size=2).tolist()]
    for lens in schedule:
        lens = np.asarray(lens, dtype=np.int32)
        step.write("len", lens)
        step.poison()
        graph.replay()
        c = check(form, step.result(), cases.reference(form, dict(ins, len=lens)))
        out["replays"].append({"len": lens.tolist(), **c})
        ok = ok and c["ok"]
    out["graph_ms"] = graph.time(iters=50)
    out["launch_ms"] = step.time(iters=50)
    if use_torch:
        import torch

        dev = torch.device("cuda")
        t_ins = {k: torch.from_numpy(v).to(dev) for k, v in ins.items()}
        t_out = torch.full(form.out_shape, float("nan"), device=dev)
        tstep = cuda_mod.prepare(art, t_ins, outputs={"out": t_out})
        zero_copy = all(tstep.buffers[k].ptr == t_ins[k].data_ptr() for k in t_ins) and \
            tstep.outputs["out"].ptr == t_out.data_ptr()
        tgraph = tstep.capture()
        torch_replays = []
        for lens in ([3, 4000], [2048, 7], [4096, 1]):
            t_ins["len"].copy_(torch.tensor(lens, dtype=torch.int32))  # in place, on torch's stream
            tgraph.replay()
            cuda_mod_backend = tstep.backend
            cuda_mod_backend.synchronize()
            got = t_out.cpu().numpy()
            c = check(form, got, cases.reference(form, dict(ins, len=np.asarray(lens, np.int32))))
            torch_replays.append({"len": lens, **c})
            ok = ok and c["ok"]
        out["torch"] = {"zero_copy": bool(zero_copy), "replays": torch_replays}
        ok = ok and zero_copy
    out["ok"] = bool(ok)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", default=str(HERE / "artifacts"))
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--only", default=None)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    root = Path(args.artifacts)
    index = json.loads((root / "index.json").read_text())
    seed = int(os.environ.get("POOT_TEST_SEED") or int.from_bytes(os.urandom(8), "little"))
    print(f"POOT_TEST_SEED={seed}")
    rng = np.random.default_rng(seed)
    cuda_mod = None
    from poot_mlir.runtime.gpu import make_device

    if args.backend == "cuda":
        from poot_mlir.runtime import cuda as cuda_mod

        ok, why = cuda_mod.available()
        print("CUDA:", why)
        if not ok:
            return 2
    # One device for every artifact (runtime.program's device operations).
    backend = make_device(args.backend)
    mlir_loaded = [m for m in sys.modules if m.startswith(("mlir", "poot_mlir._mlir_libs", "poot_mlir.ir"))]
    results = {"seed": seed, "backend": args.backend, "cases": [], "mlir_modules_loaded": mlir_loaded}
    names = [k for k, e in index.items() if e["kind"] == "verify" and k != "verify/graph_live"]
    if args.only:
        names = [n for n in names if args.only in n]
    failures = 0
    for key in names:
        try:
            r = verify_case(key.split("/", 1)[1], index[key], root, backend, rng, cuda_mod)
        except Exception as exc:
            r = {"case": key, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                 "trace": traceback.format_exc()}
        results["cases"].append(r)
        failures += not r["ok"]
        req = r.get("request") or {}
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['case']:26s} {req.get('schedule', '?'):9s} "
              f"lanes={req.get('lanes', '?'):<3} splits={req.get('splits', '?'):<3} "
              f"rel={r.get('rel', float('nan')):.2e} max_abs={r.get('max_abs', float('nan')):.1e} "
              f"nan_ok={r.get('nan_ok')} poison={r.get('poison_written')} "
              f"bitwise={r.get('repeat_bitwise')} {r.get('error', '')}", flush=True)
    if cuda_mod is not None and not args.no_graph and "verify/graph_live" in index:
        try:
            g = graph_demo(root, index, backend, rng, cuda_mod, not args.no_torch)
        except Exception as exc:
            g = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        results["graph"] = g
        failures += not g["ok"]
        print(f"{'PASS' if g['ok'] else 'FAIL'} graph replay: {json.dumps(g, default=str)[:1500]}")
    results["mlir_modules_loaded"] = [m for m in sys.modules
                                      if m.startswith(("mlir", "poot_mlir._mlir_libs", "poot_mlir.ir"))]
    results["failures"] = failures
    print(f"{len(results['cases'])} cases, {failures} failures; MLIR modules loaded: "
          f"{results['mlir_modules_loaded'] or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
