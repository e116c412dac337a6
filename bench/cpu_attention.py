"""Fused attention on the CPU against torch SDPA (CPU), same run, same threads.

    python bench/cpu_attention.py [--threads N] [--reps R] [--json out.json]

Decode (B=1, Hq/Hkv/D = 8/2/64 and 32/8/128, Lk = 4k, 8k, 16k) and causal
prefill (L = 512, 1024), each as one `poot.attention` compiled by
`compile_cpu` for the detected host (the CPU schedule, OpenMP), checked
against torch's output, timed interleaved with `F.scaled_dot_product_attention`
(`enable_gqa=True`; prefill `is_causal=True`). Reports ms, GB/s of K/V read
(decode) and GFLOP/s (prefill: the causal half), beside the machine's copy and
SGEMM ceilings measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402
from cpu_common import ceilings, interleaved, machine  # noqa: E402

DECODE = [
    cases.Form(f"decode_h{hq}_d{d}_{lk // 1024}k", q_heads=hq, kv_heads=hkv, key_len=lk,
               key_width=d, value_width=d)
    for hq, hkv, d in ((8, 2, 64), (32, 8, 128))
    for lk in (4096, 8192, 16384)
]
PREFILL = [
    cases.Form(f"prefill_h{hq}_d{d}_L{L}", q_heads=hq, kv_heads=hkv, q_len=L, key_len=L,
               key_width=d, value_width=d, mask="causal")
    for hq, hkv, d in ((8, 2, 64), (32, 8, 128))
    for L in (512, 1024)
] + [
    # The causal kind: no mask tensor, key blocks above the diagonal skipped.
    cases.Form(f"prefill_kind_h{hq}_d{d}_L{L}", q_heads=hq, kv_heads=hkv, q_len=L, key_len=L,
               key_width=d, value_width=d, causal=True)
    for hq, hkv, d in ((8, 2, 64), (32, 8, 128))
    for L in (512, 1024)
]


def main() -> None:
    import torch
    import torch.nn.functional as F

    from poot_mlir.compiler import devices
    from poot_mlir.compiler.cpu import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=devices.CPU.compute_units)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--only", default="", help="substring of the case names to run")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    info = machine() | {"torch": torch.__version__, "threads": args.threads,
                        "device": devices.CPU.to_json()}
    info |= ceilings(args.threads)
    print(json.dumps(info))
    rows = []
    for form in DECODE + PREFILL:
        if args.only and args.only not in form.name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            art = CpuArtifact(compile_cpu(cases.text(form), Path(tmp) / "a"), threads=args.threads)
        inputs = cases.inputs(form, rng)
        bound = art.bind(inputs)
        tq, tk, tv = (torch.from_numpy(inputs[n]) for n in "qkv")
        causal = form.mask == "causal" or form.causal

        def sdpa():
            return F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=form.scale,
                                                  enable_gqa=True)

        n_rep = form.q_heads // form.kv_heads
        tk_rep, tv_rep = (t.repeat_interleave(n_rep, dim=1) for t in (tk, tv))

        def sdpa_rep():  # K/V repeated per query head beforehand (not timed)
            return F.scaled_dot_product_attention(tq, tk_rep, tv_rep, is_causal=causal,
                                                  scale=form.scale)

        ours = art.call(bound)[0]
        ref = sdpa().numpy()
        err = float(np.max(np.abs(ours - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
        times = interleaved({"poot": lambda: art.call(bound), "sdpa_gqa": sdpa, "sdpa_rep": sdpa_rep},
                            args.rounds, args.reps)
        # The peer is torch's faster formulation of the two.
        times["sdpa"] = min(times["sdpa_gqa"], times["sdpa_rep"])
        row = {"case": form.name, "poot_ms": times["poot"], "sdpa_ms": times["sdpa"],
               "sdpa_gqa_ms": times["sdpa_gqa"], "sdpa_rep_ms": times["sdpa_rep"],
               "speedup": times["sdpa"] / times["poot"], "max_rel_err": err}
        if causal:
            L = form.q_len
            flops = 2 * form.q_heads * L * (L + 1) / 2 * (form.key_width + form.value_width)
            row |= {"poot_gflops": flops / times["poot"] / 1e6, "sdpa_gflops": flops / times["sdpa"] / 1e6}
        else:
            row |= {"poot_gbps": form.kv_bytes() / times["poot"] / 1e6,
                    "sdpa_gbps": form.kv_bytes() / times["sdpa"] / 1e6}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
