"""The seed's attention chains, in primitive form (unfused), on the CPU target.

Each step function is traced with the frontend, compiled once per module,
and stepped in a `runtime.cpu.Session` beside an `oracle.Session` on the same
fresh random inputs (seeded and printed; never zeros), comparing every
output and the carried state at every step.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from poot_mlir import oracle
from poot_mlir.compiler.cpu import compile_cpu
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime import cpu as runtime

B, HQ, HKV, D, CAP = 1, 4, 2, 8, 16
BF16 = np.dtype(ml_dtypes.bfloat16)
NP_DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16}
# f32 everywhere: relative 1e-5 with a small absolute floor for values near 0.
TOLERANCE = {"f32": (1e-5, 1e-6), "f16": (2e-3, 2e-3), "bf16": (2e-2, 2e-2)}


def decode_module(dtype: str, live: bool = False):
    """Decode over a fixed-capacity cache with GQA (n_rep = 2): the KV write,
    repeat_kv, the in-graph causal mask and the max-subtract softmax."""
    tr = Tracer("step")
    k_cache = tr.state("k0", (B, HKV, CAP, D), dtype)
    v_cache = tr.state("v0", (B, HKV, CAP, D), dtype)
    pos = tr.pos(max_pos=CAP - 1)
    q = tr.input("q", (B, HQ, 1, D), dtype)
    k = tr.input("k", (B, HKV, 1, D), dtype)
    v = tr.input("v", (B, HKV, 1, D), dtype)
    attend = ops.attention_live if live else ops.attention_masked
    out, k1, v1 = attend(q, k, v, k_cache, v_cache, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr.finish()


def paged_module():
    """Decode over a paged pool: scatter through the write map, gather
    through the read map."""
    slots, tokens = 12, 1
    tr = Tracer("step")
    k_pool = tr.state("kp", (slots, HKV, D), "f32")
    v_pool = tr.state("vp", (slots, HKV, D), "f32")
    pos = tr.pos(max_pos=CAP - 1)
    write = tr.write_map("write", B * tokens, slots)
    read = tr.slot_map("read", B, CAP, slots)
    q = tr.input("q", (B, HQ, tokens, D), "f32")
    k = tr.input("k", (B, HKV, tokens, D), "f32")
    v = tr.input("v", (B, HKV, tokens, D), "f32")
    out, k1, v1 = ops.attention_paged(q, k, v, k_pool, v_pool, write, read, pos)
    tr.output("out", out)
    tr.state_out("kp", k1)
    tr.state_out("vp", v1)
    return tr.finish()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, runtime.CpuArtifact]]:
    built = {}
    for key, module in {
        "f32": decode_module("f32"),
        "f16": decode_module("f16"),
        "bf16": decode_module("bf16"),
        "live": decode_module("f32", live=True),
        "paged": paged_module(),
    }.items():
        text = str(module)
        out = compile_cpu(text, tmp_path_factory.mktemp(f"cpu_attn_{key}") / "step")
        built[key] = (text, runtime.load(out))
    return built


def _normal(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32).astype(NP_DTYPES[dtype])


def _assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str, what: str) -> None:
    assert actual.dtype == expected.dtype, what
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(
        actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, err_msg=what
    )


@pytest.mark.parametrize("key", ["f32", "f16", "bf16", "live"])
def test_decode_steps_match_oracle(artifacts, rng: np.random.Generator, key: str) -> None:
    dtype = "f32" if key == "live" else key
    text, art = artifacts[key]
    state = {name: _normal(rng, (B, HKV, CAP, D), dtype) for name in ("k0", "v0")}
    sess = art.session(state)
    ref = oracle.Session(text, state)
    for pos in (0, 1, 5, CAP - 1):
        inputs = {
            "q": _normal(rng, (B, HQ, 1, D), dtype),
            "k": _normal(rng, (B, HKV, 1, D), dtype),
            "v": _normal(rng, (B, HKV, 1, D), dtype),
            "pos": np.int32(pos),
        }
        got, want = sess.step(inputs), ref.step(inputs)
        _assert_close(got.named["out"], want.named["out"], dtype, f"out at pos {pos}")
        for name in ("k0", "v0"):
            # The KV write is a copy: bit for bit.
            np.testing.assert_array_equal(sess.state[name], ref.state[name], err_msg=f"{name} at {pos}")


def test_decode_matches_independent_formula(artifacts, rng: np.random.Generator) -> None:
    """softmax(q k^T / sqrt(D) + mask) v with repeat_kv, written out in numpy."""
    _, art = artifacts["f32"]
    k0, v0 = (_normal(rng, (B, HKV, CAP, D), "f32") for _ in range(2))
    q, k, v = _normal(rng, (B, HQ, 1, D), "f32"), _normal(rng, (B, HKV, 1, D), "f32"), _normal(rng, (B, HKV, 1, D), "f32")
    pos = int(rng.integers(0, CAP))
    res = art.run({"k0": k0, "v0": v0, "q": q, "k": k, "v": v, "pos": np.int32(pos)})
    kc, vc = k0.astype(np.float64), v0.astype(np.float64)
    kc[:, :, pos], vc[:, :, pos] = k[:, :, 0], v[:, :, 0]
    kx, vx = np.repeat(kc, HQ // HKV, axis=1), np.repeat(vc, HQ // HKV, axis=1)
    s = q.astype(np.float64) @ kx.transpose(0, 1, 3, 2) / np.sqrt(D)
    s[..., pos + 1 :] = -np.inf
    p = np.exp(s - s.max(-1, keepdims=True))
    out = (p / p.sum(-1, keepdims=True)) @ vx
    np.testing.assert_allclose(res.named["out"], out, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(res.state["k0"], kc.astype(np.float32))


def test_paged_steps_match_oracle(artifacts, rng: np.random.Generator) -> None:
    text, art = artifacts["paged"]
    slots = 12
    state = {name: _normal(rng, (slots, HKV, D), "f32") for name in ("kp", "vp")}
    sess = art.session(state)
    ref = oracle.Session(text, state)
    table = rng.permutation(slots)[:CAP] if CAP <= slots else rng.integers(0, slots, size=CAP)
    read = np.resize(table, (B, CAP)).astype(np.int32)
    for pos in (0, 3, 7):
        inputs = {
            "q": _normal(rng, (B, HQ, 1, D), "f32"),
            "k": _normal(rng, (B, HKV, 1, D), "f32"),
            "v": _normal(rng, (B, HKV, 1, D), "f32"),
            "pos": np.int32(pos),
            "write": np.array([read[0, pos] if pos != 3 else -1], dtype=np.int32),  # -1: a padding token
            "read": read,
        }
        got, want = sess.step(inputs), ref.step(inputs)
        _assert_close(got.named["out"], want.named["out"], "f32", f"out at pos {pos}")
        for name in ("kp", "vp"):
            np.testing.assert_array_equal(sess.state[name], ref.state[name], err_msg=f"{name} at {pos}")


def two_layer_live_module():
    """Two attention_live layers sharing pos (the second reads the first's
    output): after CSE their identical index guards are one value returned
    as both layers' witness. The step used to segfault in compile_cpu (an
    upstream buffer-results-to-out-params bug; see poot-cpu-entry-abi)."""
    tr = Tracer("step")
    pos = tr.pos(max_pos=CAP - 1)
    q = tr.input("q", (B, HQ, 1, D))
    k = tr.input("k", (B, HKV, 1, D))
    v = tr.input("v", (B, HKV, 1, D))
    for layer in range(2):
        kc = tr.state(f"k{layer}", (B, HKV, CAP, D))
        vc = tr.state(f"v{layer}", (B, HKV, CAP, D))
        q, k1, v1 = ops.attention_live(q, k, v, kc, vc, pos)
        tr.state_out(f"k{layer}", k1)
        tr.state_out(f"v{layer}", v1)
    tr.output("out", q)
    return tr.finish()


def test_two_layer_live_decode_matches_oracle(tmp_path, rng: np.random.Generator) -> None:
    text = str(two_layer_live_module())
    art = runtime.load(compile_cpu(text, tmp_path / "step"))
    names = ("k0", "v0", "k1", "v1")
    state = {name: _normal(rng, (B, HKV, CAP, D), "f32") for name in names}
    sess, ref = art.session(state), oracle.Session(text, state)
    for pos in (0, 1, 6, CAP - 1):
        inputs = {
            "q": _normal(rng, (B, HQ, 1, D), "f32"),
            "k": _normal(rng, (B, HKV, 1, D), "f32"),
            "v": _normal(rng, (B, HKV, 1, D), "f32"),
            "pos": np.int32(pos),
        }
        got, want = sess.step(inputs), ref.step(inputs)
        _assert_close(got.named["out"], want.named["out"], "f32", f"out at pos {pos}")
        for name in ("live_len_ok_0", "live_len_ok_1"):
            assert bool(got.named[name]) and bool(want.named[name])
        for name in names:
            np.testing.assert_array_equal(sess.state[name], ref.state[name], err_msg=f"{name} at {pos}")
