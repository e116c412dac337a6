"""Shared pieces of the CPU benchmarks: timing, the machine's ceilings, torch.

Every benchmark runs poot and its torch peer in the same process, at the
same thread count (`torch.set_num_threads`, the artifact's OpenMP team),
alternating repetitions so a load spike from the shared machine hits both;
the figure reported is the median of the repetitions.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from typing import Callable

import numpy as np


def median_ms(fn: Callable[[], object], reps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def interleaved(fns: dict[str, Callable[[], object]], rounds: int, reps: int,
                settle_s: float = 0.4) -> dict[str, float]:
    """Median ms of each fn over `rounds` rounds of `reps` calls, the fns
    taking turns round by round. Before each turn the machine settles for
    `settle_s`: both thread pools spin after a parallel region (libomp's
    KMP_BLOCKTIME is 200 ms, libgomp spins too), and a pool still spinning
    on the other core would be timed as the peer's slowness."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(settle_s)
            fn()
            for _ in range(reps):
                start = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - start) * 1e3)
    return {k: statistics.median(v) for k, v in samples.items()}


def machine() -> dict[str, object]:
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0, 0, 0)
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": model,
        "cores": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "loadavg": [round(x, 2) for x in load],
    }


def ceilings(threads: int) -> dict[str, float]:
    """The machine's measured ceilings in this run: a 256 MiB memory copy
    (GB/s of read + write, numpy, one thread) and torch's SGEMM (GFLOP/s at
    `threads` threads, 1024^3 and 2048^3, the better)."""
    import torch

    src = np.ones(64 << 20, np.float32)
    dst = np.empty_like(src)
    ms = median_ms(lambda: np.copyto(dst, src), reps=7)
    copy = 2 * src.nbytes / (ms * 1e-3) / 1e9
    torch.set_num_threads(threads)
    best = 0.0
    for n in (1024, 2048):
        a = torch.randn(n, n)
        b = torch.randn(n, n)
        ms = median_ms(lambda: torch.mm(a, b), reps=5)
        best = max(best, 2 * n**3 / (ms * 1e-3) / 1e9)
    return {"copy_gbps": copy, "sgemm_gflops": best}
