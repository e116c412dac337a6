"""The binder contract (check_bind / run / Session.step): every BindError
subclass, ValidationFailure, and the no-partial-publish rule for state."""

from __future__ import annotations

import numpy as np
import pytest

from poot_mlir import oracle
from poot_mlir.errors import (
    BindError,
    MissingInputError,
    RangeBindError,
    ShapeBindError,
    ValidationFailure,
    WriteMapError,
)

STEP = """
func.func @step(%cache: tensor<1x8x2xf32> {poot.slot = #poot.slot<state "c0">},
                %pool: tensor<6x2xf32> {poot.slot = #poot.slot<state "pool">},
                %row: tensor<1x1x2xf32> {poot.name = "row"},
                %pos: tensor<i32> {poot.name = "pos", poot.slot = #poot.slot<pos>, poot.range = #poot.range<0, 7>},
                %write: tensor<3xi32> {poot.name = "write", poot.slot = #poot.slot<write_map>},
                %rows: tensor<3x2xf32> {poot.name = "rows"},
                %read: tensor<2x2xi32> {poot.name = "read", poot.slot = #poot.slot<slot_map>, poot.range = #poot.range<0, 5>},
                %len: tensor<2xi32> {poot.name = "len"})
    -> (tensor<1x8x2xf32> {poot.slot = #poot.slot<state "c0">},
        tensor<6x2xf32> {poot.slot = #poot.slot<state "pool">},
        tensor<2x2x2xf32> {poot.name = "view"},
        tensor<i1> {poot.name = "len_ok", poot.slot = #poot.slot<validation>}) {
  %c1 = poot.dynamic_update_slice %cache, %row, %pos axis = 1 : tensor<1x8x2xf32>, tensor<1x1x2xf32>, tensor<i32>
  %p1 = poot.scatter_update %pool[%write], %rows : tensor<6x2xf32>, tensor<3xi32>, tensor<3x2xf32>
  %g = poot.gather %p1[%read] axis = 0 : (tensor<6x2xf32>, tensor<2x2xi32>) -> tensor<2x2x2xf32>
  %l, %ok = poot.index_guard %len min = 1 max = 8 : tensor<2xi32>
  return %c1, %p1, %g, %ok : tensor<1x8x2xf32>, tensor<6x2xf32>, tensor<2x2x2xf32>, tensor<i1>
}
"""


def good_inputs(rng: np.random.Generator) -> dict[str, object]:
    return {
        "row": rng.standard_normal((1, 1, 2)).astype(np.float32),
        "pos": np.int32(rng.integers(0, 8)),
        "write": np.array([int(rng.integers(0, 3)), -1, int(rng.integers(3, 6))], np.int32),
        "rows": rng.standard_normal((3, 2)).astype(np.float32),
        "read": rng.integers(0, 6, (2, 2)).astype(np.int32),
        "len": rng.integers(1, 9, 2).astype(np.int32),
    }


def fresh_state(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "c0": rng.standard_normal((1, 8, 2)).astype(np.float32),
        "pool": rng.standard_normal((6, 2)).astype(np.float32),
    }


def full_inputs(rng: np.random.Generator) -> dict[str, object]:
    return {**good_inputs(rng), **fresh_state(rng)}


def test_good_inputs_bind_by_name_state_name_or_position(rng) -> None:
    inputs = full_inputs(rng)
    bound = oracle.check_bind(STEP, inputs)
    assert [b.shape for b in bound] == [
        (1, 8, 2),
        (6, 2),
        (1, 1, 2),
        (),
        (3,),
        (3, 2),
        (2, 2),
        (2,),
    ]
    by_position = [inputs[k] for k in ("c0", "pool", "row", "pos", "write", "rows", "read", "len")]
    res = oracle.run(STEP, by_position)
    assert set(res.state) == {"c0", "pool"} and set(res.named) == {"view", "len_ok"}
    np.testing.assert_array_equal(res.state["c0"][0, int(inputs["pos"])], inputs["row"][0, 0])
    # Untyped Python scalars and lists convert to the argument's type.
    loose = dict(inputs, pos=int(inputs["pos"]), len=[int(v) for v in inputs["len"]])
    assert oracle.check_bind(STEP, loose)[3].dtype == np.int32


