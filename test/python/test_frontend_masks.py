"""`ops.where` and `ops.masked_fill`, PyTorch's spellings of a boolean mask:
the chain each emits, its values against numpy on fresh random inputs, and
the refusals (naming the argument, nothing emitted)."""

from __future__ import annotations

import numpy as np
import pytest

from poot_mlir import oracle
from poot_mlir.errors import TraceError
from poot_mlir.frontend import Tracer, ops


@pytest.fixture(autouse=True)
def tracer_stack():
    from poot_mlir.frontend import tracer as tracer_module

    saved = list(tracer_module._ACTIVE)
    yield
    tracer_module._ACTIVE[:] = saved


def test_masked_fill_is_one_constant_and_one_select(rng: np.random.Generator) -> None:
    tr = Tracer("fill")
    x = tr.input("x", (2, 3, 4))
    mask = tr.input("mask", (1, 3, 4), "i1")
    before = len(list(tr._block.operations))
    out = ops.masked_fill(x, mask, float("-inf"))
    ops_emitted = [op.operation.name for op in list(tr._block.operations)[before:]]
    assert ops_emitted == ["poot.constant", "poot.select"]
    assert (out.shape, out.dtype) == ((2, 3, 4), "f32")
    tr.output("out", out)
    tr.output("where", ops.where(mask, x, 0.5))
    module = tr.finish()
    inputs = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32), "mask": rng.random((1, 3, 4)) < 0.5}
    got = oracle.run(module, inputs).named
    np.testing.assert_array_equal(got["out"], np.where(inputs["mask"], -np.inf, inputs["x"]))
    np.testing.assert_array_equal(got["where"], np.where(inputs["mask"], inputs["x"], np.float32(0.5)))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x, m, f, wide: ops.masked_fill(x, f, 0.0), "masked_fill: mask has dtype f32"),
        (lambda x, m, f, wide: ops.masked_fill(x, m, "big"), "masked_fill: value must be a number"),
        (lambda x, m, f, wide: ops.masked_fill(x, wide, 0.0), "masked_fill: mask"),
        (lambda x, m, f, wide: ops.where(f, x, 0.0), "select: cond has dtype f32"),
    ],
)
def test_refusals_name_the_argument_and_emit_nothing(call, message: str) -> None:
    tr = Tracer("bad")
    x = tr.input("x", (2, 3, 4))
    m = tr.input("m", (1, 3, 4), "i1")
    f = tr.input("f", (1, 3, 4))
    wide = ops.reshape(m, (3, 4, 1))  # does not broadcast to x
    before = len(list(tr._block.operations))
    with pytest.raises(TraceError, match=message):
        call(x, m, f, wide)
    assert len(list(tr._block.operations)) == before
