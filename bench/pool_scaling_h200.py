"""Paged decode step time against the pool size, on the H200 (issue 9).

The GPU twin of bench/pool_scaling_cpu.py (its step: Hq=8, Hkv=2, D=64, cap=256,
one new token per row, pools of 2^12 ... 2^20 slots), with B=1 (ROWS), like the CPU
benchmark. Two phases, because the H200 has no MLIR:

    # build machine: one whole-step artifact per pool size, for sm_90
    python bench/pool_scaling_h200.py build bench/artifacts/pool_h200
    # H200 (runtime only): time Session.step (one CUDA graph per step)
    python bench/pool_scaling_h200.py run bench/artifacts/pool_h200 > pool.json

`run` prints, per pool size, the median `Session.step` wall time (inputs
written, the step's graph replayed, the output read back) and whether the
pools are written in place (no state result leaves the device).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "python"))  # the H200 runs the package from the source tree

LOG2 = range(12, 21, 2)
ROWS = 1  # batch rows, as bench/pool_scaling_cpu.py


def build(out: Path) -> None:
    from pool_scaling_cpu import paged_step  # the CPU benchmark's step: one owner

    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu

    for log2 in LOG2:
        t0 = time.perf_counter()
        compile_gpu(paged_step(1 << log2, ROWS), devices.SM_90, out / f"pool_{log2}", fuse=False)
        print(f"2^{log2}: compiled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def run(out: Path, steps: int = 50) -> None:
    from pool_scaling_cpu import D, HKV, time_paged_steps

    B = ROWS

    from poot_mlir.runtime.program import ProgramArtifact

    rng = np.random.default_rng(0)
    rows = []
    for log2 in LOG2:
        slots = 1 << log2
        art = ProgramArtifact(out / f"pool_{log2}", backend="cuda")
        in_place = all(p.in_place_of is not None for p in art.signature.results if p.state)
        pools = {n: rng.standard_normal((slots, HKV, D), dtype=np.float32) for n in ("kp", "vp")}
        sess = art.session(pools)
        times = time_paged_steps(sess, slots, B, steps, rng)
        rows.append({"slots": slots, "pool_MB": 2 * slots * HKV * D * 4 / 1e6, "in_place": in_place,
                     "ms_per_step_median": statistics.median(times)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        art.close()
    print(json.dumps({"date": time.strftime("%Y-%m-%d"), "batch": B, "rows": rows}, indent=1))


if __name__ == "__main__":
    what, folder = sys.argv[1], Path(sys.argv[2])
    sys.path.insert(0, str(Path(__file__).parent))
    build(folder) if what == "build" else run(folder)
