"""The reduction ATen ops: `sum`/`mean`/`amax`/`amin`/`max`/`min`/`any`/
`all`/`var`, the softmaxes and the normalizations (`layer_norm`,
`rms_norm`)."""

from __future__ import annotations

import math
from typing import Any, Callable

from .. import composites as C
from .. import primitives as P
from ..tensor import Tensor
from ._table import aten, axes, axis, bool_of, finish, to


# --- reductions and normalizations --------------------------------------------------------------


def _reduce_axes(x: Tensor, dims: list[int], reduce: Callable[..., Tensor]) -> Tensor:
    for d in dims:
        x = reduce(x, axis=d, keepdim=True)
    return x


def _count(x: Tensor, dims: list[int]) -> int:
    return math.prod(x.shape[d] for d in dims)


@aten("sum")
def _sum(a, out, ctx):
    x = to(a["self"], out.dtype)
    return finish(_reduce_axes(x, axes(a.get("dim"), x.rank), P.reduce_sum), out)


@aten("mean")
def _mean(a, out, ctx):
    x = to(a["self"], out.dtype)
    dims = axes(a.get("dim"), x.rank)
    return finish(P.div(_reduce_axes(x, dims, P.reduce_sum), float(_count(x, dims))), out)


def _refuse_max(a: dict[str, Any]) -> str | None:
    if "dim" in a:
        return "max/min over a dim returns indices too (use amax/amin)"
    return None


@aten("max", "min", refuse=_refuse_max)
def _max(a, out, ctx):
    """max.other / min.other elementwise, max.default / min.default over
    every element (the op is told apart by its schema: `other` or none)."""
    x, is_max = a["self"], ctx.packet == "max"
    if "other" in a:
        dtype = out.dtype
        return (P.maximum if is_max else P.minimum)(to(x, dtype), to(a["other"], dtype))
    reduce = P.reduce_max if is_max else P.reduce_min
    return finish(_reduce_axes(x, list(range(x.rank)), reduce), out)


@aten("amax")
def _amax(a, out, ctx):
    x = a["self"]
    return finish(_reduce_axes(x, axes(a.get("dim"), x.rank), P.reduce_max), out)


@aten("amin")
def _amin(a, out, ctx):
    x = a["self"]
    return finish(_reduce_axes(x, axes(a.get("dim"), x.rank), P.reduce_min), out)


@aten("any", "all")
def _any(a, out, ctx):
    """any: max of the 0/1 words > 0; all: their min > 0 (poot reduces
    numbers, not i1)."""
    x = to(bool_of(a["self"]), "i32")
    reduce = P.reduce_max if ctx.packet == "any" else P.reduce_min
    return finish(P.gt(_reduce_axes(x, axes(a.get("dim"), x.rank), reduce), 0), out)


def _variance(x: Tensor, dims: list[int], correction: float) -> Tensor:
    """`sum((x - mean)^2) / (N - correction)`, keepdim."""
    n = _count(x, dims)
    centered = P.sub(x, P.div(_reduce_axes(x, dims, P.reduce_sum), float(n)))
    return P.div(_reduce_axes(P.mul(centered, centered), dims, P.reduce_sum), float(n - correction))


@aten("var")
def _var(a, out, ctx):
    x = to(a["self"], out.dtype)
    dims = axes(a.get("dim"), x.rank)
    if "correction" in a:
        correction = 1 if a["correction"] is None else a["correction"]
    else:
        correction = 1 if a.get("unbiased", True) else 0
    return finish(_variance(x, dims, correction), out)


def _softmax_last(x: Tensor, dim: int, body: Callable[[Tensor], Tensor]) -> Tensor:
    """`body` (a last-axis softmax) over axis `dim`, transposing around it."""
    d = axis(dim, x.rank)
    if d == x.rank - 1:
        return body(x)
    perm = list(range(x.rank))
    perm[d], perm[-1] = perm[-1], perm[d]
    return P.transpose(body(P.transpose(x, perm)), perm)


@aten("softmax", "_softmax")
def _softmax(a, out, ctx):
    return _softmax_last(to(a["self"], out.dtype), a["dim"], C.softmax)


