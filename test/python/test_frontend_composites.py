"""Composites: result shapes and dtypes, every trace-time refusal (naming the
composite's own argument, nothing emitted), and op counts of the chains."""

from __future__ import annotations

from functools import partial

import pytest

from poot_mlir.errors import TraceError
from poot_mlir.frontend import Tracer, ops


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


class Env:
    """B=2, Hq=4, Hkv=2, cap=8, Dk=8, Dv=6 decode operands, plus prefill,
    paged, MLA and sparse ones."""

    def __init__(self) -> None:
        t = self.tr = Tracer("env")
        self.kc = t.state("k0", (2, 2, 8, 8))
        self.vc = t.state("v0", (2, 2, 8, 6))
        self.pos = t.pos(max_pos=7)
        self.q = t.input("q", (2, 4, 1, 8))
        self.k = t.input("k", (2, 2, 1, 8))
        self.v = t.input("v", (2, 2, 1, 6))
        self.bias = t.input("bias", (1, 4, 1, 8))
        self.qp = t.input("qp", (2, 4, 8, 8))
        self.kp = t.input("kp", (2, 2, 8, 8))
        self.vp = t.input("vp", (2, 2, 8, 6))
        self.kpool = t.state("kpool", (16, 2, 8))
        self.vpool = t.state("vpool", (16, 2, 6))
        self.write = t.write_map("write", 2, 16)
        self.read = t.slot_map("read", 2, 8, 16)
        self.knope = t.input("knope", (2, 2, 8, 6))
        self.kpe = t.input("kpe", (2, 1, 8, 2))
        self.idx = t.input("idx", (2, 8, 8))
        self.x = t.input("x", (2, 3, 8))
        self.w = t.input("w", (8,))
        self.i = t.input("i", (2, 8), "i32")
        self.h16 = t.input("h16", (2, 4, 1, 8), "f16")
        self.loose_pos = None

    def count(self) -> int:
        return len(list(self.tr._block.operations))


def test_result_shapes() -> None:
    e = Env()
    out, k1, v1 = ops.attention_masked(e.q, e.k, e.v, e.kc, e.vc, e.pos, bias=e.bias, softcap=30.0)
    assert (out.shape, k1.shape, v1.shape, out.dtype) == (
        (2, 4, 1, 6),
        (2, 2, 8, 8),
        (2, 2, 8, 6),
        "f32",
    )
    out, k1, v1 = ops.attention_live(e.q, e.k, e.v, e.kc, e.vc, e.pos, guard_name="ok")
    assert (out.shape, k1.shape) == ((2, 4, 1, 6), (2, 2, 8, 8))
    assert e.tr.result_names == ["ok"]
    assert ops.attention_prefill(e.qp, e.kp, e.vp).shape == (2, 4, 8, 6)
    assert ops.attention_mla(e.qp, e.knope, e.kpe, e.vp).shape == (2, 4, 8, 6)
    assert ops.attention_mla(e.q, e.knope, e.kpe, e.vp, e.pos).shape == (2, 4, 1, 6)
    out, kp1, vp1 = ops.attention_paged(e.q, e.k, e.v, e.kpool, e.vpool, e.write, e.read, e.pos)
    assert (out.shape, kp1.shape, vp1.shape) == ((2, 4, 1, 6), (16, 2, 8), (16, 2, 6))
    assert ops.sparse_selected_attention(e.qp, e.kp, e.vp, e.idx, block_size=2, top_k=3).shape == (
        2,
        4,
        8,
        6,
    )
    ids = ops.sparse_block_topk(e.idx, None, block_size=4, top_k=1)
    assert (ids.shape, ids.dtype) == ((2, 8, 1), "i32")
    assert ops.indexer_scores(e.x, e.x).shape == (2, 3, 3)
    assert ops.repeat_kv(e.kp, 3).shape == (2, 6, 8, 8)
    assert ops.repeat_kv(e.kp, 1) is e.kp
    assert ops.softmax(e.x).shape == (2, 3, 8)
    assert ops.rope(e.x, e.w, e.w).shape == (2, 3, 8)
    assert ops.rms_norm(e.x, e.w).shape == (2, 3, 8)
    assert ops.silu(e.x).shape == (2, 3, 8)
    assert ops.linear(e.x, ops.reshape(ops.concat([e.w] * 4, 0), (8, 4))).shape == (2, 3, 4)


