"""Block-selected attention beside dense poot.attention at the same Lk.

One definition of the sparse benchmark's forms, shared by the build script
(bench/sparse_build.py, needs MLIR), the H200 runner (bench/sparse_h200.py,
needs no MLIR) and the CPU run (bench/sparse_cpu.py):

- decode: one query row at the last position, B=1, Hq=32, Hkv=8, D=128, Lk
  8k / 32k / 128k;
- prefill chunk: the last Lq=64 rows of an Lk-long prompt (positions
  Lk-64 .. Lk-1), same heads, same Lk (a whole Lk x Lk prefill does not fit
  the dense streaming schedule's time budget at 128k).

Sparse: `poot.block_topk` over the block scores [B, Lq, Lk/64] (K = 16)
feeding `poot.selected_attention` (block 64): each row visits
(K + 1) * 64 = 1088 key positions. Dense: `poot.attention` over all Lk keys
(decode: no mask, every key is before the row; prefill: the causal mask of
the chunk as an additive [1, 1, Lq, Lk] input). The ideal speedup is
Lk / 1088: 7.5x at 8k, 30x at 32k, 120x at 128k.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class SparseBench:
    name: str
    batch: int = 1
    q_heads: int = 32
    kv_heads: int = 8
    q_len: int = 1
    key_len: int = 8192
    width: int = 128
    block_size: int = 64
    top_k: int = 16
    # Explicit [B * Lq] positions (a verification form); default: the chunk
    # ends at the last key.
    pos: tuple[int, ...] | None = None

    @property
    def blocks(self) -> int:
        return self.key_len // self.block_size

    @property
    def visited(self) -> int:
        """Key positions one row visits: its K blocks and its own."""
        return (self.top_k + 1) * self.block_size

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.width)

    @property
    def ideal_speedup(self) -> float:
        return self.key_len / self.visited

    def positions(self) -> np.ndarray:
        """[B, Lq]: the chunk's rows end at the last key (or `pos`)."""
        if self.pos is not None:
            return np.array(self.pos, np.int32).reshape(self.batch, self.q_len)
        rows = np.arange(self.key_len - self.q_len, self.key_len, dtype=np.int32)
        return np.broadcast_to(rows, (self.batch, self.q_len)).copy()

    def shapes(self) -> dict[str, tuple[tuple[int, ...], str]]:
        B, Hq, Hkv, Lq, Lk, D = self.batch, self.q_heads, self.kv_heads, self.q_len, self.key_len, self.width
        return {
            "q": ((B, Hq, Lq, D), "f32"),
            "k": ((B, Hkv, Lk, D), "f32"),
            "v": ((B, Hkv, Lk, D), "f32"),
            "scores": ((B, Lq, self.blocks), "f32"),
            "q_pos": ((B, Lq), "i32"),
        }

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.batch, self.q_heads, self.q_len, self.width)

    def kv_bytes(self) -> int:
        """K and V bytes the dense attention reads once (every key)."""
        return self.batch * self.kv_heads * self.key_len * 2 * self.width * 4

    def visited_kv_bytes(self) -> int:
        """K and V bytes of the selected rows: per (batch row, query row, KV
        group) its `visited` keys (the group's n_rep heads share them).
        For decode these are distinct rows; a prefill chunk's rows overlap
        (their own blocks and popular blocks), so this counts re-reads."""
        return self.batch * self.q_len * self.kv_heads * self.visited * 2 * self.width * 4


def bench_forms() -> list[SparseBench]:
    forms = []
    for lk in (8192, 32768, 131072):
        tag = f"{lk // 1024}k"
        forms.append(SparseBench(f"decode_b1_{tag}", key_len=lk))
    for lk in (8192, 32768, 131072):
        tag = f"{lk // 1024}k"
        forms.append(SparseBench(f"prefill64_{tag}", q_len=64, key_len=lk))
    # Verification: rows in the first block (own block only), with fewer
    # complete blocks than K, mid-context and at the end, in one decode batch.
    forms.append(SparseBench("verify_decode_b4", batch=4, key_len=8192, pos=(3, 64 * 5 + 7, 4100, 8191)))
    return forms


