"""Bind gaps of issue 11, refused alike by the oracle's binder and the CPU
runtime's: a write map is always checked against its pool (found through
slices and reshapes, else the step is refused when compiled or loaded), a
Session steps on a mapping only, a Python bool is no position, and the state
a Session carries cannot be written through what it hands out.
"""

from __future__ import annotations

import numpy as np
import pytest

from poot_mlir import errors, oracle
from poot_mlir.oracle import program as oracle_program
from poot_mlir.compiler.cpu import compile_cpu
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime import cpu as runtime

SLOTS = 6


def sliced_write_map(declared: tuple[int, int] | None = None):
    """A write map with no range (or `declared`), reshaped and sliced before
    scatter_update: only words 1..2 reach the scatter."""
    tr = Tracer("step")
    pool = tr.state("pool", (SLOTS, 3), "f32")
    write = tr.input("write", (4,), "i32", slot="write_map", range=declared)
    rows = tr.input("rows", (2, 3), "f32")
    words = ops.slice(ops.reshape(write, (2, 2)), (0, 1), (2, 2))  # write[1], write[3]
    tr.state_out("pool", ops.scatter_update(pool, ops.reshape(words, (2,)), rows))
    return tr.finish()


def _bind_everywhere(module, art, state, inputs):
    """(oracle error, runtime error) of one step with `inputs`, each in a
    fresh Session; every Session's state must be untouched by a refusal."""
    caught = []
    for sess in (oracle.Session(str(module), state), art.session(state)):
        before = {k: v.copy() for k, v in sess.state.items()}
        with pytest.raises(errors.BindError) as info:
            sess.step(inputs)
        for name, value in sess.state.items():
            np.testing.assert_array_equal(value, before[name])
        caught.append(info.value)
    return caught


@pytest.fixture(scope="module")
def sliced(tmp_path_factory: pytest.TempPathFactory):
    module = sliced_write_map()
    return module, runtime.load(compile_cpu(str(module), tmp_path_factory.mktemp("sliced") / "a"))


def _state(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"pool": rng.standard_normal((SLOTS, 3)).astype(np.float32)}


def test_sliced_write_map_gets_its_pool(sliced) -> None:
    module, art = sliced
    (port,) = [p for p in art.signature.args if p.slot == "write_map"]
    assert port.pool == SLOTS
    assert oracle_program.load(str(module)).write_map_pools == {1: SLOTS}


@pytest.mark.parametrize("index", [0, 1, 3], ids=["unscattered word", "scattered", "last"])
def test_out_of_pool_word_is_refused(sliced, rng: np.random.Generator, index: int) -> None:
    """Out-of-pool words used to bind and be dropped by the scatter; every
    word is checked (one the slice skips too: the map is one contract)."""
    module, art = sliced
    write = np.array([-1, 0, -1, 2], dtype=np.int32)
    write[index] = SLOTS + int(rng.integers(0, 5))
    inputs = {"write": write, "rows": rng.standard_normal((2, 3)).astype(np.float32)}
    for error in _bind_everywhere(module, art, _state(rng), inputs):
        assert isinstance(error, errors.WriteMapError)
        assert f"[0, {SLOTS})" in str(error)


def test_sliced_write_map_steps_match(sliced, rng: np.random.Generator) -> None:
    module, art = sliced
    state = _state(rng)
    sess, ref = art.session(state), oracle.Session(str(module), state)
    write = np.array([-1, 4, -1, 1], dtype=np.int32)
    inputs = {"write": write, "rows": rng.standard_normal((2, 3)).astype(np.float32)}
    got, want = sess.step(inputs), ref.step(inputs)
    np.testing.assert_array_equal(got.state["pool"], want.state["pool"])
    expected = state["pool"].copy()
    expected[[4, 1]] = inputs["rows"]
    np.testing.assert_array_equal(got.state["pool"], expected)


def test_declared_range_wider_than_the_pool_uses_the_pool(tmp_path, rng) -> None:
    """A range max past the pool used to be the bound: words in [S, max]
    bound and were dropped. The smaller of the two is the pool."""
    module = sliced_write_map(declared=(-1, 2 * SLOTS))
    art = runtime.load(compile_cpu(str(module), tmp_path / "a"))
    assert art.signature.args[1].pool == SLOTS
    write = np.array([-1, SLOTS + 1, -1, 0], dtype=np.int32)
    inputs = {"write": write, "rows": rng.standard_normal((2, 3)).astype(np.float32)}
    for error in _bind_everywhere(module, art, _state(rng), inputs):
        assert isinstance(error, errors.WriteMapError)


def test_declared_range_lower_bound_holds_for_write_maps(tmp_path, rng) -> None:
    """A write map declared in [0, S) takes no -1: the declared range is
    checked as for any argument (the range analysis relies on it)."""
    module = sliced_write_map(declared=(0, SLOTS - 1))
    art = runtime.load(compile_cpu(str(module), tmp_path / "a"))
    write = np.array([0, -1, 1, 2], dtype=np.int32)
    inputs = {"write": write, "rows": rng.standard_normal((2, 3)).astype(np.float32)}
    for error in _bind_everywhere(module, art, _state(rng), inputs):
        assert isinstance(error, errors.RangeBindError)


def _unbounded_write_map(route: str):
    tr = Tracer("step")
    pool = tr.state("pool", (SLOTS, 3), "f32")
    write = tr.input("write", (2,), "i32", slot="write_map")
    rows = tr.input("rows", (2, 3), "f32")
    if route == "arithmetic":  # the words are changed before the scatter
        tr.state_out("pool", ops.scatter_update(pool, ops.add(write, 1), rows))
    else:  # never scattered
        tr.state_out("pool", pool)
        tr.output("echo", write)
    return tr.finish()


