"""oracle.run on MLIR text: every op through the interpreter, whole step
functions (the tracer's primitive decode chain, the live-length chain, the
paged step, the split key, the sparse pair) against their fused forms and
against formulas written here, dtypes, constants and reference mode.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from poot_mlir import ir, oracle
from poot_mlir.errors import ValidationFailure

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": BF16, "f64": np.float64}
NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80", "f64": "0xFFF0000000000000"}


def normal(rng: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def one_op(args: str, results: str, body: str, returns: str) -> str:
    """A one-function module."""
    return f"func.func @main({args}) -> ({results}) {{\n{body}\n  return {returns}\n}}"


def brute_attention(q, k, v, scale, mask=None, length=None) -> np.ndarray:
    """Dense GQA attention one row and one key at a time, in float64."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    B, Hq, Lq, _ = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    out = np.empty((B, Hq, Lq, v.shape[3]))
    for b, h, i in np.ndindex(B, Hq, Lq):
        g = h // (Hq // Hkv)
        visited = Lk if length is None else min(max(int(length[b]), 0), Lk)
        scores = []
        for t in range(visited):
            s = math.fsum(q[b, h, i] * k[b, g, t]) * scale
            if mask is not None:
                s += float(mask[tuple(min(ix, n - 1) for ix, n in zip((b, h, i), mask.shape))][t])
            scores.append(s)
        if not scores or max(scores) == -math.inf:
            out[b, h, i] = np.nan
            continue
        w = np.exp(np.array(scores) - max(scores))
        out[b, h, i] = (w[:, None] * v[b, g, :visited]).sum(0) / w.sum()
    return out


# --- every primitive op through run() --------------------------------------------


def test_elementwise_ops_broadcast(rng) -> None:
    ops = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "div": np.divide,
        "max": np.maximum,
        "min": np.minimum,
    }
    body = "\n".join(
        f"  %{name} = poot.{name} %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>"
        for name in ops
    )
    text = one_op(
        "%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>",
        ", ".join(["tensor<2x3x4xf32>"] * len(ops)),
        body,
        ", ".join(f"%{n}" for n in ops) + " : " + ", ".join(["tensor<2x3x4xf32>"] * len(ops)),
    )
    a, b = normal(rng, (2, 1, 4)), normal(rng, (3, 1))
    res = oracle.run(text, [a, b])
    for got, fn in zip(res.outputs, ops.values()):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, fn(a, b))


def test_integer_and_bool_ops(rng) -> None:
    text = one_op(
        "%a: tensor<6xi32>, %b: tensor<6xi32>, %p: tensor<6xi1>, %q: tensor<6xi1>",
        "tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi32>, tensor<6xi32>",
        """
  %div = poot.div %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %and = poot.and %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %or = poot.or %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %pand = poot.and %p, %q : (tensor<6xi1>, tensor<6xi1>) -> tensor<6xi1>
  %por = poot.or %p, %q : (tensor<6xi1>, tensor<6xi1>) -> tensor<6xi1>
  %lt = poot.compare lt, %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
  %neg = poot.neg %a : tensor<6xi32>
  %abs = poot.abs %a : tensor<6xi32>""",
        "%div, %and, %or, %pand, %por, %lt, %neg, %abs : tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi32>, tensor<6xi32>",
    )
    a = rng.integers(-50, 50, 6).astype(np.int32)
    b = rng.integers(-3, 4, 6).astype(np.int32)
    b[0] = 0
    p, q = rng.random(6) < 0.5, rng.random(6) < 0.5
    div, band, bor, pand, por, lt, neg, absv = oracle.run(text, [a, b, p, q]).outputs
    assert list(div) == [0 if y == 0 else int(x) // int(y) for x, y in zip(a, b)]
    assert list(band) == [int(x) & int(y) for x, y in zip(a, b)]
    assert list(bor) == [int(x) | int(y) for x, y in zip(a, b)]
    assert list(pand) == list(p & q) and list(por) == list(p | q)
    assert list(lt) == [int(x) < int(y) for x, y in zip(a, b)]
    assert list(neg) == [-int(x) for x in a] and list(absv) == [abs(int(x)) for x in a]


@pytest.mark.parametrize(
    "name, ref",
    [
        ("exp", np.exp),
        ("log", np.log),
        ("tanh", np.tanh),
        ("logistic", lambda x: 1 / (1 + np.exp(-x))),
        ("sqrt", np.sqrt),
        ("rsqrt", lambda x: 1 / np.sqrt(x)),
        ("sin", np.sin),
        ("cos", np.cos),
        ("neg", np.negative),
        ("abs", np.abs),
    ],
)
def test_unary_ops(rng, name, ref) -> None:
    text = one_op(
        "%x: tensor<3x5xf32>",
        "tensor<3x5xf32>",
        f"  %0 = poot.{name} %x : tensor<3x5xf32>",
        "%0 : tensor<3x5xf32>",
    )
    x = np.abs(normal(rng, (3, 5))) + np.float32(0.05)
    got = oracle.run(text, [x]).outputs[0]
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=1e-6)
    ref64 = oracle.run(text, [x], reference=True).outputs[0]
    assert ref64.dtype == np.float64
    np.testing.assert_allclose(ref64, ref(x.astype(np.float64)), rtol=1e-15)


