"""The math of every poot op, as plain numpy functions.

Each function follows its op's description in `dialect/PootOps.td` and
`dialect/PootAttentionOps.td` to the letter, and computes in the dtype of its
inputs: pass float32 arrays for the float32 oracle, float64 arrays for the
float64 reference. Other tests call these directly as references; the
interpreter calls them for every op.

Choices the op descriptions leave to the oracle (each one is deliberate and
documented here so every consumer sees the same answer):

- 16-bit floats (f16, bf16) follow the 16-bit contract
  (docs/sixteen-bit-contract.md), torch's and cuBLAS's: `matmul` and
  `reduce sum` widen their operands exactly to float32, accumulate in
  float32 and round once, to nearest even, to the element type; every
  elementwise op computes in float32 and rounds per op (what ml_dtypes'
  ufuncs do). The float32 order of the sum is not part of the contract:
  kernels and this oracle agree within float32 rounding, not bit for bit.
- i1 is the 1-bit integer ring for arithmetic (`add`/`sub` are xor, `mul`
  and `div` are and, `reduce sum` is parity) and ordered false < true for
  `max`/`min`/`compare`.
- i32 arithmetic wraps (two's complement), including `div` of INT_MIN by -1
  and `abs`/`neg` of INT_MIN.
- `top_k` and `block_topk` order NaN below every number (the stable sort of
  `-operand` numpy performs puts NaN last); in `block_topk` that includes
  the -inf of the non-candidate blocks, as in the tracer's chain.
- The fused attention ops on 16-bit inputs are two-byte attention
  (docs/two-byte-attention.md): the inputs are widened exactly, everything
  (scores, softmax, P.V) is computed in float64 -- the reference of the
  kernels' f32 math -- and the output is rounded once, to nearest even, to
  the result dtype (`dtypes.round_float64`).
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence, TypeVar

import numpy as np

from . import dtypes
from .dtypes import convert  # noqa: F401  (poot.convert)

F = TypeVar("F", bound=Callable[..., object])


def _quiet(fn: F) -> F:
    """Run `fn` with numpy's float warnings off: inf, NaN and wrap-around are
    part of the semantics here, not accidents worth a warning."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> object:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _is_half(x: np.ndarray) -> bool:
    return x.dtype in dtypes.HALF_DTYPES


# --- constants and index generators ---------------------------------------------


def iota(shape: Sequence[int], dim: int, dtype: np.dtype) -> np.ndarray:
    """`poot.iota`: `result[i_0, ..., i_n] = i_dim`, converted to `dtype`."""
    shape = tuple(shape)
    line = np.arange(shape[dim], dtype=np.int64)
    line = line.reshape([-1 if d == dim else 1 for d in range(len(shape))])
    return convert(np.broadcast_to(line, shape).astype(dtypes.I32), dtype)


# --- shape and data movement ----------------------------------------------------


def dynamic_update_slice(
    operand: np.ndarray, update: np.ndarray, start: int | np.ndarray, *, axis: int
) -> np.ndarray:
    """`poot.dynamic_update_slice`: write `update` at `clamp(start, 0, dim - n)`
    along `axis`; the clamp keeps every write in bounds."""
    n = update.shape[axis]
    first = int(np.clip(int(np.asarray(start)), 0, operand.shape[axis] - n))
    out = operand.copy()
    window = [slice(None)] * operand.ndim
    window[axis] = slice(first, first + n)
    out[tuple(window)] = update
    return out


def reshape(operand: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """`poot.reshape`: the same row-major elements in a new shape."""
    return np.reshape(operand, tuple(shape))


def broadcast(operand: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """`poot.broadcast`: `numpy.broadcast_to`."""
    return np.broadcast_to(operand, tuple(shape))


def transpose(operand: np.ndarray, permutation: Sequence[int]) -> np.ndarray:
    """`poot.transpose`: `result.shape[d] = operand.shape[permutation[d]]`."""
    return np.transpose(operand, tuple(permutation))


def slice_(
    operand: np.ndarray, start: Sequence[int], limit: Sequence[int], strides: Sequence[int]
) -> np.ndarray:
    """`poot.slice`: `operand[start:limit:strides, ...]`."""
    return operand[tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))]


def concat(inputs: Sequence[np.ndarray], *, axis: int) -> np.ndarray:
    """`poot.concat`: `numpy.concatenate(inputs, axis)`."""
    return np.concatenate(list(inputs), axis=axis)


