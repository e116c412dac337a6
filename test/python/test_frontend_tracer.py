"""The Tracer and Tensor: arguments, results and their markers, operator
sugar, source locations, refusals (TraceError naming the argument), module
verification and the poot-opt round trip."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from poot_mlir import ir
from poot_mlir.errors import TraceError
from poot_mlir.frontend import Tensor, Tracer, ops


@pytest.fixture(autouse=True)
def tracer_stack():
    """A test that abandons a tracer mid-trace must not leave it current."""
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def poot_opt() -> str | None:
    found = os.environ.get("POOT_OPT") or shutil.which("poot-opt")
    if found:
        return found
    from poot_mlir._tools import tool_path

    path = tool_path("poot-opt")
    return str(path) if path.exists() else None


def op_count(tr: Tracer) -> int:
    return len(list(tr._block.operations))


def this_line() -> int:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


# --- arguments, results, markers ------------------------------------------------


def test_arguments_and_results_carry_the_driver_contract() -> None:
    tr = Tracer("step")
    k = tr.state("k0", (1, 2, 8, 4), "f32")
    pos = tr.pos(max_pos=7)
    x = tr.input("x", (1, 2, 1, 4), "bf16")
    ids = tr.input("ids", (5,), "i32", range=(0, 9))
    read = tr.slot_map("read", 2, 8, 16)
    write = tr.write_map("write", 3, 16)
    assert (k.shape, k.dtype, k.name) == ((1, 2, 8, 4), "f32", "k0")
    assert (pos.shape, pos.dtype, pos.declared_range) == ((), "i32", (0, 7))
    assert (x.dtype, ids.declared_range, read.declared_range, write.declared_range) == (
        "bf16",
        (0, 9),
        (0, 15),
        (-1, 15),
    )
    k1 = ops.dynamic_update_slice(k, ops.convert(x, "f32"), pos, 2)
    _, ok = ops.index_guard(ids, 0, 9)
    tr.state_out("k0", k1)
    tr.validation("ids_ok", ok)
    tr.output("x2", x * 2)
    assert tr.argument_names == ["k0", "pos", "x", "ids", "read", "write"]
    assert tr.result_names == ["k0", "ids_ok", "x2"]
    module = tr.finish()
    assert isinstance(module, ir.Module)
    assert module.operation.verify()
    text = tr.mlir()
    assert '{poot.name = "k0", poot.slot = #poot.slot<state "k0">}' in text
    assert (
        '{poot.name = "pos", poot.range = #poot.range<0, 7>, poot.slot = #poot.slot<pos>}' in text
    )
    assert '{poot.name = "ids", poot.range = #poot.range<0, 9>}' in text
    assert (
        '{poot.name = "read", poot.range = #poot.range<0, 15>, poot.slot = #poot.slot<slot_map>}'
        in text
    )
    assert (
        '{poot.name = "write", poot.range = #poot.range<-1, 15>, poot.slot = #poot.slot<write_map>}'
        in text
    )
    assert '{poot.name = "ids_ok", poot.slot = #poot.slot<validation>}' in text
    assert tr.finish() is module  # idempotent


def test_tensor_operators_broadcast_and_lift_scalars() -> None:
    tr = Tracer("ops")
    a = tr.input("a", (2, 3), "f16")
    b = tr.input("b", (3,), "f16")
    i = tr.input("i", (4,), "i32")
    y = (a + b) * 2.0 - 1 / a
    assert (y.shape, y.dtype) == ((2, 3), "f16")
    z = -(2 - a) / b
    assert (z.shape, z.dtype) == ((2, 3), "f16")
    m = a @ ops.transpose(a, (1, 0))
    assert (m.shape, m.dtype) == ((2, 2), "f16")
    j = (i + 1) * 3 - i / 2
    assert (j.shape, j.dtype) == ((4,), "i32")
    assert isinstance(y, Tensor) and "2x3xf16" in repr(y)
    tr.output("y", y)
    tr.output("z", z)
    tr.output("m", m)
    tr.output("j", j)
    text = tr.mlir()
    assert "poot.constant dense<2.000000e+00> : tensor<f16>" in text
    assert "poot.constant dense<1> : tensor<i32>" in text
    assert "poot.matmul" in text and "poot.neg" in text


def test_current_tracer_and_context_manager() -> None:
    with Tracer("outer") as outer:
        c = ops.constant(1.5)
        assert c.tracer is outer and (c.shape, c.dtype) == ((), "f32")
        with Tracer("inner") as inner:
            assert Tracer.current() is inner
            t = ops.iota((2, 3), 1)
            assert t.tracer is inner and t.dtype == "i32"
            inner.output("t", t)
        assert inner.finished
        assert Tracer.current() is outer
        outer.output("c", c)
    assert outer.finished


def test_constants_of_every_dtype() -> None:
    import numpy as np

    tr = Tracer("consts")
    values = {
        "f64": ops.constant(np.arange(3, dtype=np.float64)),
        "f32": ops.constant([1.0, 2.0]),
        "f16": ops.constant(np.ones((2, 2), np.float16)),
        "bf16": ops.constant([[0.5, -2.0], [3.0, 1e30]], "bf16"),
        "i32": ops.constant(np.arange(4)),
        "i1": ops.constant([True, False]),
        "splat": ops.constant(-1.0, "bf16", shape=(2, 3)),
    }
    assert values["f64"].dtype == "f64" and values["f32"].dtype == "f32"
    assert values["bf16"].shape == (2, 2) and values["i1"].dtype == "i1"
    assert values["splat"].shape == (2, 3) and values["i32"].dtype == "i32"
    for name, value in values.items():
        tr.output(name, value)
    tr.finish()


# --- source locations -----------------------------------------------------------


def test_every_op_carries_the_callers_line() -> None:
    tr = Tracer("locs")
    x = tr.input("x", (1, 2, 4, 8))
    line_plain = this_line() + 1
    y = ops.exp(x) + 1.0
    line_composite = this_line() + 1
    out = ops.attention_prefill(x, x, x)
    tr.output("y", y)
    tr.output("out", out)
    tr.finish()
    here = Path(__file__).name
    lines = set()
    for op in tr._block.operations:
        loc = str(op.location)
        match = re.match(r'loc\("(.*)":(\d+):(\d+)\)', loc)
        assert match, loc
        assert Path(match.group(1)).name == here
        lines.add(int(match.group(2)))
    # exp, the constant and add on one line; every op of the composite on the
    # call's line; the return at finish().
    assert line_plain in lines and line_composite in lines
    composite_ops = [op for op in tr._block.operations if f":{line_composite}:" in str(op.location)]
    assert len(composite_ops) > 15


def test_column_points_at_the_subexpression() -> None:
    tr = Tracer("cols")
    x = tr.input("x", (4,))
    ops.exp(x) * ops.tanh(x)
    exp_col, tanh_col, _ = [
        int(str(op.location).split(":")[-1].rstrip(")")) for op in tr._block.operations
    ]
    assert tanh_col - exp_col == len("ops.exp(x) * ")


def test_locations_survive_poot_opt() -> None:
    tool = poot_opt()
    if tool is None:
        pytest.skip("poot-opt not found")
    tr = Tracer("step")
    x = tr.input("x", (3,))
    line = this_line() + 1
    tr.output("y", ops.sqrt(x))
    text = tr.mlir(debug_info=True)
    proc = subprocess.run(
        [tool, "--mlir-print-debuginfo"], input=text, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert f'{Path(__file__).name}":{line}:' in proc.stdout


# --- verification and round trip ---------------------------------------------------


def test_poot_opt_round_trips_a_traced_module() -> None:
    tool = poot_opt()
    if tool is None:
        pytest.skip("poot-opt not found")
    tr = Tracer("rt")
    kc = tr.state("k0", (1, 2, 8, 4))
    vc = tr.state("v0", (1, 2, 8, 4))
    pos = tr.pos(max_pos=7)
    q = tr.input("q", (1, 4, 1, 4))
    k = tr.input("k", (1, 2, 1, 4))
    v = tr.input("v", (1, 2, 1, 4))
    out, k1, v1 = ops.attention_live(q, k, v, kc, vc, pos, softcap=10.0)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    text = tr.mlir()
    first = subprocess.run(
        [tool, "-poot-verify-driver-contract"], input=text, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run([tool], input=first.stdout, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    # Same IR as the tracer printed, up to the printer's spacing.
    with ir.Context():
        assert str(ir.Module.parse(first.stdout)) == str(ir.Module.parse(text))


# --- refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action, words",
    [
        (lambda tr: tr.state("", (1,)), ["state", "name"]),
        (lambda tr: tr.state("s", (1, -2)), ["state 's'", "shape"]),
        (lambda tr: tr.state("s", (2,), "f8"), ["state 's'", "dtype", "f8"]),
        (lambda tr: (tr.input("x", (1,)), tr.input("x", (2,))), ["input 'x'", "already exists"]),
        (lambda tr: tr.input("r", (2,), "f32", range=(0, 3)), ["input 'r'", "range", "i32"]),
        (lambda tr: tr.input("r", (2,), "i32", range=(3, 0)), ["input 'r'", "empty"]),
        (lambda tr: tr.input("m", (2,), "i32", slot="slot_map"), ["input 'm'", "slot_map", "2-D"]),
        (
            lambda tr: tr.input("m", (2, 2), "i32", slot="write_map"),
            ["input 'm'", "write_map", "1-D"],
        ),
        (lambda tr: tr.input("m", (2,), "i32", slot="pos"), ["input 'm'", "slot"]),
        (lambda tr: (tr.pos(3), tr.pos(4, name="p2")), ["pos", "already has a pos"]),
        (lambda tr: tr.pos(-1), ["pos", "max_pos"]),
        (lambda tr: tr.output("y", 3.0), ["output 'y'", "traced Tensor"]),
        (
            lambda tr: tr.state_out("nope", tr.input("x", (1,))),
            ["state_out 'nope'", "no state argument"],
        ),
        (
            lambda tr: (tr.state("s", (2,)), tr.state_out("s", tr.input("x", (3,)))),
            ["state_out 's'", "shape"],
        ),
        (lambda tr: tr.validation("ok", tr.input("x", (1,))), ["validation 'ok'", "0-d i1"]),
        (lambda tr: (tr.state("s", (2,)), tr.finish()), ["finish", "state 's'", "state_out"]),
        (
            lambda tr: (tr.output("y", tr.input("x", (1,))), tr.output("y", tr.input("z", (1,)))),
            ["output 'y'", "already exists"],
        ),
    ],
)
def test_tracer_refusals_name_the_argument(action, words) -> None:
    tr = Tracer("bad")
    with pytest.raises(TraceError) as info:
        action(tr)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_a_finished_tracer_accepts_nothing() -> None:
    tr = Tracer("done")
    x = tr.input("x", (2,))
    tr.output("x", x)
    tr.finish()
    for action, words in [
        (lambda: ops.exp(x), ["finished"]),
        (lambda: tr.input("y", (1,)), ["finished"]),
        (lambda: tr.output("z", x), ["finished"]),
    ]:
        with pytest.raises(TraceError) as info:
            action()
        assert all(w in str(info.value) for w in words)


def test_tensors_of_two_tracers_do_not_mix() -> None:
    a = Tracer("a")
    x = a.input("x", (2,))
    b = Tracer("b")
    y = b.input("y", (2,))
    # b is being traced (the current tracer): the stray value is x, from a,
    # whichever side it is on.
    with pytest.raises(TraceError, match=r"add: lhs was traced by another Tracer \('a', not 'b'\)"):
        ops.add(x, y)
    with pytest.raises(TraceError, match=r"add: rhs was traced by another Tracer \('a', not 'b'\)"):
        ops.add(y, x)
    with pytest.raises(TraceError, match=r"select: on_false was traced by another Tracer \('a'"):
        ops.select(ops.compare("gt", y, 0.0), y, x)
    with pytest.raises(TraceError, match=r"concat: inputs\[1\] was traced by another Tracer \('a'"):
        ops.concat([y, x, y], 0)
    with pytest.raises(TraceError, match=r"attention_prefill: q was traced by another Tracer \('a'"):
        q4 = a.input("q4", (1, 1, 2, 2))
        k4 = b.input("k4", (1, 1, 2, 2))
        ops.attention_prefill(q4, k4, k4)
    with pytest.raises(TraceError, match=r"output 'x': value was traced by another Tracer"):
        b.output("x", x)
    b.output("y", y)
    b.finish()
    a.output("x", x)
    a.finish()


def test_a_tensor_has_no_truth_value() -> None:
    tr = Tracer("t")
    x = tr.input("x", (2,))
    with pytest.raises(TraceError, match="select"):
        bool(x)
    tr.output("x", x)
    tr.finish()


def test_no_current_tracer() -> None:
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    tracer_module._ACTIVE.clear()
    try:
        with pytest.raises(TraceError, match="no active Tracer"):
            ops.iota((3,), 0)
    finally:
        tracer_module._ACTIVE.extend(saved)


def test_a_refused_op_emits_nothing() -> None:
    tr = Tracer("atomic")
    x = tr.input("x", (2, 3))
    i = tr.input("i", (2,), "i32")
    before = op_count(tr)
    with pytest.raises(TraceError, match="rhs"):
        ops.add(i, 0.5)  # a non-integer scalar for an i32 op: no constant either
    with pytest.raises(TraceError, match="on_false"):
        ops.select(ops.gt(i, 0), i, 2**40)  # gt and its constant are fine; the select is not
    assert op_count(tr) == before + 2
    tr.output("x", x)
    tr.finish()


def test_trace_errors_inside_with_retire_the_tracer() -> None:
    from poot_mlir.frontend import tracer as tracer_module

    with pytest.raises(TraceError):
        with Tracer("broken") as tr:
            ops.exp(tr.input("i", (2,), "i32"))
    assert tr not in tracer_module._ACTIVE


@pytest.mark.parametrize(
    "declare",
    [
        lambda tr: tr.input("x", (2, 0)),
        lambda tr: tr.state("s", (0,)),
        lambda tr: ops.slice(tr.input("x", (2, 4)), (0, 1), (2, 1)),
        lambda tr: ops.reshape(tr.input("x", (2, 4)), (0, -1)),
        lambda tr: ops.broadcast_to(tr.input("x", (1, 4)), (0, 4)),
        lambda tr: ops.iota((3, 0), 0),
        lambda tr: ops.constant(np.zeros((0, 2), np.float32)),
        lambda tr: ops.constant(1.0, shape=(4, 0)),
    ],
    ids=["input", "state", "slice", "reshape", "broadcast", "iota", "array constant", "splat"],
)
def test_zero_sized_shapes_are_refused(declare) -> None:
    """The dialect refuses zero-sized dimensions at the type; the frontend
    refuses them where they are written, naming the argument, and emits
    nothing."""
    tr = Tracer("t")
    with pytest.raises(TraceError, match=r"zero-sized|at least one|below 1"):
        declare(tr)
    tr.output("ok", tr.input("ok", (2,)))
    text = tr.mlir()
    assert "tensor<0" not in text and "x0x" not in text


@pytest.mark.parametrize(
    "declare",
    [
        lambda tr: tr.input("m", (2,), "i32", range=(0, 2**31)),
        lambda tr: tr.input("m", (2,), "i32", range=(-(2**31) - 1, 0)),
        lambda tr: tr.pos(max_pos=2**31),
        lambda tr: tr.slot_map("r", 1, 4, 2**31 + 1),
    ],
    ids=["max", "min", "pos", "slot_map"],
)
def test_ranges_must_fit_i32(declare) -> None:
    tr = Tracer("t")
    with pytest.raises(TraceError, match="does not fit i32"):
        declare(tr)