@pytest.mark.parametrize(
    "direction, sym",
    [("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")],
)
def test_compare_and_select(rng, direction, sym) -> None:
    text = one_op(
        "%a: tensor<2x4xf32>, %b: tensor<4xf32>",
        "tensor<2x4xi1>, tensor<2x4xf32>",
        f"""  %c = poot.compare {direction}, %a, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xi1>
  %s = poot.select %c, %a, %b : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>""",
        "%c, %s : tensor<2x4xi1>, tensor<2x4xf32>",
    )
    a = rng.integers(-2, 3, (2, 4)).astype(np.float32)  # ties on purpose
    b = rng.integers(-2, 3, 4).astype(np.float32)
    a[1, 2] = np.nan
    c, s = oracle.run(text, [a, b]).outputs
    for i, j in np.ndindex(2, 4):
        assert bool(c[i, j]) == eval(f"float(a[i, j]) {sym} float(b[j])")
        assert s[i, j] == (a[i, j] if c[i, j] else b[j]) or (c[i, j] and np.isnan(a[i, j]))


def test_shape_ops(rng) -> None:
    text = one_op(
        "%x: tensor<2x3x4xf32>, %y: tensor<2x3x1xf32>",
        "tensor<4x6xf32>, tensor<5x2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x2x2xf32>, tensor<2x3x5xf32>, tensor<2x3x4xi32>",
        """  %r = poot.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
  %b = poot.broadcast %y : tensor<2x3x1xf32> -> tensor<5x2x3x4xf32>
  %t = poot.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %s = poot.slice %x [0, 1, 0] to [2, 3, 4] step [1, 1, 2] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  %c = poot.concat %x, %y axis = 2 : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x5xf32>
  %i = poot.iota dim = 1 : tensor<2x3x4xi32>""",
        "%r, %b, %t, %s, %c, %i : tensor<4x6xf32>, tensor<5x2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x2x2xf32>, tensor<2x3x5xf32>, tensor<2x3x4xi32>",
    )
    x, y = normal(rng, (2, 3, 4)), normal(rng, (2, 3, 1))
    r, b, t, s, c, i = oracle.run(text, {"arg0": x, "arg1": y}).outputs
    assert list(r.reshape(-1)) == list(x.reshape(-1))
    for n, p, q, m in np.ndindex(5, 2, 3, 4):
        assert b[n, p, q, m] == y[p, q, 0]
    for p, q, m in np.ndindex(2, 3, 4):
        assert t[m, p, q] == x[p, q, m] and i[p, q, m] == q
    for p, q, m in np.ndindex(2, 2, 2):
        assert s[p, q, m] == x[p, q + 1, 2 * m]
    np.testing.assert_array_equal(c[..., :4], x)
    np.testing.assert_array_equal(c[..., 4:], y)


def test_movement_ops(rng) -> None:
    text = one_op(
        "%pool: tensor<6x2x3xf32>, %idx: tensor<2x4xi32>, %w: tensor<3xi32>, %rows: tensor<3x2x3xf32>, "
        "%cache: tensor<1x2x5x3xf32>, %new: tensor<1x2x2x3xf32>, %pos: tensor<i32>",
        "tensor<2x4x2x3xf32>, tensor<6x2x3xf32>, tensor<1x2x5x3xf32>",
        """  %g = poot.gather %pool[%idx] axis = 0 : (tensor<6x2x3xf32>, tensor<2x4xi32>) -> tensor<2x4x2x3xf32>
  %s = poot.scatter_update %pool[%w], %rows : tensor<6x2x3xf32>, tensor<3xi32>, tensor<3x2x3xf32>
  %d = poot.dynamic_update_slice %cache, %new, %pos axis = 2 : tensor<1x2x5x3xf32>, tensor<1x2x2x3xf32>, tensor<i32>""",
        "%g, %s, %d : tensor<2x4x2x3xf32>, tensor<6x2x3xf32>, tensor<1x2x5x3xf32>",
    )
    pool = normal(rng, (6, 2, 3))
    idx = rng.integers(0, 6, (2, 4)).astype(np.int32)
    w = np.array([4, -1, 1], np.int32)
    rows = normal(rng, (3, 2, 3))
    cache, new = normal(rng, (1, 2, 5, 3)), normal(rng, (1, 2, 2, 3))
    pos = int(rng.integers(0, 8))  # past 3 clamps to 3
    g, s, d = oracle.run(text, [pool, idx, w, rows, cache, new, pos]).outputs
    for b, t in np.ndindex(2, 4):
        np.testing.assert_array_equal(g[b, t], pool[idx[b, t]])
    expected = pool.copy()
    expected[4], expected[1] = rows[0], rows[2]
    np.testing.assert_array_equal(s, expected)
    at = min(pos, 3)
    np.testing.assert_array_equal(d[:, :, at : at + 2], new)
    np.testing.assert_array_equal(
        np.delete(d, [at, at + 1], axis=2), np.delete(cache, [at, at + 1], axis=2)
    )


