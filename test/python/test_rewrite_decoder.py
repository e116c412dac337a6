"""The decoder stack (examples/decoder.py): every layer's attention fuses, the
rotary embeddings become poot.rope, and nothing else changes -- the op counts
differ by exactly the replaced chains, and the oracle decodes the same
logits and KV state step after step."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from poot_mlir import oracle
from poot_mlir.compiler.fuse import count_ops
from poot_mlir.examples.decoder import DecoderConfig, build_decoder, init_state, init_weights
from poot_mlir.oracle import interpreter
from rewrite_support import F32_RTOL, assert_same_results, fused_copy, op_histogram, run_pipeline

# What one layer's attention_masked chain is after canonicalization (GQA
# repeat of K and V, the score transform, the softmax, two matmuls), and what
# one rotate-half RoPE chain is.
ATTENTION_CHAIN = Counter(
    {
        "poot.reshape": 4,
        "poot.broadcast": 2,
        "poot.transpose": 1,
        "poot.matmul": 2,
        "poot.mul": 1,
        "poot.add": 1,
        "poot.reduce": 2,
        "poot.sub": 1,
        "poot.exp": 1,
        "poot.div": 1,
    }
)
ROPE_CHAIN = Counter(
    {"poot.mul": 2, "poot.slice": 2, "poot.neg": 1, "poot.concat": 1, "poot.add": 1}
)


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


@pytest.fixture(scope="module")
def config() -> DecoderConfig:
    return DecoderConfig(layers=3)


@pytest.fixture(scope="module")
def traced(config: DecoderConfig):
    return build_decoder(config).finish()


def test_every_layer_fuses_and_nothing_else_changes(config: DecoderConfig, traced) -> None:
    report = fused_copy(traced)
    assert report.remarks == []
    assert report.attention == config.layers
    assert count_ops(report.module, "poot.rope") == 2 * config.layers
    # Against the canonicalized program (the pipeline's first pass), the only
    # differences are the replaced chains.
    before = op_histogram(run_pipeline(traced, "builtin.module(canonicalize,cse)"))
    after = op_histogram(report.module)
    expected = Counter(before)
    for name, n in ATTENTION_CHAIN.items():
        expected[name] -= n * config.layers
    for name, n in ROPE_CHAIN.items():
        expected[name] -= n * 2 * config.layers
    expected["poot.attention"] += config.layers
    expected["poot.rope"] += 2 * config.layers
    assert +expected == +after, (sorted(expected.items()), sorted(after.items()))


def _decode_and_compare(
    config: DecoderConfig, traced, fused, rng: np.random.Generator, steps: int
) -> None:
    weights = init_weights(config, int(rng.integers(1 << 31)))
    state = init_state(config)
    # Start from a random cache so every visible slot holds data.
    state = {name: rng.standard_normal(a.shape).astype(a.dtype) for name, a in state.items()}
    reference = oracle.Session(traced, dict(state))
    candidate = oracle.Session(fused, dict(state))
    start = int(rng.integers(0, config.cap - steps))
    for step in range(steps):
        inputs = {
            "pos": np.int32(start + step),
            "token": np.array([[rng.integers(config.vocab)]], np.int32),
            **weights,
        }
        assert_same_results(
            reference.step(inputs), candidate.step(inputs), F32_RTOL, f"step {step}"
        )


def test_decoding_attention_only_matches(
    config: DecoderConfig, traced, rng: np.random.Generator
) -> None:
    """canonicalize + poot-attention-rewrite + cse (no RoPE recognition):
    runs on any oracle."""
    fused = run_pipeline(
        traced, "builtin.module(canonicalize,func.func(poot-attention-rewrite),cse)"
    )
    assert count_ops(fused, "poot.attention") == config.layers
    _decode_and_compare(config, traced, fused, rng, steps=3)


def test_decoding_full_pipeline_then_expanded_rope_matches(
    config: DecoderConfig, traced, rng: np.random.Generator
) -> None:
    """The full pipeline, then poot-expand-rope (what a target without a
    poot.rope kernel runs): every attention stays fused."""
    fused = fused_copy(traced).module
    expanded = run_pipeline(fused, "builtin.module(func.func(poot-expand-rope))")
    assert count_ops(expanded, "poot.rope") == 0
    assert count_ops(expanded, "poot.attention") == config.layers
    _decode_and_compare(config, traced, expanded, rng, steps=3)


def test_decoding_full_pipeline_matches(
    config: DecoderConfig, traced, rng: np.random.Generator
) -> None:
    if "poot.rope" not in interpreter.HANDLERS:
        pytest.skip("the oracle does not implement poot.rope yet")
    _decode_and_compare(config, traced, fused_copy(traced).module, rng, steps=3)
