"""Indexed writes: `index_copy` and `index_put` (what a functionalized KV
cache's `keys.index_copy_(2, positions, k)` becomes).

Written positions that are `arange(n) + start` (a cache's contiguous
positions, `start` a 0-d tensor: Hugging Face's `StaticCache`) are one
`dynamic_update_slice` at `start`: the form the attention rewrite reads as
a cache write and the lowerings write in place. Any other index vector is a
`scatter_update` along the axis (the axis moved to the front and back);
an index outside the axis writes nothing there (torch raises instead).
"""

from __future__ import annotations

from typing import Any

import torch

from .. import primitives as P
from ..tensor import Tensor
from ._table import aten, axis, to


def _arange_start(index_node: Any, env: dict[str, Any]) -> Tensor | None:
    """`start` when `index_node` computes `arange(n) + start` (either operand
    order, start a 0-d tensor) or `arange(start, start + n)` with a traced
    start; else None."""
    if not isinstance(index_node, torch.fx.Node) or index_node.op != "call_function":
        return None
    target = index_node.target
    if target in (torch.ops.aten.add.Tensor,) and len(index_node.args) == 2:
        for ramp, offset in (index_node.args, index_node.args[::-1]):
            if _is_plain_arange(ramp) and isinstance(offset, torch.fx.Node):
                start = env.get(offset.name)
                if isinstance(start, Tensor) and start.shape == ():
                    return to(start, "i32")
    return None


def _is_plain_arange(node: Any) -> bool:
    """`arange(n)` (start 0, step 1)."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    if node.target is torch.ops.aten.arange.default:
        return True
    if node.target is torch.ops.aten.arange.start and node.args[0] == 0:
        return True
    if node.target is torch.ops.aten.arange.start_step:
        return node.args[0] == 0 and (len(node.args) < 3 or node.args[2] == 1)
    return False


def _scatter_along(x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """`x` with `x[..., index[i], ...] = source[..., i, ...]` along `dim`."""
    perm = [dim] + [d for d in range(x.rank) if d != dim]
    back = [perm.index(d) for d in range(x.rank)]
    moved = x if dim == 0 else P.transpose(x, perm)
    rows = source if dim == 0 else P.transpose(source, perm)
    written = P.scatter_update(moved, to(index, "i32"), rows)
    return written if dim == 0 else P.transpose(written, back)


def _write(x: Tensor, dim: int, index: Tensor, source: Tensor, index_node: Any, ctx) -> Tensor:
    source = to(source, x.dtype)
    if source.shape[dim] != index.shape[0]:
        raise ValueError(
            f"{source.shape[dim]} rows written at {index.shape[0]} positions along axis {dim}"
        )
    start = _arange_start(index_node, ctx.env)
    if start is not None:
        return P.dynamic_update_slice(x, source, start, dim)
    return _scatter_along(x, dim, index, source)


@aten("index_copy")
def _index_copy(a, out, ctx):
    x, index = a["self"], a["index"]
    if index.rank != 1:
        raise ValueError(f"index_copy with a {index.rank}-D index (1-D only)")
    dim = axis(a["dim"], x.rank)
    return _write(x, dim, index, a["source"], ctx.node.args[2], ctx)


def _refuse_index_put(a) -> str | None:
    indices = list(a["indices"])
    present = [i for i, t in enumerate(indices) if t is not None]
    if len(present) != 1:
        return "index_put with other than one index tensor (x[:, :, idx] = v forms only)"
    if a.get("accumulate"):
        return "index_put with accumulate=True"
    return None


@aten("index_put", refuse=_refuse_index_put)
def _index_put(a, out, ctx):
    """`x[:, ..., idx] = values` (one 1-D index tensor on one axis, the other
    axes whole): the same write as `index_copy` along that axis."""
    x, indices = a["self"], list(a["indices"])
    dim = next(i for i, t in enumerate(indices) if t is not None)
    index = indices[dim]
    if index.rank != 1 or index.dtype == "i1":
        raise ValueError("index_put with a bool or multi-axis index tensor")
    values = a["values"]
    want = x.shape[:dim] + index.shape + x.shape[dim + 1 :]
    if values.shape != want:
        values = P.broadcast_to(to(values, x.dtype), want)
    node_indices = ctx.node.args[1]
    return _write(x, dim, index, values, node_indices[dim], ctx)
