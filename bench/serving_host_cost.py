"""The serving engine's host cost per step (issue 25): `driver.Engine`'s
planning and bookkeeping -- admission, block tables, read maps, commits --
with an instant runner in place of the compiled step, on the serving
bench's workload (64 requests of 128-512 prompt tokens, 128 new tokens
each, the shape of bench/artifacts/serving). What the GPU waits for
between steps on the device machine comes on top of the runner's own
binding and launch.

    python bench/causal_lm_serving.py --target cuda --phase build --artifacts bench/artifacts/serving
    python bench/serving_host_cost.py [--profile]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "python"))

from poot_mlir.driver import Engine, PagedKVCache, Request, WeightsIdentity  # noqa: E402
from poot_mlir.models.hf_export import NEXT_TOKEN  # noqa: E402
from poot_mlir.models.serving import EngineShape  # noqa: E402
from poot_mlir.runtime.manifest import manifest_signature, read_manifest  # noqa: E402

ARTIFACTS = ROOT / "bench" / "artifacts" / "serving"


class InstantRunner:
    """Takes a step's inputs and returns a token per row at once."""

    buckets = (1, 64)
    state: dict = {}
    constants: dict = {}

    def __init__(self, signature) -> None:
        self.signature = signature

    def step(self, inputs, fetch=None):
        return SimpleNamespace(named={NEXT_TOKEN: (inputs["tokens"][:, 0] * 7 + 3) % 1000})


def serve_once(shape: EngineShape, signature, prompts) -> tuple[float, int]:
    s = shape.step
    cache = PagedKVCache(shape.num_blocks, max_tokens=s.max_tokens)
    engine = Engine(InstantRunner(signature), cache, s, pools=["k0"], base=WeightsIdentity("x"),
                    keep_logits=False, next_token=NEXT_TOKEN)  # fmt: skip
    for i, prompt in enumerate(prompts):
        engine.submit(Request(f"r{i}", prompt, 128, arrival=0))
    start, steps = time.perf_counter(), 0
    while not engine.idle:
        if engine.step() is not None:
            steps += 1
    return time.perf_counter() - start, steps


def main(profile: bool) -> None:
    case = json.loads((ARTIFACTS / "case.json").read_text())
    shape = EngineShape(**case["shape"])
    widest = ARTIFACTS / f"t{shape.chunk}"
    signature = manifest_signature(read_manifest(widest, "program"), widest / "manifest.json")
    rng = np.random.default_rng(0)
    prompts = [list(rng.integers(0, 128000, rng.integers(128, 513))) for _ in range(64)]
    serve_once(shape, signature, prompts)  # warm-up
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        serve_once(shape, signature, prompts)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    for _ in range(3):
        seconds, steps = serve_once(shape, signature, prompts)
        print(f"{seconds * 1e3:.1f} ms for {steps} steps: {seconds / steps * 1e3:.3f} ms/step")


if __name__ == "__main__":
    main("--profile" in sys.argv[1:])