@pytest.mark.parametrize("route", ["arithmetic", "unused"])
def test_write_map_without_a_pool_is_refused_up_front(tmp_path, route: str) -> None:
    module = _unbounded_write_map(route)
    with pytest.raises(errors.WriteMapPoolError, match=r"'write' \(arg1\) has no pool"):
        compile_cpu(str(module), tmp_path / "a")
    assert not (tmp_path / "a" / "manifest.json").exists()
    with pytest.raises(errors.WriteMapPoolError, match="has no pool"):
        oracle.Session(str(module))
    with pytest.raises(errors.WriteMapPoolError):
        oracle.run(str(module), {"write": [0, 1], "rows": np.ones((2, 3), np.float32)})


def test_manifest_without_pool_is_refused_at_bind(sliced, tmp_path, rng) -> None:
    """A hand-edited manifest that lost `pool` cannot be bound unchecked."""
    _, art = sliced
    signature = runtime.Signature.from_json(
        {
            **art.manifest["function"],
            "inputs": [
                {k: v for k, v in e.items() if k != "pool"} for e in art.manifest["function"]["inputs"]
            ],
        }
    )
    with pytest.raises(errors.WriteMapError, match="no pool size"):
        runtime.binding.bind(
            signature,
            {"pool": _state(rng)["pool"], "write": np.zeros(4, np.int32),
             "rows": np.zeros((2, 3), np.float32)},
        )


# --- Session.step inputs and Python bools -------------------------------------------


def live_module():
    tr = Tracer("step")
    kc = tr.state("k0", (1, 2, 8, 4))
    vc = tr.state("v0", (1, 2, 8, 4))
    pos = tr.pos(max_pos=7)
    q = tr.input("q", (1, 2, 1, 4))
    k = tr.input("k", (1, 2, 1, 4))
    v = tr.input("v", (1, 2, 1, 4))
    out, k1, v1 = ops.attention_live(q, k, v, kc, vc, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr.finish()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    module = live_module()
    return module, runtime.load(compile_cpu(str(module), tmp_path_factory.mktemp("live") / "a"))


def _live_state(rng) -> dict[str, np.ndarray]:
    return {n: rng.standard_normal((1, 2, 8, 4)).astype(np.float32) for n in ("k0", "v0")}


def _live_inputs(rng, pos) -> dict[str, object]:
    inputs = {n: rng.standard_normal((1, 2, 1, 4)).astype(np.float32) for n in ("q", "k", "v")}
    inputs["pos"] = pos
    return inputs


@pytest.mark.parametrize("inputs", ["list", "tuple", "array"])
def test_session_step_takes_a_mapping(live, rng, inputs: str) -> None:
    module, art = live
    values = list(_live_inputs(rng, 3).values())
    given = {"list": values, "tuple": tuple(values), "array": np.zeros(3)}[inputs]
    for error in _bind_everywhere(module, art, _live_state(rng), given):
        assert type(error) is errors.BindError
        assert "takes a mapping" in str(error)


@pytest.mark.parametrize("pos", [True, False, np.bool_(True), [True]], ids=["True", "False", "np.True_", "[True]"])
def test_a_bool_is_no_position(live, rng, pos) -> None:
    module, art = live
    for error in _bind_everywhere(module, art, _live_state(rng), _live_inputs(rng, pos)):
        assert isinstance(error, errors.ShapeBindError)
        assert "'pos'" in str(error)
    # Direct runs refuse it too, and an int still binds.
    inputs = {**_live_inputs(rng, True), **_live_state(rng)}
    with pytest.raises(errors.ShapeBindError):
        art.run(inputs)
    with pytest.raises(errors.ShapeBindError):
        oracle.run(str(module), inputs)
    art.run({**inputs, "pos": 1})


def test_a_bool_still_binds_to_an_i1_argument() -> None:
    tr = Tracer("step")
    flag = tr.input("flag", (), "i1")
    tr.output("same", ops.select(flag, ops.constant(1.0), ops.constant(2.0)))
    module = str(tr.finish())
    assert float(oracle.run(module, {"flag": True}).named["same"]) == 1.0
    with pytest.raises(errors.ShapeBindError):
        oracle.run(module, {"flag": 2})


# --- the carried state is read-only ------------------------------------------------


def test_carried_state_cannot_be_written_through_a_result(live, rng) -> None:
    module, art = live
    state = _live_state(rng)
    sessions = {"cpu": art.session(state), "oracle": oracle.Session(str(module), state)}
    ref = oracle.Session(str(module), state)
    for pos in range(3):
        inputs = _live_inputs(rng, pos)
        want = ref.step(inputs)
        for name, sess in sessions.items():
            got = sess.step(inputs)
            carried = sess.state["k0"].copy()
            for handed_out in (got.state["k0"], sess.state["k0"]):
                try:
                    handed_out[...] = 0.0
                except ValueError:
                    pass  # read-only
            # Whatever the caller did to what it was handed, the carried
            # state is what the step produced.
            np.testing.assert_array_equal(sess.state["k0"], carried, err_msg=f"{name} at {pos}")
            np.testing.assert_array_equal(sess.state["k0"], want.state["k0"], err_msg=f"{name}")
            np.testing.assert_allclose(got.named["out"], want.named["out"], rtol=1e-5, atol=1e-6)
            with pytest.raises(ValueError, match="read-only"):
                sess.state["v0"][0, 0, 0, 0] = 1.0
    # The caller's initial arrays are the caller's: the sessions copied them.
    state["k0"][...] = 7.0
    assert not np.any(sessions["cpu"].state["k0"] == 7.0)
