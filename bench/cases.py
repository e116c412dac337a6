"""Attention forms for the H200 verification and benchmark (no MLIR, no torch).

A `Form` is one `poot.attention` shape: `text(form)` is its step function as
MLIR text (compiled on the build machine by bench/build_artifacts.py), and
`inputs(form, rng)` draws fresh inputs for it on whatever machine runs it.
`reference(form, inputs)` is the numpy oracle in float64
(`poot_mlir.oracle.semantics.attention`, loaded without the oracle package's
MLIR-parsing half, so it runs on the GPU machine too).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import types
from pathlib import Path

import numpy as np


@dataclasses.dataclass(frozen=True)
class Form:
    name: str
    batch: int = 1
    q_heads: int = 4
    kv_heads: int = 2
    q_len: int = 1
    key_len: int = 512
    key_width: int = 64
    value_width: int = 64
    shared_width: int = 0  # split key (MLA): k [B,Hkv,Lk,dk], k_shared [B,1,Lk,s]
    mask: str | None = None  # None | "causal" [1,1,Lq,Lk] | "alibi" [1,Hq,Lq,Lk] | "batch" [B,1,Lq,Lk]
    softcap: float | None = None
    pool: int = 0  # paged: pool slots S (k [S,Hkv,dk])
    live: bool = False  # len [B] i32
    empty_row: bool = False  # one (b, h) row whose keys are all masked -> NaN
    causal: bool = False  # poot.attention's causal kind (t <= i + Lk - Lq), no mask tensor
    window: int = 0  # with causal: the sliding window (t > i + Lk - Lq - window)

    @property
    def scale(self) -> float:
        return float(1.0 / np.sqrt(self.key_width + self.shared_width))

    def shapes(self) -> dict[str, tuple[tuple[int, ...], str]]:
        B, Hq, Hkv, Lq, Lk = self.batch, self.q_heads, self.kv_heads, self.q_len, self.key_len
        dk, dv, s = self.key_width, self.value_width, self.shared_width
        out: dict[str, tuple[tuple[int, ...], str]] = {"q": ((B, Hq, Lq, dk + s), "f32")}
        if self.pool:
            out["k"] = ((self.pool, Hkv, dk), "f32")
            out["v"] = ((self.pool, Hkv, dv), "f32")
        else:
            out["k"] = ((B, Hkv, Lk, dk), "f32")
            out["v"] = ((B, Hkv, Lk, dv), "f32")
        if self.mask:
            mb = B if self.mask == "batch" else 1
            mh = Hq if self.mask == "alibi" else 1
            out["mask"] = ((mb, mh, Lq, Lk), "f32")
        if s:
            out["k_shared"] = ((B, 1, Lk, s), "f32")
        if self.pool:
            out["read"] = ((B, Lk), "i32")
        if self.live:
            out["len"] = ((B,), "i32")
        return out

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.batch, self.q_heads, self.q_len, self.value_width)

    def kv_bytes(self) -> int:
        """Bytes of K and V one step must read at least once (float32)."""
        Lk = self.key_len
        per_row = self.key_width + self.value_width
        b = self.batch * self.kv_heads * Lk * per_row * 4
        if self.shared_width:
            b += self.batch * Lk * self.shared_width * 4
        return b


def _t(shape, dtype="f32") -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{dtype}>"


def text(form: Form) -> str:
    """The step function `@step` holding one poot.attention of `form`."""
    shapes = form.shapes()
    names = {"q": "q", "k": "k", "v": "v", "mask": "mask", "k_shared": "ks", "read": "read", "len": "len"}
    args = []
    for key, (shape, dt) in shapes.items():
        extra = ""
        if key == "read":
            extra = f", poot.range = #poot.range<0, {form.pool - 1}>, poot.slot = #poot.slot<slot_map>"
        if key == "len":
            extra = f", poot.range = #poot.range<1, {form.key_len}>"
        args.append(f'%{names[key]}: {_t(shape, dt)} {{poot.name = "{key}"{extra}}}')
    optional = []
    for key, kw in (("mask", "mask"), ("k_shared", "key_shared"), ("read", "read"), ("len", "len")):
        if key in shapes:
            optional.append(f"{kw}(%{names[key]} : {_t(*shapes[key])})")
    attrs = f"scale = {form.scale!r} : f64"
    if form.softcap:
        attrs += f", softcap = {form.softcap!r} : f64"
    if form.causal:
        optional.append("causal")
    if form.window:
        optional.append(f"window {form.window}")
    out = _t(form.out_shape)
    return (
        f'func.func @step({", ".join(args)}) -> ({out} {{poot.name = "out"}}) {{\n'
        f'  %o = poot.attention %q, %k, %v {" ".join(optional)} {{{attrs}}}\n'
        f'      : {_t(shapes["q"][0])}, {_t(shapes["k"][0])}, {_t(shapes["v"][0])} -> {out}\n'
        f"  return %o : {out}\n}}\n"
    )


def inputs(form: Form, rng: np.random.Generator, lens: "list[int] | None" = None) -> dict[str, np.ndarray]:
    """Fresh random inputs (standard normal; masks and maps as the form says)."""
    B, Hq, Lq, Lk = form.batch, form.q_heads, form.q_len, form.key_len
    out: dict[str, np.ndarray] = {}
    for key, (shape, dt) in form.shapes().items():
        if dt == "f32" and key != "mask":
            out[key] = rng.standard_normal(shape, dtype=np.float32)
    if form.mask == "causal":
        rows = np.arange(Lq)[:, None]
        cols = np.arange(Lk)[None, :]
        m = np.where(cols > rows + (Lk - Lq), -np.inf, 0.0)[None, None]
        out["mask"] = np.ascontiguousarray(m, dtype=np.float32)
    elif form.mask == "alibi":
        slopes = 2.0 ** (-8.0 * (np.arange(Hq) + 1) / Hq)
        dist = (Lk - 1 - np.arange(Lk))[None, :] - (Lq - 1 - np.arange(Lq))[:, None]
        m = -slopes[:, None, None] * np.abs(dist)[None]
        m = m[None].astype(np.float32)
        m[..., rng.random(Lk) < 0.1] = -np.inf  # some keys hidden for every row
        if form.empty_row:
            m[0, min(1, Hq - 1), 0, :] = -np.inf  # this row sees nothing: NaN
        out["mask"] = np.ascontiguousarray(m)
    elif form.mask == "batch":
        m = rng.standard_normal((B, 1, Lq, Lk)).astype(np.float32)
        m[rng.random((B, 1, Lq, Lk)) < 0.3] = -np.inf
        out["mask"] = m
    if form.pool:
        out["read"] = np.stack([rng.permutation(form.pool)[:Lk] for _ in range(B)]).astype(np.int32)
    if form.live:
        if lens is None:
            lens = list(rng.integers(1, Lk + 1, size=(B,)))
            lens[0] = Lk
            if B > 1:
                lens[1] = 1
        out["len"] = np.asarray(lens, dtype=np.int32)
    return out


def _semantics():
    """poot_mlir.oracle.semantics without running poot_mlir/oracle/__init__
    (which imports the MLIR-parsing Program)."""
    name = "poot_mlir.oracle.semantics"
    if name in sys.modules:
        return sys.modules[name]
    if "poot_mlir.oracle" not in sys.modules:
        import poot_mlir

        pkg = types.ModuleType("poot_mlir.oracle")
        pkg.__path__ = [str(Path(poot_mlir.__path__[0]) / "oracle")]
        sys.modules["poot_mlir.oracle"] = pkg
    return importlib.import_module(name)


def reference(form: Form, ins: dict[str, np.ndarray]) -> np.ndarray:
    """The oracle's attention in float64."""
    sem = _semantics()
    f64 = lambda a: None if a is None else a.astype(np.float64)  # noqa: E731
    return sem.attention(
        f64(ins["q"]), f64(ins["k"]), f64(ins["v"]), scale=form.scale, softcap=form.softcap,
        mask=f64(ins.get("mask")), key_shared=f64(ins.get("k_shared")),
        read=ins.get("read"), length=ins.get("len"), causal=form.causal,
        window=form.window or None,
    )


