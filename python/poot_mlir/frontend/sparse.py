"""The sparse-attention indexer: block selection and the selected-block mask
stated as primitives, for the selection pass to recognize.

Keys are grouped in blocks of `bs = block_size` positions (`nb = Lk / bs`
blocks). Query row `(b, i)` sits at position `p = q_pos[b, i]`; its own block
is `p // bs`. Per row, the `K` best *complete blocks before its own block*
(`j < p // bs`) by `max` index score are selected, and the row attends to the
keys `t <= p` whose block is selected or is its own (unfinished) block. At most
`(K + 1) * bs` keys are visible instead of `Lk`.

`sparse_block_topk` is the primitive form of `poot.block_topk(scores, q_pos,
k = K, block_size = bs)` applied to the block scores, and
`sparse_selected_attention` as a whole is the primitive form of
`poot.selected_attention(q, k, v, ids, q_pos)`: the selection pass
(`poot-select-blocks`, in `fuse_attention`) forms both ops from exactly these
chains (docs/sparse-selection.md). NaN block scores rank as `top_k` ranks
them, below the non-candidates' -inf; poot.block_topk is defined the same
way, so fusing never changes the ids.
"""

from __future__ import annotations

import math

from . import checks, primitives as P
from .attention import _check_kv4, _check_q, _check_softcap, _scale_value, _score_chain
from .checks import fail
from .composites import repeat_kv
from .tensor import Tensor
from .tracer import Tracer


def indexer_scores(q_idx: Tensor, k_idx: Tensor) -> Tensor:
    """Index scores `q_idx @ k_idx^T`: q_idx `[B, Lq, Di]`, k_idx `[B, Lk, Di]`
    -> `[B, Lq, Lk]`. Emits `transpose k_idx perm = [0, 2, 1]`, `matmul`."""
    op = "indexer_scores"
    checks.require_tensor(op, "q_idx", q_idx)
    checks.require_tensor(op, "k_idx", k_idx)
    checks.tracer_of(op, {"q_idx": q_idx, "k_idx": k_idx})
    checks.require_float(op, "q_idx", q_idx)
    checks.require_same_dtype(op, "k_idx", k_idx, "q_idx", q_idx)
    checks.require_rank(op, "q_idx", q_idx, 3)
    checks.require_rank(op, "k_idx", k_idx, 3)
    if k_idx.shape[0] != q_idx.shape[0] or k_idx.shape[2] != q_idx.shape[2]:
        raise fail(
            op,
            "k_idx",
            f"has shape {k_idx.shape}; expected [{q_idx.shape[0]}, Lk, {q_idx.shape[2]}]",
        )
    return P.matmul(q_idx, P.transpose(k_idx, (0, 2, 1)))


def _check_selection(
    op: str, index_scores: Tensor, q_pos: Tensor | None, block_size: int, top_k: int
) -> tuple[int, int, int, int]:
    """(B, Lq, Lk, nb) after checking the selection operands."""
    checks.require_tensor(op, "index_scores", index_scores)
    checks.require_float(op, "index_scores", index_scores)
    checks.require_rank(op, "index_scores", index_scores, 3)
    b, lq, lk = index_scores.shape
    checks.require_int(op, "block_size", block_size, minimum=1)
    if lk % block_size:
        raise fail(op, "block_size", f"= {block_size} does not divide the key length {lk}")
    nb = lk // block_size
    checks.require_int(op, "top_k", top_k, minimum=1)
    if top_k > nb:
        raise fail(op, "top_k", f"= {top_k} exceeds the {nb} key blocks")
    if q_pos is None:
        if lq != lk:
            raise fail(
                op,
                "q_pos",
                f"is needed when Lq ({lq}) != Lk ({lk}); without it row i sits at position i",
            )
    else:
        checks.require_tensor(op, "q_pos", q_pos)
        checks.require_dtype(op, "q_pos", q_pos, ("i32",))
        checks.require_shape(op, "q_pos", q_pos, (b, lq), "[B, Lq]")
        if q_pos.declared_range is not None and (
            q_pos.declared_range[0] < 0 or q_pos.declared_range[1] >= lk
        ):
            raise fail(
                op,
                "q_pos",
                f"has declared range {list(q_pos.declared_range)}, outside [0, {lk - 1}]",
            )
    return b, lq, lk, nb


def _positions(tr: Tracer, q_pos: Tensor | None, b: int, lq: int) -> Tensor:
    """`q_pos`, or `iota [B, Lq] dim 1` (row i at position i)."""
    return q_pos if q_pos is not None else P.iota((b, lq), 1, "i32", tracer=tr)


def sparse_block_topk(
    index_scores: Tensor, q_pos: Tensor | None, *, block_size: int, top_k: int
) -> Tensor:
    """Block ids `[B, Lq, K]` i32: per row, the `K` complete blocks before its
    own with the highest block score (descending, ties to the lower id),
    padded with -1 -- `poot.block_topk` of the block scores. Emits:

        [qpos = iota [B, Lq] dim 1          when q_pos is None]
        bsc  = constant bs : tensor<i32>
        own  = div qpos, bsc                [B, Lq]    (the row's own block)
        own3 = reshape own -> [B, Lq, 1]
        blk  = reshape index_scores -> [B, Lq, nb, bs]
        blk  = reduce max blk axis = 3      [B, Lq, nb] (block scores)
        bid  = iota [1, 1, nb] dim 2
        cand = compare lt bid, own3         [B, Lq, nb] (j < p // bs)
        ninf = constant -inf
        cs   = select cand, blk, ninf
        _, ids = top_k cs k = K
        valid = compare lt ids, own3
        neg1 = constant -1 : tensor<i32>
        ids  = select valid, ids, neg1

    Why the fix-up is exact: candidates are the lowest block ids and
    non-candidates score -inf, and top_k breaks ties to the lower index, so
    every candidate outranks every non-candidate; when fewer than K exist the
    extra picks are non-candidates (ids >= own) and become -1.
    """
    op = "sparse_block_topk"
    b, lq, _, nb = _check_selection(op, index_scores, q_pos, block_size, top_k)
    tr = checks.tracer_of(op, {"index_scores": index_scores, "q_pos": q_pos})
    return _block_topk(tr, index_scores, q_pos, b, lq, nb, block_size, top_k)[0]