def test_attention_live_records_one_witness_per_call() -> None:
    e = Env()
    for _ in range(3):
        ops.attention_live(e.q, e.k, e.v, e.kc, e.vc, e.pos)
    assert e.tr.result_names == ["live_len_ok_0", "live_len_ok_1", "live_len_ok_2"]


def test_half_precision_chains_keep_their_dtype() -> None:
    t = Tracer("half")
    kc = t.state("k0", (1, 1, 4, 8), "bf16")
    vc = t.state("v0", (1, 1, 4, 8), "bf16")
    pos = t.pos(max_pos=3)
    q = t.input("q", (1, 2, 1, 8), "bf16")
    k = t.input("k", (1, 1, 1, 8), "bf16")
    out, k1, v1 = ops.attention_live(q, k, k, kc, vc, pos, softcap=50.0)
    assert out.dtype == "bf16"
    t.output("out", out)
    t.state_out("k0", k1)
    t.state_out("v0", v1)
    text = t.mlir()
    assert "poot.constant dense<0xFF80> : tensor<bf16>" in text  # -inf at bf16


def chain_len(build) -> int:
    e = Env()
    before = e.count()
    build(e)
    return e.count() - before


def test_chain_lengths() -> None:
    """Op counts of each chain (the FileCheck tests pin the exact order)."""
    score = 2 + 2 + 5 + 1  # transpose, matmul; constant, mul; softmax; matmul
    mask = 1 + 1 + 3  # iota, compare; constants lowest/0, select
    assert chain_len(lambda e: ops.softmax(e.x)) == 5
    assert chain_len(lambda e: ops.repeat_kv(e.kp, 2)) == 3
    assert (
        chain_len(lambda e: ops.attention_masked(e.q, e.k, e.v, e.kc, e.vc, e.pos))
        == 2 + 6 + mask + score + 1
    )
    assert chain_len(
        lambda e: ops.attention_masked(e.q, e.k, e.v, e.kc, e.vc, e.pos, softcap=1.0, bias=e.bias)
    ) == (2 + 6 + mask + score + 1 + 4 + 1)
    assert chain_len(lambda e: ops.attention_prefill(e.qp, e.kp, e.vp)) == 6 + 6 + score + 1
    assert chain_len(lambda e: ops.attention_live(e.q, e.k, e.v, e.kc, e.vc, e.pos)) == (
        2 + 5 + 5 + 6 + 2 + score + 2
    )
    assert chain_len(lambda e: ops.rope(e.x, e.w, e.w)) == 7
    assert chain_len(lambda e: ops.rms_norm(e.x, e.w)) == 9


