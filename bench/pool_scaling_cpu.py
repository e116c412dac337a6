"""Paged decode step time against the pool size, on the CPU target.

The seed's promise: a paged step writes its new rows "in place on the
donated pool and at a cost that follows the tokens, not the pool". This
compiles one paged decode step (B=1, Hq=8, Hkv=2, D=64, cap=256, one new
token) for pools of 2^12 ... 2^20 slots and times `Session.step` (median of
repeated steps, after warm-up). Before in-place state the session copied
both pools every step (0.67 ms at 64 slots, 150 ms at 262,144 slots).

    python bench/pool_scaling_cpu.py [--max-log2 20] [--steps 50]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from datetime import date

import numpy as np

B, HQ, HKV, D, CAP = 1, 8, 2, 64, 256


def paged_step(slots: int, batch: int = B):
    # (Imported here: bench/pool_scaling_h200.py reads the shape constants on
    # a machine without MLIR.)
    from poot_mlir.compiler import fuse_attention
    from poot_mlir.frontend import Tracer, ops

    tr = Tracer("step")
    kp = tr.state("kp", (slots, HKV, D))
    vp = tr.state("vp", (slots, HKV, D))
    pos = tr.pos(max_pos=CAP - 1)
    write = tr.write_map("write", batch, slots)
    read = tr.slot_map("read", batch, CAP, slots)
    q = tr.input("q", (batch, HQ, 1, D))
    k = tr.input("k", (batch, HKV, 1, D))
    v = tr.input("v", (batch, HKV, 1, D))
    out, kp1, vp1 = ops.attention_paged(q, k, v, kp, vp, write, read, pos)
    tr.output("out", out)
    tr.state_out("kp", kp1)
    tr.state_out("vp", vp1)
    module = tr.finish()
    fuse_attention(module)
    return module


def time_paged_steps(sess, slots: int, batch: int, steps: int, rng) -> list[float]:
    """Milliseconds of `steps` calls of `sess.step` (after 5 warm-up steps),
    one new token per row each, every row in its own random slots (shared by
    this benchmark and bench/pool_scaling_h200.py)."""
    table = rng.permutation(slots)[: batch * CAP].astype(np.int32).reshape(batch, CAP)
    times = []
    for step in range(steps + 5):
        pos = step % CAP
        inputs = {
            "q": rng.standard_normal((batch, HQ, 1, D)).astype(np.float32),
            "k": rng.standard_normal((batch, HKV, 1, D)).astype(np.float32),
            "v": rng.standard_normal((batch, HKV, 1, D)).astype(np.float32),
            "pos": np.int32(pos),
            "write": table[:, pos].copy(),
            "read": table,
        }
        t0 = time.perf_counter()
        sess.step(inputs)
        if step >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def main() -> None:
    from poot_mlir.compiler import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact

    parser = argparse.ArgumentParser()
    parser.add_argument("--min-log2", type=int, default=12)
    parser.add_argument("--max-log2", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for log2 in range(args.min_log2, args.max_log2 + 1, 2):
        slots = 1 << log2
        art = CpuArtifact(compile_cpu(paged_step(slots), tempfile.mkdtemp(prefix="pool-")))
        in_place = all(p.in_place_of is not None for p in art.signature.results if p.state)
        pools = {n: rng.standard_normal((slots, HKV, D)).astype(np.float32) for n in ("kp", "vp")}
        sess = art.session(pools)
        times = time_paged_steps(sess, slots, B, args.steps, rng)
        pool_mb = 2 * slots * HKV * D * 4 / 1e6
        row = {"slots": slots, "pool_MB": round(pool_mb, 1), "ms_per_step": round(statistics.median(times), 3),
               "in_place": in_place}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"date": str(date.today()), "machine": platform.processor() or platform.machine(),
                      "cores": __import__("os").cpu_count(), "rows": rows}))


if __name__ == "__main__":
    main()
