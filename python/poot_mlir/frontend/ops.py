"""`ops`: every frontend op in one namespace, as model code reads it.

    from poot_mlir.frontend import Tracer, ops
    out, k1, v1 = ops.attention_masked(q, k_new, v_new, k_cache, v_cache, pos)

Primitives map one-to-one onto poot ops (`primitives`); composites emit the
fixed primitive chains documented in `composites`, `attention` and `sparse`.
"""

from __future__ import annotations

from .attention import (
    attention_live,
    attention_masked,
    attention_mla,
    attention_paged,
    attention_prefill,
)
from .composites import argmax, linear, masked_fill, mlp, repeat_kv, rms_norm, rope, silu, softmax
from .primitives import (
    abs,
    add,
    and_,
    broadcast_to,
    compare,
    concat,
    constant,
    convert,
    cos,
    div,
    dynamic_update_slice,
    eq,
    exp,
    gather,
    ge,
    gt,
    index_guard,
    iota,
    le,
    log,
    logistic,
    lt,
    matmul,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    or_,
    reduce_max,
    reduce_min,
    reduce_sum,
    reshape,
    rsqrt,
    scatter_update,
    select,
    sin,
    slice,
    sqrt,
    sub,
    tanh,
    top_k,
    transpose,
    where,
)
from .sparse import indexer_scores, sparse_block_topk, sparse_selected_attention

__all__ = [
    # primitives
    "abs", "add", "and_", "broadcast_to", "compare", "concat", "constant", "convert", "cos", "div",
    "dynamic_update_slice", "eq", "exp", "gather", "ge", "gt", "index_guard", "iota", "le", "log",
    "logistic", "lt", "matmul", "maximum", "minimum", "mul", "ne", "neg", "or_", "reduce_max",
    "reduce_min", "reduce_sum", "reshape", "rsqrt", "scatter_update", "select", "sin", "slice",
    "sqrt", "sub", "tanh", "top_k", "transpose", "where",
    # composites
    "argmax", "linear", "masked_fill", "mlp", "repeat_kv", "rms_norm", "rope", "silu", "softmax",
    "attention_live", "attention_masked", "attention_mla", "attention_paged", "attention_prefill",
    "indexer_scores", "sparse_block_topk", "sparse_selected_attention",
]  # fmt: skip