def gather(operand: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
    """`poot.gather`: `take(operand, clip(indices, 0, dim - 1), axis)`."""
    dim = operand.shape[axis]
    return np.take(operand, np.clip(indices, 0, dim - 1), axis=axis)


def scatter_update(operand: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """`poot.scatter_update`: `result[indices[i]] = updates[i]` along axis 0 for
    every in-range index; out-of-range ones (the `-1` padding) write nothing,
    and of two writes to one slot the later one wins."""
    out = operand.copy()
    slots = np.asarray(indices).reshape(-1).astype(np.int64)
    rows = np.nonzero((slots >= 0) & (slots < operand.shape[0]))[0]
    # Keep the last row that names each slot: the first hit in reverse order.
    reverse = rows[::-1]
    _, first = np.unique(slots[reverse], return_index=True)
    winners = reverse[first]
    out[slots[winners]] = updates[winners]
    return out


# --- contractions and reductions ------------------------------------------------


def _accumulator(x: np.ndarray) -> np.ndarray:
    """A 16-bit operand widened exactly to the float32 accumulator."""
    return np.asarray(x, dtype=dtypes.F32)


@_quiet
def matmul(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.matmul`: `numpy.matmul` with batch broadcasting, accumulating in
    the element type for float32/float64/i32; 16-bit floats accumulate in
    float32 and round once (see the module docstring)."""
    if not _is_half(lhs):
        return np.matmul(lhs, rhs)
    return np.matmul(_accumulator(lhs), _accumulator(rhs)).astype(lhs.dtype)


def _lowest(dtype: np.dtype) -> object:
    if dtype == dtypes.I32:
        return np.iinfo(np.int32).min
    return dtype.type(-np.inf)


def _highest(dtype: np.dtype) -> object:
    if dtype == dtypes.I32:
        return np.iinfo(np.int32).max
    return dtype.type(np.inf)


@_quiet
def reduce(operand: np.ndarray, kind: str, *, axis: int, keepdim: bool = False) -> np.ndarray:
    """`poot.reduce`: `numpy.{sum,max,min}(operand, axis, keepdims=keepdim)`;
    max/min propagate NaN, sum accumulates in the element type (16-bit
    floats: in float32, rounded once)."""
    x = np.asarray(operand)
    if kind == "sum":
        if x.dtype == dtypes.I1:
            out = np.logical_xor.reduce(x, axis=axis)
        elif _is_half(x):
            out = np.add.reduce(_accumulator(x), axis=axis, dtype=dtypes.F32)
        else:
            out = np.add.reduce(x, axis=axis, dtype=x.dtype)
    elif kind in ("max", "min"):
        ufunc = np.maximum if kind == "max" else np.minimum
        extra = {}
        if x.shape[axis] == 0:
            extra["initial"] = _lowest(x.dtype) if kind == "max" else _highest(x.dtype)
        out = ufunc.reduce(x, axis=axis, **extra)
    else:
        raise ValueError(f"unknown reduce kind {kind!r}")
    out = np.asarray(out, dtype=x.dtype)
    return np.expand_dims(out, axis) if keepdim else out


def top_k(operand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`poot.top_k`: the `k` largest entries of the last axis in descending
    order and their i32 positions; ties go to the lower index (the stable
    sort of `-operand`)."""
    keys = -np.asarray(operand).astype(np.float64)
    order = np.argsort(keys, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(operand, order, axis=-1), order.astype(dtypes.I32)


@_quiet
def all_reduce(operands: Sequence[np.ndarray]) -> np.ndarray:
    """`poot.all_reduce`: the elementwise sum of every rank's operand, in rank
    order (`operands[r]` is rank r's). 16-bit floats widen exactly to
    float32, sum in float32 and round once to their type; other floats sum in
    their own type (float64 in reference mode). With one rank (no
    communicator) the result is the operand, exactly."""
    first = np.asarray(operands[0])
    wide = _accumulator if _is_half(first) else np.asarray
    total = wide(first).copy()
    for operand in operands[1:]:
        total += wide(operand)
    return total.astype(first.dtype)


# --- elementwise ----------------------------------------------------------------


@_quiet
def add(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.add` (i32 wraps; i1 adds mod 2)."""
    if lhs.dtype == dtypes.I1:
        return np.logical_xor(lhs, rhs)
    return np.add(lhs, rhs)


@_quiet
def sub(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.sub` (i32 wraps; i1 subtracts mod 2)."""
    if lhs.dtype == dtypes.I1:
        return np.logical_xor(lhs, rhs)
    return np.subtract(lhs, rhs)


@_quiet
def mul(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.mul` (i32 wraps; i1 multiplies as and)."""
    if lhs.dtype == dtypes.I1:
        return np.logical_and(lhs, rhs)
    return np.multiply(lhs, rhs)


@_quiet
def div(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.div`: IEEE division for floats; for i32 floor division where
    division by zero gives 0."""
    if dtypes.is_float(lhs.dtype):
        return np.true_divide(lhs, rhs)
    if lhs.dtype == dtypes.I1:
        return np.logical_and(lhs, rhs)
    zero = rhs == 0
    quotient = np.floor_divide(lhs, np.where(zero, np.ones_like(rhs), rhs))
    return np.where(zero, np.zeros_like(quotient), quotient)


@_quiet
def max_(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.max`: elementwise max; NaN propagates."""
    return np.maximum(lhs, rhs)


@_quiet
def min_(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.min`: elementwise min; NaN propagates."""
    return np.minimum(lhs, rhs)


def and_(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.and`: bitwise (logical on i1)."""
    return np.bitwise_and(lhs, rhs)


def or_(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.or`: bitwise (logical on i1)."""
    return np.bitwise_or(lhs, rhs)


@_quiet
def exp(x: np.ndarray) -> np.ndarray:
    """`poot.exp` (exp(-inf) = 0)."""
    return np.exp(x)


@_quiet
def log(x: np.ndarray) -> np.ndarray:
    """`poot.log`."""
    return np.log(x)


@_quiet
def tanh(x: np.ndarray) -> np.ndarray:
    """`poot.tanh`."""
    return np.tanh(x)


@_quiet
def logistic(x: np.ndarray) -> np.ndarray:
    """`poot.logistic`: `1 / (1 + e^-x)`, each step in the element type."""
    one = np.ones((), dtype=x.dtype)
    return one / (one + np.exp(-x))


@_quiet
def sqrt(x: np.ndarray) -> np.ndarray:
    """`poot.sqrt`."""
    return np.sqrt(x)


@_quiet
def rsqrt(x: np.ndarray) -> np.ndarray:
    """`poot.rsqrt`: `1 / sqrt(x)`, each step in the element type."""
    return np.ones((), dtype=x.dtype) / np.sqrt(x)


@_quiet
def sin(x: np.ndarray) -> np.ndarray:
    """`poot.sin`."""
    return np.sin(x)


@_quiet
def cos(x: np.ndarray) -> np.ndarray:
    """`poot.cos`."""
    return np.cos(x)


@_quiet
def neg(x: np.ndarray) -> np.ndarray:
    """`poot.neg` (i32 wraps)."""
    return np.negative(x)


@_quiet
def abs_(x: np.ndarray) -> np.ndarray:
    """`poot.abs` (i32 wraps: |INT_MIN| = INT_MIN)."""
    return np.abs(x)


_COMPARISONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def compare(direction: str, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`poot.compare`: i1 result; every comparison with NaN is false except
    `ne`. Floats compare as float64 (exact for every float type)."""
    if dtypes.is_float(lhs.dtype):
        lhs, rhs = lhs.astype(np.float64), rhs.astype(np.float64)
    return _COMPARISONS[direction](lhs, rhs)


def select(cond: np.ndarray, on_true: np.ndarray, on_false: np.ndarray) -> np.ndarray:
    """`poot.select`: a true select, so the unchosen value never reaches the
    result (a NaN there cannot leak)."""
    return np.where(cond, on_true, on_false)


def index_guard(operand: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """`poot.index_guard`: `(clamp(operand, lo, hi), all(lo <= operand <= hi))`."""
    x = np.asarray(operand)
    wide = x.astype(np.int64)
    clamped = np.clip(wide, lo, hi).astype(x.dtype)
    witness = np.array(bool(np.all((wide >= lo) & (wide <= hi))))
    return clamped, witness


# --- fused attention --------------------------------------------------------------


def _running_dtype(dtype: np.dtype) -> np.dtype:
    """Where a fused attention op holds its scores and sums: float64 for
    16-bit inputs (two-byte attention: the exact reference of the kernels'
    f32 math, rounded once at the end), else the input dtype."""
    return dtypes.F64 if dtype in dtypes.HALF_DTYPES else np.dtype(dtype)


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis: `exp(s - max) / sum(exp(s - max))`. A
    `-inf` score gets exactly zero weight; a row of only `-inf` is 0/0 = NaN."""
    with np.errstate(all="ignore"):
        shifted = scores - np.max(scores, axis=-1, keepdims=True)
        weights = np.exp(shifted)
        return weights / np.sum(weights, axis=-1, keepdims=True)


def _score_transform(scores: np.ndarray, scale: float, softcap: float | None) -> np.ndarray:
    """`s * scale`, then `softcap * tanh(s / softcap)` when a softcap is set."""
    rt = scores.dtype.type
    out = scores * rt(scale)
    if softcap is not None:
        cap = rt(softcap)
        out = cap * np.tanh(out / cap)
    return out


def _per_query_head(x: np.ndarray, query_heads: int) -> np.ndarray:
    """Key/value heads laid out per query head: `x[:, h // n_rep]` (GQA/MQA)."""
    kv_heads = x.shape[1]
    if kv_heads == 0 or query_heads % kv_heads:
        raise ValueError(f"query heads ({query_heads}) must be a multiple of kv heads ({kv_heads})")
    return x[:, np.arange(query_heads) // (query_heads // kv_heads)]


@_quiet
def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    scale: float,
    softcap: float | None = None,
    mask: np.ndarray | None = None,
    key_shared: np.ndarray | None = None,
    read: np.ndarray | None = None,
    length: np.ndarray | None = None,
    causal: bool = False,
    window: int | None = None,
) -> np.ndarray:
    """`poot.attention` in all its forms (dense, split key, paged key, live
    length, causal, sliding window), as documented:

        s[t] = dot(q[b,h,i], key(b,g,t)) * scale; softcap; + mask;
        s[t] = -inf where causal and t > i + (Lk - Lq);
        s[t] = -inf where window and t <= i + (Lk - Lq) - window;
        s[t] = -inf where t >= len[b];  out = softmax(s) @ value(b,g,t)

    with `g = h // n_rep`. The live form clamps `len` into [0, Lk] (as the
    generated kernel does) and never reads a key or value row at `t >= len[b]`:
    those rows are selected to zero before either product, so a NaN there
    cannot reach the output. A paged `read` word is clipped into the pool, as
    the gather the rewrite fused it from would.
    """
    out_dtype = q.dtype
    rt = _running_dtype(out_dtype)
    q, k, v = q.astype(rt), k.astype(rt), v.astype(rt)
    if read is not None:
        if key_shared is not None:
            raise ValueError("a paged key cannot also be a split key")
        slots = np.clip(np.asarray(read), 0, k.shape[0] - 1)  # [B, Lk]
        k = k[slots].transpose(0, 2, 1, 3)  # [B, Lk, Hkv, Dk] -> [B, Hkv, Lk, Dk]
        v = v[slots].transpose(0, 2, 1, 3)
    if key_shared is not None:
        shared = np.broadcast_to(key_shared.astype(rt), k.shape[:3] + key_shared.shape[3:])
        k = np.concatenate([k, shared], axis=-1)
    query_heads, key_len = q.shape[1], k.shape[2]
    k = _per_query_head(k, query_heads)
    v = _per_query_head(v, query_heads)
    live = None
    if length is not None:
        lens = np.clip(np.asarray(length).astype(np.int64), 0, key_len)
        live = np.arange(key_len)[None, :] < lens[:, None]  # [B, Lk]
        k = np.where(live[:, None, :, None], k, rt.type(0))
        v = np.where(live[:, None, :, None], v, rt.type(0))
    scores = _score_transform(matmul(q, np.swapaxes(k, -1, -2)), scale, softcap)
    if mask is not None:
        scores = scores + mask.astype(rt)
    if window is not None and (not causal or int(window) < 1):
        raise ValueError(f"window needs causal and window >= 1, got causal={causal}, window={window}")
    if causal:
        query_len = q.shape[2]
        if key_len < query_len:
            raise ValueError(f"causal needs Lk >= Lq, got Lk = {key_len}, Lq = {query_len}")
        diagonal = np.arange(query_len)[:, None] + (key_len - query_len)
        hidden = np.arange(key_len)[None, :] > diagonal
        if window is not None:
            hidden |= np.arange(key_len)[None, :] <= diagonal - int(window)
        scores = np.where(hidden, rt.type(-np.inf), scores)
    if live is not None:
        scores = np.where(live[:, None, None, :], scores, rt.type(-np.inf))
    out = matmul(softmax(scores), v)
    return convert(out, out_dtype)


def _floor_div(x: np.ndarray, d: int) -> np.ndarray:
    return np.floor_divide(np.asarray(x).astype(np.int64), d)


def block_topk(scores: np.ndarray, q_pos: np.ndarray, *, k: int, block_size: int) -> np.ndarray:
    """`poot.block_topk`: for row (b, i) at `p = q_pos[b, i]`, the candidates
    are the blocks `j < p // block_size`. Every block is ranked by
    `scores[b, i, j]` if it is a candidate, else -inf, in `top_k`'s order
    (descending, NaN below every number, ties to the lower id); the first
    `k` are listed (past NB: -1) and every non-candidate among them becomes
    -1 -- exactly the tracer's chain. With numeric scores: the `k` best
    candidates, then -1s; a NaN-scored candidate ranks below the
    non-candidates' -inf, so it is listed only when nothing else is left."""
    blocks = scores.shape[-1]
    own = _floor_div(q_pos, block_size)[..., None]  # [B, Lq, 1]
    candidate = np.broadcast_to(np.arange(blocks) < own, scores.shape)
    keys = np.where(candidate, np.asarray(scores).astype(np.float64), -np.inf)
    order = np.argsort(-keys, axis=-1, kind="stable")[..., : min(k, blocks)]
    chosen = np.where(np.take_along_axis(candidate, order, axis=-1), order, -1)
    if k > blocks:
        pad = np.full(scores.shape[:-1] + (k - blocks,), -1)
        chosen = np.concatenate([chosen, pad], axis=-1)
    return chosen.astype(dtypes.I32)


def selected_visibility(
    block_ids: np.ndarray, q_pos: np.ndarray, key_len: int, block_size: int
) -> np.ndarray:
    """`[B, Lq, Lk]` bool: key `t` is visible to row (b, i) iff `t <= p` and
    its block `t // bs` is listed in `block_ids[b, i]` (ids < 0 are padding) or
    is the row's own block `p // bs`."""
    t = np.arange(key_len)
    block = t // block_size  # [Lk]
    pos = np.asarray(q_pos).astype(np.int64)[..., None]  # [B, Lq, 1]
    ids = np.asarray(block_ids).astype(np.int64)  # [B, Lq, K]
    listed = np.any((ids[..., None] == block) & (ids[..., None] >= 0), axis=-2)
    own = block == _floor_div(pos, block_size)
    return (t <= pos) & (listed | own)


@_quiet
def selected_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    block_ids: np.ndarray,
    q_pos: np.ndarray,
    *,
    block_size: int,
    scale: float,
    softcap: float | None = None,
) -> np.ndarray:
    """`poot.selected_attention`: attention of row (b, i) over exactly its
    visible keys (`selected_visibility`). A key outside the row's selection
    is never read: its score is selected to -inf and its value row to zero
    for that row, so a NaN there cannot leak. No visible key gives NaN."""
    out_dtype = q.dtype
    rt = _running_dtype(out_dtype)
    query_heads = q.shape[1]
    q = q.astype(rt)
    k = _per_query_head(k.astype(rt), query_heads)
    v = _per_query_head(v.astype(rt), query_heads)
    visible = selected_visibility(block_ids, q_pos, k.shape[2], block_size)  # [B, Lq, Lk]
    scores = _score_transform(matmul(q, np.swapaxes(k, -1, -2)), scale, softcap)
    scores = np.where(visible[:, None], scores, rt.type(-np.inf))
    weights = softmax(scores)  # [B, Hq, Lq, Lk]
    out = np.empty(q.shape[:3] + v.shape[3:], dtype=rt)
    for i in range(q.shape[2]):
        row_visible = visible[:, i][:, None, :, None]  # [B, 1, Lk, 1]
        values = np.where(row_visible, v, rt.type(0))
        out[:, :, i, :] = matmul(weights[:, :, i : i + 1, :], values)[:, :, 0, :]
    return convert(out, out_dtype)


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """`poot.rope`: x * cos + concat(-x[..., h:], x[..., :h]) * sin, h = d / 2.

    Computed as its primitive chain (mul, slice, neg, concat, mul, add), each
    step rounded in the element type like the ops it names.
    """
    half = x.shape[-1] // 2
    rotated = np.concatenate([neg(x[..., half:]), x[..., :half]], axis=-1)
    return add(mul(x, cos), mul(rotated, sin))
