"""Per-kernel GPU time of one whole step (no CUDA graph), from torch's
profiler (CUPTI sees every kernel of the process, the runtime's own cuda-python
launches included): for a machine where ncu reads no counters.

    python bench/kernel_times.py DIR CASE [--steps N]

DIR/CASE: an artifact of bench/decode_step_h200.py. Prints one JSON object:
the kernels grouped by name (total us over the profiled steps / steps, calls
a step), largest first, and the step's kernel total.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "bench"))


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    import decode_step_h200 as bench

    import numpy as np

    from poot_mlir.runtime.program import ProgramArtifact

    folder, case = Path(sys.argv[1]), sys.argv[2]
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 3
    config = json.loads((folder / case / "config.json").read_text())
    hd = config["d_model"] // config["q_heads"]
    batch = config.get("batch", 1)
    w = bench._weights(config, config["dtype"], seed=0)
    art = ProgramArtifact(folder / case, backend="cuda")
    state = {f"{kind}{l}": np.zeros((batch, config["kv_heads"], config["cap"], hd),
                                    bench._np_dtype(config["dtype"]))
             for l in range(config["layers"]) for kind in "kv"}
    sess = art.session(state, constants=w, graph=False)
    inputs = {"pos": np.int32(bench.CASES[case][1]), "token": np.full((batch, 1), 7, np.int32)}
    sess.step(inputs, device_outputs=True)  # warm: modules loaded, buffers made
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            sess.step(inputs, device_outputs=True)
        torch.cuda.synchronize()
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA and event.device_time > 0:
            per[event.name][0] += event.device_time
            per[event.name][1] += 1
    rows = sorted(((name, us / steps, calls // steps) for name, (us, calls) in per.items()),
                  key=lambda r: -r[1])
    total = sum(us for _, us, _ in rows)
    print(json.dumps({"case": case, "device": torch.cuda.get_device_name(),
                      "kernel_us_per_step": round(total, 1),
                      "kernels": [{"name": n, "us": round(us, 1), "calls": c,
                                   "share": round(us / total, 3)} for n, us, c in rows]},
                     indent=1))


if __name__ == "__main__":
    main()
