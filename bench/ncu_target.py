"""Run bench artifacts once each, for Nsight Compute to profile.

    ncu --clock-control none -k regex:'partials|stream|combine' ... \\
        python bench/ncu_target.py decode_b1_32k@default decode_b16_8k@default

Inputs are drawn on the device with torch (no MLIR; PYTHONPATH=python).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

import numpy as np  # noqa: E402

import attention_h200 as ah  # noqa: E402
import cases  # noqa: E402


def main() -> None:
    import torch

    from poot_mlir.runtime import cuda as cuda_mod
    from poot_mlir.runtime.gpu import GpuArtifact, make_device

    root = HERE / "artifacts"
    index = json.loads((root / "index.json").read_text())
    forms = dict(cases.bench_forms())
    device = make_device("cuda")  # shared by every artifact
    backend = device.backend
    rng = np.random.default_rng(0)
    for case in sys.argv[1:]:
        entry = index[f"bench/{case}"]
        form = forms[case.split("@")[0]]
        t = ah.torch_inputs(torch, form, rng)
        art = GpuArtifact(root / entry["path"], backend=device)
        out = torch.empty(form.out_shape, device="cuda")
        # "_" inputs are the torch side's (e.g. the concatenated split key).
        step = cuda_mod.prepare(art, {k: v for k, v in t.items() if not k.startswith("_")},
                                outputs={"out": out}, check_ranges=False)
        step.launch()
        backend.synchronize()
        print(case, entry["request"]["schedule"], "ran", flush=True)


if __name__ == "__main__":
    main()
