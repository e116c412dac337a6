"""Every primitive op: result shape and dtype, and every trace-time refusal
(a TraceError whose message starts with `op: argument`), with nothing
emitted by a refused call."""

from __future__ import annotations

from functools import partial
from typing import Callable

import pytest

from poot_mlir.errors import TraceError
from poot_mlir.frontend import Tensor, Tracer, ops


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


class Env:
    """Inputs of every kind, in one tracer."""

    def __init__(self) -> None:
        self.tr = Tracer("env")
        t = self.tr
        self.x = t.input("x", (2, 3, 4))  # f32
        self.y = t.input("y", (3, 1))  # f32, broadcasts with x
        self.h = t.input("h", (2, 3, 4), "f16")
        self.m = t.input("m", (4, 5))
        self.i = t.input("i", (2, 3), "i32")
        self.b = t.input("b", (2, 3), "i1")
        self.s = t.input("s", (), "i32")
        self.pool = t.input("pool", (6, 2, 4))
        self.idx = t.input("idx", (3,), "i32")
        self.rows = t.input("rows", (3, 2, 4))

    def count(self) -> int:
        return len(list(self.tr._block.operations))


Case = Callable[[Env], object]

VALID: list[tuple[str, Case, tuple[int, ...], str]] = [
    ("add", lambda e: ops.add(e.x, e.y), (2, 3, 4), "f32"),
    ("sub scalar", lambda e: ops.sub(1.0, e.x), (2, 3, 4), "f32"),
    ("mul", lambda e: ops.mul(e.h, 0.5), (2, 3, 4), "f16"),
    ("div i32", lambda e: ops.div(e.i, 2), (2, 3), "i32"),
    ("maximum", lambda e: ops.maximum(e.x, e.y), (2, 3, 4), "f32"),
    ("minimum", lambda e: ops.minimum(e.i, e.s), (2, 3), "i32"),
    ("and_", lambda e: ops.and_(e.b, True), (2, 3), "i1"),
    ("or_", lambda e: ops.or_(e.i, e.i), (2, 3), "i32"),
    *[
        (name, (lambda f: lambda e: f(e.x))(getattr(ops, name)), (2, 3, 4), "f32")
        for name in ("exp", "log", "tanh", "logistic", "sqrt", "rsqrt", "sin", "cos", "neg", "abs")
    ],
    ("neg i32", lambda e: ops.neg(e.i), (2, 3), "i32"),
    ("abs i32", lambda e: ops.abs(e.i), (2, 3), "i32"),
    ("matmul", lambda e: ops.matmul(e.x, e.m), (2, 3, 5), "f32"),
    (
        "matmul batch",
        lambda e: ops.matmul(ops.reshape(e.x, (2, 1, 3, 4)), ops.broadcast_to(e.m, (3, 4, 5))),
        (2, 3, 3, 5),
        "f32",
    ),
    ("transpose", lambda e: ops.transpose(e.x, (2, 0, 1)), (4, 2, 3), "f32"),
    ("reshape", lambda e: ops.reshape(e.x, (6, -1)), (6, 4), "f32"),
    ("broadcast_to", lambda e: ops.broadcast_to(e.y, (5, 3, 7)), (5, 3, 7), "f32"),
    (
        "concat",
        lambda e: ops.concat([e.x, e.x, ops.slice(e.x, (0, 0, 0), (2, 3, 1))], axis=-1),
        (2, 3, 9),
        "f32",
    ),
    ("slice", lambda e: ops.slice(e.x, (0, 1, 0), (2, 3, 4), (1, 1, 3)), (2, 2, 2), "f32"),
    ("convert", lambda e: ops.convert(e.i, "bf16"), (2, 3), "bf16"),
    ("iota", lambda e: ops.iota((2, 5), -1, "f32"), (2, 5), "f32"),
    ("constant", lambda e: ops.constant(2, "f16", shape=(3,)), (3,), "f16"),
    ("reduce_max", lambda e: ops.reduce_max(e.x, 1), (2, 4), "f32"),
    ("reduce_sum keepdim", lambda e: ops.reduce_sum(e.i, -1, keepdim=True), (2, 1), "i32"),
    ("reduce_min", lambda e: ops.reduce_min(e.h, 0, True), (1, 3, 4), "f16"),
    ("compare", lambda e: ops.compare("le", e.x, e.y), (2, 3, 4), "i1"),
    ("eq scalar", lambda e: ops.eq(e.i, 3), (2, 3), "i1"),
    ("ne", lambda e: ops.ne(e.b, e.b), (2, 3), "i1"),
    ("lt", lambda e: ops.lt(0.0, e.x), (2, 3, 4), "i1"),
    ("ge", lambda e: ops.ge(e.s, e.i), (2, 3), "i1"),
    ("select", lambda e: ops.select(ops.gt(e.y, 0.0), e.x, -1.0), (2, 3, 4), "f32"),
    ("gather", lambda e: ops.gather(e.pool, e.i, 0), (2, 3, 2, 4), "f32"),
    ("gather axis 2", lambda e: ops.gather(e.pool, e.idx, -1), (6, 2, 3), "f32"),
    ("scatter_update", lambda e: ops.scatter_update(e.pool, e.idx, e.rows), (6, 2, 4), "f32"),
    (
        "dynamic_update_slice",
        lambda e: ops.dynamic_update_slice(e.pool, e.rows, e.s, 0),
        (6, 2, 4),
        "f32",
    ),
]


