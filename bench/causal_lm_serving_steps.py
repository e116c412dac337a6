"""Where the serving benchmark's step time goes (issue 25): the run phase of
`bench/causal_lm_serving.py` on its prebuilt CUDA steps, with every step
timed and filed under its bucket (tokens per row: 1 = decode-only steps,
the chunk = steps carrying prefill chunks) and its live rows.

    python bench/causal_lm_serving_steps.py bench/artifacts/serving > steps.json   # on the GPU
    python bench/causal_lm_serving_steps.py bench/artifacts/serving --profile        # + top kernels

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


def main(folder: str, profile: bool = False, trace: str | None = None) -> int:
    import numpy as np
    import torch

    out = Path(folder)
    case = json.loads((out / "case.json").read_text())
    args = serving.options(["--target", "cuda", "--phase", "run", "--artifacts", folder])
    for name in ("layers", "requests", "prompt_min", "prompt_max", "new", "max_batch", "chunk",
                 "dtype", "seed", "tiny"):  # fmt: skip
        setattr(args, name, case["args"][name])
    model = serving.make_model(args, "cuda")
    prompts = serving.workload(args, model.config.vocab_size)
    engine = serving.cuda_engine(out, model, case)
    runner = engine.runner
    times: dict[int, list[tuple[float, int]]] = defaultdict(list)
    step = runner.step

    def timed(inputs, fetch=None):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = step(inputs, fetch=fetch)
        torch.cuda.synchronize()
        tokens = int(np.asarray(inputs["tokens"]).shape[-1])
        rows = int(np.count_nonzero(np.asarray(inputs["count"])))
        times[tokens].append((time.perf_counter() - t0, rows))
        return result

    runner.step = timed
    serving.serve(engine, prompts[:2], 4, "warm")  # both buckets load and capture once
    times.clear()
    engine.reset_prefix_cache()
    if profile:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
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
    if profile:
        # The kernels that took the run's GPU time, by name (largest first).
        per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for event in prof.events():
            if event.device_type == torch.autograd.DeviceType.CUDA and event.device_time > 0:
                per[event.name][0] += event.device_time
                per[event.name][1] += 1
        total = sum(us for us, _ in per.values())
        report["kernel_ms_total"] = total / 1e3
        report["kernels"] = [
            {"name": name[:60], "ms": us / 1e3, "calls": calls, "share": us / total}
            for name, (us, calls) in sorted(per.items(), key=lambda kv: -kv[1][0])[:15]
        ]
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    flags = sys.argv[2:]
    sys.exit(main(sys.argv[1], profile="--profile" in flags,
                  trace=flags[flags.index("--trace") + 1] if "--trace" in flags else None))
