"""A small decoder-only transformer step, traced with poot_mlir.frontend.

One call of the traced function is one decode step: it embeds the token at
position `pos`, runs `layers` pre-norm blocks and returns the next-token
logits. Each block is

    h     = rms_norm(x, attn_norm)
    q,k,v = h @ wq, h @ wk, h @ wv          (split into heads, RoPE on q and k)
    a, k_cache', v_cache' = ops.attention_masked(q, k, v, k_cache, v_cache, pos)
    x     = x + a @ wo
    x     = x + mlp(rms_norm(x, mlp_norm))  (SwiGLU)

with GQA (q_heads query heads sharing kv_heads key/value heads) over a
fixed-capacity KV cache carried as state (`k<l>`, `v<l>`, `[1, kv_heads, cap,
head_dim]`). The RoPE angles are computed in the graph from `pos`
(`pos * inv_freq`, duplicated halves), so the function needs no tables.

Weights are function inputs named `embed`, `l<l>.wq`, ..., `final_norm`,
`lm_head` (see `weight_shapes`), not constants: the printed module stays
small, and a driver binds any checkpoint. `init_weights(config, seed)` draws a
seeded random set for tests and the demo.

    python -m poot_mlir.examples.decoder             # print the MLIR
    python -m poot_mlir.examples.decoder --steps 4   # also decode 4 tokens with the oracle
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from ..frontend import Tensor, Tracer, ops


@dataclass(frozen=True)
class DecoderConfig:
    layers: int = 2
    d_model: int = 64
    q_heads: int = 4
    kv_heads: int = 2
    ffn: int = 128
    cap: int = 32
    vocab: int = 97
    rope_base: float = 10000.0
    eps: float = 1e-6
    dtype: str = "f32"
    #: Sequences decoded together, in lockstep (one position for all rows):
    #: every weight is read once per step for all of them (batched decode).
    batch: int = 1

    @property
    def head_dim(self) -> int:
        return self.d_model // self.q_heads

    def inv_freq(self) -> np.ndarray:
        """RoPE frequencies `base^(-2j / head_dim)`, j < head_dim / 2."""
        half = np.arange(0, self.head_dim, 2, dtype=np.float64) / self.head_dim
        return 1.0 / self.rope_base**half


def weight_shapes(config: DecoderConfig) -> dict[str, tuple[int, ...]]:
    """Every weight input's name and shape, in argument order."""
    c = config
    hd = c.head_dim
    shapes: dict[str, tuple[int, ...]] = {"embed": (c.vocab, c.d_model)}
    for layer in range(c.layers):
        p = f"l{layer}."
        shapes.update(
            {
                p + "attn_norm": (c.d_model,),
                p + "wq": (c.d_model, c.q_heads * hd),
                p + "wk": (c.d_model, c.kv_heads * hd),
                p + "wv": (c.d_model, c.kv_heads * hd),
                p + "wo": (c.q_heads * hd, c.d_model),
                p + "mlp_norm": (c.d_model,),
                p + "w_gate": (c.d_model, c.ffn),
                p + "w_up": (c.d_model, c.ffn),
                p + "w_down": (c.ffn, c.d_model),
            }
        )
    shapes["final_norm"] = (c.d_model,)
    shapes["lm_head"] = (c.d_model, c.vocab)
    return shapes


def _numpy_dtype(config: DecoderConfig) -> np.dtype:
    """The numpy dtype of the config's element type (bf16: ml_dtypes)."""
    from ..oracle import dtypes

    return dtypes.dtype_of_element(config.dtype)


