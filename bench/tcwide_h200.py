"""Wide-head decode on tensor cores (`wide_head_mma`) against float64, the FFMA `wide_head` and torch SDPA, on one GPU.

    # build machine (MLIR): artifacts for SM_90 (wide_head_mma, its variants, and the FFMA wide_head)
    source /work/venv/bin/activate; export PYTHONPATH=build/python_packages
    python bench/tcwide_h200.py build [--out bench/artifacts]
    # GPU machine (torch + cuda-python, no MLIR)
    PYTHONPATH=python python bench/tcwide_h200.py run [--artifacts DIR[,DIR...]] [--only SUBSTR[,...]] [--json FILE]
    (several DIRs: builds of different kernel versions, run on the same inputs, reference and SDPA timing)

Forms: small checks first (MQA with a live length, a small MLA split key
split over keys with W = 2 warps a tile, paged keys with ALiBi and softcap in
f16, three query rows a head packed across heads with the causal kind, two
KV groups of 32 heads), then DeepSeek-V3 absorbed MLA (Hq 128 on one KV
head, Dk 512 + Ds 64, Dv 512) at B 1 / 16 and Lk 4k / 32k, in bf16 (and
f16 at B 1 32k). Variants per form: `mma` (the planner's wide_head_mma),
`mma_s32` (at most 32 splits: less scratch), `ffma` (the FFMA wide_head of
the same op).

`run`: inputs drawn on the device (fresh seed, printed), rounded to the
type, the output poisoned (NaN); the float64 reference of the rounded
inputs; the tensor-core contract's bound (docs/two-byte-attention.md; the
check of bench/mma_h200.py: |out - ref| <= u |ref| + u (softmax . |V|) +
1e-5, plus Lk 2^-25 max|v| for f16). Timing (benchmark forms): a CUDA graph
over rotated input sets (the L2 does not serve K/V), beside torch SDPA in
the same type in three spellings (enable_gqa; K/V expanded to the heads;
the group's heads as query rows of one head, exact here: no mask; the first
two only where K/V for every head stay under 16 GB), the fastest reported. Bandwidth: unique K/V bytes (K, the shared rotary part,
V, two bytes each) / time.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402
from mma_h200 import check, typed_text  # noqa: E402

MLA = dict(q_heads=128, kv_heads=1, key_width=512, shared_width=64, value_width=512)
CHECKS = [
    cases.Form("mqa_live", batch=2, q_heads=32, kv_heads=1, key_len=300, key_width=128, value_width=128,
               live=True),
    cases.Form("mla_small_split", batch=1, q_heads=32, kv_heads=1, key_len=1000, key_width=64,
               shared_width=32, value_width=64),
    cases.Form("paged_alibi_softcap", batch=2, q_heads=32, kv_heads=1, key_len=300, pool=700,
               key_width=128, value_width=128, mask="alibi", softcap=20.0),
    cases.Form("causal_q3", batch=1, q_heads=16, kv_heads=1, q_len=3, key_len=90, key_width=48,
               shared_width=16, value_width=32, causal=True),
    cases.Form("two_groups", batch=2, q_heads=64, kv_heads=2, key_len=500, key_width=128, value_width=128),
]
BENCH = [
    cases.Form("mla_b1_4k", batch=1, key_len=4096, **MLA),
    cases.Form("mla_b1_32k", batch=1, key_len=32768, **MLA),
    cases.Form("mla_b16_4k", batch=16, key_len=4096, **MLA),
    cases.Form("mla_b16_32k", batch=16, key_len=32768, **MLA),
]
L2_ROTATE_BYTES = 256 << 20


def plans() -> list[tuple[str, cases.Form, str, str]]:
    """(key, form, dtype, variant) of every artifact."""
    out = []
    for form in CHECKS:
        dtype = "f16" if form.name == "paged_alibi_softcap" else "bf16"
        out.append((f"{form.name}_{dtype}_mma", form, dtype, "mma"))
    for form in BENCH:
        for variant in ("mma", "mma_s32", "ffma"):
            out.append((f"{form.name}_bf16_{variant}", form, "bf16", variant))
    out.append(("mla_b1_32k_f16_mma", BENCH[1], "f16", "mma"))
    return out


def device_for(variant: str):
    from poot_mlir.compiler import devices

    if variant == "ffma":
        return devices.SM_90
    if variant == "mma_s32":
        return devices.SM_90.with_limits(wide_head_mma=True, max_splits=32)
    return devices.SM_90.with_limits(wide_head_mma=True)


def build(out_root: Path) -> None:
    from _compile import compile_artifact
    from build_artifacts import ptxas_report

    root = out_root / "tcwide"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    index = {}
    for key, form, dtype, variant in plans():
        entry = {"form": dataclasses.asdict(form), "dtype": dtype, "variant": variant, "path": key}
        try:
            path = compile_artifact(typed_text(form, dtype), device_for(variant), root / key)
            manifest = json.loads((path / "manifest.json").read_text())
            att = manifest["attention"][0]
            entry["request"] = att["request"]
            entry["ptxas"] = ptxas_report(path / att["launches"][0]["kernel"])
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
        index[key] = entry
        r = entry.get("request", {})
        print(f"{key:34s} {r.get('schedule')} lanes={r.get('lanes')} q_block={r.get('q_block')} "
              f"key_block={r.get('key_block')} splits={r.get('splits')} {entry.get('ptxas', '')} "
              f"{entry.get('error', '')}", flush=True)
    (root / "index.json").write_text(json.dumps(index, indent=1))


# --- run (GPU machine) ----------------------------------------------------------------


def draw(torch, form: cases.Form, dtype, gen) -> dict:
    t = {}
    for key, (shape, _) in form.shapes().items():
        if key == "mask":
            t[key] = torch.randn(shape, device="cuda", generator=gen)
        elif key == "len":
            lo = form.key_len // 2
            t[key] = torch.randint(lo, form.key_len + 1, shape, device="cuda", generator=gen,
                                   dtype=torch.int32)
        elif key == "read":
            # A permutation of pool rows per batch row (paged keys).
            pool = form.pool
            t[key] = torch.stack([torch.randperm(pool, device="cuda", generator=gen)[:shape[1]]
                                  for _ in range(shape[0])]).to(torch.int32)
        else:
            t[key] = torch.randn(shape, device="cuda", generator=gen).to(dtype).contiguous()
    return t


def dense_kv(torch, form: cases.Form, t: dict):
    """K (with the shared part concatenated) and V as [B, Hkv, Lk, D], gathered when paged."""
    k, v = t["k"], t["v"]
    if form.pool:
        idx = t["read"].long()  # [B, Lk] rows of the pool
        # The pool is [S, Hkv, D]: row read[b, t] is key t of batch row b.
        k = torch.stack([k[idx[b]].transpose(0, 1) for b in range(form.batch)])
        v = torch.stack([v[idx[b]].transpose(0, 1) for b in range(form.batch)])
    if form.shared_width:
        ks = t["k_shared"].expand(form.batch, form.kv_heads, form.key_len, form.shared_width)
        k = torch.cat([k, ks], dim=-1)
    return k, v


def reference64(torch, form: cases.Form, t: dict, absolute: bool = False):
    """float64 attention of the rounded inputs, the KV group's heads batched."""
    k, v = dense_kv(torch, form, t)
    q, k, v = t["q"].double(), k.double(), v.double()
    if absolute:
        v = v.abs()
    B, Hq, Lq, Lk = form.batch, form.q_heads, form.q_len, form.key_len
    Hkv = form.kv_heads
    n_rep = Hq // Hkv
    s = q.reshape(B, Hkv, n_rep * Lq, -1) @ k.transpose(-1, -2) * form.scale
    s = s.reshape(B, Hq, Lq, Lk)
    if form.softcap:
        s = form.softcap * torch.tanh(s / form.softcap)
    if "mask" in t:
        s = s + t["mask"].double()
    hidden = torch.zeros((B, 1, Lq, Lk), dtype=torch.bool, device="cuda")
    if form.causal:
        hidden |= (torch.arange(Lk, device="cuda")[None, :] > torch.arange(Lq, device="cuda")[:, None]
                   + (Lk - Lq))[None, None]
    if form.live:
        hidden |= torch.arange(Lk, device="cuda")[None, None, None, :] >= t["len"].long()[:, None, None, None]
    s = s.masked_fill(hidden, float("-inf"))
    p = torch.softmax(s, dim=-1).reshape(B, Hkv, n_rep * Lq, Lk)
    return (p @ v).reshape(B, Hq, Lq, -1)


