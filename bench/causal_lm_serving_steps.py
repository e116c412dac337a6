"""Where the serving benchmark's step time goes (issue 25): the run phase of
`bench/causal_lm_serving.py` on its prebuilt CUDA steps, with every step
timed and filed under its bucket (tokens per row: 1 = decode-only steps,
the chunk = steps carrying prefill chunks) and its live rows.

    python bench/causal_lm_serving_steps.py bench/artifacts/serving > steps.json   # on the GPU
    python bench/causal_lm_serving_steps.py bench/artifacts/serving --profile        # + top kernels
    python bench/causal_lm_serving_steps.py bench/artifacts/serving --host-profile   # + Python's hot spots

One JSON object: per bucket, the steps, their total and mean ms, and the mean
rows (the `count` input's non-zero rows).
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))
import causal_lm_serving as serving  # noqa: E402


STEP_RANGE = "poot_step_t"


def kernels_by_bucket(prof, steps: dict[int, int], top: int = 20) -> dict:
    """The profile's GPU kernels filed under the bucket of the step range
    they ran in (by start time: the profiler puts CPU ranges and GPU
    kernels on one clock), largest first: per bucket, the GPU ms and
    launches per step and each kernel name's ms per step."""
    import bisect

    import torch

    ranges = sorted(
        (e.time_range.start, e.time_range.end, int(e.name[len(STEP_RANGE):]))
        for e in prof.events() if e.name.startswith(STEP_RANGE)
    )  # fmt: skip
    starts = [r[0] for r in ranges]
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0]))
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA or event.device_time <= 0:
            continue
        if event.name.startswith(STEP_RANGE):
            continue  # the range itself, mirrored on the GPU timeline: not a kernel
        i = bisect.bisect_right(starts, event.time_range.start) - 1
        inside = i >= 0 and event.time_range.start <= ranges[i][1]
        bucket = str(ranges[i][2]) if inside else "outside"
        per[bucket][event.name][0] += event.device_time
        per[bucket][event.name][1] += 1
    out = {}
    for bucket, kernels in sorted(per.items()):
        n = max(steps.get(int(bucket), 1), 1) if bucket.isdigit() else 1
        total = sum(us for us, _ in kernels.values())
        out[bucket] = {
            "gpu_ms_per_step": total / 1e3 / n,
            "launches_per_step": sum(c for _, c in kernels.values()) / n,
            "kernels": [{"name": name[:60], "ms_per_step": us / 1e3 / n, "launches_per_step": c / n,
                         "share": us / total}
                        for name, (us, c) in sorted(kernels.items(), key=lambda kv: -kv[1][0])[:top]],
        }  # fmt: skip
    return {"kernels_by_bucket": out}


def main(folder: str, profile: bool = False, trace: str | None = None, host_profile: bool = False) -> int:
    import numpy as np
    import torch

    out = Path(folder)
    case = json.loads((out / "case.json").read_text())
    args = serving.options(["--target", "cuda", "--phase", "run", "--artifacts", folder])
    for name in ("layers", "requests", "prompt_min", "prompt_max", "new", "max_batch", "chunk",
                 "dtype", "seed", "tiny", "small"):  # fmt: skip
        setattr(args, name, case["args"].get(name, False))
    model = serving.make_model(args, "cuda")
    prompts = serving.workload(args, model.config.vocab_size)
    engine = serving.cuda_engine(out, model, case)
    runner = engine.runner
    times: dict[int, list[tuple[float, int]]] = defaultdict(list)
    step = runner.step

    def timed(inputs, fetch=None):
        tokens = int(np.asarray(inputs["tokens"]).shape[-1])
        torch.cuda.synchronize()
        # Synchronized on both sides: every kernel of the step runs inside
        # this range, which files it under its bucket in the profile.
        with torch.profiler.record_function(f"{STEP_RANGE}{tokens}"):
            t0 = time.perf_counter()
            result = step(inputs, fetch=fetch)
            torch.cuda.synchronize()
            elapsed = time.perf_counter() - t0
        rows = int(np.count_nonzero(np.asarray(inputs["count"])))
        times[tokens].append((elapsed, rows))
        return result

    runner.step = timed
    serving.serve(engine, prompts[:2], 4, "warm")  # both buckets load and capture once
    times.clear()
    engine.reset_prefix_cache()
    if host_profile:
        import cProfile
        import io
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        _, stats = serving.serve(engine, prompts, args.new, "run.")
        profiler.disable()
        text = io.StringIO()
        for order in ("tottime", "cumulative"):
            pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(35)
        host_report = text.getvalue()
    elif profile:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            _, stats = serving.serve(engine, prompts, args.new, "run.")
    else:
        _, stats = serving.serve(engine, prompts, args.new, "run.")
    engine.close()
    report = {
        "device": torch.cuda.get_device_name(), "tokens_per_s": stats["tokens_per_s"],
        "buckets": {
            str(tokens): {"steps": len(ts), "total_ms": 1e3 * sum(t for t, _ in ts),
                          "mean_ms": 1e3 * sum(t for t, _ in ts) / len(ts),
                          "mean_rows": sum(r for _, r in ts) / len(ts)}
            for tokens, ts in sorted(times.items())
        },
    }  # fmt: skip
    if profile and trace:
        prof.export_chrome_trace(trace)  # every kernel with its grid, in order
    if host_profile:
        report["host_profile"] = host_report.splitlines()
    if profile:
        report.update(kernels_by_bucket(prof, {t: len(ts) for t, ts in times.items()}))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    flags = sys.argv[2:]
    sys.exit(main(sys.argv[1], profile="--profile" in flags, host_profile="--host-profile" in flags,
                  trace=flags[flags.index("--trace") + 1] if "--trace" in flags else None))
