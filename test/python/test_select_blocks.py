"""The selection pass on the frontend's sparse indexer (frontend/sparse.py).

`fuse_attention` (canonicalize, rope, attention rewrite, poot-select-blocks,
cse) turns `ops.sparse_selected_attention` into one `poot.block_topk` and one
`poot.selected_attention` (counted), and the oracle gives the same results
before and after on fresh random inputs (the `rng` fixture prints its seed;
F32 within 1e-5 relative, the float64 reference within 1e-6; the block ids
bit for bit). The inputs hit the rows the selection treats specially: rows
in the first block (no complete block before them: only the own block is
visible), K at or above the number of visible complete blocks, the last
position, and ties in the block scores (index scores drawn from a few
integers). Declined chains keep their results bit for bit and say why.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from poot_mlir import ir, oracle
from poot_mlir.frontend import Tracer, ops
from rewrite_support import F32_RTOL, F64_RTOL, assert_same_results, fused_copy


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def sparse_step(
    *,
    B=1,
    Hq=4,
    Hkv=2,
    Lq=1,
    Lk=32,
    D=8,
    Dv=None,
    bs=4,
    K=2,
    decode=True,
    softcap=None,
    scale=None,
    dtype="f32",
    ids_output=False,
) -> ir.Module:
    """`sparse_selected_attention` over index scores given as an input
    (`index`), positions `q_pos` (decode) or the prefill's row i at i."""
    Dv = Dv or D
    tr = Tracer("sparse")
    q = tr.input("q", (B, Hq, Lq, D), dtype)
    k = tr.input("k", (B, Hkv, Lk, D), dtype)
    v = tr.input("v", (B, Hkv, Lk, Dv), dtype)
    index = tr.input("index", (B, Lq, Lk), dtype)
    q_pos = tr.input("q_pos", (B, Lq), "i32", range=(0, Lk - 1)) if decode else None
    out = ops.sparse_selected_attention(
        q, k, v, index, q_pos, block_size=bs, top_k=K, softcap=softcap, scale=scale
    )
    tr.output("out", out)
    if ids_output:
        tr.output("ids", ops.sparse_block_topk(index, q_pos, block_size=bs, top_k=K))
    return tr.finish()


def draw(rng, module: ir.Module, *, ties: bool, positions=None) -> dict[str, np.ndarray]:
    """Normal q/k/v, index scores (a few integers when `ties`), positions."""
    program = oracle.load(module)
    inputs = {}
    for port in program.args:
        shape, dtype = port.spec.shape, port.spec.dtype
        if port.key == "q_pos":
            inputs["q_pos"] = np.asarray(positions, np.int32).reshape(shape)
        elif port.key == "index" and ties:
            inputs["index"] = rng.integers(-2, 3, size=shape).astype(dtype)
        else:
            inputs[port.key] = rng.standard_normal(shape).astype(dtype)
    return inputs


def check_fused(module: ir.Module, inputs_list, *, block_topk=1) -> None:
    report = fused_copy(module)
    assert (report.attention, report.block_topk, report.selected_attention) == (
        0,
        block_topk,
        1,
    ), report.remarks
    assert report.remarks == []
    for inputs in inputs_list:
        for reference, rtol in ((False, F32_RTOL), (True, F64_RTOL)):
            before = oracle.run(module, inputs, reference=reference)
            after = oracle.run(report.module, inputs, reference=reference)
            what = "float64 reference" if reference else "own dtype"
            assert_same_results(before, after, rtol, what)


@pytest.mark.parametrize("ties", [True, False], ids=["ties", "distinct"])
def test_decode_gqa(rng, ties) -> None:
    """One query row per batch row; positions in the first block (own block
    only), where K = 3 exceeds the 1-2 visible complete blocks, and at the end."""
    module = sparse_step(B=2, Hq=8, Hkv=2, Lk=64, bs=8, K=3)
    check_fused(
        module,
        [draw(rng, module, ties=ties, positions=p) for p in ([3, 63], [8, 17], [0, 40])],
    )


def test_decode_rows_mqa_softcap(rng) -> None:
    """Several query rows per batch row (q_pos [B, Lq]), MQA, a softcap."""
    module = sparse_step(B=2, Hq=3, Hkv=1, Lq=3, Lk=48, bs=4, K=2, softcap=5.0)
    rows = [[0, 3, 47, 4, 11, 30], [rng.integers(0, 48) for _ in range(6)]]
    check_fused(module, [draw(rng, module, ties=True, positions=p) for p in rows])