@pytest.mark.parametrize("name, call, shape, dtype", VALID, ids=[v[0] for v in VALID])
def test_result_shape_and_dtype(name: str, call: Case, shape, dtype) -> None:
    env = Env()
    out = call(env)
    assert isinstance(out, Tensor)
    assert (out.shape, out.dtype) == (shape, dtype)
    env.tr.output("out", out)
    env.tr.finish()  # verifies


def test_multi_result_ops() -> None:
    env = Env()
    values, indices = ops.top_k(env.x, 2)
    assert (values.shape, values.dtype, indices.shape, indices.dtype) == (
        (2, 3, 2),
        "f32",
        (2, 3, 2),
        "i32",
    )
    clamped, witness = ops.index_guard(env.i, 0, 7)
    assert (clamped.shape, clamped.dtype, witness.shape, witness.dtype) == ((2, 3), "i32", (), "i1")
    env.tr.output("v", values)
    env.tr.output("i", indices)
    env.tr.output("c", clamped)
    env.tr.validation("ok", witness)
    text = env.tr.mlir()
    assert "poot.top_k" in text and "poot.index_guard %arg4 min = 0 max = 7" in text


# Each case builds its operands (helpers may emit) and returns the refused
# call, not yet made.
BAD: list[tuple[Callable[[Env], Callable[[], object]], str | None]] = [
    (lambda e: partial(ops.add, e.x, e.h), "add: rhs has dtype f16 but lhs has f32"),
    (
        lambda e: partial(ops.add, e.x, e.m),
        "add: rhs has shape (4, 5), which does not broadcast with lhs",
    ),
    (lambda e: partial(ops.add, 1.0, 2.0), "add: at least one of lhs, rhs must be a traced Tensor"),
    (lambda e: partial(ops.mul, e.x, "2"), "mul: rhs must be a Tensor or a Python scalar"),
    (lambda e: partial(ops.div, e.i, 0.5), "div: rhs = 0.5 is not an integer"),
    (lambda e: partial(ops.sub, e.i, 2**40), "sub: rhs = 1099511627776 does not fit in i32"),
    (lambda e: partial(ops.add, e.b, e.b), "add: lhs has dtype i1"),
    (lambda e: partial(ops.and_, e.x, e.x), "and_: lhs has dtype f32"),
    (lambda e: partial(ops.and_, e.b, 2), "and_: rhs = 2 is not a boolean"),
    (lambda e: partial(ops.exp, e.i), "exp: x has dtype i32"),
    (lambda e: partial(ops.neg, e.b), "neg: x has dtype i1"),
    (lambda e: partial(ops.tanh, 3.0), "tanh: x must be a traced Tensor"),
    (
        lambda e: partial(ops.matmul, e.x, e.x),
        "matmul: rhs has shape (2, 3, 4); its dimension -2 (3)",
    ),
    (lambda e: partial(ops.matmul, e.i, e.i), "matmul: lhs has dtype i32"),
    (
        lambda e: partial(ops.matmul, e.x, ops.convert(e.m, "f16")),
        "matmul: rhs has dtype f16 but lhs has f32",
    ),
    (lambda e: partial(ops.matmul, e.s, e.s), "matmul: lhs has dtype i32"),
    (lambda e: partial(ops.matmul, ops.reduce_sum(e.m, 0), e.m), "matmul: lhs must have rank >= 2"),
    (
        lambda e: partial(
            ops.matmul,
            ops.reshape(e.x, (3, 2, 4)),
            ops.reshape(ops.concat([e.m, e.m], 0), (2, 4, 5)),
        ),
        "matmul: rhs has batch dimensions (2,), which do not broadcast with lhs's (3,)",
    ),
    (lambda e: partial(ops.transpose, e.x, (0, 1)), "transpose: perm (0, 1) is not a permutation"),
    (lambda e: partial(ops.transpose, e.x, (0, 1, 1)), "transpose: perm (0, 1, 1)"),
    (
        lambda e: partial(ops.reshape, e.x, (5, -1)),
        "reshape: shape (5, -1) cannot hold the 24 elements",
    ),
    (lambda e: partial(ops.reshape, e.x, (4, 5)), "reshape: shape (4, 5) holds 20 elements"),
    (
        lambda e: partial(ops.reshape, e.x, (-1, -1)),
        "reshape: shape (-1, -1) may hold at most one -1",
    ),
    (
        lambda e: partial(ops.broadcast_to, e.x, (3, 4)),
        "broadcast_to: x has shape (2, 3, 4), which does not broadcast to shape",
    ),
    (lambda e: partial(ops.broadcast_to, e.y, (2, 2)), "broadcast_to: x has shape (3, 1)"),
    (lambda e: partial(ops.concat, [], 0), "concat: inputs must hold at least one Tensor"),
    (lambda e: partial(ops.concat, [e.x, e.h], 0), "concat: inputs[1] has dtype f16"),
    (lambda e: partial(ops.concat, [e.x, e.m], 0), "concat: inputs[1] has shape (4, 5)"),
    (lambda e: partial(ops.concat, [e.x, e.x], 3), "concat: axis = 3 is out of range"),
    (lambda e: partial(ops.slice, e.x, (0, 0), (1, 1)), "slice: start has 2 entries"),
    (
        lambda e: partial(ops.slice, e.x, (0, 0, 0), (2, 4, 4)),
        "slice: start and limit [0, 4) on axis 1",
    ),
    (
        lambda e: partial(ops.slice, e.x, (0, 0, 0), (2, 3, 4), (1, 0, 1)),
        "slice: strides must be >= 1",
    ),
    (lambda e: partial(ops.convert, e.x, "f8"), "convert: unknown dtype 'f8'"),
    (lambda e: partial(ops.iota, (2, 3), 2), "iota: dim = 2 is out of range"),
    (lambda e: partial(ops.iota, (2, 3), 0, "i1"), "iota: dtype must be numeric"),
    (lambda e: partial(ops.constant, [1.0, 2.0], "i32"), None),  # integral floats are fine
    (
        lambda e: partial(ops.constant, [1.5], "i32"),
        "constant: value holds non-integer entries for dtype i32",
    ),
    (lambda e: partial(ops.constant, [2, 0], "i1"), "constant: value holds entries other than 0/1"),
    (lambda e: partial(ops.constant, 1.5, "i32"), "constant: value = 1.5 is not an integer"),
    (lambda e: partial(ops.constant, [1, 2], shape=(3,)), "constant: shape (3,) does not match"),
    (lambda e: partial(ops.constant, ["a"]), "constant: value has unsupported element kind"),
    (lambda e: partial(ops.reduce_max, e.b, 0), "reduce_max: x has dtype i1"),
    (lambda e: partial(ops.reduce_sum, e.x, 3), "reduce_sum: axis = 3 is out of range for rank 3"),
    (lambda e: partial(ops.reduce_min, e.x, 1.0), "reduce_min: axis must be an int"),
    (lambda e: partial(ops.compare, "gte", e.x, e.x), "compare: direction must be one of"),
    (lambda e: partial(ops.compare, "gt", e.x, e.i), "compare: rhs has dtype i32 but lhs has f32"),
    (lambda e: partial(ops.gt, e.x, e.m), "compare: rhs has shape (4, 5)"),
    (lambda e: partial(ops.select, e.i, e.i, e.i), "select: cond has dtype i32"),
    (
        lambda e: partial(ops.select, e.b, e.i, e.x),
        "select: on_false has dtype f32 but on_true has i32",
    ),
    (
        lambda e: partial(ops.select, e.b, e.x, 0.0),
        "select: on_true has shape (2, 3, 4), which does not broadcast with cond",
    ),
    (
        lambda e: partial(ops.select, e.b, 1, 0),
        "select: at least one of on_true, on_false must be a traced Tensor",
    ),
    (lambda e: partial(ops.gather, e.pool, e.x, 0), "gather: indices has dtype f32"),
    (lambda e: partial(ops.gather, e.pool, e.idx, 3), "gather: axis = 3 is out of range"),
    (
        lambda e: partial(ops.scatter_update, e.pool, e.i, e.rows),
        "scatter_update: indices must have rank 1",
    ),
    (
        lambda e: partial(ops.scatter_update, e.pool, e.idx, e.x),
        "scatter_update: updates must have shape (3, 2, 4)",
    ),
    (
        lambda e: partial(ops.scatter_update, e.pool, e.idx, ops.convert(e.rows, "f16")),
        "scatter_update: updates has dtype f16",
    ),
    (
        lambda e: partial(ops.scatter_update, e.s, e.idx, e.rows),
        "scatter_update: x must have rank >= 1",
    ),
    (
        lambda e: partial(ops.dynamic_update_slice, e.pool, e.rows, e.idx, 0),
        "dynamic_update_slice: start must be a 0-d i32",
    ),
    (
        lambda e: partial(ops.dynamic_update_slice, e.pool, e.x, e.s, 0),
        "dynamic_update_slice: update has shape (2, 3, 4); it must match x",
    ),
    (
        lambda e: partial(ops.dynamic_update_slice, e.rows, e.pool, e.s, 0),
        "dynamic_update_slice: update is 6 long on axis 0",
    ),
    (
        lambda e: partial(ops.dynamic_update_slice, e.pool, e.rows, e.s, 5),
        "dynamic_update_slice: axis = 5 is out of range",
    ),
    (lambda e: partial(ops.top_k, e.i, 1), "top_k: x has dtype i32"),
    (lambda e: partial(ops.top_k, e.x, 5), "top_k: k = 5 exceeds the last dimension"),
    (lambda e: partial(ops.top_k, e.x, 0), "top_k: k must be >= 1"),
    (lambda e: partial(ops.index_guard, e.x, 0, 1), "index_guard: x has dtype f32"),
    (lambda e: partial(ops.index_guard, e.i, 3, 1), "index_guard: min = 3 exceeds max = 1"),
]


@pytest.mark.parametrize("call, message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_refusals_name_the_argument_and_emit_nothing(call, message: str | None) -> None:
    env = Env()
    refused = call(env)
    before = env.count()
    if message is None:
        refused()
        return
    with pytest.raises(TraceError) as info:
        refused()
    assert message in str(info.value), str(info.value)
    assert env.count() == before, "a refused call emitted ops"