def _log_softmax_body(x: Tensor) -> Tensor:
    shifted = P.sub(x, P.reduce_max(x, axis=-1, keepdim=True))
    return P.sub(shifted, P.log(P.reduce_sum(P.exp(shifted), axis=-1, keepdim=True)))


@aten("log_softmax", "_log_softmax")
def _log_softmax(a, out, ctx):
    return _softmax_last(to(a["self"], out.dtype), a["dim"], _log_softmax_body)


def _normalized_axes(x: Tensor, normalized_shape: list[int]) -> list[int]:
    return list(range(x.rank - len(normalized_shape), x.rank))


def _layer_norm_parts(a: dict[str, Any]) -> tuple[Tensor, Tensor, Tensor]:
    """(y, mean, rstd) of LayerNorm over the trailing `normalized_shape`
    axes (biased variance; mean and rstd keep those axes as 1, as
    native_layer_norm returns them). `weight` and `bias` may be None
    (elementwise_affine=False, bias=False). A 2-byte input normalizes in f32
    and rounds once, as torch's CPU and CUDA kernels do."""
    x = a["input"]
    work = "f32" if x.dtype in ("f16", "bf16") else x.dtype
    xw = to(x, work)
    dims = _normalized_axes(x, a["normalized_shape"])
    mean = P.div(_reduce_axes(xw, dims, P.reduce_sum), float(_count(x, dims)))
    centered = P.sub(xw, mean)
    var = P.div(_reduce_axes(P.mul(centered, centered), dims, P.reduce_sum), float(_count(x, dims)))
    eps = a.get("eps")
    rstd = P.rsqrt(P.add(var, float(1e-5 if eps is None else eps)))
    y = P.mul(centered, rstd)
    if a.get("weight") is not None:
        y = P.mul(y, to(a["weight"], work))
    if a.get("bias") is not None:
        y = P.add(y, to(a["bias"], work))
    return to(y, x.dtype), mean, rstd


@aten("layer_norm")
def _layer_norm(a, out, ctx):
    return _layer_norm_parts(a)[0]


@aten("native_layer_norm")
def _native_layer_norm(a, out, ctx):
    """The core-ATen LayerNorm: (out, mean, rstd); mean and rstd in the
    input's dtype (torch's for f32/f64; in practice only `out` is used)."""
    y, mean, rstd = _layer_norm_parts(a)
    dtype = a["input"].dtype
    return [y, to(mean, dtype), to(rstd, dtype)]


# torch.finfo(dtype).eps, rms_norm's default.
_EPS = {"f32": 2.0**-23, "f16": 2.0**-10, "bf16": 2.0**-7, "f64": 2.0**-52}


@aten("rms_norm")
def _rms_norm(a, out, ctx):
    x = a["input"]
    dims = _normalized_axes(x, a["normalized_shape"])
    eps = a.get("eps")
    eps = _EPS[x.dtype] if eps is None else eps
    ms = P.div(_reduce_axes(P.mul(x, x), dims, P.reduce_sum), float(_count(x, dims)))
    y = P.mul(x, P.rsqrt(P.add(ms, float(eps))))
    return y if a.get("weight") is None else P.mul(y, a["weight"])


def _refuse_topk(a: dict[str, Any]) -> str | None:
    if not a.get("largest", True):
        return "largest=False (poot.top_k takes the largest)"
    return None


@aten("topk", refuse=_refuse_topk)
def _topk(a, out, ctx):
    """(values, indices) of the k largest along `dim` (poot.top_k: the last
    axis, descending, ties to the lower index; `sorted=False` leaves torch's
    order unspecified, and the MoE routers that use it only pair the two),
    transposed around another axis."""
    x, k = a["self"], int(a["k"])
    d = axis(a.get("dim", -1), x.rank)
    if d == x.rank - 1:
        return list(P.top_k(x, k))
    perm = list(range(x.rank))
    perm[d], perm[-1] = perm[-1], perm[d]
    values, indices = P.top_k(P.transpose(x, perm), k)
    return [P.transpose(values, perm), P.transpose(indices, perm)]
