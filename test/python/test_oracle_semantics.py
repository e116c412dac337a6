"""oracle.semantics, op by op, against formulas written independently here
(explicit loops in Python / float64 where the op's description allows it).

Every test draws fresh random inputs from the `rng` fixture (its seed is
printed; POOT_TEST_SEED reproduces a failure). Hypothesis tests draw their own
shapes and a data seed, which a falsifying example reports.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poot_mlir.oracle import dtypes, semantics

BF16 = np.dtype(ml_dtypes.bfloat16)
FAST = settings(max_examples=25, deadline=None)


def normal(rng: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# --- data movement ----------------------------------------------------------------


@FAST
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_dynamic_update_slice_clamps_start(shape, data) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    n = data.draw(st.integers(1, shape[axis]), label="n")
    start = data.draw(st.integers(-4, shape[axis] + 4), label="start")
    operand = normal(rng, shape)
    update_shape = list(shape)
    update_shape[axis] = n
    update = normal(rng, update_shape)
    got = semantics.dynamic_update_slice(operand, update, np.int32(start), axis=axis)
    first = max(0, min(start, shape[axis] - n))
    expected = operand.copy()
    for index in np.ndindex(*shape):
        j = index[axis] - first
        if 0 <= j < n:
            expected[index] = update[index[:axis] + (j,) + index[axis + 1 :]]
    np.testing.assert_array_equal(got, expected)
    assert got is not operand


def test_gather_clips_indices(rng) -> None:
    pool = normal(rng, (7, 3, 4))
    indices = rng.integers(-3, 10, (2, 5)).astype(np.int32)
    got = semantics.gather(pool, indices, axis=0)
    assert got.shape == (2, 5, 3, 4)
    for b in range(2):
        for t in range(5):
            slot = min(max(int(indices[b, t]), 0), 6)
            np.testing.assert_array_equal(got[b, t], pool[slot])
    mid = semantics.gather(pool, indices, axis=1)
    assert mid.shape == (7, 2, 5, 4)
    for b in range(2):
        for t in range(5):
            np.testing.assert_array_equal(mid[:, b, t], pool[:, min(max(int(indices[b, t]), 0), 2)])


@FAST
@given(slots=st.integers(1, 9), rows=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_scatter_update_skips_out_of_range_and_later_wins(slots, rows, seed) -> None:
    rng = np.random.default_rng(seed)
    pool = normal(rng, (slots, 2, 3))
    indices = rng.integers(-2, slots + 2, rows).astype(np.int32)
    updates = normal(rng, (rows, 2, 3))
    got = semantics.scatter_update(pool, indices, updates)
    expected = pool.copy()
    for i, s in enumerate(indices.tolist()):
        if 0 <= s < slots:
            expected[s] = updates[i]
    np.testing.assert_array_equal(got, expected)


def test_scatter_update_minus_one_writes_nothing(rng) -> None:
    pool = normal(rng, (4, 2))
    got = semantics.scatter_update(pool, np.array([-1, 2, -1], np.int32), normal(rng, (3, 2)))
    np.testing.assert_array_equal(np.delete(got, 2, axis=0), np.delete(pool, 2, axis=0))


def test_slice_concat_transpose_broadcast_reshape(rng) -> None:
    x = normal(rng, (3, 8))
    got = semantics.slice_(x, (1, 0), (3, 8), (1, 3))
    np.testing.assert_array_equal(got, [[x[r, c] for c in (0, 3, 6)] for r in (1, 2)])
    y = normal(rng, (3, 2))
    cat = semantics.concat([x, y], axis=1)
    assert cat.shape == (3, 10)
    np.testing.assert_array_equal(cat[:, 8:], y)
    z = normal(rng, (2, 3, 4))
    t = semantics.transpose(z, (2, 0, 1))
    for a, b, c in np.ndindex(2, 3, 4):
        assert t[c, a, b] == z[a, b, c]
    k = normal(rng, (2, 1, 5))
    b = semantics.broadcast(k, (3, 2, 4, 5))
    for i, j, m, n in np.ndindex(3, 2, 4, 5):
        assert b[i, j, m, n] == k[j, 0, n]
    flat = semantics.reshape(z, (4, 6))
    assert list(flat.reshape(-1)) == [z[idx] for idx in np.ndindex(2, 3, 4)]


def test_iota(rng) -> None:
    shape = tuple(int(d) for d in rng.integers(1, 5, 3))
    for dim in range(3):
        for dtype in (np.int32, np.float32, BF16):
            got = semantics.iota(shape, dim, np.dtype(dtype))
            assert got.dtype == dtype
            for idx in np.ndindex(*shape):
                assert float(got[idx]) == idx[dim]


# --- contractions and reductions ------------------------------------------------


@FAST
@given(
    batch_l=st.lists(st.integers(1, 3), max_size=2),
    batch_r=st.lists(st.integers(1, 3), max_size=2),
    mkn=st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 4)),
    seed=st.integers(0, 2**32 - 1),
)
def test_matmul_broadcasts_batch(batch_l, batch_r, mkn, seed) -> None:
    rng = np.random.default_rng(seed)
    # Make the batch dims broadcast-compatible: equal, or one of them 1.
    width = max(len(batch_l), len(batch_r))
    bl = [1] * (width - len(batch_l)) + batch_l
    br = [1] * (width - len(batch_r)) + batch_r
    br = [r if (r == l or r == 1 or l == 1) else l for l, r in zip(bl, br)]
    m, k, n = mkn
    lhs = normal(rng, batch_l + [m, k], np.float64)
    rhs = normal(rng, br[width - len(batch_r) :] + [k, n] if batch_r else [k, n], np.float64)
    got = semantics.matmul(lhs, rhs)
    batch = tuple(max(a, b) for a, b in zip(bl, br)) if width else ()
    L = np.broadcast_to(lhs.reshape(tuple(bl) + (m, k)), batch + (m, k))
    R = np.broadcast_to(rhs.reshape(tuple(br) + (k, n)), batch + (k, n))
    expected = np.zeros(batch + (m, n))
    for idx in np.ndindex(*batch):
        for i in range(m):
            for j in range(n):
                expected[idx + (i, j)] = math.fsum(
                    L[idx + (i, c)] * R[idx + (c, j)] for c in range(k)
                )
    np.testing.assert_allclose(got.reshape(batch + (m, n)), expected, rtol=1e-12, atol=1e-12)


def test_matmul_float32_accumulates_in_float32(rng) -> None:
    lhs, rhs = normal(rng, (3, 40)), normal(rng, (40, 2))
    got = semantics.matmul(lhs, rhs)
    assert got.dtype == np.float32
    exact = lhs.astype(np.float64) @ rhs.astype(np.float64)
    np.testing.assert_allclose(got, exact, rtol=1e-4, atol=1e-5)


def test_reduce_sum_max_min(rng) -> None:
    x = normal(rng, (3, 5, 4), np.float64)
    for axis in range(3):
        for keep in (False, True):
            s = semantics.reduce(x, "sum", axis=axis, keepdim=keep)
            mx = semantics.reduce(x, "max", axis=axis, keepdim=keep)
            mn = semantics.reduce(x, "min", axis=axis, keepdim=keep)
            moved = np.moveaxis(x, axis, -1)
            exp_s = np.array([math.fsum(r) for r in moved.reshape(-1, x.shape[axis])])
            exp_max = np.array([max(r) for r in moved.reshape(-1, x.shape[axis])])
            exp_min = np.array([min(r) for r in moved.reshape(-1, x.shape[axis])])
            shape = moved.shape[:-1]
            if keep:
                shape = x.shape[:axis] + (1,) + x.shape[axis + 1 :]
            assert s.shape == mx.shape == mn.shape == shape
            np.testing.assert_allclose(s.reshape(-1), exp_s, rtol=1e-12)
            np.testing.assert_array_equal(mx.reshape(-1), exp_max)
            np.testing.assert_array_equal(mn.reshape(-1), exp_min)


def test_reduce_max_min_propagate_nan(rng) -> None:
    x = normal(rng, (2, 6))
    x[0, int(rng.integers(0, 6))] = np.nan
    for kind in ("max", "min", "sum"):
        got = semantics.reduce(x, kind, axis=1)
        assert np.isnan(got[0]) and not np.isnan(got[1])


def test_reduce_integer_and_bool_sums_wrap(rng) -> None:
    x = rng.integers(2**30, 2**31 - 1, (3, 4)).astype(np.int32)
    got = semantics.reduce(x, "sum", axis=1)
    assert got.dtype == np.int32
    for r in range(3):
        total = sum(int(v) for v in x[r]) % 2**32
        assert int(got[r]) == (total - 2**32 if total >= 2**31 else total)
    flags = rng.random((3, 7)) < 0.5
    parity = semantics.reduce(flags, "sum", axis=1)
    assert parity.dtype == np.bool_
    assert [bool(p) for p in parity] == [sum(map(int, r)) % 2 == 1 for r in flags]


# The 16-bit matmul and sum: test_sixteen_bit_contract.py (f32 accumulation,
# one rounding, at K = 4096 where the contracts differ).


@FAST
@given(n=st.integers(1, 12), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_top_k_descending_ties_to_lower_index(n, seed, data) -> None:
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(1, n), label="k")
    # Small integers make ties common; a NaN orders below every number.
    x = rng.integers(-3, 4, (2, n)).astype(np.float32)
    if n > 2:
        x[1, int(rng.integers(0, n))] = np.nan
    values, indices = semantics.top_k(x, k)
    assert indices.dtype == np.int32 and values.dtype == np.float32
    for r in range(2):
        row = [float(v) for v in x[r]]
        order = sorted(
            range(n),
            key=lambda j: (math.isnan(row[j]), -row[j] if not math.isnan(row[j]) else 0, j),
        )
        assert list(indices[r]) == order[:k]
        np.testing.assert_array_equal(values[r], x[r, order[:k]])


# --- elementwise ----------------------------------------------------------------


def test_div_float_is_ieee_and_int_floors_with_zero_rule(rng) -> None:
    a, b = normal(rng, (50,)), normal(rng, (50,))
    got = semantics.div(a, b)
    expected = [np.float32(float(x) / float(y)) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, expected)
    ia = rng.integers(-20, 21, (200,)).astype(np.int32)
    ib = rng.integers(-6, 7, (200,)).astype(np.int32)
    got_i = semantics.div(ia, ib)
    assert got_i.dtype == np.int32
    assert list(got_i) == [0 if y == 0 else int(x) // int(y) for x, y in zip(ia, ib)]
    np.testing.assert_array_equal(
        semantics.div(np.float32([1, -1, 0]), np.float32(0)), [np.inf, -np.inf, np.nan]
    )


def test_binary_broadcasting_and_int_wrap(rng) -> None:
    a, b = normal(rng, (2, 1, 4)), normal(rng, (3, 1))
    for fn, op in [
        (semantics.add, lambda x, y: x + y),
        (semantics.sub, lambda x, y: x - y),
        (semantics.mul, lambda x, y: x * y),
        (semantics.max_, max),
        (semantics.min_, min),
    ]:
        got = fn(a, b)
        assert got.shape == (2, 3, 4)
        for i, j, k in np.ndindex(2, 3, 4):
            assert got[i, j, k] == np.float32(op(a[i, 0, k], b[j, 0]))
    big = np.int32([2**31 - 1, -(2**31)])
    np.testing.assert_array_equal(semantics.add(big, np.int32(1)), [-(2**31), -(2**31) + 1])
    np.testing.assert_array_equal(semantics.neg(big), [-(2**31) + 1, -(2**31)])
    nan = np.float32([np.nan, 1.0])
    assert np.isnan(semantics.max_(nan, np.float32(5))[0])
    assert np.isnan(semantics.min_(nan, np.float32(-5))[0])


def test_and_or_bool_and_int(rng) -> None:
    p, q = rng.random(20) < 0.5, rng.random(20) < 0.5
    assert list(semantics.and_(p, q)) == [x and y for x, y in zip(p, q)]
    assert list(semantics.or_(p, q)) == [x or y for x, y in zip(p, q)]
    a = rng.integers(-100, 100, 20).astype(np.int32)
    b = rng.integers(-100, 100, 20).astype(np.int32)
    assert list(semantics.and_(a, b)) == [int(x) & int(y) for x, y in zip(a, b)]
    assert list(semantics.or_(a, b)) == [int(x) | int(y) for x, y in zip(a, b)]


def test_unary_ops_float64(rng) -> None:
    x = np.abs(normal(rng, (40,), np.float64)) + 0.1
    cases = {
        semantics.exp: math.exp,
        semantics.log: math.log,
        semantics.tanh: math.tanh,
        semantics.logistic: lambda v: 1.0 / (1.0 + math.exp(-v)),
        semantics.sqrt: math.sqrt,
        semantics.rsqrt: lambda v: 1.0 / math.sqrt(v),
        semantics.sin: math.sin,
        semantics.cos: math.cos,
        semantics.neg: lambda v: -v,
        semantics.abs_: abs,
    }
    for fn, ref in cases.items():
        np.testing.assert_allclose(fn(x), [ref(v) for v in x], rtol=1e-14, err_msg=fn.__name__)
    np.testing.assert_array_equal(semantics.abs_(-x), x)
    assert semantics.exp(np.float32(-np.inf)) == 0.0


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_unary_ops_16bit_round_each_step(rng, dtype) -> None:
    x = normal(rng, (30,), dtype)
    t = np.dtype(dtype).type
    logistic = semantics.logistic(x)
    rsqrt = semantics.rsqrt(np.abs(x))
    assert logistic.dtype == dtype and rsqrt.dtype == dtype
    for i, v in enumerate(x):
        # exp and sqrt of the element type are the primitives; the composition
        # around them must round at every step.
        e = np.exp(-v)
        assert e.dtype == dtype
        assert logistic[i] == t(1) / (t(1) + e)
        assert rsqrt[i] == t(t(1) / np.sqrt(t(abs(v))))
        assert abs(float(logistic[i]) - 1 / (1 + math.exp(-float(v)))) <= 2**-6


def test_compare_nan_is_false_except_ne(rng) -> None:
    a = normal(rng, (4,))
    a[1] = np.nan
    b = normal(rng, (4,))
    ops = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    for name, sym in ops.items():
        got = semantics.compare(name, a, b)
        assert got.dtype == np.bool_
        for i in range(4):
            assert bool(got[i]) == eval(f"float(a[i]) {sym} float(b[i])"), (name, i)
    ia = rng.integers(0, 5, (3, 1)).astype(np.int32)
    ib = rng.integers(0, 5, (4,)).astype(np.int32)
    assert semantics.compare("gt", ia, ib).shape == (3, 4)


def test_select_never_leaks_the_unchosen_value(rng) -> None:
    cond = rng.random((3, 5)) < 0.5
    cond[0, 0], cond[0, 1] = False, True
    poisoned = normal(rng, (3, 5))
    poisoned[~cond] = np.nan
    clean = normal(rng, (1, 5))
    got = semantics.select(cond, poisoned, clean)
    assert not np.isnan(got).any()
    for i, j in np.ndindex(3, 5):
        assert got[i, j] == (poisoned[i, j] if cond[i, j] else clean[0, j])


def test_index_guard_clamps_and_witnesses(rng) -> None:
    x = rng.integers(1, 65, (6,)).astype(np.int32)
    clamped, ok = semantics.index_guard(x, 1, 64)
    assert ok.shape == () and bool(ok) and list(clamped) == list(x)
    x[int(rng.integers(0, 6))] = int(rng.choice([0, 65, -7, 1000]))
    clamped, ok = semantics.index_guard(x, 1, 64)
    assert not bool(ok) and clamped.dtype == np.int32
    assert list(clamped) == [min(max(int(v), 1), 64) for v in x]


# --- convert ------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _grid(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every finite value of a 16-bit float type, ascending, with its bits."""
    dtype = np.dtype(BF16 if name == "bfloat16" else name)
    bits = np.arange(2**16, dtype=np.uint16).view(dtype)
    with np.errstate(invalid="ignore"):
        grid = bits.astype(np.float64)
    finite = np.isfinite(grid)
    order = np.argsort(grid[finite], kind="stable")
    return grid[finite][order], np.arange(2**16)[finite][order]


