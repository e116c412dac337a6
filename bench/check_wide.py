"""Wide heads on the GPU: does a generated kernel with more than 48 KiB of
static shared memory load? (SM_90's description offers 227 KiB; a PTX
`.shared` array is limited to 48 KiB without the dynamic-shared opt-in.)

    PYTHONPATH=python python bench/check_wide.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

import cases  # noqa: E402


def main() -> None:
    from poot_mlir.runtime.gpu import GpuArtifact

    root = HERE / "artifacts"
    index = json.loads((root / "index.json").read_text())
    rng = np.random.default_rng()
    for key in ("extra/wide160", "extra/wide256"):
        e = index[key]
        form = cases.Form(**e["form"])
        smem = e.get("ptxas", {}).get("partials", {}).get("smem")
        try:
            with GpuArtifact(root / e["path"], backend="cuda") as art:
                ins = cases.inputs(form, rng)
                c = cases.compare(art.run(ins).outputs[0], cases.reference(form, ins))
                print(f"{key}: lanes {e['request']['lanes']}, static smem {smem} B: ran, rel {c['rel']:.1e}")
        except Exception as exc:
            print(f"{key}: lanes {e['request']['lanes']}, static smem {smem} B: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
