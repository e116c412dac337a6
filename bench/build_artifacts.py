"""Compile the H200 verification and benchmark artifacts (build machine only).

    source /work/venv/bin/activate; export PYTHONPATH=/work/build/python_packages
    python bench/build_artifacts.py [--only verify|bench] [--target spirv]

Writes bench/artifacts/<kind>/<case>/ (manifest.json + kernel files) and
bench/artifacts/index.json (each case's form, device changes, expected
schedule, planned request, and ptxas's resource report of every kernel). The
folder is git-ignored: regenerate it, then carry it to the GPU machine
(`carry: ["bench/artifacts"]`). The GPU machine needs no MLIR.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402
from _compile import compile_artifact  # noqa: E402

PTXAS = "/usr/local/cuda/bin/ptxas"


def ptxas_report(ptx: Path) -> dict[str, dict[str, int]]:
    """Registers / shared / stack / spills per entry, from `ptxas -v`."""
    if not Path(PTXAS).exists():
        return {}
    proc = subprocess.run([PTXAS, "-arch=sm_90", "-v", "-O3", str(ptx), "-o", "/dev/null"],
                          capture_output=True, text=True)
    report: dict[str, dict[str, int]] = {}
    entry = None
    for line in (proc.stderr + proc.stdout).splitlines():
        if "ptxas error" in line or "ptxas fatal" in line:
            report.setdefault("errors", []).append(line.strip())  # type: ignore[arg-type]
            continue
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            entry = m.group(1)
            report[entry] = {}
        if entry is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            report[entry].update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                                 spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            report[entry]["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            report[entry]["smem"] = int(m.group(1))
    return report


def build_one(kind: str, case_id: str, form: cases.Form, changes: dict, out_root: Path,
              device, fmt: str = "isa") -> dict:
    out = out_root / kind / case_id
    if out.exists():
        shutil.rmtree(out)
    dev = device.with_limits(**changes) if changes else device
    entry = {"kind": kind, "case": case_id, "form": dataclasses.asdict(form), "device_changes": changes,
             "format": fmt, "path": str(out.relative_to(out_root))}
    try:
        path = compile_artifact(cases.text(form), dev, out, nvvm_format=fmt)
    except Exception as exc:  # a planner refusal is a result too
        entry["error"] = f"{type(exc).__name__}: {exc}"
        return entry
    manifest = json.loads((path / "manifest.json").read_text())
    att = manifest["attention"][0]
    entry["request"] = att["request"]
    entry["launches"] = [{k: l[k] for k in ("entry", "grid", "block")} for l in att["launches"]]
    if device.target == "nvvm" and fmt == "isa":
        entry["ptxas"] = {}
        for f in sorted(path.glob("*.ptx")):  # one file per kernel module of the program
            entry["ptxas"].update(ptxas_report(f))
    return entry


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["verify", "bench", "proto"], default=None)
    ap.add_argument("--target", choices=["nvvm", "spirv"], default="nvvm")
    ap.add_argument("--out", default=str(HERE / "artifacts"))
    args = ap.parse_args()

    from poot_mlir.compiler import devices

    device = devices.SM_90 if args.target == "nvvm" else devices.VULKAN_LAVAPIPE.with_limits(
        compute_units=132, workgroup_memory=32 * 1024)
    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    index_path = out_root / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    if args.only in (None, "verify"):
        for case_id, form, changes, expected in cases.verify_cases():
            e = build_one("verify", case_id, form, changes, out_root, device)
            e["expected_schedule"] = expected
            got = e.get("request", {}).get("schedule")
            flag = "" if got == expected else f"   <-- expected {expected}"
            print(f"verify/{case_id:24s} {got} lanes={e.get('request', {}).get('lanes')} "
                  f"splits={e.get('request', {}).get('splits')} grid={[l['grid'] for l in e.get('launches', [])]}"
                  f"{flag} {e.get('error', '')}")
            index[f"verify/{case_id}"] = e
        g = build_one("verify", "graph_live", cases.GRAPH_FORM, {}, out_root, device)
        index["verify/graph_live"] = g
        if args.target == "nvvm":
            # The same decode as a cubin assembled here by the local ptxas.
            gqa = next(f for cid, f, _, _ in cases.verify_cases() if cid == "gqa_decode-split")
            c = build_one("verify", "gqa_decode-split-cubin", gqa, {}, out_root, device, fmt="bin")
            c["expected_schedule"] = "split_kv"
            index["verify/gqa_decode-split-cubin"] = c
    if args.only in (None, "bench"):
        variants = bench_variants()
        for name, form in cases.bench_forms():
            for vname, changes in variants(form):
                case_id = f"{name}@{vname}"
                e = build_one("bench", case_id, form, changes, out_root, device)
                r = e.get("request", {})
                print(f"bench/{case_id:32s} {r.get('schedule')} lanes={r.get('lanes')} "
                      f"splits={r.get('splits')} grid={[l['grid'] for l in e.get('launches', [])]} "
                      f"{e.get('error', '')}")
                index[f"bench/{case_id}"] = e
    if args.only in (None, "bench") and args.target == "nvvm":
        # Wide heads: 64 lanes x (dv + 2) floats of static shared memory. dv = 160
        # fits the 48 KiB a PTX `.shared` array may use; dv = 256 (66 KB) does not,
        # although SM_90's description offers 227 KiB (bench/check_wide.py).
        for dv in (160, 256):
            form = cases.Form(f"wide{dv}", batch=1, q_heads=4, kv_heads=2, key_len=1024,
                              key_width=dv, value_width=dv)
            e = build_one("extra", f"wide{dv}", form, {}, out_root, device)
            index[f"extra/wide{dv}"] = e
            print(f"extra/wide{dv}: smem {e.get('ptxas', {}).get('partials', {}).get('smem')}")
    if args.only in (None, "proto") and args.target == "nvvm":
        build_proto(out_root / "proto")
    index_path.write_text(json.dumps(index, indent=1))
    print(f"wrote {index_path} ({len(index)} entries)")


NVCC = "/usr/local/cuda/bin/nvcc"


def build_proto(out: Path) -> None:
    """The proposal's prototype decode kernel (bench/proto/decode_proto.cu),
    WARPS x UNROLL variants, as sm_90 cubins (bench/proto_h200.py runs them)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.cubin"):
        old.unlink()
    # (warps, unroll, pipe, hint, fused): run 2's two shapes, then one lever at a time.
    configs = [(4, 4, 0, 0, 0), (4, 8, 0, 0, 0), (8, 4, 0, 0, 0), (8, 8, 0, 0, 0),
               (8, 4, 1, 0, 0), (8, 8, 1, 0, 0), (8, 4, 1, 1, 0), (8, 4, 1, 1, 1), (8, 8, 1, 1, 1),
               (4, 8, 1, 1, 1), (8, 4, 0, 1, 1)]
    for warps, unroll, pipe, hint, fused in configs:
        if True:
            dst = out / f"decode_w{warps}_u{unroll}_p{pipe}_h{hint}_f{fused}.cubin"
            proc = subprocess.run([NVCC, "-arch=sm_90", "-O3", "-cubin", f"-DWARPS={warps}",
                                   f"-DUNROLL={unroll}", f"-DPIPE={pipe}", f"-DHINT={hint}", f"-DFUSED={fused}",
                                   "-Xptxas", "-v", str(HERE / "proto" / "decode_proto.cu"),
                                   "-o", str(dst)], capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(proc.stderr)
            regs = re.findall(r"Used (\d+) registers", proc.stderr)
            print(f"proto/{dst.name}: registers {regs} (combine, partials)")
    # The bulk-copy (TMA) pipeline: (warps, tile keys, stages).
    for warps, tile, stages in [(8, 8, 5), (8, 16, 2), (4, 8, 5), (8, 4, 10)]:
        dst = out / f"tma_w{warps}_k{tile}_s{stages}_f1.cubin"
        proc = subprocess.run([NVCC, "-arch=sm_90", "-O3", "-cubin", f"-DWARPS={warps}", f"-DTILE={tile}",
                               f"-DSTAGES={stages}", "-Xptxas", "-v", str(HERE / "proto" / "decode_tma.cu"),
                               "-o", str(dst)], capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(proc.stderr)
        regs = re.findall(r"Used (\d+) registers", proc.stderr)
        print(f"proto/{dst.name}: registers {regs} (combine, partials)")


def bench_variants():
    """Planner inputs to try per bench form (data, not code): the default
    SM_90 description first."""

    def variants(form: cases.Form):
        out = [("default", {})]
        if form.q_len == 1 and form.q_heads // form.kv_heads >= 8:
            # The wide-head decode: fewer and more splits (its workgroup memory
            # is the 48 KiB ptxas accepts; a larger description would not assemble).
            out.append(("cu264", {"compute_units": 264}))
            out.append(("cu4224", {"compute_units": 4224}))
            return out
        if form.q_len == 1:
            # More splits: the planner wants ceil(compute_units / rows) (<= 16).
            out.append(("cu528", {"compute_units": 528}))
            out.append(("cu4224", {"compute_units": 4224}))
            if form.batch > 1:
                out.append(("cu8192", {"compute_units": 8192}))
            # Fewer lanes: 32 (one warp) a workgroup.
            out.append(("lanes32", {"workgroup_memory": 32 * (form.value_width + 2) * 4}))
            out.append(("lanes32_cu4224", {"workgroup_memory": 32 * (form.value_width + 2) * 4,
                                           "compute_units": 4224}))
            # The warp decode's default is 16-byte loads with up to 4 keys a
            # warp step; beside it the scalar one-key form and 2 keys
            # (bench/NOTES.md "Warp decode: 16-byte loads").
            out.append(("scalar", {"max_unroll": 0}))
            out.append(("unroll2", {"max_unroll": 2}))
            # Split counts around the planner's (B=1 long Lk: 128 splits, 1024
            # workgroups = 1.55 waves at 96 registers).
            out.append(("splits64", {"max_splits": 64}))
            out.append(("splits256", {"max_splits": 256}))
        return out

    return variants


if __name__ == "__main__":
    main()
