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
    # A decode GEMV (one row: 15 of the tile's 16 masked) and 3 rows.
    "nk_m1": (1, 4096, 1024, "nk", "x", "bf16"),
    "kn_m3_norm": (3, 2048, 512, "kn", "norm", "bf16"),
    # Row warps (MmaWorkgroupShape): 2 x 64-row tiles a workgroup, 4 (and a
    # partial last workgroup), and prefill-sized projections (timed).
    "kn_m128_norm": (128, 1024, 512, "kn", "norm", "bf16"),
    "nk_m300": (300, 768, 320, "nk", "x", "bf16"),
    # The staged kernel (from 256 rows over whole 128-column tiles): a
    # partial last row block, a prologue, f16, both layouts timed.
    "nk_m500": (500, 1024, 384, "nk", "x", "bf16"),
    "kn_m520_norm": (520, 1024, 256, "kn", "norm", "bf16"),
    "kn_m256_f16": (256, 512, 128, "kn", "x", "f16"),
    "nk_m4096_qo": (4096, 4096, 4096, "nk", "x", "bf16"),
    "nk_m4096_up": (4096, 4096, 14336, "nk", "x", "bf16"),
    "kn_m4096_qo": (4096, 4096, 4096, "kn", "x", "bf16"),
    # Decode-sized projections (timed: the weight's bytes over the time):
    # the serving step's gate/up at 64 rows, a B=1 GEMV, 16 rows of q/o.
    "nk_m64_up": (64, 4096, 14336, "nk", "x", "bf16"),
    "kn_m64_up": (64, 4096, 14336, "kn", "x", "bf16"),
    "nk_m1_up": (1, 4096, 14336, "nk", "x", "bf16"),
    "nk_m16_qo": (16, 4096, 4096, "nk", "x", "bf16"),
}

#: Cases whose sums feed an elementwise op the kernel runs (MmaEpilogue.h):
#: "residual": y = r + x @ W (bf16); "swiglu": y = silu(x @ W) * (x @ W2),
#: run in W2's kernel with W's sums an input of it. Enough rows that no
#: split leaves the sums to a combine kernel.
EPILOGUES = {
    "nk_m256_residual": ((256, 512, 320, "nk", "x", "bf16"), "residual"),
    "kn_m300_swiglu": ((300, 1024, 512, "kn", "x", "bf16"), "swiglu"),
    "nk_m384_residual": ((384, 512, 256, "nk", "x", "bf16"), "residual"),
}
for _name, (_case, _) in EPILOGUES.items():
    CASES[_name] = _case

#: Cases timed (and their FLOP rate reported) beside torch.matmul.
TIMED = ("nk_m4096_qo", "nk_m4096_up", "kn_m4096_qo", "nk_m64_up", "kn_m64_up", "nk_m1_up",
         "nk_m16_qo")

#: Builds of each case: the direct and staged kernels as the intended
#: default has them (staged from 256 rows), CUDA cores only, and (where it
#: differs: fewer than 256 rows over whole 128-column tiles) every
#: tensor-core matmul on the staged kernel.
VARIANTS = {
    "mma": dict(mma_matmul_rows=1, mma_staged_rows=256),
    "cuda_cores": dict(mma_matmul_rows=0),
    "staged": dict(mma_matmul_rows=1, mma_staged_rows=1),
}


def _variants(name: str) -> list[str]:
    m, _, n = CASES[name][:3]
    return ["mma", "cuda_cores"] + (["staged"] if m < 256 and n % 128 == 0 else [])


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
    epilogue = EPILOGUES.get(name, (None, None))[1]
    if epilogue == "residual":
        tr.output("y", tr.input("r", (m, n), dtype) + ops.matmul(x, rhs))
    elif epilogue == "swiglu":
        w2 = tr.input("w2", (k, n) if layout == "kn" else (n, k), dtype)
        rhs2 = w2 if layout == "kn" else ops.transpose(w2, (1, 0))
        tr.output("y", ops.silu(ops.matmul(x, rhs)) * ops.matmul(x, rhs2))
    else:
        tr.output("y", ops.matmul(x, rhs))
    tr.finish()
    return tr


def inputs(name: str, seed: int) -> dict[str, np.ndarray]:
    m, k, n, layout, lhs, dtype = CASES[name]
    rng = np.random.default_rng(seed)
    dt = _np(dtype)
    wshape = (k, n) if layout == "kn" else (n, k)
    out = {"w": (rng.standard_normal(wshape) / np.sqrt(k)).astype(dt)}
    epilogue = EPILOGUES.get(name, (None, None))[1]
    if epilogue == "residual":
        out["r"] = rng.standard_normal((m, n)).astype(dt)
    elif epilogue == "swiglu":
        out["w2"] = (rng.standard_normal(wshape) / np.sqrt(k)).astype(dt)
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
    epilogue = EPILOGUES.get(name, (None, None))[1]
    if epilogue == "residual":
        return r(f["r"] + r(x @ w))
    if epilogue == "swiglu":
        w2 = f["w2"] if layout == "kn" else f["w2"].T
        g, u = r(x @ w), r(x @ w2)
        return r(r(g * r(1 / (1 + np.exp(-g)))) * u)
    return x @ w


