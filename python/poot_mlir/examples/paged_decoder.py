"""The example decoder as a serving step: paged KV, per-row positions, LoRA rows.

The same model as `examples/decoder.py` (same weights, same math), traced
for continuous batching: one step runs `rows` sequences at once, each at its
own position, each with up to `tokens` new tokens (a prefill chunk, or one
decode token and padding), and each under its own LoRA adapter. Arguments
(the driver contract of `poot_mlir.driver.engine`):

    tokens [rows, tokens] i32, pos [rows] (poot.slot<pos>, in [0, cap - T]),
    count [rows] in [1, T], read [rows, cap] (slot map), write [rows * T]
    (write map), adapter [rows] in [0, A - 1], the base weights
    (`decoder.weight_shapes`), the adapter tables (`lora_shapes`), and per
    layer the state pools k<l>, v<l> [pool_slots, kv_heads, head_dim].

Each layer writes its new K/V rows into the pools through the write map and
attends through the read map with a per-row live length
(`ops.attention_paged(..., pos, count=count)`). RoPE angles come from each
token's own position `pos[b] + i`.

A LoRA adapter is a rank-r delta on `wq` and `wv` of every layer:
`x @ (W + A B) = x @ W + (x @ A) @ B`, with the row's `A [d, r]` and
`B [r, out]` gathered from the stacked tables by its adapter slot (slot 0
holds zeros: the base model, exactly). `effective_weights` merges an adapter
into the base weights for the single-request float64 reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..frontend import Tensor, Tracer, ops
from .decoder import DecoderConfig, weight_shapes

LORA_TARGETS = ("wq", "wv")


@dataclass(frozen=True)
class ServeShape:
    rows: int = 4
    tokens: int = 4
    cap: int = 64  # read-map width: sequences hold up to cap - tokens + 1 tokens
    pool_blocks: int = 16
    adapter_slots: int = 4  # slot 0 is the base model
    lora_rank: int = 4

    @property
    def pool_slots(self) -> int:
        from ..driver import BLOCK_SIZE

        return self.pool_blocks * BLOCK_SIZE


def lora_shapes(config: DecoderConfig, rank: int) -> dict[str, tuple[int, ...]]:
    """Per-adapter shapes of the adapter tables (stacked to [A, ...] as inputs)."""
    shapes: dict[str, tuple[int, ...]] = {}
    full = weight_shapes(config)
    for layer in range(config.layers):
        for target in LORA_TARGETS:
            d_in, d_out = full[f"l{layer}.{target}"]
            shapes[f"l{layer}.{target}.lora_a"] = (d_in, rank)
            shapes[f"l{layer}.{target}.lora_b"] = (rank, d_out)
    return shapes


def init_adapter(
    config: DecoderConfig, rank: int, seed: int, scale: float = 0.5
) -> dict[str, np.ndarray]:
    """A seeded random adapter whose delta is a sizeable fraction of W."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, shape in lora_shapes(config, rank).items():
        fan = shape[0]
        arrays[name] = (scale * rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32)
    return arrays


def effective_weights(
    base: dict[str, np.ndarray], adapter: dict[str, np.ndarray] | None
) -> dict[str, np.ndarray]:
    """The base weights with `W + A @ B` merged in (float64 product, stored
    at the weights' dtype); the base weights unchanged without an adapter."""
    merged = dict(base)
    if adapter is None:
        return merged
    for name in base:
        a = adapter.get(f"{name}.lora_a")
        if a is not None:
            b = adapter[f"{name}.lora_b"]
            delta = a.astype(np.float64) @ b.astype(np.float64)
            merged[name] = (base[name].astype(np.float64) + delta).astype(base[name].dtype)
    return merged


def init_pools(config: DecoderConfig, shape: ServeShape) -> dict[str, np.ndarray]:
    pool = (shape.pool_slots, config.kv_heads, config.head_dim)
    return {
        f"{kind}{layer}": np.zeros(pool, np.float32)
        for layer in range(config.layers)
        for kind in "kv"
    }


