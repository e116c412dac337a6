"""Markdown tables from one H200 run's bench.json (+ proto.json, same run).

    python bench/report.py bench/results/run5
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(run: Path) -> str:
    bench = json.loads((run / "bench.json").read_text())
    proto = {}
    if (run / "proto.json").exists():
        proto = {f["form"]: f for f in json.loads((run / "proto.json").read_text())["forms"]}
    ceil = bench["ceilings"]
    dev = bench["device"]
    out = [
        f"Run {bench['date']} on {dev['name']} ({dev.get('multiprocessor_count')} SMs; "
        f"{bench['nvidia_smi']}), torch {bench['torch']}. Copy ceiling measured in the same run: "
        f"{ceil['copy_TBps']:.2f} TB/s (read+write), read-only (sum) {ceil['read_TBps']:.2f} TB/s.",
        "",
        "| case | poot today (default plan) | K/V read | poot, best planner input | SDPA F32 | eager chain "
        "| SDPA / poot today | proposed schedule (prototype) | K/V read | SDPA / prototype |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in bench["forms"]:
        var = r["variants"]
        d = var.get("default", {})
        timed = {k: x for k, x in var.items() if "ms" in x}
        best = min(timed, key=lambda k: timed[k]["ms"]) if timed else None
        sd, eg = r.get("sdpa", {}), r.get("eager", {})
        pre = "TFLOPs" in d

        def t(x):
            return f"{x['ms']:.3f} ms" if "ms" in x else "—"

        def bw(x):
            if "ms" not in x:
                return "—"
            if pre:
                return f"{x['TFLOPs']:.2f} TFLOP/s"
            return f"{x['kv_TBps']:.2f} TB/s ({100 * x['kv_TBps'] / ceil['copy_TBps']:.0f}%)"

        p = proto.get(r["form"])
        pv = p["variants"][p["best"]] if p else {}
        row = [
            r["form"], t(d), bw(d),
            f"{t(timed[best])} ({best})" if best else "—",
            t(sd) + (f" ({sd['TFLOPs']:.1f} TFLOP/s)" if pre and "TFLOPs" in sd else ""),
            t(eg) + (f" ({eg['TFLOPs']:.1f} TFLOP/s)" if pre and "TFLOPs" in eg else ""),
            f"{sd['ms'] / d['ms']:.2f}x" if "ms" in sd and "ms" in d else "—",
            f"{pv['ms']:.3f} ms ({p['best']})" if p else "—",
            f"{pv['kv_TBps']:.2f} TB/s ({100 * pv['kv_TBps'] / ceil['copy_TBps']:.0f}%)" if p else "—",
            f"{sd['ms'] / pv['ms']:.1f}x" if p and "ms" in sd else "—",
        ]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    print(main(Path(sys.argv[1])))
