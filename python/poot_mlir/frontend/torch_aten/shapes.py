"""The shape and indexing ATen ops: views, expands, permutes, slices,
`cat`/`stack`/`split`, `diff`/`cumsum`, advanced `index` on the leading
axes and `embedding`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import primitives as P
from ..tensor import Tensor
from ._table import aten, axis, finish, to


# --- shape and data movement -------------------------------------------------------------


@aten("view", "reshape", "_unsafe_view", "view_copy", "flatten", "unflatten", "squeeze",
      "unsqueeze", "view_as", "reshape_as")  # fmt: skip
def _reshape(a, out, ctx):
    x = a["self"]
    if x.shape == out.shape:
        return x
    iota = _iota_laid_out(x, out.shape)
    return iota if iota is not None else P.reshape(x, out.shape)


def _iota_laid_out(x, shape) -> "Tensor | None":
    """`torch.arange(n).reshape(1, 1, n, 1)` as one iota of that shape along
    the axis of n (the same values): the key-position spelling the attention
    rewrite reads in a causal or live-length compare. None unless `x` is a
    1-D iota and `shape` only adds unit axes around it."""
    owner = getattr(x.value, "owner", None)
    if x.rank != 1 or getattr(getattr(owner, "operation", None), "name", None) != "poot.iota":
        return None
    big = [d for d, n in enumerate(shape) if n != 1]
    if len(big) != 1 or shape[big[0]] != x.shape[0]:
        return None
    return P.iota(shape, big[0], x.dtype, tracer=x.tracer)


@aten("expand", "expand_as", "broadcast_to", "expand_copy")
def _expand(a, out, ctx):
    x = a["self"]
    return x if x.shape == out.shape else P.broadcast_to(x, out.shape)


@aten("permute")
def _permute(a, out, ctx):
    x = a["self"]
    return P.transpose(x, [axis(d, x.rank) for d in a["dims"]])


@aten("transpose", "swapaxes")
def _transpose(a, out, ctx):
    x = a["self"]
    if x.rank < 2:
        return x
    d0 = axis(a.get("dim0", a.get("axis0")), x.rank)
    d1 = axis(a.get("dim1", a.get("axis1")), x.rank)
    perm = list(range(x.rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return x if d0 == d1 else P.transpose(x, perm)


@aten("t", "numpy_T")
def _t(a, out, ctx):
    x = a["self"]
    return x if x.rank < 2 else P.transpose(x, list(range(x.rank))[::-1])


def _slice_of(x: Tensor, dim: int, start: int, stop: int, step: int = 1) -> Tensor:
    if (start, stop, step) == (0, x.shape[dim], 1):
        return x
    lo, hi = [0] * x.rank, list(x.shape)
    steps = [1] * x.rank
    lo[dim], hi[dim], steps[dim] = start, stop, step
    return P.slice(x, lo, hi, steps)


def _refuse_slice(a: dict[str, Any]) -> str | None:
    if a.get("step", 1) is not None and a.get("step", 1) < 1:
        return f"step={a['step']} (torch allows only positive steps)"
    return None


@aten("slice", "slice_copy", refuse=_refuse_slice)
def _slice(a, out, ctx):
    x = a["self"]
    dim = axis(a.get("dim", 0), x.rank)
    n = x.shape[dim]
    start, end, step = a.get("start"), a.get("end"), a.get("step", 1) or 1
    start = 0 if start is None else start
    end = n if end is None else end
    start, end = (min(max(v + n if v < 0 else v, 0), n) for v in (start, end))
    if end <= start:
        raise ValueError(
            f"an empty slice [{start}:{end}] of axis {dim} (poot tensors have no zero-sized axes)"
        )
    return _slice_of(x, dim, start, end, step)


@aten("select", "select_copy")
def _select(a, out, ctx):
    x = a["self"]
    dim = axis(a["dim"], x.rank)
    index = a["index"] + x.shape[dim] if a["index"] < 0 else a["index"]
    return finish(_slice_of(x, dim, index, index + 1), out)


@aten("cat", "concat")
def _cat(a, out, ctx):
    # A zero-sized operand (values.Empty, Phi-3's empty rotary pass-through)
    # adds nothing: dropped.
    tensors = [to(t, out.dtype) for t in a["tensors"] if 0 not in t.shape]
    if len(tensors) == 1:
        return tensors[0]
    return P.concat(tensors, axis(a.get("dim", 0), tensors[0].rank))


@aten("stack")
def _stack(a, out, ctx):
    tensors = [to(t, out.dtype) for t in a["tensors"]]
    dim = axis(a.get("dim", 0), tensors[0].rank + 1)
    lifted = [P.reshape(t, t.shape[:dim] + (1,) + t.shape[dim:]) for t in tensors]
    return lifted[0] if len(lifted) == 1 else P.concat(lifted, dim)


def _pieces(x: Tensor, dim: int, sizes: list[int]) -> list[Tensor]:
    out, start = [], 0
    for size in sizes:
        out.append(_slice_of(x, dim, start, start + size))
        start += size
    return out


@aten("split", "split_with_sizes", "chunk", "unbind", "tensor_split")
def _split(a, out, ctx):
    x = a["self"]
    dim = axis(a.get("dim", 0), x.rank)
    n = x.shape[dim]
    if "split_sizes" in a:
        sizes = list(a["split_sizes"])
    elif "split_size" in a:
        size = a["split_size"]
        sizes = [min(size, n - s) for s in range(0, n, size)]
    elif "chunks" in a:
        size = -(-n // a["chunks"])
        sizes = [min(size, n - s) for s in range(0, n, size)]
    elif "sections" in a:
        k = a["sections"]
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    elif "indices" in a:
        bounds = [0] + [min(max(i + n if i < 0 else i, 0), n) for i in a["indices"]] + [n]
        sizes = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    elif "tensor_indices_or_sections" in a:
        raise TypeError("tensor_split by a tensor of indices (only by Python ints)")
    else:  # unbind: every index, the axis dropped
        return [P.reshape(p, x.shape[:dim] + x.shape[dim + 1 :]) for p in _pieces(x, dim, [1] * n)]
    if 0 in sizes:
        raise ValueError(f"a zero-sized piece of axis {dim} (sizes {sizes})")
    return _pieces(x, dim, sizes)


@aten("diff")
def _diff(a, out, ctx):
    """`x[1:] - x[:-1]` along `dim`, n times, after concatenating `prepend`
    and `append` (torch.diff)."""
    x = a["self"]
    dim = axis(a.get("dim", -1), x.rank)
    pieces = [t for t in (a.get("prepend"), x, a.get("append")) if t is not None]
    x = P.concat(pieces, dim) if len(pieces) > 1 else x
    for _ in range(a.get("n", 1)):
        n = x.shape[dim]
        later, earlier = _slice_of(x, dim, 1, n), _slice_of(x, dim, 0, n - 1)
        x = P.ne(later, earlier) if x.dtype == "i1" else P.sub(later, earlier)
    return x


def _shifted_sums(x: Tensor, dim: int) -> Tensor:
    """The running sum of an integer tensor along `dim`, exact: log2(n)
    doubling steps `x += x shifted by s` (zeros shifted in), s = 1, 2, 4, ...
    (Hillis-Steele; i32 arithmetic wraps as torch's int32 does)."""
    n, shift = x.shape[dim], 1
    while shift < n:
        pad = P.constant(0, x.dtype, shape=x.shape[:dim] + (shift,) + x.shape[dim + 1 :],
                         tracer=x.tracer)  # fmt: skip
        x = P.add(x, P.concat([pad, _slice_of(x, dim, 0, n - shift)], dim))
        shift *= 2
    return x


@aten("cumsum")
def _cumsum(a, out, ctx):
    """poot has no scan: the running sum along `dim` is a matmul by the upper
    triangle of ones (`out[i] = sum_{j <= i} x[j]`), in f32 for a bool input
    (counts up to the axis length, exact) and in the dtype for floats; an
    integer input (Falcon's ALiBi positions, `mask.cumsum(-1)`) sums exactly
    by doubling steps instead (its sums could pass f32's exact range)."""
    x = a["self"]
    dim = axis(a["dim"], x.rank)
    if x.dtype == "i32" or out.dtype == "i32":
        return _shifted_sums(to(x, "i32"), dim)
    work = "f32" if x.dtype == "i1" else out.dtype
    n = x.shape[dim]
    triangle = P.constant(np.triu(np.ones((n, n))), work, tracer=ctx.tracer)
    perm = list(range(x.rank))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    moved = P.transpose(to(x, work), perm) if dim != x.rank - 1 else to(x, work)
    rows = P.reshape(moved, (-1, n))
    summed = P.reshape(P.matmul(rows, triangle), moved.shape)
    back = P.transpose(summed, perm) if dim != x.rank - 1 else summed
    return to(back, out.dtype)


@aten("index")
def _index(a, out, ctx):
    """`x[i0, i1, ...]` with integer index tensors on the leading axes
    (broadcast together; negative indices wrap): one gather over those axes
    flattened."""
    x, indices = a["self"], list(a["indices"])
    while indices and indices[-1] is None:
        indices.pop()
    if not indices or any(i is None for i in indices) or any(i.dtype == "i1" for i in indices):
        raise TypeError("indexing other than by integer tensors on the leading axes "
                        "(no None between them, no bool masks)")  # fmt: skip
    k = len(indices)
    linear = None
    for d, index in enumerate(indices):
        size = x.shape[d]
        # An index declared non-negative (a paged read map: `pool[read]`)
        # needs no wrap: the gather then reads the map itself, the form the
        # attention rewrite fuses as a paged key.
        declared = index.declared_range
        if declared is None or declared[0] < 0:
            index = P.select(P.lt(index, 0), P.add(index, size), index)
        linear = index if linear is None else P.add(P.mul(linear, size), index)
    flat = x if k == 1 else P.reshape(x, (math.prod(x.shape[:k]),) + x.shape[k:])
    return P.gather(flat, linear, 0)


@aten("embedding")
def _embedding(a, out, ctx):
    return P.gather(a["weight"], to(a["indices"], "i32"), 0)


@aten("index_select")
def _index_select(a, out, ctx):
    """`x.index_select(dim, index)`: a gather along `dim` (a 1-D index)."""
    x = a["self"]
    return finish(P.gather(x, to(a["index"], "i32"), axis(a["dim"], x.rank)), out)


@aten("gather")
def _gather_along(a, out, ctx):
    """`torch.gather(x, dim, index)` (take-along-axis: out[i, j] =
    x[i, index[i, j]] for dim 1): every output element's flat offset into x,
    its own coordinates on the other axes (iotas over index's shape, which
    may be smaller than x there) and `index` on `dim`, then one poot gather
    from x flattened. BERT's token-type ids gather their buffer this way."""
    x, index = a["self"], to(a["index"], "i32")
    dim = axis(a["dim"], x.rank)
    if index.rank != x.rank:
        raise ValueError(f"a rank-{index.rank} index for a rank-{x.rank} input (torch needs equal)")
    offset = None
    stride = 1
    for d in reversed(range(x.rank)):
        coord = index if d == dim else P.iota(index.shape, d, tracer=ctx.tracer)
        term = coord if stride == 1 else P.mul(coord, stride)
        offset = term if offset is None else P.add(offset, term)
        stride *= x.shape[d]
    return P.gather(P.reshape(x, (math.prod(x.shape),)), offset, 0)


@aten("repeat")
def _repeat(a, out, ctx):
    """`x.repeat(*sizes)` tiles x: out[i] = x[i mod n] on each axis. x
    (left-padded with unit axes to len(sizes)) gets a unit axis before each
    axis, broadcast to the repeat count, and the pairs merged (count-major)."""
    x, sizes = a["self"], list(a["repeats"])
    shape = (1,) * (len(sizes) - x.rank) + x.shape
    interleaved = [d for n in shape for d in (1, n)]
    tiled = [d for r, n in zip(sizes, shape) for d in (r, n)]
    x = P.broadcast_to(P.reshape(x, interleaved), tiled)
    return P.reshape(x, out.shape)


@aten("slice_scatter")
def _slice_scatter(a, out, ctx):
    """`x` with `x[start:end]` along `dim` replaced by `src` (what an in-place
    copy into a slice functionalizes to): the pieces of x before and after
    the slice concatenated around src; a step other than 1 is refused."""
    x, src = a["self"], to(a["src"], a["self"].dtype)
    dim = axis(a.get("dim", 0), x.rank)
    n = x.shape[dim]
    start, end, step = a.get("start"), a.get("end"), a.get("step", 1) or 1
    if step != 1:
        raise TypeError(f"slice_scatter with step={step} (only a contiguous slice)")
    start = 0 if start is None else start
    end = n if end is None else end
    start, end = (min(max(v + n if v < 0 else v, 0), n) for v in (start, end))
    pieces = [_slice_of(x, dim, 0, start)] if start > 0 else []
    pieces.append(src)
    if end < n:
        pieces.append(_slice_of(x, dim, end, n))
    return pieces[0] if len(pieces) == 1 else P.concat(pieces, dim)


@aten("copy")
def _copy(a, out, ctx):
    """The functional `copy(self, src)` (an in-place `copy_` functionalized):
    src broadcast to self's shape, in self's dtype; self's values are gone."""
    src = to(a["src"], out.dtype)
    return src if src.shape == out.shape else P.broadcast_to(src, out.shape)


@aten("repeat_interleave")
def _repeat_interleave(a, out, ctx):
    """`x.repeat_interleave(r, dim)` with a Python int r: each element r times
    in a row (out[i] = x[i // r]): a unit axis after `dim` broadcast to r and
    merged (element-major). A tensor of repeats is data-dependent: refused;
    dim=None flattens first."""
    x, repeats = a["self"], a.get("repeats")
    if not isinstance(repeats, int):
        raise TypeError("repeat_interleave by a tensor of repeats (only a Python int)")
    if a.get("dim") is None:
        x = P.reshape(x, (math.prod(x.shape),))
    dim = axis(a.get("dim") or 0, x.rank)
    lifted = x.shape[: dim + 1] + (1,) + x.shape[dim + 1 :]
    spread = x.shape[: dim + 1] + (repeats,) + x.shape[dim + 1 :]
    return P.reshape(P.broadcast_to(P.reshape(x, lifted), spread), out.shape)


@aten("scatter")
def _scatter(a, out, ctx):
    """`x.scatter(dim, index, value)` with a scalar value (DeepSeek-V3's
    group mask: `zeros.scatter_(1, group_idx, 1)`): position g along `dim`
    takes `value` where any index on that row equals g, as a one-hot compare
    of index (a new axis of x's length after `dim`) reduced over the index
    axis; index must match x on the other axes. A tensor `src` (whose
    duplicate indices torch leaves unordered) and `reduce=` are refused."""
    x, index = a["self"], to(a["index"], "i32")
    if "src" in a or a.get("reduce") is not None:
        raise TypeError("scatter of a src tensor or with reduce= (only a scalar value)")
    dim = axis(a["dim"], x.rank)
    if index.rank != x.rank or any(
        index.shape[d] != x.shape[d] for d in range(x.rank) if d != dim
    ):
        raise ValueError(f"a scatter index {index.shape} unlike x {x.shape} off axis {dim}")
    n = x.shape[dim]
    pairs = index.shape[: dim + 1] + (n,) + index.shape[dim + 1 :]
    spread = P.broadcast_to(P.reshape(index, index.shape[: dim + 1] + (1,) + index.shape[dim + 1 :]), pairs)
    onehot = P.convert(P.eq(spread, P.iota(pairs, dim + 1, tracer=ctx.tracer)), "i32")
    hit = P.gt(P.reshape(P.reduce_max(onehot, axis=dim, keepdim=True), x.shape), 0)
    return P.select(hit, to(a["value"], out.dtype) if isinstance(a["value"], Tensor) else a["value"], x)
