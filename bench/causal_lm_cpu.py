"""Generate with a Hugging Face Llama on the CPU (issue 25): poot's
`CausalLM` (the model's own forward, exported with a static cache, fused and
compiled for this CPU) beside transformers' `generate` on the same model,
F32, in the same process.

    python bench/causal_lm_cpu.py [--layers 4] [--d 512] [--rows 1] [--repeat 5]

ms/token is the slope of the whole generate's time between two lengths
(SHORT and LONG new tokens: the decode step as a user gets it, prefill and
setup cancel), the median over `--repeat` alternating runs. The tokens of
the two must be equal (greedy, F32). Prints one JSON row.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHORT, LONG = 16, 80


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d", type=int, default=512)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import torch
    import transformers

    from poot_mlir.models import CausalLM

    heads = args.d // 64
    config = transformers.LlamaConfig(
        vocab_size=32000, hidden_size=args.d, intermediate_size=int(args.d * 2.75) // 64 * 64,
        num_hidden_layers=args.layers, num_attention_heads=heads, num_key_value_heads=max(1, heads // 4),
        max_position_embeddings=256,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    prompt = torch.randint(0, config.vocab_size, (args.rows, args.prompt),
                           generator=torch.Generator().manual_seed(1))  # fmt: skip
    t0 = time.perf_counter()
    lm = CausalLM.from_hf(model, "cpu", max_seq_len=args.prompt + LONG)

    def poot(new):
        return lm.generate(prompt, max_new_tokens=new, eos_token_id=None)

    def hf(new, cache):
        with torch.no_grad():
            return model.generate(prompt, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                                  pad_token_id=0, cache_implementation=cache,
                                  disable_compile=True).numpy()  # fmt: skip

    poot(SHORT)  # compiles the prefill chunks and the decode step
    compile_s = time.perf_counter() - t0
    runs = {"poot": [], "hf_dynamic": [], "hf_static": []}
    fns = {"poot": poot, "hf_dynamic": lambda n: hf(n, None), "hf_static": lambda n: hf(n, "static")}
    for fn in fns.values():
        fn(SHORT)  # warm
    for _ in range(args.repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn(SHORT)
            short = time.perf_counter() - t
            t = time.perf_counter()
            fn(LONG)
            runs[name].append((time.perf_counter() - t - short) / (LONG - SHORT) * 1e3)
    same = bool(np.array_equal(poot(LONG), hf(LONG, None)))
    row = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs", "torch": torch.__version__, "transformers": transformers.__version__,
        "layers": args.layers, "d_model": args.d, "rows": args.rows, "prompt": args.prompt,
        "poot_compile_s": compile_s, "tokens_equal": same,
        **{f"{k}_ms_per_token": statistics.median(v) for k, v in runs.items()},
    }  # fmt: skip
    row["speedup_vs_hf_best"] = min(row["hf_dynamic_ms_per_token"], row["hf_static_ms_per_token"]) / row[
        "poot_ms_per_token"
    ]
    lm.close()
    print(json.dumps(row))


if __name__ == "__main__":
    sys.path.append(str(ROOT / "python"))
    main()