def test_matmul_reduce_topk_guard(rng) -> None:
    text = one_op(
        "%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x2xf32>, %len: tensor<3xi32>",
        "tensor<2x5x3x2xf32>, tensor<2x5x1x2xf32>, tensor<2x5x2xf32>, tensor<2x5x3xf32>, "
        "tensor<2x5x3x1xf32>, tensor<2x5x3x1xi32>, tensor<3xi32>, tensor<i1>",
        """  %m = poot.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32>
  %sum = poot.reduce sum %m axis = 2 keepdim : tensor<2x5x3x2xf32> -> tensor<2x5x1x2xf32>
  %max = poot.reduce max %m axis = 2 : tensor<2x5x3x2xf32> -> tensor<2x5x2xf32>
  %min = poot.reduce min %m axis = 3 : tensor<2x5x3x2xf32> -> tensor<2x5x3xf32>
  %tv, %ti = poot.top_k %m k = 1 : tensor<2x5x3x2xf32> -> tensor<2x5x3x1xf32>, tensor<2x5x3x1xi32>
  %l, %ok = poot.index_guard %len min = 1 max = 8 : tensor<3xi32>""",
        "%m, %sum, %max, %min, %tv, %ti, %l, %ok : tensor<2x5x3x2xf32>, tensor<2x5x1x2xf32>, "
        "tensor<2x5x2xf32>, tensor<2x5x3xf32>, tensor<2x5x3x1xf32>, tensor<2x5x3x1xi32>, tensor<3xi32>, tensor<i1>",
    )
    a, b = normal(rng, (2, 1, 3, 4)), normal(rng, (5, 4, 2))
    length = np.array([0, 3, 9], np.int32)
    m, s, mx, mn, tv, ti, clamped, ok = oracle.run(text, [a, b, length]).outputs
    for i, j, r, c in np.ndindex(2, 5, 3, 2):
        assert (
            abs(
                m[i, j, r, c]
                - math.fsum(float(a[i, 0, r, x]) * float(b[j, x, c]) for x in range(4))
            )
            < 1e-5
        )
    np.testing.assert_allclose(s[:, :, 0], m.sum(axis=2), rtol=1e-6)
    np.testing.assert_array_equal(mx, m.max(axis=2))
    np.testing.assert_array_equal(mn, m.min(axis=3))
    np.testing.assert_array_equal(ti[..., 0], np.where(m[..., 1] > m[..., 0], 1, 0))
    np.testing.assert_array_equal(tv[..., 0], m.max(axis=3))
    assert list(clamped) == [1, 3, 8] and ok.dtype == np.bool_ and not bool(ok)


# --- whole step functions --------------------------------------------------------


def decode_module(hkv: int, n_rep: int, cap: int, d: int, el: str = "f32") -> str:
    """The tracer's decode chain (DUS into the caches, repeat_kv, causal mask
    from iota > pos, max-subtract softmax), plus the fused form of the same
    step. Both share one signature."""
    hq = hkv * n_rep
    cache = f"tensor<1x{hkv}x{cap}x{d}x{el}>"
    row = f"tensor<1x{hkv}x1x{d}x{el}>"
    q = f"tensor<1x{hq}x1x{d}x{el}>"
    sig = (
        f'(%k: {cache} {{poot.slot = #poot.slot<state "k0">}}, '
        f'%v: {cache} {{poot.slot = #poot.slot<state "v0">}}, '
        f'%knew: {row} {{poot.name = "knew"}}, %vnew: {row} {{poot.name = "vnew"}}, '
        f'%pos: tensor<i32> {{poot.name = "pos", poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, {cap - 1}>}}, '
        f'%q: {q} {{poot.name = "q"}}) -> ({cache} {{poot.slot = #poot.slot<state "k0">}}, '
        f'{cache} {{poot.slot = #poot.slot<state "v0">}}, {q} {{poot.name = "out"}})'
    )
    s = f"tensor<1x{hq}x1x{cap}x{el}>"
    m = f"tensor<1x1x1x{cap}x{el}>"
    head = f"""
  %k1 = poot.dynamic_update_slice %k, %knew, %pos axis = 2 : {cache}, {row}, tensor<i32>
  %v1 = poot.dynamic_update_slice %v, %vnew, %pos axis = 2 : {cache}, {row}, tensor<i32>
  %iota = poot.iota dim = 3 : tensor<1x1x1x{cap}xi32>
  %future = poot.compare gt, %iota, %pos : (tensor<1x1x1x{cap}xi32>, tensor<i32>) -> tensor<1x1x1x{cap}xi1>
  %big = poot.constant dense<-3.0e+04> : tensor<{el}>
  %zero = poot.constant dense<0.0> : tensor<{el}>
  %mask = poot.select %future, %big, %zero : (tensor<1x1x1x{cap}xi1>, tensor<{el}>, tensor<{el}>) -> {m}"""
    chain = f"""
  %kr = poot.reshape %k1 : {cache} -> tensor<1x{hkv}x1x{cap}x{d}x{el}>
  %kb = poot.broadcast %kr : tensor<1x{hkv}x1x{cap}x{d}x{el}> -> tensor<1x{hkv}x{n_rep}x{cap}x{d}x{el}>
  %kx = poot.reshape %kb : tensor<1x{hkv}x{n_rep}x{cap}x{d}x{el}> -> tensor<1x{hq}x{cap}x{d}x{el}>
  %vr = poot.reshape %v1 : {cache} -> tensor<1x{hkv}x1x{cap}x{d}x{el}>
  %vb = poot.broadcast %vr : tensor<1x{hkv}x1x{cap}x{d}x{el}> -> tensor<1x{hkv}x{n_rep}x{cap}x{d}x{el}>
  %vx = poot.reshape %vb : tensor<1x{hkv}x{n_rep}x{cap}x{d}x{el}> -> tensor<1x{hq}x{cap}x{d}x{el}>
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : tensor<1x{hq}x{cap}x{d}x{el}> -> tensor<1x{hq}x{d}x{cap}x{el}>
  %s0 = poot.matmul %q, %kt : ({q}, tensor<1x{hq}x{d}x{cap}x{el}>) -> {s}
  %scale = poot.constant dense<0.5> : tensor<{el}>
  %s1 = poot.mul %s0, %scale : ({s}, tensor<{el}>) -> {s}
  %s2 = poot.add %s1, %mask : ({s}, {m}) -> {s}
  %mx = poot.reduce max %s2 axis = 3 keepdim : {s} -> tensor<1x{hq}x1x1x{el}>
  %xs = poot.sub %s2, %mx : ({s}, tensor<1x{hq}x1x1x{el}>) -> {s}
  %ex = poot.exp %xs : {s}
  %sum = poot.reduce sum %ex axis = 3 keepdim : {s} -> tensor<1x{hq}x1x1x{el}>
  %p = poot.div %ex, %sum : ({s}, tensor<1x{hq}x1x1x{el}>) -> {s}
  %out = poot.matmul %p, %vx : ({s}, tensor<1x{hq}x{cap}x{d}x{el}>) -> {q}
  return %k1, %v1, %out : {cache}, {cache}, {q}"""
    fused = f"""
  %out = poot.attention %q, %k1, %v1 mask(%mask : {m}) {{scale = 0.5 : f64}} : {q}, {cache}, {cache} -> {q}
  return %k1, %v1, %out : {cache}, {cache}, {q}"""
    return (
        f"func.func @decode{sig} {{{head}{chain}\n}}\n"
        f"func.func @decode_fused{sig} {{{head}{fused}\n}}\n"
    )


