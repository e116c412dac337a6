"""Prefill-sized linear layers on the CPU (issue 27): `x @ W` with the
weight [K, N] and `x @ W.T` with a torch Linear's [N, K], many rows, against
torch in the same process at the same thread count, as GFLOP/s.

    python bench/cpu_gemm.py [--threads 2] [--dtypes f32,bf16] [--json out.json]

Each case is one poot step (bench/cpu_gemv.py's `compile_linear`, timed by its
`time_linear`), compiled by `compile_cpu` for this host and called on bound arrays; the peer is
`torch.matmul(x, W[K, N])` / `F.linear(x, W[N, K])`, interleaved turn by
turn (cpu_common.interleaved). Every result is checked against float64.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_common import ceilings, machine  # noqa: E402
from cpu_gemv import compile_linear, time_linear  # noqa: E402

#: (rows M, K, N): a prefill chunk of 512 and of 128 rows through a d 2048 projection.
CASES = [(512, 2048, 2048), (128, 2048, 2048)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--layouts", default="kn,nk")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import ml_dtypes
    import torch

    from poot_mlir.compiler import devices

    info = machine() | {"torch": torch.__version__, "threads": args.threads,
                        "bf16_dot": devices.CPU.bf16_dot} | ceilings(args.threads)
    print(json.dumps(info), flush=True)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtypes.split(","):
            np_dtype = np.float32 if dtype == "f32" else ml_dtypes.bfloat16
            for m, k, n in CASES:
                w_nk = (rng.standard_normal((n, k), dtype=np.float32) / np.sqrt(k)).astype(np_dtype)
                x = rng.standard_normal((m, k), dtype=np.float32).astype(np_dtype)
                for layout in args.layouts.split(","):
                    path = compile_linear(m, k, n, layout, dtype, Path(tmp))
                    ms, err = time_linear(path, x, w_nk, layout, args.threads, args.rounds, args.reps)
                    flop = 2 * m * k * n
                    row = {"dtype": dtype, "layout": layout, "m": m, "k": k, "n": n,
                           "poot_ms": round(ms["poot"], 3), "torch_ms": round(ms["torch"], 3),
                           "poot_gflops": round(flop / ms["poot"] / 1e6, 1),
                           "torch_gflops": round(flop / ms["torch"] / 1e6, 1),
                           "torch_over_poot": round(ms["torch"] / ms["poot"], 2), "max_rel_err": err}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
