"""Compile the sparse-selection benchmark artifacts (build machine only).

    source /work/venv/bin/activate; export PYTHONPATH=<build>/python_packages
    python bench/sparse_build.py [--target nvvm|spirv] [--tiny] [--out DIR]

For every form of bench/sparse_cases.py writes
<out>/sparse/<form>@<variant>/ (manifest.json + kernel files) and
<out>/sparse_index.json (each variant's form, device changes, planned
requests, launches and, for PTX, ptxas's resource report). Variants are
planner inputs, not code changes:

- `dense`: poot.attention over all Lk keys, the default sm_90 plan (decode:
  warp decode; prefill: streaming);
- `sparse`: block_topk + selected_attention, the default plan (decode:
  split over the 1088 visited positions, 132 compute units);
- `sparse_cu1`: the same with one compute unit described (fewer splits: 4
  for the warp-decode schedule, none for the seed schedules).

Carry <out> to the GPU machine (`carry: ["bench/artifacts"]`); it needs no
MLIR there. `--tiny` builds the toy forms instead (the runner's smoke test).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sparse_cases  # noqa: E402
from _compile import compile_artifact  # noqa: E402

VARIANTS = {
    "dense": ("dense", {}),
    "sparse": ("sparse", {}),
    "sparse_cu1": ("sparse", {"compute_units": 1}),
}


def build_one(form: sparse_cases.SparseBench, variant: str, device, out_root: Path) -> dict:
    kind, changes = VARIANTS[variant]
    out = out_root / "sparse" / f"{form.name}@{variant}"
    if out.exists():
        shutil.rmtree(out)
    dev = device.with_limits(**changes) if changes else device
    text = sparse_cases.sparse_text(form) if kind == "sparse" else sparse_cases.dense_text(form)
    entry = {"form": dataclasses.asdict(form), "variant": variant, "kind": kind,
             "device_changes": changes, "path": str(out.relative_to(out_root))}
    try:
        path = compile_artifact(text, dev, out)
    except Exception as exc:  # a planner refusal is a result too
        entry["error"] = f"{type(exc).__name__}: {exc}"
        return entry
    manifest = json.loads((path / "manifest.json").read_text())
    entry["requests"] = [a["request"] for a in manifest["attention"]]
    entry["launches"] = [{k: l[k] for k in ("entry", "grid", "block")}
                         for a in manifest["attention"] for l in a["launches"]]
    if device.target == "nvvm":
        from build_artifacts import ptxas_report

        entry["ptxas"] = {f.name: ptxas_report(f) for f in sorted(path.glob("*.ptx"))}
    return entry


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", choices=["nvvm", "spirv"], default="nvvm")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--out", default=str(HERE / "artifacts"))
    args = ap.parse_args()

    from poot_mlir.compiler import devices

    device = devices.SM_90 if args.target == "nvvm" else devices.VULKAN_LAVAPIPE.with_limits(
        compute_units=132, workgroup_memory=32 * 1024)
    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    index = {}
    forms = sparse_cases.tiny_forms() if args.tiny else sparse_cases.bench_forms()
    for form in forms:
        for variant in VARIANTS:
            if form.pos is not None and VARIANTS[variant][0] == "dense":
                continue  # a verification form: its rows sit anywhere, dense has no such mask
            e = build_one(form, variant, device, out_root)
            index[f"{form.name}@{variant}"] = e
            reqs = [(r.get("schedule"), r.get("lanes"), r.get("splits", 1)) for r in e.get("requests", [])]
            print(f"{form.name:18s} {variant:14s} {reqs} {e.get('error', '')}", flush=True)
    (out_root / "sparse_index.json").write_text(json.dumps(index, indent=1))


if __name__ == "__main__":
    main()