@pytest.mark.parametrize("hkv, n_rep", [(2, 2), (1, 4), (4, 1)])
def test_decode_steps_primitive_chain_matches_fused_and_formula(rng, hkv, n_rep) -> None:
    cap, d = 8, 4
    text = decode_module(hkv, n_rep, cap, d)
    k0, v0 = normal(rng, (1, hkv, cap, d)), normal(rng, (1, hkv, cap, d))
    chain = oracle.Session(text, {"k0": k0, "v0": v0}, func="decode")
    fused = oracle.Session(text, {"k0": k0, "v0": v0}, func="decode_fused")
    kref, vref = k0.copy(), v0.copy()
    for pos in range(3):
        inputs = {
            "knew": normal(rng, (1, hkv, 1, d)),
            "vnew": normal(rng, (1, hkv, 1, d)),
            "pos": np.int32(pos),
            "q": normal(rng, (1, hkv * n_rep, 1, d)),
        }
        a, b = chain.step(inputs), fused.step(inputs)
        kref[:, :, pos], vref[:, :, pos] = inputs["knew"][:, :, 0], inputs["vnew"][:, :, 0]
        np.testing.assert_array_equal(chain.state["k0"], kref)
        np.testing.assert_array_equal(fused.state["v0"], vref)
        assert set(a.named) == {"out"} and set(a.state) == {"k0", "v0"}
        np.testing.assert_allclose(a.named["out"], b.named["out"], rtol=1e-5, atol=1e-6)
        mask = np.where(np.arange(cap) > pos, -3.0e4, 0.0).reshape(1, 1, 1, cap)
        expected = brute_attention(inputs["q"], kref, vref, 0.5, mask=mask)
        np.testing.assert_allclose(a.named["out"], expected, rtol=1e-5, atol=1e-6)
        # Only keys 0..pos carry weight: the same as attention over that prefix.
        prefix = brute_attention(inputs["q"], kref[:, :, : pos + 1], vref[:, :, : pos + 1], 0.5)
        np.testing.assert_allclose(b.outputs[2], prefix, rtol=1e-5, atol=1e-6)