@pytest.mark.parametrize("K", [1, 2, 8], ids=lambda k: f"K{k}")
def test_prefill(rng, K) -> None:
    """Prefill (row i at position i): the first bs rows see only their own
    block; K = 8 = NB exceeds every row's candidates; a custom scale; Dv != Dk."""
    module = sparse_step(B=2, Hq=4, Hkv=2, Lq=32, Lk=32, bs=4, K=K, decode=False, scale=0.3, Dv=5)
    check_fused(module, [draw(rng, module, ties=True), draw(rng, module, ties=False)])


def test_own_block_is_the_only_visible_one(rng) -> None:
    """Every row in the first block: the ids are all -1 and each row attends
    over keys 0..p of block 0 alone."""
    module = sparse_step(B=1, Hq=2, Hkv=2, Lq=4, Lk=32, bs=8, K=2, ids_output=True)
    inputs = draw(rng, module, ties=False, positions=[0, 1, 5, 7])
    check_fused(module, [inputs])
    fused = oracle.run(fused_copy(module).module, inputs, reference=True)
    assert (fused.named["ids"] == -1).all()


def test_shared_selection_output_and_cse(rng) -> None:
    """The ids also returned (sparse_block_topk beside the attention's own
    chain): both chains become block_topk ops, which CSE merges into one."""
    module = sparse_step(B=1, Hq=2, Hkv=1, Lq=2, Lk=32, bs=4, K=3, ids_output=True)
    check_fused(
        module, [draw(rng, module, ties=True, positions=[2, 31]), draw(rng, module, ties=True, positions=[12, 13])]
    )


def test_nan_block_scores_rank_like_the_chain(rng) -> None:
    """A NaN block score ranks below the non-candidates' -inf in the traced
    chain; poot.block_topk is defined the same way, so fusing keeps the ids."""
    module = sparse_step(B=1, Hq=2, Hkv=1, Lq=3, Lk=32, bs=4, K=4, ids_output=True)
    inputs = draw(rng, module, ties=True, positions=[31, 20, 9])
    inputs["index"][0, 0, :4] = np.nan  # block 0 of row 0
    inputs["index"][0, 1, 8] = np.nan  # block 2 of row 1
    check_fused(module, [inputs])


def test_bf16_stays_primitive(rng) -> None:
    """The selection kernels are F32 only: a bf16 chain keeps its primitive
    form, bit for bit, and says so for both ops (the dense attention rewrite
    leaves the indexer's chain to poot-select-blocks)."""
    module = sparse_step(B=1, Hq=2, Hkv=1, Lk=16, bs=4, K=2, dtype="bf16")
    report = fused_copy(module)
    assert (report.attention, report.block_topk, report.selected_attention) == (0, 0, 0)
    assert any("block top-k not formed: element type bf16 is not f32" in r for r in report.remarks), report.remarks
    assert any("selected attention not formed: element type bf16 is not f32" in r for r in report.remarks), (
        report.remarks
    )
    inputs = draw(rng, module, ties=True, positions=[13])
    for reference in (False, True):
        assert_same_results(
            oracle.run(module, inputs, reference=reference),
            oracle.run(report.module, inputs, reference=reference),
            0.0,
            "bf16",
        )


def test_additive_bias_beside_the_selection_is_declined(rng) -> None:
    """The chain written by hand with an ALiBi-style bias after the -inf
    select: poot.selected_attention has no mask operand, so the attention
    rewrite takes it as dense attention with a mask (the block mask and the
    bias), and the block top-k still fuses."""
    tr = Tracer("biased")
    Lk, bs = 16, 4
    q = tr.input("q", (1, 2, 1, 8))
    k = tr.input("k", (1, 2, Lk, 8))
    v = tr.input("v", (1, 2, Lk, 8))
    index = tr.input("index", (1, 1, Lk))
    qpos = tr.input("q_pos", (1, 1), "i32", range=(0, Lk - 1))
    bias = tr.input("bias", (1, 2, 1, Lk))
    from poot_mlir.frontend import sparse

    ids, qp, bsc, own3 = sparse._block_topk(tr, index, qpos, 1, 1, Lk // bs, bs, 2)
    keep = sparse._visible(tr, ids, qp, bsc, own3, Lk)
    s = ops.mul(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), 0.25)
    s = ops.add(ops.select(keep, s, float("-inf")), bias)
    tr.output("out", ops.matmul(ops.softmax(s), v))
    module = tr.finish()
    report = fused_copy(module)
    assert (report.block_topk, report.selected_attention, report.attention) == (1, 0, 1), report.remarks
    assert report.remarks == []
    inputs = draw(rng, module, ties=True, positions=[9])
    for reference, rtol in ((False, F32_RTOL), (True, F64_RTOL)):
        assert_same_results(
            oracle.run(module, inputs, reference=reference),
            oracle.run(report.module, inputs, reference=reference),
            rtol,
            "bias",
        )