def compare(out: np.ndarray, ref: np.ndarray) -> dict[str, float | bool]:
    """‖out − ref‖ / ‖ref‖ over the finite reference, max abs error, and
    whether NaN sits exactly where the reference has NaN."""
    nan_ok = bool(np.array_equal(np.isnan(out), np.isnan(ref)))
    fin = ~np.isnan(ref)
    o, r = out[fin].astype(np.float64), ref[fin]
    denom = float(np.linalg.norm(r)) or 1.0
    return {
        "rel": float(np.linalg.norm(o - r) / denom) if o.size else 0.0,
        "max_abs": float(np.max(np.abs(o - r))) if o.size else 0.0,
        "nan_ok": nan_ok,
        "finite_ok": bool(np.all(np.isfinite(out[fin]))),
    }


# --- the case lists ------------------------------------------------------------------

#: Verification: (case id, form, device changes to SM_90, expected schedule).
#: compute_units=1 plus a 1-byte buffer limit (no split-KV scratch fits) forces
#: one split for a decode — the seed's streaming schedule, or warp decode with
#: one split on sm_90 (whose split rule fills 32 workgroups a unit); workgroup_memory
#: picks the lane count (widest power of two <= 64 with lanes*(dv+2)*4 bytes);
#: a small max_grid_x forces the 2-D grid fold.
def verify_cases() -> list[tuple[str, Form, dict, str]]:
    gqa = Form("gqa_decode", batch=1, q_heads=32, kv_heads=8, key_len=4096, key_width=128, value_width=128)
    cases: list[tuple[str, Form, dict, str]] = []

    def both(form: Form, **extra):
        cases.append((form.name + "-split", form, dict(extra), "split_kv"))
        cases.append((form.name + "-stream", form, dict(extra, compute_units=1, max_splits=1),
                      "streaming"))

    both(Form("dense", batch=2, q_heads=4, kv_heads=4, key_len=1000))
    both(gqa)
    both(Form("mqa", batch=2, q_heads=8, kv_heads=1, key_len=777, key_width=32, value_width=32))
    both(Form("alibi", batch=2, q_heads=8, kv_heads=2, key_len=600, mask="alibi"))
    both(Form("batch_mask", batch=3, q_heads=4, kv_heads=2, key_len=300, mask="batch"))
    both(Form("softcap", batch=1, q_heads=8, kv_heads=2, key_len=1500, softcap=5.0))
    both(Form("dv_ne_dk", batch=2, q_heads=4, kv_heads=2, key_len=700, key_width=128, value_width=40))
    both(Form("split_key", batch=2, q_heads=8, kv_heads=2, key_len=640, key_width=96, shared_width=32,
              value_width=64))
    both(Form("paged", batch=2, q_heads=8, kv_heads=2, key_len=900, pool=2000))
    # A sliding window: a decode row sees its last 777 keys of 3000 (the
    # split chunks before them are empty).
    both(Form("window_decode", batch=2, q_heads=8, kv_heads=2, key_len=3000, causal=True, window=777))
    both(Form("live", batch=3, q_heads=8, kv_heads=2, key_len=2048, live=True))
    both(Form("paged_live", batch=2, q_heads=8, kv_heads=2, key_len=1024, pool=1500, live=True))
    both(Form("empty_row", batch=1, q_heads=4, kv_heads=2, key_len=512, mask="alibi", empty_row=True))
    # The warp decode plans 16-byte loads and up to 4 keys a warp step by
    # default; its scalar one-key form (`max_unroll` 0) and 2 keys on every
    # decode form above (split and streaming) and four of them.
    for case_id, form, extra, expected in list(cases):
        cases.append((f"{case_id}-scalar", form, dict(extra, max_unroll=0), expected))
        if case_id in ("gqa_decode-split", "paged_live-split", "split_key-split", "softcap-stream"):
            cases.append((f"{case_id}-u2", form, dict(extra, max_unroll=2), expected))
    # Prefill (Lq >= 16: the tiled prefill; a tensor mask, or the causal kind).
    cases.append(("causal_prefill", Form("causal_prefill", batch=1, q_heads=8, kv_heads=2, q_len=256,
                                          key_len=256, mask="causal"), {}, "tiled_prefill"))
    cases.append(("causal_kind_prefill", Form("causal_kind_prefill", batch=1, q_heads=8, kv_heads=2,
                                               q_len=256, key_len=256, causal=True), {}, "tiled_prefill"))
    cases.append(("causal_kind_chunk", Form("causal_kind_chunk", batch=2, q_heads=8, kv_heads=2,
                                             q_len=200, key_len=1000, causal=True, live=True),
                  {}, "tiled_prefill"))
    # The sliding window: tiles before a block's window skipped, rows whose
    # window starts inside a tile.
    cases.append(("window_prefill", Form("window_prefill", batch=2, q_heads=8, kv_heads=2, q_len=300,
                                          key_len=700, causal=True, live=True, window=170),
                  {}, "tiled_prefill"))
    cases.append(("alibi_prefill_softcap", Form("alibi_prefill_softcap", batch=2, q_heads=4, kv_heads=2,
                                                 q_len=33, key_len=300, mask="alibi", softcap=30.0),
                  {}, "tiled_prefill"))
    # Wide KV groups (Lq < 16, n_rep >= 8, warp_decode does not fit): the
    # wide-head schedule, split and not (compute_units=1: 4 workgroups fill it).
    mla = dict(q_heads=128, kv_heads=1, key_width=512, shared_width=64, value_width=512)
    cases.append(("wide_mla-split", Form("wide_mla", batch=1, key_len=3000, **mla), {}, "wide_head"))
    cases.append(("wide_mla-one", Form("wide_mla", batch=1, key_len=3000, **mla), dict(compute_units=1),
                  "wide_head"))
    cases.append(("wide_mqa_paged_live", Form("wide_mqa_paged_live", batch=3, q_heads=32, kv_heads=1,
                                               key_len=2048, key_width=128, value_width=128, pool=7000,
                                               live=True), {}, "wide_head"))
    cases.append(("wide_mla16_alibi_softcap", Form("wide_mla16_alibi_softcap", batch=2, key_len=1000,
                                                    mask="alibi", softcap=30.0, **dict(mla, q_heads=16)),
                  {}, "wide_head"))
    cases.append(("wide_rep16_empty_row", Form("wide_rep16_empty_row", batch=1, q_heads=16, kv_heads=1,
                                                key_len=700, key_width=128, value_width=128, mask="alibi",
                                                empty_row=True), {}, "wide_head"))
    # Lane counts of the streaming schedule (dv = 64: 264 bytes a lane).
    lane_form = Form("lanes", batch=2, q_heads=4, kv_heads=2, key_len=1000)
    for lanes in (64, 32, 8, 1):
        cases.append((f"lanes{lanes}-stream", lane_form,
                      dict(compute_units=1, max_splits=1, workgroup_memory=lanes * 66 * 4),
                      "streaming"))
    cases.append(("lanes16-split", lane_form, dict(workgroup_memory=16 * 66 * 4), "split_kv"))
    # 2-D grid fold: X limited to 7 (not a divisor of the count: a ragged tail).
    cases.append(("fold-stream", Form("fold", batch=2, q_heads=8, kv_heads=2, q_len=5, key_len=200,
                                      mask="causal"), dict(max_grid_x=7), "streaming"))
    cases.append(("fold-split", Form("fold_split", batch=1, q_heads=4, kv_heads=2, key_len=2000,
                                     live=True), dict(max_grid_x=7), "split_kv"))
    return cases