def live_module(
    el: str, fused: bool, b: int = 2, hkv: int = 2, n_rep: int = 2, lk: int = 8, d: int = 4
) -> str:
    """attention_live: guard len into [1, Lk] with a validation witness, select
    the dead K/V rows to zero before either matmul and their scores to -inf
    (primitive form), or the fused live op."""
    hq = hkv * n_rep
    kv = f"tensor<{b}x{hkv}x{lk}x{d}x{el}>"
    q = f"tensor<{b}x{hq}x1x{d}x{el}>"
    s = f"tensor<{b}x{hq}x1x{lk}x{el}>"
    r = f"tensor<{b}x{hq}x1x1x{el}>"
    sig = (
        f'(%q: {q} {{poot.name = "q"}}, %k: {kv} {{poot.name = "k"}}, %v: {kv} {{poot.name = "v"}}, '
        f'%len: tensor<{b}xi32> {{poot.name = "len"}}) -> ({q} {{poot.name = "out"}}, '
        f'tensor<i1> {{poot.name = "len_ok", poot.slot = #poot.slot<validation>}})'
    )
    guard = f"  %l, %ok = poot.index_guard %len min = 1 max = {lk} : tensor<{b}xi32>"
    if fused:
        body = f"""{guard}
  %out = poot.attention %q, %k, %v len(%l : tensor<{b}xi32>) {{scale = 0.5 : f64}} : {q}, {kv}, {kv} -> {q}"""
    else:
        x5 = f"tensor<{b}x{hkv}x{n_rep}x{lk}x{d}x{el}>"
        x5r = f"tensor<{b}x{hkv}x1x{lk}x{d}x{el}>"
        xq = f"tensor<{b}x{hq}x{lk}x{d}x{el}>"
        body = f"""{guard}
  %lr = poot.reshape %l : tensor<{b}xi32> -> tensor<{b}x1x1x1xi32>
  %t = poot.iota dim = 2 : tensor<1x1x{lk}x1xi32>
  %live = poot.compare lt, %t, %lr : (tensor<1x1x{lk}x1xi32>, tensor<{b}x1x1x1xi32>) -> tensor<{b}x1x{lk}x1xi1>
  %zero = poot.constant dense<0.0> : tensor<{el}>
  %k0 = poot.select %live, %k, %zero : (tensor<{b}x1x{lk}x1xi1>, {kv}, tensor<{el}>) -> {kv}
  %v0 = poot.select %live, %v, %zero : (tensor<{b}x1x{lk}x1xi1>, {kv}, tensor<{el}>) -> {kv}
  %kr = poot.reshape %k0 : {kv} -> {x5r}
  %kb = poot.broadcast %kr : {x5r} -> {x5}
  %kx = poot.reshape %kb : {x5} -> {xq}
  %vr = poot.reshape %v0 : {kv} -> {x5r}
  %vb = poot.broadcast %vr : {x5r} -> {x5}
  %vx = poot.reshape %vb : {x5} -> {xq}
  %kt = poot.transpose %kx perm = [0, 1, 3, 2] : {xq} -> tensor<{b}x{hq}x{d}x{lk}x{el}>
  %s0 = poot.matmul %q, %kt : ({q}, tensor<{b}x{hq}x{d}x{lk}x{el}>) -> {s}
  %scale = poot.constant dense<0.5> : tensor<{el}>
  %s1 = poot.mul %s0, %scale : ({s}, tensor<{el}>) -> {s}
  %t2 = poot.iota dim = 3 : tensor<1x1x1x{lk}xi32>
  %live2 = poot.compare lt, %t2, %lr : (tensor<1x1x1x{lk}xi32>, tensor<{b}x1x1x1xi32>) -> tensor<{b}x1x1x{lk}xi1>
  %ninf = poot.constant dense<{NEG_INF[el]}> : tensor<{el}>
  %s2 = poot.select %live2, %s1, %ninf : (tensor<{b}x1x1x{lk}xi1>, {s}, tensor<{el}>) -> {s}
  %mx = poot.reduce max %s2 axis = 3 keepdim : {s} -> {r}
  %xs = poot.sub %s2, %mx : ({s}, {r}) -> {s}
  %ex = poot.exp %xs : {s}
  %sum = poot.reduce sum %ex axis = 3 keepdim : {s} -> {r}
  %p = poot.div %ex, %sum : ({s}, {r}) -> {s}
  %out = poot.matmul %p, %vx : ({s}, {xq}) -> {q}"""
    return f"func.func @live{sig} {{\n{body}\n  return %out, %ok : {q}, tensor<i1>\n}}"


@pytest.mark.parametrize("el", ["f32", "f16", "bf16", "f64"])
def test_live_chain_and_fused_keep_planted_nan_out(rng, el) -> None:
    dtype = DTYPES[el]
    q, k, v = (
        normal(rng, (2, 4, 1, 4), dtype),
        normal(rng, (2, 2, 8, 4), dtype),
        normal(rng, (2, 2, 8, 4), dtype),
    )
    length = rng.integers(1, 8, 2).astype(np.int32)
    for b in range(2):
        k[b, :, length[b] :, 1] = np.nan
        v[b, :, length[b] :] = np.nan
    inputs = {"q": q, "k": k, "v": v, "len": length}
    expected = brute_attention(q, k, v, 0.5, length=length)
    tol = {"f32": 1e-5, "f64": 1e-12, "f16": 2e-2, "bf16": 8e-2}[el]
    for fused in (False, True):
        res = oracle.run(live_module(el, fused), inputs)
        out = res.named["out"]
        assert out.dtype == dtype and bool(res.named["len_ok"])
        assert np.isfinite(out.astype(np.float64)).all()
        np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tol, atol=tol)
        ref = oracle.run(live_module(el, fused), inputs, reference=True).named["out"]
        assert ref.dtype == np.float64
        np.testing.assert_allclose(ref, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [0, 9, -1])
def test_live_length_out_of_range_fails_validation(rng, bad) -> None:
    q, k, v = normal(rng, (2, 4, 1, 4)), normal(rng, (2, 2, 8, 4)), normal(rng, (2, 2, 8, 4))
    length = np.array([3, bad], np.int32)
    for fused in (False, True):
        with pytest.raises(ValidationFailure, match="len_ok"):
            oracle.run(live_module("f32", fused), {"q": q, "k": k, "v": v, "len": length})


PAGED = """
func.func @paged(%kp: tensor<16x2x4xf32> {poot.slot = #poot.slot<state "kp">},
                 %vp: tensor<16x2x4xf32> {poot.slot = #poot.slot<state "vp">},
                 %write: tensor<2xi32> {poot.name = "write", poot.slot = #poot.slot<write_map>},
                 %read: tensor<2x8xi32> {poot.name = "read", poot.slot = #poot.slot<slot_map>, poot.range = #poot.range<0, 15>},
                 %knew: tensor<2x2x4xf32> {poot.name = "knew"}, %vnew: tensor<2x2x4xf32> {poot.name = "vnew"},
                 %q: tensor<2x4x1x4xf32> {poot.name = "q"},
                 %len: tensor<2xi32> {poot.name = "len", poot.range = #poot.range<1, 8>})
    -> (tensor<16x2x4xf32> {poot.slot = #poot.slot<state "kp">}, tensor<16x2x4xf32> {poot.slot = #poot.slot<state "vp">},
        tensor<2x4x1x4xf32> {poot.name = "paged"}, tensor<2x4x1x4xf32> {poot.name = "gathered"}) {
  %kp1 = poot.scatter_update %kp[%write], %knew : tensor<16x2x4xf32>, tensor<2xi32>, tensor<2x2x4xf32>
  %vp1 = poot.scatter_update %vp[%write], %vnew : tensor<16x2x4xf32>, tensor<2xi32>, tensor<2x2x4xf32>
  %o1 = poot.attention %q, %kp1, %vp1 read(%read : tensor<2x8xi32>) len(%len : tensor<2xi32>) {scale = 0.5 : f64}
      : tensor<2x4x1x4xf32>, tensor<16x2x4xf32>, tensor<16x2x4xf32> -> tensor<2x4x1x4xf32>
  %kg = poot.gather %kp1[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<2x8xi32>) -> tensor<2x8x2x4xf32>
  %kd = poot.transpose %kg perm = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %vg = poot.gather %vp1[%read] axis = 0 : (tensor<16x2x4xf32>, tensor<2x8xi32>) -> tensor<2x8x2x4xf32>
  %vd = poot.transpose %vg perm = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %o2 = poot.attention %q, %kd, %vd len(%len : tensor<2xi32>) {scale = 0.5 : f64}
      : tensor<2x4x1x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x4x1x4xf32>
  return %kp1, %vp1, %o1, %o2 : tensor<16x2x4xf32>, tensor<16x2x4xf32>, tensor<2x4x1x4xf32>, tensor<2x4x1x4xf32>
}
"""