def test_paged_view_composes_through_the_gathered_view(rng) -> None:
    """K/V gathered from pools by a read map: poot.selected_attention has no
    read operand (the seed keeps indexer attention over the gathered view),
    so it forms over the gathered [B, Hkv, Lk, D] view and says so."""
    tr = Tracer("paged_sparse")
    S, Lk, bs = 40, 16, 4
    q = tr.input("q", (2, 2, 1, 8))
    kp = tr.input("k_pool", (S, 1, 8))
    vp = tr.input("v_pool", (S, 1, 8))
    read = tr.input("read", (2, Lk), "i32", range=(0, S - 1))
    index = tr.input("index", (2, 1, Lk))
    qpos = tr.input("q_pos", (2, 1), "i32", range=(0, Lk - 1))
    k = ops.transpose(ops.gather(kp, read, axis=0), (0, 2, 1, 3))
    v = ops.transpose(ops.gather(vp, read, axis=0), (0, 2, 1, 3))
    tr.output("out", ops.sparse_selected_attention(q, k, v, index, qpos, block_size=bs, top_k=2))
    module = tr.finish()
    report = fused_copy(module)
    assert (report.block_topk, report.selected_attention) == (1, 1), report.remarks
    assert any("paged key: poot.selected_attention reads the gathered view" in r for r in report.remarks)
    inputs = draw(rng, module, ties=True, positions=[15, 6])
    inputs["read"] = rng.integers(0, S, size=(2, Lk)).astype(np.int32)
    for reference, rtol in ((False, F32_RTOL), (True, F64_RTOL)):
        assert_same_results(
            oracle.run(module, inputs, reference=reference),
            oracle.run(report.module, inputs, reference=reference),
            rtol,
            "paged",
        )


def test_live_length_beside_the_selection_is_declined(rng) -> None:
    """attention_live's K/V and score selects on top of the block mask: the
    selected form has no live length (its rows stop at q_pos already), so
    it is dense attention with a live length and a mask."""
    tr = Tracer("live_sparse")
    Lk, bs = 16, 4
    q = tr.input("q", (1, 2, 1, 8))
    k = tr.input("k", (1, 2, Lk, 8))
    v = tr.input("v", (1, 2, Lk, 8))
    index = tr.input("index", (1, 1, Lk))
    qpos = tr.input("q_pos", (1, 1), "i32", range=(0, Lk - 1))
    length = tr.input("len", (1,), "i32", range=(1, Lk))
    from poot_mlir.frontend import sparse

    ids, qp, bsc, own3 = sparse._block_topk(tr, index, qpos, 1, 1, Lk // bs, bs, 2)
    keep = sparse._visible(tr, ids, qp, bsc, own3, Lk)
    len4 = ops.reshape(length, (1, 1, 1, 1))
    krow = ops.compare("lt", ops.iota((1, 1, Lk, 1), 2, "i32"), len4)
    kl, vl = ops.select(krow, k, 0.0), ops.select(krow, v, 0.0)
    live = ops.compare("lt", ops.iota((1, 1, 1, Lk), 3, "i32"), len4)
    s = ops.mul(ops.matmul(q, ops.transpose(kl, (0, 1, 3, 2))), 0.25)
    s = ops.select(live, ops.select(keep, s, float("-inf")), float("-inf"))
    tr.output("out", ops.matmul(ops.softmax(s), vl))
    module = tr.finish()
    report = fused_copy(module)
    # The attention rewrite takes it: a live length with the block mask as
    # its boolean mask (the selected form has no live length).
    assert (report.block_topk, report.selected_attention, report.attention) == (1, 0, 1), report.remarks
    assert report.remarks == []
    inputs = draw(rng, module, ties=True, positions=[9])
    inputs["len"] = np.array([12], np.int32)  # keys 12.. are past the live length
    for reference, rtol in ((False, F32_RTOL), (True, F64_RTOL)):
        assert_same_results(
            oracle.run(module, inputs, reference=reference),
            oracle.run(report.module, inputs, reference=reference),
            rtol,
            "live",
        )


def test_the_rewrite_alone_leaves_the_chain_to_the_selection_pass(rng) -> None:
    """poot-attention-rewrite by itself keeps the sparse chain exactly and
    says nothing about it (it is the selection pass's candidate)."""
    from rewrite_support import run_pipeline

    module = sparse_step(B=1, Hq=2, Hkv=1, Lk=16, bs=4, K=2)
    rewritten = run_pipeline(
        module, "builtin.module(canonicalize,func.func(poot-attention-rewrite{remarks=true}))"
    )
    text = str(rewritten)
    assert "poot.attention" not in text and "poot.top_k" in text