def init_weights(config: DecoderConfig, seed: int) -> dict[str, np.ndarray]:
    """Seeded random weights in the config's dtype: norms near 1, matrices
    ~ N(0, 1/fan_in)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(config).items():
        if name.endswith("norm"):
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name == "embed":
            w = rng.standard_normal(shape)
        else:
            w = rng.standard_normal(shape) / np.sqrt(shape[0])
        weights[name] = w.astype(np.float32).astype(_numpy_dtype(config))
    return weights


def init_state(config: DecoderConfig) -> dict[str, np.ndarray]:
    """Empty KV caches (the mask hides every slot past pos anyway)."""
    shape = (config.batch, config.kv_heads, config.cap, config.head_dim)
    return {
        f"{kind}{layer}": np.zeros(shape, _numpy_dtype(config))
        for layer in range(config.layers)
        for kind in "kv"
    }


def _heads(x: Tensor, heads: int, head_dim: int) -> Tensor:
    """`[B, 1, heads * head_dim] -> [B, heads, 1, head_dim]`."""
    batch = x.shape[0]
    return ops.transpose(ops.reshape(x, (batch, 1, heads, head_dim)), (0, 2, 1, 3))


def _merge(x: Tensor) -> Tensor:
    """`[B, heads, 1, head_dim] -> [B, 1, heads * head_dim]`."""
    batch, heads, _, hd = x.shape
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (batch, 1, heads * hd))


def build_decoder(config: DecoderConfig = DecoderConfig(), name: str = "decode_step") -> Tracer:
    """Trace one decode step; returns the (finished) Tracer. Arguments: `pos`,
    `token [B, 1]` i32 (B = config.batch), the weights, the caches `[B,
    kv_heads, cap, head_dim]`; results: `logits [B, 1, vocab]` and each
    cache's new value."""
    c = config
    hd = c.head_dim
    if c.d_model % c.q_heads or c.q_heads % c.kv_heads or hd % 2:
        raise ValueError(f"inconsistent decoder config {c}")
    tr = Tracer(name)
    pos = tr.pos(max_pos=c.cap - 1)
    if c.batch < 1:
        raise ValueError(f"decoder batch must be >= 1, got {c.batch}")
    token = tr.input("token", (c.batch, 1), "i32", range=(0, c.vocab - 1))
    w = {n: tr.input(n, s, c.dtype) for n, s in weight_shapes(c).items()}

    x = ops.gather(w["embed"], token, axis=0)  # [B, 1, d_model]
    angle = ops.convert(pos, c.dtype) * ops.constant(c.inv_freq(), c.dtype)
    angle = ops.concat([angle, angle], axis=0)  # [head_dim]
    cos, sin = ops.cos(angle), ops.sin(angle)

    for layer in range(c.layers):
        p = f"l{layer}."
        k_cache = tr.state(f"k{layer}", (c.batch, c.kv_heads, c.cap, hd), c.dtype)
        v_cache = tr.state(f"v{layer}", (c.batch, c.kv_heads, c.cap, hd), c.dtype)
        h = ops.rms_norm(x, w[p + "attn_norm"], c.eps)
        q = ops.rope(_heads(ops.linear(h, w[p + "wq"]), c.q_heads, hd), cos, sin)
        k = ops.rope(_heads(ops.linear(h, w[p + "wk"]), c.kv_heads, hd), cos, sin)
        v = _heads(ops.linear(h, w[p + "wv"]), c.kv_heads, hd)
        attn, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos)
        tr.state_out(f"k{layer}", k1)
        tr.state_out(f"v{layer}", v1)
        x = x + ops.linear(_merge(attn), w[p + "wo"])
        h = ops.rms_norm(x, w[p + "mlp_norm"], c.eps)
        x = x + ops.mlp(h, w[p + "w_gate"], w[p + "w_up"], w[p + "w_down"])

    x = ops.rms_norm(x, w["final_norm"], c.eps)
    tr.output("logits", ops.linear(x, w["lm_head"]))
    tr.finish()
    return tr


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=0, help="decode this many tokens with the oracle"
    )
    parser.add_argument("--seed", type=int, default=0, help="weight seed for --steps")
    parser.add_argument("--debug-info", action="store_true", help="print source locations")
    args = parser.parse_args(argv)
    config = DecoderConfig()
    tracer = build_decoder(config)
    print(tracer.mlir(debug_info=args.debug_info))
    if args.steps:
        from .. import oracle

        weights = init_weights(config, args.seed)
        session = oracle.Session(tracer.finish(), init_state(config))
        token = 1
        for step in range(args.steps):
            result = session.step(
                {"pos": np.int32(step), "token": np.array([[token]], np.int32), **weights}
            )
            token = int(np.argmax(result.named["logits"]))
            print(f"// step {step}: next token {token}")


if __name__ == "__main__":
    main()