def tiny_forms() -> list[SparseBench]:
    """The same two families at toy size (the runner's local smoke test)."""
    return [
        SparseBench("decode_tiny", q_heads=4, kv_heads=2, key_len=1024, width=32, block_size=16, top_k=4),
        SparseBench("prefill_tiny", q_heads=4, kv_heads=2, q_len=8, key_len=512, width=32, block_size=16, top_k=4),
        SparseBench("verify_tiny", batch=4, q_heads=4, kv_heads=2, key_len=512, width=32, block_size=16,
                    top_k=4, pos=(3, 16 * 2 + 5, 300, 511)),
    ]


def _t(shape, dtype="f32") -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{dtype}>"


def sparse_text(form: SparseBench) -> str:
    """@step(q, k, v, scores, q_pos) -> (out, ids): block_topk then
    selected_attention (the ids stay on the device between them)."""
    s = form.shapes()
    q, k, v = _t(s["q"][0]), _t(s["k"][0]), _t(s["v"][0])
    sc, p = _t(s["scores"][0]), _t(s["q_pos"][0], "i32")
    ids = _t((form.batch, form.q_len, form.top_k), "i32")
    o = _t(form.out_shape)
    K, bs = form.top_k, form.block_size
    return f"""
func.func @step(%q: {q} {{poot.name = "q"}}, %k: {k} {{poot.name = "k"}}, %v: {v} {{poot.name = "v"}},
                %s: {sc} {{poot.name = "scores"}},
                %p: {p} {{poot.name = "q_pos", poot.range = #poot.range<0, {form.key_len - 1}>}})
    -> ({o} {{poot.name = "out"}}, {ids} {{poot.name = "ids"}}) {{
  %ids = poot.block_topk %s, %p k = {K} block_size = {bs} : {sc}, {p} -> {ids}
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = {bs} {{scale = {form.scale!r} : f64}}
      : {q}, {k}, {v}, {ids}, {p} -> {o}
  return %o, %ids : {o}, {ids}
}}
"""


def dense_text(form: SparseBench) -> str:
    """@step(q, k, v[, mask]) -> out: poot.attention over all Lk keys; the
    prefill chunk's causal mask is an additive input."""
    s = form.shapes()
    q, k, v, o = _t(s["q"][0]), _t(s["k"][0]), _t(s["v"][0]), _t(form.out_shape)
    args = [f'%q: {q} {{poot.name = "q"}}', f'%k: {k} {{poot.name = "k"}}', f'%v: {v} {{poot.name = "v"}}']
    mask = ""
    if form.q_len > 1:
        m = _t((1, 1, form.q_len, form.key_len))
        args.append(f'%m: {m} {{poot.name = "mask"}}')
        mask = f" mask(%m : {m})"
    return f"""
func.func @step({", ".join(args)}) -> ({o} {{poot.name = "out"}}) {{
  %o = poot.attention %q, %k, %v{mask} {{scale = {form.scale!r} : f64}} : {q}, {k}, {v} -> {o}
  return %o : {o}
}}
"""


def causal_mask(form: SparseBench) -> np.ndarray:
    """[1, 1, Lq, Lk] f32: -inf past each chunk row's position."""
    rows = form.positions()[0][:, None]
    cols = np.arange(form.key_len)[None, :]
    return np.where(cols > rows, -np.inf, 0.0).astype(np.float32)[None, None]


# --- the float64 reference (numpy; the H200 runner has a torch twin) ---------------------


def block_topk_reference(scores: np.ndarray, q_pos: np.ndarray, k: int, bs: int) -> np.ndarray:
    """poot.block_topk for NaN-free scores: the k best blocks before the own
    block (descending, ties to the lower id), -1 past the candidates."""
    own = (q_pos.astype(np.int64) // bs)[..., None]
    keys = np.where(np.arange(scores.shape[-1]) < own, scores.astype(np.float64), -np.inf)
    order = np.argsort(-keys, axis=-1, kind="stable")[..., :k]
    return np.where(order < own, order, -1).astype(np.int32)


def visibility(ids: np.ndarray, q_pos: np.ndarray, key_len: int, bs: int) -> np.ndarray:
    """[B, Lq, Lk] bool: t <= p and (t's block listed or the own block)."""
    t = np.arange(key_len)
    block = t // bs
    p = q_pos.astype(np.int64)[..., None]
    listed = np.zeros(ids.shape[:2] + (key_len,), bool)
    for slot in range(ids.shape[-1]):
        listed |= block == ids[..., slot : slot + 1]
    return (t <= p) & (listed | (block == p // bs))
