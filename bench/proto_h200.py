"""Time the proposed decode schedule (bench/proto/decode_proto.cu) on the GPU.

    PYTHONPATH=python python bench/proto_h200.py [--json FILE] [--ncu CUBIN:SPLITS:FORM]

The cubins are built on the build machine (bench/build_artifacts.py --proto:
nvcc -arch=sm_90 -cubin, WARPS x UNROLL variants) and loaded with
runtime.cuda's CudaBackend like any artifact kernel. For every decode bench
form and split count it checks the output against the float64 torch reference
(‖out − ref‖/‖ref‖ <= 1e-5) and times one CUDA graph replaying the two
launches over several input sets (as bench/attention_h200.py does).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

import attention_h200 as ah  # noqa: E402
import cases  # noqa: E402

SPLITS = {1: (16, 33, 66), 16: (2, 4, 8)}


def params(backend, form: cases.Form, splits: int):
    chunk = math.ceil(form.key_len / splits)
    raw = np.array([form.batch, form.kv_heads, form.key_len, chunk, splits], np.int32).tobytes()
    raw += np.float32(form.scale).tobytes()
    return backend.upload(np.frombuffer(raw, np.uint8).copy())


def build(backend, kernels, form, t, out, splits):
    part, comb, fused = kernels
    P = params(backend, form, splits)
    rows = form.batch * form.q_heads
    groups = form.batch * form.kv_heads
    scratch = backend.alloc(rows * splits * (form.value_width + 2) * 4)
    if fused:
        counters = backend.alloc(groups * 4)
        backend.fill32(counters, 0)
        return backend.record([(part, [P, t["q"], t["k"], t["v"], scratch, out, counters], (splits, groups, 1))])
    return backend.record([
        (part, [P, t["q"], t["k"], t["v"], scratch], (splits, groups, 1)),
        (comb, [P, scratch, out], (rows, 1, 1)),
    ])


def flags(stem: str) -> dict:
    """decode_w8_u4_p1_h1_f1 -> {'w': 8, 'u': 4, 'p': 1, 'h': 1, 'f': 1}"""
    return {part[0]: int(part[1:]) for part in stem.split("_")[1:] if part[1:].isdigit()}


def load(backend, cubin: Path):
    data = cubin.read_bytes()
    f = flags(cubin.stem)
    fused = bool(f.get("f"))
    threads = (f["w"] + 1) * 32 if cubin.stem.startswith("tma") else f["w"] * 32  # + producer warp
    return (backend.kernel(data, "partials", 7 if fused else 5, (threads, 1, 1)),
            backend.kernel(data, "combine", 3, (128, 1, 1)), fused)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--ncu", default=None, help="cubin-stem:splits:form, run once")
    ap.add_argument("--only", default=None, help="comma-separated substrings of cubin names")
    args = ap.parse_args()

    import torch

    from poot_mlir.runtime.cuda import CudaBackend

    backend = CudaBackend()
    root = HERE / "artifacts" / "proto"
    forms = dict(cases.bench_forms())
    rng = np.random.default_rng()
    if args.ncu:
        stem, splits, fname = args.ncu.split(":")
        form = forms[fname]
        kern = load(backend, root / f"{stem}.cubin")
        t = ah.torch_inputs(torch, form, rng)
        out = torch.empty(form.out_shape, device="cuda")
        build(backend, kern, form, t, out, int(splits)).enqueue()
        backend.synchronize()
        print("ran", args.ncu)
        return 0

    variants = {}
    for cubin in sorted(root.glob("*.cubin")):
        if args.only and not any(x in cubin.stem for x in args.only.split(",")):
            continue
        variants[cubin.stem] = load(backend, cubin)
    results = {"forms": []}
    for name, form in forms.items():
        if form.q_len != 1:
            continue
        per_set = form.kv_bytes()
        n_sets = 1 if per_set >= ah.L2_ROTATE_BYTES else min(8, math.ceil(ah.L2_ROTATE_BYTES / per_set))
        sets = [ah.torch_inputs(torch, form, rng) for _ in range(n_sets)]
        ref = ah.reference64(torch, form, sets[0])
        res = {"form": name, "input_sets": n_sets, "kv_bytes": per_set, "variants": {}}
        for stem, kern in variants.items():
            for splits in SPLITS[form.batch]:
                outs = [torch.full(form.out_shape, float("nan"), device="cuda") for _ in sets]
                seqs = [build(backend, kern, form, t, o, splits) for t, o in zip(sets, outs)]
                seqs[0].enqueue()
                backend.synchronize()
                err = ah.rel_err(torch, outs[0], ref)
                graph = backend.capture(lambda s: [q.enqueue(s) for q in seqs])
                ms = graph.time(iters=30, warmup=2) / n_sets
                parts = [p.time(iters=20, warmup=2) for p in seqs[0].parts()] + [0.0]
                # A second replay must give the same bits (the fused counters reset themselves).
                before = outs[0].clone()
                outs[0].fill_(float("nan"))
                seqs[0].enqueue()
                backend.synchronize()
                same = bool(torch.equal(before.view(torch.int32), outs[0].view(torch.int32)))
                graph.close()
                key = f"{stem}_s{splits}"
                res["variants"][key] = {"ms": ms, "kv_TBps": per_set / ms / 1e9, "rel_err": err,
                                        "partials_ms": parts[0], "combine_ms": parts[1], "repeat_bitwise": same,
                                        "blocks": splits * form.batch * form.kv_heads}
        best = min(res["variants"], key=lambda k: res["variants"][k]["ms"])
        res["best"] = best
        b = res["variants"][best]
        worst_err = max(v["rel_err"] for v in res["variants"].values())
        res["all_repeat_bitwise"] = all(v["repeat_bitwise"] for v in res["variants"].values())
        print(f"{name:16s} best {best:18s} {b['ms']:.4f} ms {b['kv_TBps']:.3f} TB/s "
              f"(partials {b['partials_ms']:.4f} ms, combine {b['combine_ms']:.4f} ms); "
              f"worst rel err over {len(res['variants'])} variants {worst_err:.1e}, "
              f"repeat bitwise {res['all_repeat_bitwise']}", flush=True)
        for k, v in sorted(res["variants"].items(), key=lambda kv: kv[1]["ms"]):
            print(f"    {k:20s} {v['ms']:.4f} ms {v['kv_TBps']:.3f} TB/s rel={v['rel_err']:.1e}")
        results["forms"].append(res)
        del sets, ref
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
