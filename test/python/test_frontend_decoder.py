"""The decoder example: traced once, stepped through the oracle for several
decode tokens with the KV caches carried as state, against an independent
numpy decoder written here."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from poot_mlir import oracle
from poot_mlir.examples.decoder import (
    DecoderConfig,
    build_decoder,
    init_state,
    init_weights,
    weight_shapes,
)

STEPS = 5


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def f32(x):
    return np.asarray(x, np.float32).astype(np.float64)


class NumpyDecoder:
    """The same model, step by step, in float64. The module's float
    constants (RoPE frequencies, eps) are f32, and the caches are stored as
    f32 between steps, so both are rounded to f32 here too. `k`/`v` start as
    the given caches (any content: the mask hides slots past pos)."""

    def __init__(
        self, config: DecoderConfig, weights: dict[str, np.ndarray], state: dict[str, np.ndarray]
    ) -> None:
        self.c = config
        self.w = {n: a.astype(np.float64) for n, a in weights.items()}
        self.k = [state[f"k{layer}"][0].astype(np.float64) for layer in range(config.layers)]
        self.v = [state[f"v{layer}"][0].astype(np.float64) for layer in range(config.layers)]

    def norm(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x) + f32(self.c.eps)) * w

    def step(self, token: int, pos: int) -> np.ndarray:
        c, w = self.c, self.w
        hd, half = c.head_dim, c.head_dim // 2
        freq = np.concatenate([f32(c.inv_freq())] * 2)
        cos, sin = np.cos(pos * freq), np.sin(pos * freq)

        def rope(x: np.ndarray) -> np.ndarray:  # [heads, hd]
            return x * cos + np.concatenate([-x[:, half:], x[:, :half]], axis=1) * sin

        x = w["embed"][token]
        for layer in range(c.layers):
            p = f"l{layer}."
            h = self.norm(x, w[p + "attn_norm"])
            q = rope((h @ w[p + "wq"]).reshape(c.q_heads, hd))
            k = rope((h @ w[p + "wk"]).reshape(c.kv_heads, hd))
            v = (h @ w[p + "wv"]).reshape(c.kv_heads, hd)
            # The state is stored as f32 between steps; this step's row is
            # attended at full precision before that.
            self.k[layer] = f32(self.k[layer])
            self.v[layer] = f32(self.v[layer])
            self.k[layer][:, pos] = k
            self.v[layer][:, pos] = v
            heads = []
            for head in range(c.q_heads):
                g = head // (c.q_heads // c.kv_heads)
                scores = self.k[layer][g, : pos + 1] @ q[head] / np.sqrt(hd)
                weights = np.exp(scores - scores.max())
                heads.append(weights @ self.v[layer][g, : pos + 1] / weights.sum())
            x = x + np.concatenate(heads) @ w[p + "wo"]
            h = self.norm(x, w[p + "mlp_norm"])
            gate, up = h @ w[p + "w_gate"], h @ w[p + "w_up"]
            x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "w_down"]
        return self.norm(x, w["final_norm"]) @ w["lm_head"]


def test_the_module_verifies_and_names_every_input() -> None:
    config = DecoderConfig()
    tracer = build_decoder(config)
    assert tracer.finished
    names = tracer.argument_names
    assert names[:2] == ["pos", "token"]
    assert set(weight_shapes(config)) <= set(names)
    assert {f"k{layer}" for layer in range(config.layers)} <= set(names)
    assert tracer.result_names[-1] == "logits"
    text = tracer.mlir()
    assert text.count("poot.dynamic_update_slice") == 2 * config.layers
    assert text.count("poot.broadcast") == 2 * config.layers  # GQA repeat of K and V


def test_decode_steps_carry_the_kv_state(rng) -> None:
    config = DecoderConfig()
    module = build_decoder(config).finish()
    weights = init_weights(config, int(rng.integers(2**31)))
    tokens = rng.integers(0, config.vocab, STEPS)

    # float64 reference, stepping the state by hand (stored as f32)
    state = init_state(config)
    for name in state:  # non-zero unused slots: the mask must hide them
        state[name] = rng.standard_normal(state[name].shape).astype(np.float32)
    model = NumpyDecoder(config, weights, state)
    f32_state = {n: a.copy() for n, a in state.items()}
    session = oracle.Session(module, f32_state)
    for pos, token in enumerate(tokens):
        inputs = {"pos": np.int32(pos), "token": np.array([[token]], np.int32), **weights}
        want = model.step(int(token), pos)
        result = oracle.run(module, {**inputs, **state}, reference=True)
        np.testing.assert_allclose(result.named["logits"][0, 0], want, rtol=1e-10, atol=1e-10)
        state = {n: a.astype(np.float32) for n, a in result.state.items()}
        for layer in range(config.layers):
            np.testing.assert_array_equal(
                state[f"k{layer}"][0, :, pos], model.k[layer][:, pos].astype(np.float32)
            )
        # the f32 session, carrying its own state
        low = session.step(inputs)
        assert low.named["logits"].dtype == np.float32
        np.testing.assert_allclose(low.named["logits"][0, 0], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(session.state["v1"], state["v1"], rtol=1e-5, atol=1e-5)


def test_main_prints_the_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "poot_mlir.examples.decoder", "--steps", "2"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("module {")
    assert "func.func @decode_step" in proc.stdout and "// step 1: next token" in proc.stdout


def test_batched_rows_decode_like_single_sequences() -> None:
    """A batch of 3 sequences in lockstep (config.batch) gives each row the
    logits and caches of that sequence decoded alone, step after step
    (the oracle, fresh tokens, greedy continuation)."""
    batched = DecoderConfig(batch=3)
    single = DecoderConfig()
    weights = init_weights(batched, 5)
    rows = oracle.Session(build_decoder(batched).finish(), init_state(batched))
    alone = [oracle.Session(build_decoder(single).finish(), init_state(single)) for _ in range(3)]
    tokens = np.array([[5], [7], [11]], np.int32)
    for step in range(3):
        logits = rows.step({"pos": np.int32(step), "token": tokens, **weights}).named["logits"]
        assert logits.shape == (3, 1, batched.vocab)
        for b, session in enumerate(alone):
            one = session.step({"pos": np.int32(step), "token": tokens[b:b + 1], **weights})
            np.testing.assert_allclose(logits[b:b + 1], one.named["logits"], rtol=1e-5, atol=1e-6)
        tokens = np.argmax(logits, -1).astype(np.int32)
    assert len(set(tokens.ravel().tolist())) > 1  # the rows did not collapse to one sequence


def test_a_batch_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="batch must be >= 1"):
        build_decoder(DecoderConfig(batch=0))