def sdpa_spellings(torch, form: cases.Form, t: dict, holder: list) -> dict:
    """torch SDPA on the same two-byte tensors, three ways (no mask: all exact)."""
    F = torch.nn.functional
    k, v = dense_kv(torch, form, t)
    q = t["q"]
    B, Hq, Lq, Hkv = form.batch, form.q_heads, form.q_len, form.kv_heads
    n_rep = Hq // Hkv
    kx = k[:, :, None].expand(B, Hkv, n_rep, *k.shape[2:]).reshape(B, Hq, *k.shape[2:])
    vx = v[:, :, None].expand(B, Hkv, n_rep, *v.shape[2:]).reshape(B, Hq, *v.shape[2:])
    qr = q.reshape(B, Hkv, n_rep * Lq, q.shape[-1])

    def gqa():
        holder[0] = F.scaled_dot_product_attention(q, k, v, scale=form.scale, enable_gqa=True)

    def expanded():
        holder[0] = F.scaled_dot_product_attention(q, kx, vx, scale=form.scale)

    def rows():
        holder[0] = F.scaled_dot_product_attention(qr, k, v, scale=form.scale).reshape(B, Hq, Lq, -1)
    spellings = {"sdpa_heads_as_rows": rows}
    # enable_gqa and expand may materialize K/V for every head (the math
    # backend): skipped past 16 GB (B 16 x 32k keys x 128 heads: 145 GB).
    if (k.numel() + v.numel()) * n_rep * 2 <= 16 << 30:
        spellings.update({"sdpa_gqa": gqa, "sdpa_expand": expanded})
    return spellings


