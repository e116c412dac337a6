"""A CPU step on a shared machine: quiet against busy sibling processes.

    python bench/cpu_loaded.py [--threads N] [--busy K] [--json out.json]

The issue-27 case: libomp's default wait policy spins for KMP_BLOCKTIME
(200 ms) after each parallel region and at each barrier. When other
processes keep every core busy, a spinning thread takes the time slice its
teammate needs to finish the region, and a step that runs in 0.5 ms quiet
took 9-12 ms. Sleeping at once (blocktime 0) fixes that but costs a wake-up
a region on a quiet machine, so the runtime picks per step ('auto':
`runtime.cpu.CpuArtifact._blocktime`); this bench measures, for each
blocktime asked for on the command line, the median step quiet and with K busy processes (K =
the cores, by default), beside torch on the same inputs in the same phases.

Cases: decode attention 8/2 heads D 64 Lk 4k (one fused kernel, a few
parallel regions) and the `small` decoder step of bench/cpu_decoder.py
(8 layers d 512: dozens of parallel regions a step).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402
from cpu_common import machine  # noqa: E402
from cpu_decoder import CONFIGS, build, torch_decoder  # noqa: E402

_SPIN = "while True: pass"


@contextlib.contextmanager
def busy(processes: int):
    """`processes` siblings of this one's priority, each spinning one core."""
    procs = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(processes)]
    time.sleep(0.5)  # let the scheduler see them
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def median_ms(fn, seconds: float, max_reps: int = 200) -> float:
    fn()
    times = []
    deadline = time.perf_counter() + seconds
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < max_reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def attention_case(threads: int, rng):
    from poot_mlir.compiler.cpu import compile_cpu
    from poot_mlir.runtime.cpu import CpuArtifact
    import torch
    import torch.nn.functional as F

    form = cases.Form("decode_h8_d64_4k", q_heads=8, kv_heads=2, key_len=4096, key_width=64, value_width=64)
    with tempfile.TemporaryDirectory() as tmp:
        art = CpuArtifact(compile_cpu(cases.text(form), Path(tmp) / "a"), threads=threads)
    inputs = cases.inputs(form, rng)
    bound = art.bind(inputs)
    tq, tk, tv = (torch.from_numpy(inputs[n]) for n in "qkv")
    return art, (lambda: art.call(bound)), (
        lambda: F.scaled_dot_product_attention(tq, tk, tv, scale=form.scale, enable_gqa=True))


def decoder_case(threads: int, rng):
    from poot_mlir.examples.decoder import init_weights
    from poot_mlir.runtime.cpu import CpuArtifact
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        cfg, path, _ = build(CONFIGS["small"], Path(tmp) / "a")
        art = CpuArtifact(path, threads=threads)
    weights = init_weights(cfg, 0)
    pos = cfg.cap - 1
    shape = (1, cfg.kv_heads, cfg.cap, cfg.head_dim)
    state = {f"{kind}{l}": rng.standard_normal(shape, dtype=np.float32)
             for l in range(cfg.layers) for kind in "kv"}
    sess = art.session(state)
    feed = {"pos": np.int32(pos), "token": np.array([[7]], np.int32), **weights}
    caches = {k: torch.from_numpy(v.copy()) for k, v in state.items()}
    step = torch_decoder(cfg, weights)
    return art, (lambda: sess.step(feed)), (lambda: step(7, pos, caches))


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--busy", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--blocktimes", default="200,0,auto",
                    help="libomp blocktimes (ms) to compare: 200 is libomp's own default, "
                         "'auto' the runtime's per-step choice")
    ap.add_argument("--seconds", type=float, default=3.0, help="time per (case, phase, setting)")
    ap.add_argument("--cases", default="attention,decoder")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    info = machine() | {"torch": torch.__version__, "threads": args.threads, "busy": args.busy}
    print(json.dumps(info), flush=True)
    rng = np.random.default_rng(0)
    makers = {"attention": attention_case, "decoder": decoder_case}
    rows = []
    with torch.inference_mode():
        for name in args.cases.split(","):
            art, ours, peer = makers[name](args.threads, rng)
            for blocktime in args.blocktimes.split(","):
                art.blocktime_ms = None if blocktime == "auto" else int(blocktime)
                quiet = median_ms(ours, args.seconds)
                torch_quiet = median_ms(peer, args.seconds)
                with busy(args.busy):
                    loaded = median_ms(ours, args.seconds)
                    torch_loaded = median_ms(peer, args.seconds)
                row = {"case": name, "blocktime_ms": blocktime, "poot_quiet_ms": quiet,
                       "poot_loaded_ms": loaded, "poot_slowdown": loaded / quiet,
                       "torch_quiet_ms": torch_quiet, "torch_loaded_ms": torch_loaded,
                       "torch_slowdown": torch_loaded / torch_quiet}
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