def test_missing_input(rng) -> None:
    inputs = full_inputs(rng)
    del inputs["read"]
    with pytest.raises(MissingInputError, match="read"):
        oracle.check_bind(STEP, inputs)
    with pytest.raises(MissingInputError, match="pool"):
        oracle.run(STEP, [fresh_state(rng)["c0"]])


def test_unknown_or_doubled_input_is_refused(rng) -> None:
    with pytest.raises(BindError, match="unknown"):
        oracle.check_bind(STEP, dict(full_inputs(rng), lenn=np.int32(1)))
    doubled = dict(full_inputs(rng), arg0=fresh_state(rng)["c0"])
    with pytest.raises(BindError, match="twice"):
        oracle.check_bind(STEP, doubled)


@pytest.mark.parametrize(
    "name, value",
    [
        ("row", np.ones((1, 2, 2), np.float32)),
        ("row", np.ones((1, 1, 2), np.float64)),
        ("pos", np.array([3], np.int32)),
        ("pos", np.int16(3)),  # (int64 binds to i32 when it fits: test_boundary_errors.py)
        ("pos", 2.5),
        ("len", [1, 2**40]),
        ("c0", np.ones((1, 8, 2), np.float16)),
    ],
)
def test_shape_or_dtype_mismatch(rng, name, value) -> None:
    with pytest.raises(ShapeBindError, match=name if name != "c0" else "arg0"):
        oracle.check_bind(STEP, dict(full_inputs(rng), **{name: value}))


def test_range_error_names_argument_value_and_index(rng) -> None:
    inputs = full_inputs(rng)
    inputs["pos"] = np.int32(8)
    with pytest.raises(RangeBindError, match=r"'pos'.*value 8 at index \(\).*#poot.range<0, 7>"):
        oracle.check_bind(STEP, inputs)
    inputs = full_inputs(rng)
    read = inputs["read"].copy()
    read[1, 0] = 6
    inputs["read"] = read
    with pytest.raises(RangeBindError, match=r"'read'.*value 6 at index \(1, 0\)"):
        oracle.run(STEP, inputs)


@pytest.mark.parametrize(
    "write, reason",
    [
        ([0, 6, -1], r"word 6 at index \(1,\)"),
        ([-2, 1, 2], "word -2"),
        ([4, -1, 4], "slot 4 is named more than once"),
    ],
)
def test_write_map_refusals(rng, write, reason) -> None:
    inputs = dict(full_inputs(rng), write=np.array(write, np.int32))
    with pytest.raises(WriteMapError, match=reason):
        oracle.check_bind(STEP, inputs)


def test_write_map_pool_size_comes_from_the_declared_range(rng) -> None:
    text = """
func.func @f(%w: tensor<2xi32> {poot.slot = #poot.slot<write_map>, poot.range = #poot.range<-1, 3>}) -> tensor<2xi32> {
  return %w : tensor<2xi32>
}"""
    assert oracle.check_bind(text, [np.array([3, -1], np.int32)])[0].tolist() == [3, -1]
    with pytest.raises(WriteMapError, match="pool slot in \\[0, 4\\)"):
        oracle.check_bind(text, [np.array([4, -1], np.int32)])


def test_validation_failure_and_nothing_runs_on_a_bind_error(rng) -> None:
    inputs = full_inputs(rng)
    inputs["len"] = np.array([1, 9], np.int32)
    with pytest.raises(ValidationFailure, match="len_ok"):
        oracle.run(STEP, inputs)