def kv_bytes(form: cases.Form) -> int:
    """Unique K/V bytes of one step (two-byte elements)."""
    b = form.batch * form.kv_heads * form.key_len * (form.key_width + form.value_width) * 2
    return b + form.batch * form.key_len * form.shared_width * 2


def run(args) -> int:
    sys.path.insert(1, str(HERE.parent / "python"))
    import torch

    from attention_h200 import median_ms_torch
    from poot_mlir.runtime import cuda as cuda_mod
    from poot_mlir.runtime.gpu import GpuArtifact, make_device

    roots = {Path(a).name: Path(a) / "tcwide" for a in args.artifacts.split(",")}
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
    groups: dict = {}
    for version, root in roots.items():
        for key, entry in json.loads((root / "index.json").read_text()).items():
            if args.only and not any(x in key for x in args.only.split(",")):
                continue
            groups.setdefault((entry["form"]["name"], entry["dtype"]), []).append(
                (f"{version}/{key}", entry, root))
    lines = []
    for (fname, dname), members in groups.items():
        form = cases.Form(**members[0][1]["form"])
        dtype = dtypes[dname]
        bench = any(form.name == f.name for f in BENCH)
        nbytes = kv_bytes(form)
        n_sets = 1 if not bench else max(1, min(8, math.ceil(L2_ROTATE_BYTES / nbytes)))
        try:
            sets = [draw(torch, form, dtype, gen) for _ in range(n_sets)]
            t = sets[0]
            ref = reference64(torch, form, t)
            ref_abs = reference64(torch, form, t, absolute=True)
            vmax = float(t["v"].double().abs().max())
        except Exception as exc:
            print(f"{fname} {dname}: inputs/reference failed: {exc}", flush=True)
            continue
        sdpa = {}
        if bench:
            best = None
            for label, fn in sdpa_spellings(torch, form, t, holder := [None]).items():
                try:
                    t0 = time.perf_counter()
                    fn()
                    torch.cuda.synchronize()
                    once = time.perf_counter() - t0
                    rounds, inner = (3, 1) if once > 0.05 else (7, 5)
                    ms = median_ms_torch(torch, fn, rounds=rounds, inner=inner)
                    err = float(torch.linalg.norm((holder[0].double() - ref).flatten())
                                / torch.linalg.norm(ref.flatten()))
                    sdpa[label] = {"ms": ms, "TBps": nbytes / ms / 1e9, "rel_err": err}
                    if best is None or ms < sdpa[best]["ms"]:
                        best = label
                except Exception as exc:
                    sdpa[label] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                holder[0] = None
                print(f"{fname}_{dname} {label:20s} {sdpa[label]}", flush=True)
            sdpa["best"] = best
            torch.cuda.empty_cache()
        for key, entry, root in members:
            res: dict = {"request": entry.get("request"), "ptxas": entry.get("ptxas"), "sdpa": sdpa,
                         "kv_bytes": nbytes, "input_sets": n_sets}
            results["entries"][key] = res
            if "error" in entry:
                res["error"] = entry["error"]
                print(f"{key:34s} BUILD ERROR {entry['error']}", flush=True)
                continue
            try:
                art = GpuArtifact(root / entry["path"], backend=device)
                outs = [torch.full(form.out_shape, float("nan"), device="cuda", dtype=dtype) for _ in sets]
                steps = [cuda_mod.prepare(art, s, outputs={"out": o}, check_ranges=False)
                         for s, o in zip(sets, outs)]
                t0 = time.perf_counter()
                steps[0].launch()
                backend.synchronize()
                res["first_run_s"] = time.perf_counter() - t0
                res.update(check(torch, form, dname, outs[0], ref, ref_abs, vmax))
                if bench:
                    graph = backend.capture(lambda s: [st.launch(s) for st in steps])
                    ms = graph.time(iters=20, warmup=2) / n_sets
                    before = outs[0].clone()
                    graph.replay()
                    backend.synchronize()
                    res["repeat_bitwise"] = bool(torch.equal(before.view(torch.int16), outs[0].view(torch.int16)))
                    graph.close()
                    res["ms"], res["TBps"] = ms, nbytes / ms / 1e9
                    if sdpa.get("best"):
                        res["sdpa_over_poot"] = sdpa[sdpa["best"]]["ms"] / ms
                del outs, steps
            except Exception as exc:
                res["error"] = f"{type(exc).__name__}: {exc}"
                res["trace"] = traceback.format_exc()
            r = res.get("request") or {}
            line = (f"{key:44s} {str(r.get('schedule')):14s} splits={r.get('splits')} ok={res.get('ok')} "
                    f"rel={res.get('rel_err', float('nan')):.2e} "
                    f"worst/bound={res.get('worst_err_over_bound', float('nan')):.3f} "
                    f"nanmis={res.get('nan_mismatch')} ")
            if "ms" in res:
                b = sdpa.get("best")
                line += (f"{res['ms'] * 1e3:.1f} us {res['TBps']:.3f} TB/s rep={res['repeat_bitwise']} | "
                         f"{b} {sdpa[b]['ms'] * 1e3:.1f} us {sdpa[b]['TBps']:.3f} TB/s | "
                         f"sdpa/poot {res['sdpa_over_poot']:.2f}" if b else "")
            if "error" in res:
                line += " ERROR " + res["error"][:300]
            print(line, flush=True)
            lines.append(line)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1, default=str))
        del sets, ref, ref_abs
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print("\n".join(lines))
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