BAD = [
    # attention_masked
    (
        lambda e: partial(ops.attention_masked, e.kp, e.k, e.v, e.kc, e.vc, e.pos),
        "attention_masked: k_new must have shape (2, 2, 8, 8)",
    ),
    (
        lambda e: partial(ops.attention_masked, e.x, e.k, e.v, e.kc, e.vc, e.pos),
        "attention_masked: q must have rank 4",
    ),
    (
        lambda e: partial(ops.attention_masked, e.i, e.k, e.v, e.kc, e.vc, e.pos),
        "attention_masked: q has dtype i32",
    ),
    (
        lambda e: partial(ops.attention_masked, e.h16, e.k, e.v, e.kc, e.vc, e.pos),
        "attention_masked: k_cache has dtype f32 but q has f16",
    ),
    (
        lambda e: partial(
            ops.attention_masked,
            e.q,
            e.k,
            e.v,
            e.kc,
            ops.slice(e.vc, (0, 0, 0, 0), (2, 2, 4, 6)),
            e.pos,
        ),
        "attention_masked: v_cache has shape (2, 2, 4, 6); its [B, Hkv, Lk]",
    ),
    (
        lambda e: partial(
            ops.attention_masked, e.q, e.k, e.v, ops.reshape(e.kc, (2, 8, 2, 8)), e.vc, e.pos
        ),
        "attention_masked: k_cache has 8 heads, which do not divide q's 4",
    ),
    (
        lambda e: partial(
            ops.attention_masked, e.q, e.k, e.v, ops.reshape(e.kc, (2, 2, 4, 16)), e.vc, e.pos
        ),
        "attention_masked: k_cache has key width 16 but q has 8",
    ),
    (
        lambda e: partial(ops.attention_masked, e.q, e.k, e.k, e.kc, e.vc, e.pos),
        "attention_masked: v_new must have shape (2, 2, 1, 6)",
    ),
    (
        lambda e: partial(ops.attention_masked, e.q, e.k, e.v, e.kc, e.vc, e.i),
        "attention_masked: pos must be a 0-d i32",
    ),
    (
        lambda e: partial(ops.attention_masked, e.q, e.k, e.v, e.kc, e.vc, e.pos, scale="x"),
        "attention_masked: scale must be a finite number",
    ),
    (
        lambda e: partial(ops.attention_masked, e.q, e.k, e.v, e.kc, e.vc, e.pos, softcap=-1.0),
        "attention_masked: softcap must be a positive finite number",
    ),
    (
        lambda e: partial(ops.attention_masked, e.q, e.k, e.v, e.kc, e.vc, e.pos, bias=e.idx),
        "attention_masked: bias has shape (2, 8, 8); expected [1|2, 1|4, 1|1, 8]",
    ),
    (
        lambda e: partial(
            ops.attention_masked,
            e.q,
            e.k,
            e.v,
            e.kc,
            e.vc,
            e.pos,
            bias=ops.reshape(e.idx, (2, 2, 4, 8)),
        ),
        "attention_masked: bias has shape (2, 2, 4, 8)",
    ),
    (
        lambda e: partial(ops.attention_masked, e.q, e.k, e.v, e.kc, e.vc, e.pos, bias=e.h16),
        "attention_masked: bias has dtype f16",
    ),
    # attention_prefill
    (
        lambda e: partial(ops.attention_prefill, e.q, e.kp, e.vp),
        "attention_prefill: k has 8 keys but q has 1 rows",
    ),
    (
        lambda e: partial(ops.attention_prefill, e.qp, e.k, e.vp),
        "attention_prefill: v has shape (2, 2, 8, 6); its [B, Hkv, Lk] must match k",
    ),
    (
        lambda e: partial(ops.attention_prefill, e.qp, e.kp, e.vp, bias=e.idx),
        "attention_prefill: bias has shape (2, 8, 8); expected [1|2, 1|4, 1|8, 8]",
    ),
    (
        lambda e: partial(ops.attention_prefill, e.qp, ops.concat([e.kp, e.kp], 0), e.vp),
        "attention_prefill: k has batch 4 but q has 2",
    ),
    (
        lambda e: partial(ops.attention_prefill, e.qp, e.kp, e.vp, window=0),
        "attention_prefill: window must be an int >= 1, got 0",
    ),
    (
        lambda e: partial(ops.attention_prefill, e.qp, e.kp, e.vp, window=2.5),
        "attention_prefill: window must be an int >= 1, got 2.5",
    ),
    # attention_live
    (
        lambda e: partial(ops.attention_live, e.qp, e.kp, e.vp, e.kc, e.vc, e.pos),
        "attention_live: q has 8 query rows; the live form is a decode",
    ),
    (
        lambda e: partial(ops.attention_live, e.q, e.k, e.v, e.kc, e.vc, e.pos, guard_name=""),
        "attention_live: guard_name must be a non-empty string",
    ),
    # attention_mla
    (
        lambda e: partial(ops.attention_mla, e.qp, e.kp, e.kpe, e.vp),
        "attention_mla: k_nope width 8 plus k_pe width 2 must equal q's key width 8",
    ),
    (
        lambda e: partial(ops.attention_mla, e.qp, e.knope, e.knope, e.vp),
        "attention_mla: k_pe has shape (2, 2, 8, 6); expected [2, 1, 8, s]",
    ),
    (
        lambda e: partial(ops.attention_mla, e.q, e.knope, e.kpe, e.vp),
        "attention_mla: q has 1 rows but there are 8 keys; without pos",
    ),
    # attention_paged
    (
        lambda e: partial(
            ops.attention_paged, e.q, e.k, e.v, e.kpool, e.vpool, e.read, e.read, e.pos
        ),
        "attention_paged: write_map must have shape (2,)",
    ),
    (
        lambda e: partial(
            ops.attention_paged, e.q, e.k, e.v, e.kpool, e.vpool, e.write, e.write, e.pos
        ),
        "attention_paged: read_map must have shape [2, cap]",
    ),
    (
        lambda e: partial(
            ops.attention_paged, e.q, e.k, e.v, e.kc, e.vpool, e.write, e.read, e.pos
        ),
        "attention_paged: k_pool must have rank 3",
    ),
    (
        lambda e: partial(
            ops.attention_paged, e.q, e.k, e.v, e.kpool, e.kpool, e.write, e.read, e.pos
        ),
        "attention_paged: v_new must have shape (2, 2, 1, 8)",
    ),
    (
        lambda e: partial(
            ops.attention_paged,
            e.q,
            e.k,
            e.v,
            e.kpool,
            ops.slice(e.vpool, (0, 0, 0), (8, 2, 6)),
            e.write,
            e.read,
            e.pos,
        ),
        "attention_paged: v_pool has shape (8, 2, 6); its [S, Hkv] must match k_pool",
    ),
    (
        lambda e: partial(
            ops.attention_paged,
            e.q,
            e.k,
            e.v,
            e.kpool,
            e.vpool,
            e.write,
            e.read,
            e.pos,
            softcap=0.0,
        ),
        "attention_paged: softcap must be",
    ),
    # sparse
    (
        lambda e: partial(
            ops.sparse_selected_attention, e.qp, e.kp, e.vp, e.idx, block_size=3, top_k=1
        ),
        "sparse_selected_attention: block_size = 3 does not divide the key length 8",
    ),
    (
        lambda e: partial(
            ops.sparse_selected_attention, e.qp, e.kp, e.vp, e.idx, block_size=2, top_k=5
        ),
        "sparse_selected_attention: top_k = 5 exceeds the 4 key blocks",
    ),
    (
        lambda e: partial(
            ops.sparse_selected_attention, e.qp, e.kp, e.vp, e.idx, block_size=2, top_k=0
        ),
        "sparse_selected_attention: top_k must be >= 1",
    ),
    (
        lambda e: partial(
            ops.sparse_selected_attention, e.qp, e.kp, e.vp, e.idx, e.idx, block_size=2, top_k=1
        ),
        "sparse_selected_attention: q_pos has dtype f32",
    ),
    (
        lambda e: partial(
            ops.sparse_selected_attention,
            e.qp,
            e.kp,
            e.vp,
            e.idx,
            ops.reshape(e.i, (8, 2)),
            block_size=2,
            top_k=1,
        ),
        "sparse_selected_attention: q_pos must have shape (2, 8)",
    ),
    (
        lambda e: partial(
            ops.sparse_selected_attention,
            e.q,
            e.kp,
            e.vp,
            ops.slice(e.idx, (0, 0, 0), (2, 1, 8)),
            block_size=2,
            top_k=1,
        ),
        "sparse_selected_attention: q_pos is needed when Lq (1) != Lk (8)",
    ),
    (
        lambda e: partial(
            ops.sparse_selected_attention, e.qp, e.kp, e.vp, e.x, block_size=2, top_k=1
        ),
        "sparse_selected_attention: q_pos is needed when Lq (3) != Lk (8)",
    ),
    (
        lambda e: partial(
            ops.sparse_selected_attention,
            e.qp,
            e.kp,
            e.vp,
            ops.slice(e.idx, (0, 0, 0), (1, 8, 8)),
            block_size=2,
            top_k=1,
        ),
        "sparse_selected_attention: index_scores has shape (1, 8, 8); expected [2, 8, 8]",
    ),
    (
        lambda e: partial(ops.sparse_block_topk, e.i, None, block_size=2, top_k=1),
        "sparse_block_topk: index_scores has dtype i32",
    ),
    (
        lambda e: partial(ops.indexer_scores, e.x, ops.slice(e.idx, (0, 0, 0), (2, 8, 4))),
        "indexer_scores: k_idx has shape (2, 8, 4); expected [2, Lk, 8]",
    ),
    # the others
    (lambda e: partial(ops.repeat_kv, e.x, 2), "repeat_kv: x must have rank 4"),
    (lambda e: partial(ops.repeat_kv, e.kp, 0), "repeat_kv: n_rep must be >= 1"),
    (lambda e: partial(ops.softmax, e.i), "softmax: x has dtype i32"),
    (
        lambda e: partial(ops.rope, e.x, e.x, e.idx),
        "rope: sin has shape (2, 8, 8), which does not broadcast to x",
    ),
    (
        lambda e: partial(ops.rope, ops.slice(e.x, (0, 0, 0), (2, 3, 7)), e.w, e.w),
        "rope: x needs an even last dimension",
    ),
    (lambda e: partial(ops.rope, e.x, e.h16, e.w), "rope: cos has dtype f16"),
    (lambda e: partial(ops.rms_norm, e.x, e.idx), "rms_norm: weight has shape (2, 8, 8)"),
    (
        lambda e: partial(ops.rms_norm, e.x, e.w, -1.0),
        "rms_norm: eps must be a non-negative number",
    ),
    (lambda e: partial(ops.silu, e.i), "silu: x has dtype i32"),
    (lambda e: partial(ops.linear, e.x, e.x), "linear: w must have rank 2"),
    (
        lambda e: partial(ops.linear, e.x, ops.reshape(e.w, (2, 4))),
        "linear: w has shape (2, 4); its first dimension must equal x's last",
    ),
    (
        lambda e: partial(ops.mlp, e.x, ops.reshape(e.w, (2, 4)), e.w, e.w),
        "mlp: w_up must have rank 2",
    ),
    (
        lambda e: partial(
            ops.mlp,
            e.x,
            ops.reshape(e.w, (2, 4)),
            ops.reshape(e.w, (2, 4)),
            ops.reshape(e.w, (2, 4)),
        ),
        "mlp: w_gate has shape (2, 4); want [8, F]",
    ),
]


