"""Markdown tables from the CPU benchmark JSON (bench/results/cpu*/).

    python bench/cpu_report.py bench/results/cpu1
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def attention(path: Path) -> str:
    data = json.loads(path.read_text())
    m = data["machine"]
    out = [f"threads {m['threads']}, {m['date']}, load average {m['loadavg']}, "
           f"copy ceiling {m['copy_gbps']:.1f} GB/s (read+write), torch SGEMM {m['sgemm_gflops']:.0f} GFLOP/s", "",
           "| case | poot ms | torch SDPA ms (gqa / repeated K,V) | SDPA/poot | poot | torch | max rel err |",
           "|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        if "poot_gbps" in r:
            rate = f"{r['poot_gbps']:.1f} GB/s", f"{r['sdpa_gbps']:.1f} GB/s"
        else:
            rate = f"{r['poot_gflops']:.1f} GFLOP/s", f"{r['sdpa_gflops']:.1f} GFLOP/s"
        out.append(f"| {r['case']} | {r['poot_ms']:.3f} | {r['sdpa_gqa_ms']:.3f} / {r['sdpa_rep_ms']:.3f} | "
                   f"{r['speedup']:.2f}x | {rate[0]} | {rate[1]} | {r['max_rel_err']:.1e} |")
    return "\n".join(out)


def decoder(path: Path) -> str:
    data = json.loads(path.read_text())
    m = data["machine"]
    out = [f"threads {m['threads']}, {m['date']}, load average {m['loadavg']}, "
           f"copy ceiling {m['copy_gbps']:.1f} GB/s, torch SGEMM {m['sgemm_gflops']:.0f} GFLOP/s", "",
           "| config | poot ms/step | torch eager ms/step | torch/poot | poot GB/s (weights+KV) | torch GB/s | max rel err (logits) |",
           "|---|---|---|---|---|---|---|"]
    for r in data["steps"]:
        cfg = f"{r['layers']}L d{r['d_model']} Hq{r['q_heads']}/Hkv{r['kv_heads']} ffn{r['ffn']} cap{r['cap']}"
        out.append(f"| {cfg} | {r['poot_ms']:.1f} | {r['torch_ms']:.1f} | {r['speedup']:.2f}x | "
                   f"{r['poot_gbps']:.1f} | {r['torch_gbps']:.1f} | {r['max_rel_err']:.1e} |")
    return "\n".join(out)


def compile_times(path: Path) -> str:
    data = json.loads(path.read_text())
    out = ["| layers | total s | pipeline s | object s | link s |", "|---|---|---|---|---|"]
    for r in data["compile"]:
        out.append(f"| {r['layers']} | {r['compile_s']:.2f} | {r['pipeline']:.2f} | {r['object']:.2f} | {r['link']:.2f} |")
    return "\n".join(out)


def main() -> None:
    root = Path(sys.argv[1])
    for name in sorted(root.glob("attention_t*.json")):
        print(f"### {name.name}\n\n{attention(name)}\n")
    for name in sorted(root.glob("decoder_t*.json")):
        print(f"### {name.name}\n\n{decoder(name)}\n")
    if (root / "compile.json").exists():
        print(f"### compile.json\n\n{compile_times(root / 'compile.json')}\n")


if __name__ == "__main__":
    main()
