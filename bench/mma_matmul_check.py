"""Two-byte matmuls on tensor cores (poot-gpu-mma-matmuls, issue 23): each
case is a small step compiled for sm_90 whose matmul runs as the mma.sync
kernel (checked in the artifact's PTX), run on the GPU on fresh random
inputs and compared with float64 numpy; the same step built with
`mma_matmul_rows=0` (CUDA cores) is run beside it.

    python bench/mma_matmul_check.py build bench/artifacts/mma_check   # build machine
    python bench/mma_matmul_check.py run bench/artifacts/mma_check     # the GPU
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "python"))

#: name -> (rows M, reduction K, columns N, layout, lhs, dtype).
#: layout "kn": x @ W with W [K, N]; "nk": x @ W.T with W [N, K] (torch's
#: Linear). lhs "x": an input; "norm": rms_norm(x) (a fused prologue);
#: "swiglu": silu(g) * u.
CASES = {
    "kn_m16": (16, 4096, 1024, "kn", "x", "bf16"),
    "nk_m16": (16, 4096, 1024, "nk", "x", "bf16"),
    "kn_m12": (12, 512, 256, "kn", "x", "bf16"),
    "nk_m40": (40, 1024, 512, "nk", "x", "bf16"),
    "kn_m64": (64, 2048, 768, "kn", "x", "bf16"),
    "nk_m100": (100, 256, 320, "nk", "x", "bf16"),
    "kn_m8_norm": (8, 1024, 512, "kn", "norm", "bf16"),
    "nk_m16_swiglu": (16, 2048, 512, "nk", "swiglu", "bf16"),
    "kn_m32_f16": (32, 1024, 512, "kn", "x", "f16"),
}


def _np(dtype: str):
    import ml_dtypes

    return {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16)}[dtype]


def trace(name: str):
    from poot_mlir.frontend import Tracer, ops

    m, k, n, layout, lhs, dtype = CASES[name]
    tr = Tracer(name)
    w = tr.input("w", (k, n) if layout == "kn" else (n, k), dtype)
    if lhs == "swiglu":
        g = tr.input("g", (m, k), dtype)
        u = tr.input("u", (m, k), dtype)
        x = ops.silu(g) * u
    else:
        x = tr.input("x", (m, k), dtype)
        if lhs == "norm":
            x = ops.rms_norm(x, tr.input("gamma", (k,), dtype), 1e-6)
    rhs = w if layout == "kn" else ops.transpose(w, (1, 0))
    tr.output("y", ops.matmul(x, rhs))
    tr.finish()
    return tr


def inputs(name: str, seed: int) -> dict[str, np.ndarray]:
    m, k, n, layout, lhs, dtype = CASES[name]
    rng = np.random.default_rng(seed)
    dt = _np(dtype)
    out = {"w": (rng.standard_normal((k, n) if layout == "kn" else (n, k)) / np.sqrt(k)).astype(dt)}
    if lhs == "swiglu":
        out["g"] = rng.standard_normal((m, k)).astype(dt)
        out["u"] = rng.standard_normal((m, k)).astype(dt)
    else:
        out["x"] = rng.standard_normal((m, k)).astype(dt)
        if lhs == "norm":
            out["gamma"] = (1 + 0.1 * rng.standard_normal(k)).astype(dt)
    return out


def reference(name: str, a: dict[str, np.ndarray]) -> np.ndarray:
    """float64 of the step on the same (two-byte) inputs; the lhs rounded to
    the element type where the contract rounds it (each elementwise op)."""
    m, k, n, layout, lhs, dtype = CASES[name]
    dt = _np(dtype)
    r = lambda v: np.asarray(v, np.float64).astype(np.float32).astype(dt).astype(np.float64)
    f = {key: np.asarray(v, np.float64) for key, v in a.items()}
    if lhs == "swiglu":
        g = f["g"]
        x = r(r(g * r(1 / (1 + np.exp(-g)))) * f["u"])
    elif lhs == "norm":
        x = f["x"] / np.sqrt((f["x"] ** 2).mean(-1, keepdims=True) + 1e-6) * f["gamma"]
    else:
        x = f["x"]
    w = f["w"] if layout == "kn" else f["w"].T
    return x @ w


def build(out: Path, names: list[str]) -> None:
    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu

    for name in names:
        for variant, rows in (("mma", 8), ("cuda_cores", 0)):
            folder = out / variant / name
            compile_gpu(trace(name).finish(), devices.SM_90.with_limits(mma_matmul_rows=rows), folder)
            ptx = "".join(p.read_text(errors="ignore") for p in folder.rglob("*.ptx"))
            uses = "mma.sync" in ptx
            print(f"{variant}/{name}: mma.sync in PTX: {uses}", file=sys.stderr)
            if uses != (variant == "mma"):
                raise SystemExit(f"{variant}/{name}: expected mma.sync {variant == 'mma'}, got {uses}")


def run(out: Path, names: list[str]) -> None:
    from poot_mlir.runtime.program import ProgramArtifact

    results = []
    for name in names:
        a = inputs(name, seed=1234)
        want = reference(name, a)
        row = {"case": name, "shape_mkn": CASES[name][:3], "layout": CASES[name][3],
               "lhs": CASES[name][4], "dtype": CASES[name][5]}
        for variant in ("mma", "cuda_cores"):
            art = ProgramArtifact(out / variant / name, backend="cuda")
            got = np.asarray(art.run(a).named["y"], np.float64)
            art.close()
            row[f"{variant}_max_rel_err"] = float(np.abs(got - want).max() / np.abs(want).max())
        # The output is rounded once to the element type: ~2^-8 (bf16) of
        # the largest value at worst.
        bound = 1e-2 if CASES[name][5] == "bf16" else 2e-3
        row["ok"] = row["mma_max_rel_err"] <= bound
        results.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"all_ok": all(r["ok"] for r in results)}))


if __name__ == "__main__":
    phase, folder = sys.argv[1], Path(sys.argv[2])
    chosen = sys.argv[3:] or list(CASES)
    (build if phase == "build" else run)(folder, chosen)
