"""Block-selected attention cases shared by the kernel tests (CPU, Vulkan).

Each case is a step function `@step(q, k, v, scores, q_pos) -> (out, ids)`
holding `poot.block_topk` (over the block scores) and the
`poot.selected_attention` that reads its ids, written as MLIR text, with
inputs drawn fresh from the test's generator. The positions cover the rows
the selection treats specially: a row in the first block (no candidate:
only its own block is visible), a row whose candidates are fewer than K
(K >= the visible complete blocks), the last position, and ties (block
scores drawn from a few integers).
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class SparseForm:
    """Shape and options of one block-selected attention."""

    name: str
    batch: int = 2
    q_heads: int = 4
    kv_heads: int = 2
    q_len: int = 3
    key_len: int = 96
    key_width: int = 16
    value_width: int = 16
    block_size: int = 8
    top_k: int = 3
    softcap: float | None = None
    ties: bool = True
    # Positions outside [0, Lk) (no declared range): a row at -1 sees nothing
    # (NaN), a row past the end has every block as a candidate.
    wild_positions: bool = False

    @property
    def blocks(self) -> int:
        return -(-self.key_len // self.block_size)


SPARSE_FORMS = [
    SparseForm("decode_gqa", q_len=1, q_heads=8, kv_heads=2),
    SparseForm("decode_split", q_len=1, key_len=1024, block_size=32, top_k=8),  # 288 visited
    SparseForm("rows_mqa", q_heads=4, kv_heads=1),
    SparseForm("softcap_dv", value_width=8, softcap=4.0),
    SparseForm("k_ge_blocks", key_len=40, block_size=8, top_k=6),  # 5 blocks < K
    SparseForm("partial_last_block", key_len=100, block_size=16, top_k=2),
    SparseForm("wide_k", q_len=5, key_len=512, block_size=16, top_k=8, ties=False),
    SparseForm("wild_positions", wild_positions=True, q_len=4),
]


def _t(shape, dtype="f32") -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{dtype}>"


def positions(form: SparseForm, rng: np.random.Generator) -> np.ndarray:
    """[B, Lq] i32 positions, the special rows first."""
    B, Lq, Lk, bs = form.batch, form.q_len, form.key_len, form.block_size
    pos = rng.integers(0, Lk, size=(B, Lq))
    special = [int(rng.integers(0, bs)), Lk - 1]  # first block; the last key
    if form.wild_positions:
        special = [-1, Lk + 5, int(rng.integers(0, bs)), Lk - 1]
    flat = pos.reshape(-1)
    flat[: len(special)] = special[: flat.size]
    return flat.reshape(B, Lq).astype(np.int32)


def build(form: SparseForm, rng: np.random.Generator) -> tuple[str, dict[str, np.ndarray]]:
    """(MLIR text of @step, inputs by name) for one form."""
    B, Hq, Hkv, Lq, Lk = form.batch, form.q_heads, form.kv_heads, form.q_len, form.key_len
    dk, dv, nb, K, bs = form.key_width, form.value_width, form.blocks, form.top_k, form.block_size

    def normal(shape):
        return rng.standard_normal(shape, dtype=np.float32)

    scores = (
        rng.integers(-2, 3, size=(B, Lq, nb)).astype(np.float32)
        if form.ties
        else normal((B, Lq, nb))
    )
    inputs = {
        "q": normal((B, Hq, Lq, dk)),
        "k": normal((B, Hkv, Lk, dk)),
        "v": normal((B, Hkv, Lk, dv)),
        "scores": scores,
        "q_pos": positions(form, rng),
    }
    pos_attrs = "" if form.wild_positions else f", poot.range = #poot.range<0, {Lk - 1}>"
    scale = float(1.0 / np.sqrt(dk))
    attrs = f"scale = {scale!r} : f64" + (f", softcap = {form.softcap!r} : f64" if form.softcap else "")
    q, k, v = _t((B, Hq, Lq, dk)), _t((B, Hkv, Lk, dk)), _t((B, Hkv, Lk, dv))
    s, p, ids, out = _t((B, Lq, nb)), _t((B, Lq), "i32"), _t((B, Lq, K), "i32"), _t((B, Hq, Lq, dv))
    text = f"""
func.func @step(%q: {q} {{poot.name = "q"}}, %k: {k} {{poot.name = "k"}}, %v: {v} {{poot.name = "v"}},
                %s: {s} {{poot.name = "scores"}}, %p: {p} {{poot.name = "q_pos"{pos_attrs}}})
    -> ({out} {{poot.name = "out"}}, {ids} {{poot.name = "ids"}}) {{
  %ids = poot.block_topk %s, %p k = {K} block_size = {bs} : {s}, {p} -> {ids}
  %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = {bs} {{{attrs}}}
      : {q}, {k}, {v}, {ids}, {p} -> {out}
  return %o, %ids : {out}, {ids}
}}
"""
    return text, inputs


def assert_matches(result, reference, rtol: float, atol: float) -> None:
    """ids bit for bit; out within tolerance with NaN in the same places."""
    np.testing.assert_array_equal(result.named["ids"], reference.named["ids"])
    got = np.asarray(result.named["out"], np.float64)
    want = np.asarray(reference.named["out"], np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), "NaN rows differ"
    finite = ~np.isnan(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=atol)