def _block_topk(
    tr: Tracer,
    index_scores: Tensor,
    q_pos: Tensor | None,
    b: int,
    lq: int,
    nb: int,
    bs: int,
    k: int,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(ids, qpos, bsc, own3): the chain of `sparse_block_topk`, also handing
    back the positions, the block-size constant and the own-block ids the
    mask reuses."""
    qpos = _positions(tr, q_pos, b, lq)
    bsc = P.constant(bs, "i32", tracer=tr)
    own3 = P.reshape(P.div(qpos, bsc), (b, lq, 1))
    blk = P.reduce_max(P.reshape(index_scores, (b, lq, nb, bs)), axis=3)
    cand = P.compare("lt", P.iota((1, 1, nb), 2, "i32", tracer=tr), own3)
    ninf = P.constant(-math.inf, index_scores.dtype, tracer=tr)
    _, ids = P.top_k(P.select(cand, blk, ninf), k)
    valid = P.compare("lt", ids, own3)
    neg1 = P.constant(-1, "i32", tracer=tr)
    return P.select(valid, ids, neg1), qpos, bsc, own3


def _visible(tr: Tracer, ids: Tensor, qpos: Tensor, bsc: Tensor, own3: Tensor, lk: int) -> Tensor:
    """Key visibility `[B, 1, Lq, Lk]` i1 (see sparse_selected_attention)."""
    b, lq, k = ids.shape
    t = P.iota((1, 1, lk), 2, "i32", tracer=tr)
    kb = P.div(t, bsc)
    hit = P.compare("eq", P.reshape(ids, (b, lq, k, 1)), kb)
    selected = P.compare("gt", P.reduce_max(P.convert(hit, "i32"), axis=2), 0)
    own = P.compare("eq", kb, own3)
    causal = P.compare("le", t, P.reshape(qpos, (b, lq, 1)))
    visible = P.and_(P.or_(selected, own), causal)
    return P.reshape(visible, (b, 1, lq, lk))


def sparse_selected_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    index_scores: Tensor,
    q_pos: Tensor | None = None,
    *,
    block_size: int,
    top_k: int,
    scale: float | None = None,
    softcap: float | None = None,
) -> Tensor:
    """Attention over the selected key blocks plus each row's own block.

    q `[B, Hq, Lq, Dk]`, k `[B, Hkv, Lk, Dk]`, v `[B, Hkv, Lk, Dv]`,
    index_scores `[B, Lq, Lk]` (e.g. `indexer_scores(q_idx, k_idx)`), q_pos
    `[B, Lq]` i32 (default: row i at position i, which needs Lq == Lk).
    Key `t` is visible to row `(b, i)` at `p = q_pos[b, i]` iff `t <= p` and
    (`t // bs` is among the row's selected ids, or `t // bs == p // bs`); every
    other score is -inf. Emits the `sparse_block_topk` chain, then:

        t    = iota [1, 1, Lk] dim 2
        kb   = div t, bsc                          [1, 1, Lk] (key block ids)
        ids4 = reshape ids -> [B, Lq, K, 1]
        hit  = compare eq ids4, kb                 [B, Lq, K, Lk]
        hiti = convert hit -> i32
        anyi = reduce max hiti axis = 2            [B, Lq, Lk]
               constant 0 : tensor<i32>
        sel  = compare gt anyi, 0
        ownk = compare eq kb, own3                 (own3 from the selection)
        qp3  = reshape qpos -> [B, Lq, 1]
        caus = compare le t, qp3
        vis  = and (or sel, ownk), caus
        vis4 = reshape vis -> [B, 1, Lq, Lk]
        repeat_kv k ; repeat_kv v
        score chain with keep = vis4               (select vis4, s, -inf)

    A row sees at least its own key `t = p` whenever `p < Lk`.
    """
    op = "sparse_selected_attention"
    _check_q(op, q)
    n_rep = _check_kv4(op, q, k, v, "k", "v")
    b, lq, lk, nb = _check_selection(op, index_scores, q_pos, block_size, top_k)
    if (b, lq) != (q.shape[0], q.shape[2]) or lk != k.shape[2]:
        raise fail(
            op,
            "index_scores",
            f"has shape {index_scores.shape}; expected [{q.shape[0]}, {q.shape[2]}, {k.shape[2]}] = [B, Lq, Lk]",
        )
    tr = checks.tracer_of(op, dict(q=q, k=k, v=v, index_scores=index_scores, q_pos=q_pos))
    scale_v = _scale_value(op, scale, q.shape[3])
    _check_softcap(op, softcap)

    ids, qpos, bsc, own3 = _block_topk(tr, index_scores, q_pos, b, lq, nb, block_size, top_k)
    keep = _visible(tr, ids, qpos, bsc, own3, lk)
    k_exp = repeat_kv(k, n_rep)
    v_exp = repeat_kv(v, n_rep)
    return _score_chain(q, k_exp, v_exp, scale=scale_v, softcap=softcap, keep=keep)