def bound(name: str) -> float:
    """The largest relative error (of the largest value) a case may show:
    the output is rounded once to the element type, ~2^-8 (bf16) at worst;
    an epilogue rounds a few more times (each elementwise op)."""
    if CASES[name][5] != "bf16":
        return 2e-3
    return 2e-2 if name in EPILOGUES else 1e-2


def _launches(folder: Path) -> list[str]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return [c["launch"]["entry"] for p in manifest["programs"].values() for c in p["commands"]
            if "launch" in c]


def build(out: Path, names: list[str]) -> None:
    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu

    for name in names:
        for variant in _variants(name):
            folder = out / variant / name
            device = devices.SM_90.with_limits(**VARIANTS[variant])
            compile_gpu(trace(name).finish(), device, folder)
            ptx = "".join(p.read_text(errors="ignore") for p in folder.rglob("*.ptx"))
            uses = "mma.sync" in ptx
            launches = len(_launches(folder))
            print(f"{variant}/{name}: mma.sync in PTX: {uses}, {launches} launches", file=sys.stderr)
            if variant == "mma" and name in EPILOGUES and launches != 1 + (name == "kn_m300_swiglu"):
                raise SystemExit(f"{name}: the epilogue did not run in the mma kernel "
                                 f"({_launches(folder)})")
            if uses != (variant != "cuda_cores"):
                raise SystemExit(f"{variant}/{name}: expected mma.sync {variant != 'cuda_cores'}, "
                                 f"got {uses}")
            if variant == "staged" and "ldmatrix" not in ptx:
                raise SystemExit(f"staged/{name}: no ldmatrix in the PTX")


def _on_gpu(v: np.ndarray):
    """A two-byte numpy array as a CUDA torch tensor of the same type."""
    import torch

    t = torch.bfloat16 if v.dtype == _np("bf16") else torch.float16
    return torch.from_numpy(v.view(np.int16)).cuda().view(t)


def _device_ms(art, a: dict[str, np.ndarray]) -> float:
    """The step on inputs already on the GPU (torch tensors, borrowed), its
    output left there: the kernel's time plus a graph launch."""
    from decode_step_h200 import _ms  # the bench's GPU timer: mean of 20 synchronized calls

    on_gpu = {k: _on_gpu(v) for k, v in a.items()}
    session = art.session({})
    ms = _ms(lambda: session.step(on_gpu, device_outputs=True))
    session.close()
    return ms


def _torch_ms(name: str, a: dict[str, np.ndarray]) -> float:
    """torch.matmul of the same operands (cuBLAS), x @ W or x @ W.T."""
    from decode_step_h200 import _ms

    layout = CASES[name][3]
    x, w = _on_gpu(a["x"]), _on_gpu(a["w"])
    return _ms(lambda: x @ (w if layout == "kn" else w.t()))


def run(out: Path, names: list[str]) -> None:
    from poot_mlir.runtime.program import ProgramArtifact

    results = []
    for name in names:
        a = inputs(name, seed=1234)
        want = reference(name, a)
        row = {"case": name, "shape_mkn": CASES[name][:3], "layout": CASES[name][3],
               "lhs": CASES[name][4], "dtype": CASES[name][5]}
        variants = [v for v in _variants(name) if (out / v / name).is_dir()]
        for variant in variants:
            art = ProgramArtifact(out / variant / name, backend="cuda")
            got = np.asarray(art.run(a).named["y"], np.float64)
            if name in TIMED:
                row[f"{variant}_ms"] = _device_ms(art, a)
            art.close()
            row[f"{variant}_max_rel_err"] = float(np.abs(got - want).max() / np.abs(want).max())
        if name in TIMED:
            row["torch_ms"] = _torch_ms(name, a)
            m, k, n = CASES[name][:3]
            for who in variants + ["torch"]:
                row[f"{who}_TFLOPs"] = 2 * m * n * k / row[f"{who}_ms"] / 1e9
                row[f"{who}_weight_TBps"] = 2 * n * k / row[f"{who}_ms"] / 1e9
        row["ok"] = all(row[f"{v}_max_rel_err"] <= bound(name) for v in variants if v != "cuda_cores")
        results.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"all_ok": all(r["ok"] for r in results)}))


if __name__ == "__main__":
    phase, folder = sys.argv[1], Path(sys.argv[2])
    chosen = sys.argv[3:] or list(CASES)
    (build if phase == "build" else run)(folder, chosen)