def test_paged_step_writes_through_the_map_and_reads_in_place(rng) -> None:
    kp, vp = normal(rng, (16, 2, 4)), normal(rng, (16, 2, 4))
    sess = oracle.Session(PAGED, {"kp": kp, "vp": vp})
    slots = rng.permutation(16)
    read = slots[:16].reshape(2, 8).astype(np.int32)
    write = np.array([read[0, 2], -1], np.int32)
    inputs = {
        "write": write,
        "read": read,
        "knew": normal(rng, (2, 2, 4)),
        "vnew": normal(rng, (2, 2, 4)),
        "q": normal(rng, (2, 4, 1, 4)),
        "len": rng.integers(3, 9, 2).astype(np.int32),
    }
    res = sess.step(inputs)
    kexp = kp.copy()
    kexp[write[0]] = inputs["knew"][0]
    np.testing.assert_array_equal(sess.state["kp"], kexp)
    assert set(res.state) == {"kp", "vp"}
    np.testing.assert_allclose(res.named["paged"], res.named["gathered"], rtol=1e-6, atol=1e-7)
    vexp = vp.copy()
    vexp[write[0]] = inputs["vnew"][0]
    kview = kexp[read].transpose(0, 2, 1, 3)
    vview = vexp[read].transpose(0, 2, 1, 3)
    expected = brute_attention(inputs["q"], kview, vview, 0.5, length=inputs["len"])
    np.testing.assert_allclose(res.named["paged"], expected, rtol=1e-5, atol=1e-6)


def test_split_key_chain_matches_key_shared_form(rng) -> None:
    text = """
func.func @mla(%q: tensor<1x4x2x6xf32>, %knope: tensor<1x2x8x4xf32>, %kpe: tensor<1x1x8x2xf32>,
               %v: tensor<1x2x8x3xf32>) -> (tensor<1x4x2x3xf32>, tensor<1x4x2x3xf32>) {
  %kb = poot.broadcast %kpe : tensor<1x1x8x2xf32> -> tensor<1x2x8x2xf32>
  %k = poot.concat %knope, %kb axis = 3 : (tensor<1x2x8x4xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x6xf32>
  %o1 = poot.attention %q, %k, %v {scale = 0.25 : f64, softcap = 5.0 : f64}
      : tensor<1x4x2x6xf32>, tensor<1x2x8x6xf32>, tensor<1x2x8x3xf32> -> tensor<1x4x2x3xf32>
  %o2 = poot.attention %q, %knope, %v key_shared(%kpe : tensor<1x1x8x2xf32>) {scale = 0.25 : f64, softcap = 5.0 : f64}
      : tensor<1x4x2x6xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x3xf32> -> tensor<1x4x2x3xf32>
  return %o1, %o2 : tensor<1x4x2x3xf32>, tensor<1x4x2x3xf32>
}"""
    q, knope, kpe, v = (
        normal(rng, s) for s in [(1, 4, 2, 6), (1, 2, 8, 4), (1, 1, 8, 2), (1, 2, 8, 3)]
    )
    o1, o2 = oracle.run(text, [q, knope, kpe, v]).outputs
    np.testing.assert_allclose(o1, o2, rtol=1e-6, atol=1e-7)
    key = np.concatenate([knope, np.broadcast_to(kpe, (1, 2, 8, 2))], axis=-1).astype(np.float64)
    s = np.einsum("bhid,bhtd->bhit", q.astype(np.float64), np.repeat(key, 2, axis=1)) * 0.25
    s = 5.0 * np.tanh(s / 5.0)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    expected = np.einsum("bhit,bhtd->bhid", p, np.repeat(v.astype(np.float64), 2, axis=1))
    np.testing.assert_allclose(o2, expected, rtol=1e-5, atol=1e-6)