#: The decode step the graph-replay demo changes len in.
GRAPH_FORM = Form("graph_live", batch=2, q_heads=32, kv_heads=8, key_len=4096, key_width=128,
                  value_width=128, live=True)


def bench_forms() -> list[tuple[str, Form]]:
    d = dict(q_heads=32, kv_heads=8, key_width=128, value_width=128)
    return [
        ("decode_b1_4k", Form("decode_b1_4k", batch=1, key_len=4096, **d)),
        ("decode_b1_32k", Form("decode_b1_32k", batch=1, key_len=32768, **d)),
        ("decode_b1_128k", Form("decode_b1_128k", batch=1, key_len=131072, **d)),
        ("decode_b16_8k", Form("decode_b16_8k", batch=16, key_len=8192, **d)),
        ("prefill_2k", Form("prefill_2k", batch=1, q_len=2048, key_len=2048, mask="causal", **d)),
        ("prefill_8k", Form("prefill_8k", batch=1, q_len=8192, key_len=8192, mask="causal", **d)),
        # The causal kind (no mask tensor; tiles above the diagonal skipped).
        ("prefill_2k_kind", Form("prefill_2k_kind", batch=1, q_len=2048, key_len=2048, causal=True, **d)),
        ("prefill_8k_kind", Form("prefill_8k_kind", batch=1, q_len=8192, key_len=8192, causal=True, **d)),
        # Wide KV groups (the wide-head schedule): absorbed MLA (DeepSeek-V3:
        # 128 q heads on one KV head, key 512 + rotary 64, value 512) and MQA.
        *wide_head_forms(),
    ]


def wide_head_forms() -> list[tuple[str, Form]]:
    """The wide-head decode cases (docs/wide-head-decode.md)."""
    mla = dict(q_heads=128, kv_heads=1, key_width=512, shared_width=64, value_width=512)
    mqa = dict(q_heads=32, kv_heads=1, key_width=128, value_width=128)
    return [
        ("mla_b1_32k", Form("mla_b1_32k", batch=1, key_len=32768, **mla)),
        ("mla_h16_b1_32k", Form("mla_h16_b1_32k", batch=1, key_len=32768, **dict(mla, q_heads=16))),
        ("mla_b16_8k", Form("mla_b16_8k", batch=16, key_len=8192, **mla)),
        ("mqa_b1_32k", Form("mqa_b1_32k", batch=1, key_len=32768, **mqa)),
        ("mqa_b16_32k", Form("mqa_b16_32k", batch=16, key_len=32768, **mqa)),
    ]