def _heads(x: Tensor, heads: int, head_dim: int) -> Tensor:
    """`[R, T, heads * head_dim] -> [R, heads, T, head_dim]`."""
    r, t, _ = x.shape
    return ops.transpose(ops.reshape(x, (r, t, heads, head_dim)), (0, 2, 1, 3))


def _merge(x: Tensor) -> Tensor:
    """`[R, heads, T, head_dim] -> [R, T, heads * head_dim]`."""
    r, heads, t, hd = x.shape
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (r, t, heads * hd))


def build_paged_decoder(
    config: DecoderConfig, shape: ServeShape, name: str = "serve_step"
) -> Tracer:
    """Trace one serving step; returns the finished Tracer. Results:
    `logits [rows, tokens, vocab]` and each pool's new value."""
    c, s = config, shape
    hd = c.head_dim
    rows, t, slots = s.rows, s.tokens, s.pool_slots
    if s.cap < t:
        raise ValueError(f"cap {s.cap} is shorter than one step's {t} tokens")
    tr = Tracer(name)
    tokens = tr.input("tokens", (rows, t), "i32", range=(0, c.vocab - 1))
    pos = tr.pos(max_pos=s.cap - t, rows=rows)
    count = tr.input("count", (rows,), "i32", range=(1, t))
    read = tr.slot_map("read", rows, s.cap, slots)
    write = tr.write_map("write", rows * t, slots)
    adapter = tr.input("adapter", (rows,), "i32", range=(0, s.adapter_slots - 1))
    w = {n: tr.input(n, sh, c.dtype) for n, sh in weight_shapes(c).items()}
    lora = {
        n: tr.input(n, (s.adapter_slots, *sh), c.dtype)
        for n, sh in lora_shapes(c, s.lora_rank).items()
    }

    def project(h: Tensor, weight: str) -> Tensor:
        y = ops.linear(h, w[weight])
        if f"{weight}.lora_a" not in lora:
            return y
        a = ops.gather(lora[f"{weight}.lora_a"], adapter, axis=0)  # [R, d, r]
        b = ops.gather(lora[f"{weight}.lora_b"], adapter, axis=0)  # [R, r, out]
        return y + ops.matmul(ops.matmul(h, a), b)

    x = ops.gather(w["embed"], tokens, axis=0)  # [R, T, d_model]
    # Token i of row b sits at pos[b] + i.
    token_pos = ops.reshape(pos, (rows, 1, 1)) + ops.iota((1, t, 1), 1, "i32")
    angle = ops.convert(token_pos, c.dtype) * ops.constant(c.inv_freq(), c.dtype)
    angle = ops.reshape(ops.concat([angle, angle], axis=2), (rows, 1, t, hd))
    cos, sin = ops.cos(angle), ops.sin(angle)

    for layer in range(c.layers):
        p = f"l{layer}."
        k_pool = tr.state(f"k{layer}", (slots, c.kv_heads, hd), c.dtype)
        v_pool = tr.state(f"v{layer}", (slots, c.kv_heads, hd), c.dtype)
        h = ops.rms_norm(x, w[p + "attn_norm"], c.eps)
        q = ops.rope(_heads(project(h, p + "wq"), c.q_heads, hd), cos, sin)
        k = ops.rope(_heads(ops.linear(h, w[p + "wk"]), c.kv_heads, hd), cos, sin)
        v = _heads(project(h, p + "wv"), c.kv_heads, hd)
        attn, k1, v1 = ops.attention_paged(q, k, v, k_pool, v_pool, write, read, pos, count=count)
        tr.state_out(f"k{layer}", k1)
        tr.state_out(f"v{layer}", v1)
        x = x + ops.linear(_merge(attn), w[p + "wo"])
        h = ops.rms_norm(x, w[p + "mlp_norm"], c.eps)
        x = x + ops.mlp(h, w[p + "w_gate"], w[p + "w_up"], w[p + "w_down"])

    x = ops.rms_norm(x, w["final_norm"], c.eps)
    tr.output("logits", ops.linear(x, w["lm_head"]))
    tr.finish()
    return tr
