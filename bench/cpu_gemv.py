"""Decode GEMVs on the CPU (issue 27): `x @ W` with the weight stored [K, N]
and `x @ W.T` with a torch Linear's weight [N, K], against torch in the same
process, as GB/s of weight bytes beside the machine's measured copy bandwidth.

    python bench/cpu_gemv.py [--threads 1,2] [--dtypes f32,bf16] [--json out.json]

Each case is one poot step (`poot.matmul`, the [N, K] form through
`poot.transpose perm = [1, 0]`: what the torch importer and the tracer emit
for a Linear without `pack_weights`), compiled by `compile_cpu` for this host
and called on bound arrays (`CpuArtifact.call`: no binding checks in the
timed loop). The peer is `F.linear(x, W[N, K])` for the [N, K] layout and
`x @ W[K, N]` for the [K, N] one, at the same thread count, interleaved turn
by turn (cpu_common.interleaved). Weight GB/s = weight bytes / median time:
a GEMV reads its weight once, and the weights (64 MB in every dtype: a
bf16 case has twice the N) are twice the L3, so they stream from memory
each call. The copy ceiling is cpu_common's: a 256
MiB numpy copy, GB/s of read + write, one thread. Every result is checked
against float64 on the same inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_common import ceilings, interleaved, machine  # noqa: E402

# (rows M, K, N): a square decode projection, a vocabulary head (a torch
# Linear(512, 32000)), and the square one over 16 rows (batched decode).
CASES = [(1, 4096, 4096), (1, 512, 32000), (16, 4096, 4096)]


def step_text(m: int, k: int, n: int, layout: str, dtype: str) -> str:
    """The poot step: y[M, N] = x[M, K] @ W, W stored [K, N] ("kn") or
    [N, K] read transposed ("nk")."""
    t = {"f32": "f32", "bf16": "bf16"}[dtype]
    if layout == "kn":
        return f"""
func.func @step(%x: tensor<{m}x{k}x{t}> {{poot.name = "x"}}, %w: tensor<{k}x{n}x{t}> {{poot.name = "w"}})
    -> (tensor<{m}x{n}x{t}> {{poot.name = "y"}}) {{
  %y = poot.matmul %x, %w : (tensor<{m}x{k}x{t}>, tensor<{k}x{n}x{t}>) -> tensor<{m}x{n}x{t}>
  return %y : tensor<{m}x{n}x{t}>
}}
"""
    return f"""
func.func @step(%x: tensor<{m}x{k}x{t}> {{poot.name = "x"}}, %w: tensor<{n}x{k}x{t}> {{poot.name = "w"}})
    -> (tensor<{m}x{n}x{t}> {{poot.name = "y"}}) {{
  %wt = poot.transpose %w perm = [1, 0] : tensor<{n}x{k}x{t}> -> tensor<{k}x{n}x{t}>
  %y = poot.matmul %x, %wt : (tensor<{m}x{k}x{t}>, tensor<{k}x{n}x{t}>) -> tensor<{m}x{n}x{t}>
  return %y : tensor<{m}x{n}x{t}>
}}
"""


def compile_linear(m: int, k: int, n: int, layout: str, dtype: str, workdir: Path) -> Path:
    """The step of `step_text` compiled for this host's CPU."""
    from poot_mlir.compiler import devices
    from poot_mlir.compiler.cpu import compile_cpu

    return compile_cpu(step_text(m, k, n, layout, dtype), workdir / f"{dtype}_{layout}_{m}_{k}_{n}",
                       device=devices.CPU)


def time_linear(path: Path, x: np.ndarray, w_nk: np.ndarray, layout: str, threads: int,
                rounds: int, reps: int) -> tuple[dict[str, float], float]:
    """The compiled linear step against torch at `threads` threads on the same
    arrays (`w_nk`: the weight as a torch Linear stores it; the "kn" step
    reads its transpose), interleaved turn by turn: (median ms of "poot" and
    "torch", poot's max error relative to float64)."""
    import torch
    import torch.nn.functional as F

    from poot_mlir.runtime.cpu import CpuArtifact

    torch_dtype = torch.float32 if x.dtype == np.float32 else torch.bfloat16
    ref = x.astype(np.float64) @ w_nk.astype(np.float64).T
    tx = torch.from_numpy(x.astype(np.float32)).to(torch_dtype)
    tw_nk = torch.from_numpy(w_nk.astype(np.float32)).to(torch_dtype)
    tw_kn = tw_nk.t().contiguous()
    art = CpuArtifact(path, threads=threads)
    try:
        arrays = art.bind({"x": x, "w": np.ascontiguousarray(w_nk.T) if layout == "kn" else w_nk})
        out = art.call(arrays)[0].astype(np.float64)
        err = float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))
        torch.set_num_threads(threads)
        if layout == "kn":
            peer = lambda: torch.matmul(tx, tw_kn)  # noqa: E731
        else:
            peer = lambda: F.linear(tx, tw_nk)  # noqa: E731
        with torch.inference_mode():
            ms = interleaved({"poot": lambda: art.call(arrays), "torch": peer},
                             rounds=rounds, reps=reps)
    finally:
        art.close()
    return ms, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dtypes", default="f32")
    ap.add_argument("--layouts", default="kn,nk")
    ap.add_argument("--rows", default="", help="only the cases of these M (e.g. 16)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import ml_dtypes
    import torch

    threads_list = [int(t) for t in args.threads.split(",")]
    info = machine() | {"torch": torch.__version__} | ceilings(max(threads_list))
    print(json.dumps(info), flush=True)
    rows = []
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtypes.split(","):
            np_dtype = np.float32 if dtype == "f32" else ml_dtypes.bfloat16
            for m, k, n0 in CASES:
                if args.rows and str(m) not in args.rows.split(","):
                    continue
                # The same weight bytes in every dtype (64 MB: twice the L3),
                # so a 16-bit weight streams from memory too: twice the N.
                n = n0 * 4 // np.dtype(np_dtype).itemsize
                w_nk = (rng.standard_normal((n, k), dtype=np.float32) / np.sqrt(k)).astype(np_dtype)
                x = rng.standard_normal((m, k), dtype=np.float32).astype(np_dtype)
                for layout in args.layouts.split(","):
                    path = compile_linear(m, k, n, layout, dtype, Path(tmp))
                    for threads in threads_list:
                        ms, err = time_linear(path, x, w_nk, layout, threads, args.rounds, args.reps)
                        nbytes = w_nk.nbytes
                        row = {
                            "dtype": dtype, "layout": layout, "m": m, "k": k, "n": n, "threads": threads,
                            "poot_ms": round(ms["poot"], 3), "torch_ms": round(ms["torch"], 3),
                            "poot_gbps": round(nbytes / ms["poot"] / 1e6, 2),
                            "torch_gbps": round(nbytes / ms["torch"] / 1e6, 2),
                            "poot_of_copy": round(nbytes / ms["poot"] / 1e6 / info["copy_gbps"], 3),
                            "torch_over_poot": round(ms["torch"] / ms["poot"], 2),
                            "max_rel_err": err,
                        }  # fmt: skip
                        rows.append(row)
                        print(json.dumps(row), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