def _round_exact(value: float, dtype: np.dtype) -> float:
    """Round `value` to `dtype` (f16 or bf16) by exact rational arithmetic:
    enumerate the finite grid and take the nearest, ties to an even bit pattern."""
    values, patterns = _grid(np.dtype(dtype).name)
    v = Fraction(value)
    top = Fraction(float(values[-1]))
    ulp_top = top - Fraction(float(values[-2]))
    if abs(v) >= top + ulp_top / 2:
        return math.copysign(math.inf, value)
    i = int(np.searchsorted(values, value))
    i = min(max(i, 1), len(values) - 1)
    lo, hi = Fraction(float(values[i - 1])), Fraction(float(values[i]))
    if v <= lo:
        return float(lo)
    if v >= hi:
        return float(hi)
    if v - lo != hi - v:
        return float(lo if v - lo < hi - v else hi)
    return float(lo if patterns[i - 1] % 2 == 0 else hi)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_convert_rounds_once_to_nearest_even(rng, dtype) -> None:
    dtype = np.dtype(dtype)
    exponents = rng.integers(-30, 20, 300)
    x = rng.standard_normal(300) * np.exp2(exponents)
    # Points just above a bf16 midpoint, where float64 -> float32 -> bf16 rounds twice.
    tricky = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-40), 3 * (1 + 2**-8 + 2**-29)])
    x = np.concatenate([x, tricky])
    got = semantics.convert(x, dtype)
    assert got.dtype == dtype
    for v, g in zip(x, got):
        assert float(g) == _round_exact(float(v), dtype), v
    ints = rng.integers(-(2**31), 2**31 - 1, 50).astype(np.int32)
    ints[0] = 2**24 + 2**16 + 1  # rounds up only when rounded once
    got_i = semantics.convert(ints, dtype)
    for v, g in zip(ints, got_i):
        assert float(g) == _round_exact(float(v), dtype), v


def test_convert_float_to_int_truncates_and_bool_is_01(rng) -> None:
    x = normal(rng, (40,)) * 100
    got = semantics.convert(x, np.dtype(np.int32))
    assert list(got) == [math.trunc(float(v)) for v in x]
    flags = rng.random(10) < 0.5
    np.testing.assert_array_equal(semantics.convert(flags, np.dtype(np.float32)), flags.astype(int))
    np.testing.assert_array_equal(semantics.convert(flags, np.dtype(np.int32)), flags.astype(int))
    edge = semantics.convert(np.float32([np.nan, np.inf, -np.inf, 3e9]), np.dtype(np.int32))
    assert list(edge) == [0, 2**31 - 1, -(2**31), 2**31 - 1]
    assert semantics.convert(np.float64([0.1]), np.dtype(np.float32))[0] == np.float32(0.1)


def test_dtype_names_round_trip() -> None:
    for name, dtype in dtypes.ELEMENT_DTYPES.items():
        assert dtypes.element_of_dtype(dtype) == name
        assert dtypes.dtype_of_element(name) == dtype
    with pytest.raises(TypeError):
        dtypes.dtype_of_element("i64")