def test_sparse_pair_runs_like_the_semantics(rng) -> None:
    text = """
func.func @sparse(%scores: tensor<1x8x4xf32>, %qpos: tensor<1x8xi32>,
                  %q: tensor<1x4x8x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>)
    -> (tensor<1x8x2xi32>, tensor<1x4x8x16xf32>) {
  %ids = poot.block_topk %scores, %qpos k = 2 block_size = 8 : tensor<1x8x4xf32>, tensor<1x8xi32> -> tensor<1x8x2xi32>
  %o = poot.selected_attention %q, %k, %v, %ids, %qpos block_size = 8 {scale = 0.25 : f64, softcap = 4.0 : f64}
      : tensor<1x4x8x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x8x2xi32>, tensor<1x8xi32> -> tensor<1x4x8x16xf32>
  return %ids, %o : tensor<1x8x2xi32>, tensor<1x4x8x16xf32>
}"""
    scores = normal(rng, (1, 8, 4))
    qpos = np.sort(rng.integers(0, 32, (1, 8))).astype(np.int32)
    q, k, v = normal(rng, (1, 4, 8, 16)), normal(rng, (1, 2, 32, 16)), normal(rng, (1, 2, 32, 16))
    ids, out = oracle.run(text, [scores, qpos, q, k, v]).outputs
    for i in range(8):
        own = int(qpos[0, i]) // 8
        ranked = sorted(range(own), key=lambda j: (-float(scores[0, i, j]), j))[:2]
        assert list(ids[0, i]) == ranked + [-1] * (2 - len(ranked))
    direct = oracle.semantics.selected_attention(
        q, k, v, ids, qpos, block_size=8, scale=0.25, softcap=4.0
    )
    np.testing.assert_array_equal(out, direct)


# --- dtypes, constants, reference mode --------------------------------------------


@pytest.mark.parametrize("el", ["f16", "bf16", "f64"])
def test_ops_compute_in_their_own_dtype(rng, el) -> None:
    dtype = np.dtype(DTYPES[el])
    text = one_op(
        f"%a: tensor<3x8x{el}>, %b: tensor<8x2x{el}>, %c: tensor<3x2xf32>",
        f"tensor<3x2x{el}>, tensor<3x2x{el}>, tensor<3x2xf32>",
        f"""  %m = poot.matmul %a, %b : (tensor<3x8x{el}>, tensor<8x2x{el}>) -> tensor<3x2x{el}>
  %e = poot.exp %m : tensor<3x2x{el}>
  %cv = poot.convert %c : tensor<3x2xf32> -> tensor<3x2x{el}>
  %s = poot.add %e, %cv : (tensor<3x2x{el}>, tensor<3x2x{el}>) -> tensor<3x2x{el}>
  %back = poot.convert %s : tensor<3x2x{el}> -> tensor<3x2xf32>""",
        f"%m, %s, %back : tensor<3x2x{el}>, tensor<3x2x{el}>, tensor<3x2xf32>",
    )
    a, b, c = normal(rng, (3, 8), dtype), normal(rng, (8, 2), dtype), normal(rng, (3, 2))
    m, s, back = oracle.run(text, [a, b, c]).outputs
    assert m.dtype == dtype and s.dtype == dtype and back.dtype == np.float32
    t = dtype.type
    for i, j in np.ndindex(3, 2):
        # 16-bit: the dot product in f32, rounded once to the element type
        # (docs/sixteen-bit-contract.md): within one rounding of the exact dot.
        terms = [float(a[i, x]) * float(b[x, j]) for x in range(8)]
        exact_dot = math.fsum(terms)
        if el != "f64":
            unit = 2.0**-8 if el == "bf16" else 2.0**-11
            bound = unit * abs(exact_dot) + 2.0**-20 * sum(map(abs, terms))
            assert abs(float(m[i, j]) - exact_dot) <= bound
        assert s[i, j] == t(np.exp(m[i, j]) + oracle.semantics.convert(c[i, j], dtype))
    np.testing.assert_array_equal(back, s.astype(np.float32))
    m64, s64, back64 = oracle.run(text, [a, b, c], reference=True).outputs
    assert m64.dtype == s64.dtype == back64.dtype == np.float64
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(m64, exact, rtol=1e-13)
    np.testing.assert_allclose(back64, np.exp(exact) + c.astype(np.float64), rtol=1e-13)


def test_reference_mode_does_not_round_converts(rng) -> None:
    text = one_op(
        "%x: tensor<16xf32>",
        "tensor<16xf32>",
        """  %h = poot.convert %x : tensor<16xf32> -> tensor<16xbf16>
  %back = poot.convert %h : tensor<16xbf16> -> tensor<16xf32>""",
        "%back : tensor<16xf32>",
    )
    x = normal(rng, (16,))
    rounded = oracle.run(text, [x]).outputs[0]
    assert not np.array_equal(rounded, x)
    np.testing.assert_array_equal(rounded, x.astype(BF16).astype(np.float32))
    np.testing.assert_array_equal(
        oracle.run(text, [x], reference=True).outputs[0], x.astype(np.float64)
    )