def test_session_publishes_only_complete_steps(rng) -> None:
    state = fresh_state(rng)
    sess = oracle.Session(STEP, state)
    state["c0"][:] = np.nan  # the session holds its own copy
    assert not np.isnan(sess.state["c0"]).any()
    before = {k: v.copy() for k, v in sess.state.items()}

    def unchanged() -> None:
        assert set(sess.state) == set(before)
        for k in before:
            np.testing.assert_array_equal(sess.state[k], before[k])

    bad_cases = [
        (MissingInputError, {k: v for k, v in good_inputs(rng).items() if k != "rows"}),
        (ShapeBindError, dict(good_inputs(rng), rows=np.ones((3, 2), np.float64))),
        (RangeBindError, dict(good_inputs(rng), pos=np.int32(-1))),
        (WriteMapError, dict(good_inputs(rng), write=np.array([1, 1, -1], np.int32))),
        (ValidationFailure, dict(good_inputs(rng), len=np.array([0, 3], np.int32))),
        (BindError, dict(good_inputs(rng), c0=before["c0"])),
    ]
    for error, inputs in bad_cases:
        with pytest.raises(error):
            sess.step(inputs)
        unchanged()

    good = good_inputs(rng)
    res = sess.step(good)
    pos = int(good["pos"])
    np.testing.assert_array_equal(sess.state["c0"][0, pos], good["row"][0, 0])
    np.testing.assert_array_equal(
        np.delete(sess.state["c0"], pos, axis=1), np.delete(before["c0"], pos, axis=1)
    )
    expected_pool = before["pool"].copy()
    for i, slot in enumerate(good["write"].tolist()):
        if slot >= 0:
            expected_pool[slot] = good["rows"][i]
    np.testing.assert_array_equal(sess.state["pool"], expected_pool)
    # Mutating what a step returned does not reach the session's state.
    res.state["pool"][:] = np.nan
    assert not np.isnan(sess.state["pool"]).any()


def test_session_needs_its_state(rng) -> None:
    with pytest.raises(BindError, match="unknown state"):
        oracle.Session(STEP, dict(fresh_state(rng), bogus=np.ones(2, np.float32)))
    # A missing state is refused when the session is created, not at a step.
    with pytest.raises(MissingInputError, match="pool"):
        oracle.Session(STEP, {"c0": fresh_state(rng)["c0"]})


def test_one_binder_serves_the_oracle_and_the_runtimes(tmp_path) -> None:
    """The oracle binds through runtime.binding over the description a
    manifest carries: the same value, the same refusal text. A Python float
    rounds to bf16 once (1 + 2^-8 + 2^-30 is above the midpoint: 1 + 2^-7),
    not twice through f32 (which would land on the midpoint and tie to 1)."""
    import json

    from poot_mlir.compiler.cpu import compile_cpu
    from poot_mlir.oracle import binding as oracle_binding
    from poot_mlir.oracle.program import load
    from poot_mlir.runtime import binding

    text = (
        'func.func @f(%x: tensor<bf16> {poot.name = "x"}, %p: tensor<i32> {poot.name = "p", '
        "poot.range = #poot.range<0, 7>}) -> tensor<bf16> {\n"
        "  return %x : tensor<bf16>\n}"
    )
    program = load(text)
    manifest = json.loads((compile_cpu(text, tmp_path / "a") / "manifest.json").read_text())
    from_manifest = binding.Signature.from_json(manifest["function"])
    assert [p.key for p in program.signature.args] == [p.key for p in from_manifest.args]
    assert [p.range for p in program.signature.args] == [p.range for p in from_manifest.args]
    x, _ = oracle_binding.bind(program, {"x": 1 + 2**-8 + 2**-30, "p": 3})
    assert float(x) == 1 + 2**-7
    for bad in ({"x": 1.0, "p": 8}, {"x": np.float32(1.0), "p": 3}, {"x": 1.0}):
        with pytest.raises(Exception) as from_oracle:
            oracle_binding.bind(program, bad)
        with pytest.raises(Exception) as from_runtime:
            binding.bind(from_manifest, bad)
        assert type(from_oracle.value) is type(from_runtime.value)
        assert str(from_oracle.value) == str(from_runtime.value)
