"""Two-byte prefill on tensor cores (`tiled_prefill_mma`) against float64 and torch SDPA, on one GPU.

    # build machine (MLIR): artifacts for SM_90, mma and (for comparison) the FFMA tiled schedule
    source /work/venv/bin/activate; export PYTHONPATH=build/python_packages
    python bench/mma_h200.py build [--out bench/artifacts]
    # GPU machine (torch + cuda-python, no MLIR)
    PYTHONPATH=python python bench/mma_h200.py run [--artifacts DIR[,DIR...]] [--only SUBSTR[,...]] [--json FILE]
    (several DIRs: builds of different kernel versions, run on the same inputs and reference)

Forms: small checks first (one 64-row block and one 64-key tile at D=16; a
causal prefill whose Lq is no multiple of the block, GQA; a chunked prefill
with a per-head f32 mask tensor; softcap with live lengths), then the
benchmark shapes (causal 2k / 8k, Hq 32, Hkv 8, D 128) as the causal kind and
(2k) as a mask tensor, each in bf16 and f16; the FFMA tiled schedule of the
same bf16 2k beside them.

`run`: inputs drawn on the device (fresh seed, printed), rounded to the
type; the output poisoned (NaN) before the launch; the float64 reference of
the same rounded inputs (softcap, mask, live length as the op defines them).
The tensor-core contract (docs/two-byte-attention.md): f32 scores, softmax
and accumulation, P rounded to the input type for P V, the output rounded
once. So per element |out - ref| <= u |ref| + u (softmax . |V|) + 1e-5, u the
type's unit roundoff (2^-8 bf16, 2^-11 f16), plus for f16 the subnormal
spacing of P (2^-25 per key absolute, at most Lk 2^-25 max|v|). Printed: the
relative L2 error, the worst error / bound (must be <= 1), NaNs where the
reference has none. Timing: a CUDA graph of the launch (warmed up, median of
event rounds) beside `F.scaled_dot_product_attention` on the same tensors
(is_causal, enable_gqa), torch picks the backend.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402

UNIT = {"bf16": 2.0**-8, "f16": 2.0**-11}
F32_MATH = 1e-5

D128 = dict(q_heads=32, kv_heads=8, key_width=128, value_width=128)
CHECKS = [
    cases.Form("one_tile", batch=1, q_heads=1, kv_heads=1, q_len=64, key_len=64, key_width=16, value_width=16),
    cases.Form("causal_odd", batch=1, q_heads=4, kv_heads=2, q_len=200, key_len=200, causal=True),
    cases.Form("chunk_alibi", batch=2, q_heads=4, kv_heads=1, q_len=100, key_len=300, key_width=128,
               value_width=128, mask="alibi"),
    cases.Form("softcap_live", batch=2, q_heads=4, kv_heads=2, q_len=130, key_len=257, softcap=20.0, live=True),
    # Paged keys (rows gathered through `read` from a pool) and the split key
    # (a per-head part and a part shared by every head; never paged), with and without live lengths.
    cases.Form("paged_causal", batch=2, q_heads=8, kv_heads=2, q_len=96, key_len=300, pool=700, causal=True),
    cases.Form("paged_live", batch=2, q_heads=4, kv_heads=2, q_len=70, key_len=333, pool=900, live=True),
    cases.Form("split_key", batch=2, q_heads=8, kv_heads=2, q_len=80, key_len=260, key_width=128,
               shared_width=64, value_width=128, causal=True),
    cases.Form("split_key_live", batch=2, q_heads=4, kv_heads=1, q_len=64, key_len=200, key_width=64,
               shared_width=32, value_width=64, live=True),
    # The sliding window: the walk starts at the block's first window tile,
    # rows whose window starts inside a tile, and a chunk after a cache.
    cases.Form("window", batch=2, q_heads=8, kv_heads=2, q_len=333, key_len=333, causal=True, window=100),
    cases.Form("window_chunk_live", batch=2, q_heads=4, kv_heads=2, q_len=130, key_len=500, causal=True,
               live=True, window=37),
]
BENCH = [
    cases.Form("prefill_2k_kind", batch=1, q_len=2048, key_len=2048, causal=True, **D128),
    cases.Form("prefill_8k_kind", batch=1, q_len=8192, key_len=8192, causal=True, **D128),
    cases.Form("prefill_2k_mask", batch=1, q_len=2048, key_len=2048, mask="causal", **D128),
]


def plans() -> list[tuple[str, cases.Form, str, bool]]:
    """(key, form, dtype, tensor_cores) of every artifact."""
    out = []
    for form in CHECKS + BENCH:
        for dtype in ("bf16", "f16"):
            if form.name == "prefill_2k_mask" and dtype == "f16":
                continue
            out.append((f"{form.name}_{dtype}_mma", form, dtype, True))
    out.append(("prefill_2k_kind_bf16_ffma", BENCH[0], "bf16", False))
    out.append(("causal_odd_bf16_ffma", CHECKS[1], "bf16", False))
    return out


def typed_text(form: cases.Form, dtype: str) -> str:
    """cases.text(form) with Q, K, V (and the split key) and the output in `dtype` (the mask stays f32)."""
    text = cases.text(form)
    shapes = form.shapes()
    for key in ("q", "k", "v", "k_shared"):
        if key in shapes:
            f32 = "tensor<" + "x".join(map(str, shapes[key][0])) + "xf32>"
            text = text.replace(f32, f32[: -len("f32>")] + dtype + ">")
    f32 = "tensor<" + "x".join(map(str, form.out_shape)) + "xf32>"
    return text.replace(f32, f32[: -len("f32>")] + dtype + ">")


def build(out_root: Path) -> None:
    from _compile import compile_artifact
    from build_artifacts import ptxas_report
    from poot_mlir.compiler import devices

    root = out_root / "mma"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    index = {}
    for key, form, dtype, tc in plans():
        dev = devices.SM_90 if tc else devices.SM_90.with_limits(tensor_cores=False)
        entry = {"form": dataclasses.asdict(form), "dtype": dtype, "tensor_cores": tc, "path": key}
        try:
            path = compile_artifact(typed_text(form, dtype), dev, root / key)
            manifest = json.loads((path / "manifest.json").read_text())
            att = manifest["attention"][0]
            entry["request"] = att["request"]
            entry["ptxas"] = ptxas_report(path / att["launches"][0]["kernel"])
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
        index[key] = entry
        r = entry.get("request", {})
        print(f"{key:30s} {r.get('schedule')} q_block={r.get('q_block')} key_block={r.get('key_block')} "
              f"{entry.get('ptxas', '')} {entry.get('error', '')}", flush=True)
    (root / "index.json").write_text(json.dumps(index, indent=1))


# --- run (GPU machine) ----------------------------------------------------------------


def draw(torch, form: cases.Form, dtype, gen) -> dict:
    dev = "cuda"
    t = {}
    for key, (shape, dt) in form.shapes().items():
        if key == "mask":
            if form.mask == "causal":
                Lq, Lk = form.q_len, form.key_len
                m = torch.zeros((Lq, Lk), device=dev)
                m.masked_fill_(torch.arange(Lk, device=dev)[None, :] > torch.arange(Lq, device=dev)[:, None]
                               + (Lk - Lq), float("-inf"))
                t["mask"] = m.expand(shape).contiguous()
            else:
                t["mask"] = torch.randn(shape, device=dev, generator=gen)
        elif key == "read":  # every slot of a row from anywhere in the pool
            t["read"] = torch.randint(0, form.pool, shape, device=dev, generator=gen, dtype=torch.int32)
        elif key == "len":
            lo = form.key_len // 2
            t["len"] = torch.randint(lo, form.key_len + 1, shape, device=dev, generator=gen, dtype=torch.int32)
        else:
            t[key] = torch.randn(shape, device=dev, generator=gen).to(dtype).contiguous()
    return t


def reference64(torch, form: cases.Form, t: dict, absolute: bool = False):
    """float64 attention of the (rounded) inputs; with `absolute`, of |V| (the P-rounding bound)."""
    q, k, v = t["q"].double(), t["k"].double(), t["v"].double()
    if form.pool:  # [S, Hkv, d] slots gathered per (batch, position): [B, Hkv, Lk, d]
        rows = t["read"].long()
        k, v = k[rows].permute(0, 2, 1, 3), v[rows].permute(0, 2, 1, 3)
    if form.shared_width:  # the shared part, the same for every KV head
        ks = t["k_shared"].double().expand(form.batch, form.kv_heads, form.key_len, form.shared_width)
        k = torch.cat([k, ks], dim=-1)
    if absolute:
        v = v.abs()
    n_rep = form.q_heads // form.kv_heads
    Lq, Lk = form.q_len, form.key_len
    hidden = torch.zeros((form.batch, 1, Lq, Lk), dtype=torch.bool, device="cuda")
    if form.causal:
        hidden |= (torch.arange(Lk, device="cuda")[None, :] > torch.arange(Lq, device="cuda")[:, None]
                   + (Lk - Lq))[None, None]
    if form.window:
        hidden |= (torch.arange(Lk, device="cuda")[None, :] <= torch.arange(Lq, device="cuda")[:, None]
                   + (Lk - Lq) - form.window)[None, None]
    if form.live:
        hidden |= (torch.arange(Lk, device="cuda")[None, None, None, :] >= t["len"].long()[:, None, None, None])
    outs = []
    for h in range(form.q_heads):
        g = h // n_rep
        s = (q[:, h:h + 1] @ k[:, g:g + 1].transpose(-1, -2)) * form.scale
        if form.softcap:
            s = form.softcap * torch.tanh(s / form.softcap)
        if "mask" in t:
            m = t["mask"]
            s = s + m[:, 0 if m.shape[1] == 1 else h][:, None].double()
        s = s.masked_fill(hidden, float("-inf"))
        outs.append(torch.softmax(s, dim=-1) @ v[:, g:g + 1])
    return torch.cat(outs, dim=1)


def check(torch, form, dtype_name, out, ref, ref_abs, vmax) -> dict:
    u = UNIT[dtype_name]
    o = out.double()
    nan_ref = torch.isnan(ref)
    d = {"nan_mismatch": int((torch.isnan(o) != nan_ref).sum())}
    ok = ~nan_ref
    err = (o - ref).abs()[ok]
    bound = u * ref.abs()[ok] + u * ref_abs[ok] + F32_MATH
    if dtype_name == "f16":
        bound = bound + form.key_len * 2.0**-25 * vmax
    d["rel_err"] = float(torch.linalg.norm(err) / torch.linalg.norm(ref[ok]))
    d["worst_err_over_bound"] = float((err / bound).max())
    d["max_abs_err"] = float(err.max())
    d["ok"] = d["nan_mismatch"] == 0 and d["worst_err_over_bound"] <= 1.0
    return d


def run(args) -> int:
    sys.path.insert(1, str(HERE.parent / "python"))
    import torch

    from attention_h200 import median_ms_torch
    from poot_mlir.runtime import cuda as cuda_mod
    from poot_mlir.runtime.gpu import GpuArtifact, make_device

    # Several builds (kernel versions) of the same plans: one set of inputs,
    # one reference and one SDPA timing per (form, dtype), every version on it.
    roots = {Path(a).name: Path(a) / "mma" for a in args.artifacts.split(",")}
    indexes = {v: json.loads((r / "index.json").read_text()) for v, r in roots.items()}
    device = make_device("cuda")
    backend = device.backend
    seed = int.from_bytes(os.urandom(8), "little") >> 2
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    props = backend.properties()
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "device": props, "torch": torch.__version__, "seed": seed, "entries": {}}
    print(f"{results['date']} {props['name']} torch {torch.__version__} seed {seed}", flush=True)
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
    F = torch.nn.functional
    rows = []
    groups: dict = {}
    for v, index in indexes.items():
        for key, entry in index.items():
            if args.only and not any(x in key for x in args.only.split(",")):
                continue
            gkey = (entry["form"]["name"], entry["dtype"])
            groups.setdefault(gkey, []).append((f"{v}/{key}", entry, roots[v]))
    for (fname, dname), members in groups.items():
        form = cases.Form(**members[0][1]["form"])
        dtype = dtypes[dname]
        try:
            t = draw(torch, form, dtype, gen)
            ref = reference64(torch, form, t)
            ref_abs = reference64(torch, form, t, absolute=True)
            vmax = float(t["v"].double().abs().max())
        except Exception as exc:
            print(f"{fname} {dname}: inputs/reference failed: {exc}", flush=True)
            continue
        prefill = form.q_len >= 1024
        flops = 2.0 * form.batch * form.q_heads * (form.q_len * (form.q_len + 1) / 2) * (
            form.key_width + form.value_width)
        sdpa = {}
        if prefill:
            holder = [None]
            causal = form.causal or form.mask == "causal"

            def call():
                holder[0] = F.scaled_dot_product_attention(t["q"], t["k"], t["v"], scale=form.scale,
                                                           is_causal=causal, enable_gqa=True)
            sd = median_ms_torch(torch, call, rounds=7, inner=5)
            sdpa = {"sdpa_ms": sd, "sdpa_TFLOPs": flops / sd / 1e9,
                    "sdpa_rel_err": float(torch.linalg.norm((holder[0].double() - ref).flatten())
                                          / torch.linalg.norm(ref.flatten()))}
            holder[0] = None
            print(f"{fname}_{dname} sdpa {sd:.3f} ms {flops / sd / 1e9:.1f} TF/s rel={sdpa['sdpa_rel_err']:.2e}",
                  flush=True)
        for key, entry, root in members:
            res: dict = {"request": entry.get("request"), "ptxas": entry.get("ptxas"), **sdpa}
            results["entries"][key] = res
            if "error" in entry:
                res["error"] = entry["error"]
                print(f"{key:36s} BUILD ERROR {entry['error']}", flush=True)
                continue
            try:
                art = GpuArtifact(root / entry["path"], backend=device)
                out = torch.full(form.out_shape, float("nan"), device="cuda", dtype=dtype)
                step = cuda_mod.prepare(art, t, outputs={"out": out}, check_ranges=False)
                t0 = time.perf_counter()
                step.launch()
                backend.synchronize()
                res["first_run_s"] = time.perf_counter() - t0
                res.update(check(torch, form, dname, out, ref, ref_abs, vmax))
                if prefill:
                    graph = backend.capture(lambda s: step.launch(s))
                    iters = 3 if res["first_run_s"] > 0.2 else 20
                    ms = graph.time(iters=iters, warmup=1)
                    graph.close()
                    res["ms"], res["TFLOPs"] = ms, flops / ms / 1e9
                    res["sdpa_over_poot"] = sdpa["sdpa_ms"] / ms
                del out
            except Exception as exc:
                res["error"] = f"{type(exc).__name__}: {exc}"
                res["trace"] = traceback.format_exc()
            line = (f"{key:36s} {str((res.get('request') or {}).get('schedule')):18s} ok={res.get('ok')} "
                    f"rel={res.get('rel_err', float('nan')):.2e} "
                    f"worst/bound={res.get('worst_err_over_bound', float('nan')):.3f} "
                    f"nanmis={res.get('nan_mismatch')} ")
            if "ms" in res:
                line += (f"{res['ms']:.3f} ms {res['TFLOPs']:.1f} TF/s | sdpa {res['sdpa_ms']:.3f} ms "
                         f"{res['sdpa_TFLOPs']:.1f} TF/s | sdpa/poot {res['sdpa_over_poot']:.3f}")
            if "error" in res:
                line += " ERROR " + res["error"][:300]
            print(line, flush=True)
            rows.append(line)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1, default=str))
        del t, ref, ref_abs
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print("\n".join(rows))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["build", "run"])
    ap.add_argument("--out", default=str(HERE / "artifacts"))
    ap.add_argument("--artifacts", default=str(HERE / "artifacts"))
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.mode == "build":
        build(Path(args.out))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