def test_constants_of_every_type(rng) -> None:
    wide = (rng.standard_normal(120) * 3).astype(BF16)  # >100 elements: printed as a hex blob
    wide_text = ", ".join(repr(float(v)) for v in wide)
    text = one_op(
        "",
        "tensor<2x3xbf16>, tensor<120xbf16>, tensor<2x2xf16>, tensor<3xbf16>, tensor<f32>, "
        "tensor<2x2xi1>, tensor<3xi1>, tensor<3xi32>, tensor<2xi32>, tensor<2xf64>",
        f"""  %0 = poot.constant dense<[[1.5, -2.0, 0x7FC0], [0xFF80, 0.1, 3.0e+38]]> : tensor<2x3xbf16>
  %1 = poot.constant dense<[{wide_text}]> : tensor<120xbf16>
  %2 = poot.constant dense<0.1> : tensor<2x2xf16>
  %3 = poot.constant dense<0.1> : tensor<3xbf16>
  %4 = poot.constant dense<0xFF800000> : tensor<f32>
  %5 = poot.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>
  %6 = poot.constant dense<true> : tensor<3xi1>
  %7 = poot.constant dense<[1, -1, 2147483647]> : tensor<3xi32>
  %8 = poot.constant dense<-7> : tensor<2xi32>
  %9 = poot.constant dense<[0.1, -2.5]> : tensor<2xf64>""",
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<2x3xbf16>, tensor<120xbf16>, tensor<2x2xf16>, "
        "tensor<3xbf16>, tensor<f32>, tensor<2x2xi1>, tensor<3xi1>, tensor<3xi32>, tensor<2xi32>, tensor<2xf64>",
    )
    outs = oracle.run(text, {}).outputs
    small = outs[0].astype(np.float64)
    assert small[0, 0] == 1.5 and small[0, 1] == -2.0 and np.isnan(small[0, 2])
    assert small[1, 0] == -np.inf and outs[0][1, 1] == BF16.type(0.1)
    assert small[1, 2] == float(BF16.type(3.0e38))
    assert outs[1].dtype == BF16
    np.testing.assert_array_equal(outs[1], wide)
    np.testing.assert_array_equal(outs[2], np.full((2, 2), np.float16(0.1)))
    np.testing.assert_array_equal(outs[3], np.full(3, 0.1).astype(np.float32).astype(BF16))
    assert outs[4].shape == () and outs[4] == -np.inf and outs[4].dtype == np.float32
    np.testing.assert_array_equal(outs[5], [[True, False], [False, True]])
    np.testing.assert_array_equal(outs[6], [True, True, True])
    assert list(outs[7]) == [1, -1, 2**31 - 1] and list(outs[8]) == [-7, -7]
    assert list(outs[9]) == [0.1, -2.5]


# --- module handling ---------------------------------------------------------------


TWO_FUNCS = """
func.func private @hidden(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = poot.neg %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @first(%x: tensor<2xf32> {poot.name = "x"}) -> (tensor<2xf32> {poot.name = "y"}) {
  %0 = poot.exp %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @second(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
"""


def test_function_selection_and_inputs_as_module_or_text(rng) -> None:
    x = normal(rng, (2,))
    res = oracle.run(TWO_FUNCS, {"x": x})
    np.testing.assert_array_equal(res.named["y"], np.exp(x))
    np.testing.assert_array_equal(oracle.run(TWO_FUNCS, [x], func="hidden").outputs[0], -x)
    second = oracle.run(TWO_FUNCS, {"arg0": x}, func="second").outputs[0]
    np.testing.assert_array_equal(second, x)
    second[0] = 99  # the result is the caller's copy, never the input
    assert x[0] != 99
    with ir.Context():
        module = ir.Module.parse(TWO_FUNCS)
        np.testing.assert_array_equal(oracle.run(module, [x]).outputs[0], np.exp(x))
        func_op = module.body.operations[2]
        np.testing.assert_array_equal(oracle.run(func_op, [x]).outputs[0], x)
    with pytest.raises(KeyError, match="nope"):
        oracle.run(TWO_FUNCS, [x], func="nope")


def test_foreign_ops_are_refused() -> None:
    text = """
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense<1.0> : tensor<2xf32>
  return %c : tensor<2xf32>
}"""
    with pytest.raises(oracle.UnsupportedOpError, match="arith.constant"):
        oracle.run(text, [np.ones(2, np.float32)])


def test_fully_masked_row_is_nan_in_chain_and_fused(rng) -> None:
    text = """
func.func @f(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>,
             %m: tensor<1x1x3x5xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %kt = poot.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x5x4xf32> -> tensor<1x2x4x5xf32>
  %s = poot.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %s2 = poot.add %s, %m : (tensor<1x2x3x5xf32>, tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32>
  %mx = poot.reduce max %s2 axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %xs = poot.sub %s2, %mx : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %ex = poot.exp %xs : tensor<1x2x3x5xf32>
  %sum = poot.reduce sum %ex axis = 3 keepdim : tensor<1x2x3x5xf32> -> tensor<1x2x3x1xf32>
  %p = poot.div %ex, %sum : (tensor<1x2x3x5xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x5xf32>
  %o1 = poot.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  %o2 = poot.attention %q, %k, %v mask(%m : tensor<1x1x3x5xf32>) {scale = 1.0 : f64}
      : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32> -> tensor<1x2x3x4xf32>
  return %o1, %o2 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}"""
    q, k, v = normal(rng, (1, 2, 3, 4)), normal(rng, (1, 2, 5, 4)), normal(rng, (1, 2, 5, 4))
    mask = normal(rng, (1, 1, 3, 5))
    mask[0, 0, 1, :] = -np.inf  # row 1 sees no key
    mask[0, 0, 2, 3] = -np.inf  # row 2 loses one key
    for out in oracle.run(text, [q, k, v, mask]).outputs:
        assert np.isnan(out[:, :, 1]).all()
        assert np.isfinite(out[:, :, [0, 2]]).all()
    o1, o2 = oracle.run(text, [q, k, v, mask]).outputs
    np.testing.assert_allclose(o1, o2, rtol=1e-6, atol=1e-7)
    expected = brute_attention(q, k, v, 1.0, mask=mask)
    np.testing.assert_allclose(o2, expected, rtol=1e-5, atol=1e-6)


def test_oracle_imports_no_compiler_or_pass_manager() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, poot_mlir.oracle; "
        "bad = [m for m in sys.modules if m.startswith(('poot_mlir.compiler', 'poot_mlir.passmanager', "
        "'poot_mlir.runtime', 'poot_mlir.frontend'))]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