@pytest.mark.parametrize("call, message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_refusals_name_the_argument_and_emit_nothing(call, message: str) -> None:
    e = Env()
    refused = call(e)
    before = e.count()
    with pytest.raises(TraceError) as info:
        refused()
    assert message in str(info.value), str(info.value)
    assert e.count() == before, "a refused composite emitted ops"


def test_declared_ranges_must_fit_the_cache_and_pool() -> None:
    t = Tracer("ranges")
    kc = t.state("k0", (1, 1, 8, 4))
    vc = t.state("v0", (1, 1, 8, 4))
    pos = t.pos(max_pos=8)  # one past the cache
    q = t.input("q", (1, 1, 1, 4))
    with pytest.raises(
        TraceError, match=r"attention_masked: pos has declared range \[0, 8\].*needs 0 <= pos <= 7"
    ):
        ops.attention_masked(q, q, q, kc, vc, pos)
    with pytest.raises(TraceError, match=r"attention_live: pos has declared range"):
        ops.attention_live(q, q, q, kc, vc, pos)
    q3 = t.input("q3", (1, 1, 3, 4))
    with pytest.raises(TraceError, match=r"needs 0 <= pos <= 5"):
        ops.attention_masked(q3, q3, q3, kc, vc, pos)

    t2 = Tracer("pool")
    kpool = t2.state("kp", (8, 1, 4))
    vpool = t2.state("vp", (8, 1, 4))
    pos2 = t2.pos(max_pos=3)
    q = t2.input("q", (1, 1, 1, 4))
    good_w, good_r = t2.write_map("w", 1, 8), t2.slot_map("r", 1, 4, 8)
    big_w = t2.input("bw", (1,), "i32", range=(-1, 8), slot="write_map")
    big_r = t2.input("br", (1, 4), "i32", range=(0, 8), slot="slot_map")
    neg_r = t2.input("nr", (1, 4), "i32", range=(-1, 7), slot="slot_map")
    with pytest.raises(
        TraceError,
        match=r"attention_paged: write_map has declared range \[-1, 8\], outside \[-1, 7\]",
    ):
        ops.attention_paged(q, q, q, kpool, vpool, big_w, good_r, pos2)
    with pytest.raises(TraceError, match=r"attention_paged: read_map has declared range \[0, 8\]"):
        ops.attention_paged(q, q, q, kpool, vpool, good_w, big_r, pos2)
    with pytest.raises(
        TraceError,
        match=r"attention_paged: read_map has declared range \[-1, 7\], outside \[0, 7\]",
    ):
        ops.attention_paged(q, q, q, kpool, vpool, good_w, neg_r, pos2)
    out = ops.attention_paged(q, q, q, kpool, vpool, good_w, good_r, pos2)
    assert out[0].shape == (1, 1, 1, 4)


def test_live_guard_name_must_be_free() -> None:
    e = Env()
    e.tr.output("taken", e.q)
    with pytest.raises(
        TraceError, match="attention_live: guard_name 'taken' is already a result name"
    ):
        ops.attention_live(e.q, e.k, e.v, e.kc, e.vc, e.pos, guard_name="taken")
