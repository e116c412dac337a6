"""Typed errors at the runtime boundary (issue 26): each mistake a caller can
make when naming a device, creating a session, stepping it, or handing it
torch tensors is a `poot_mlir.errors` type whose message names the fix, in
every runtime (CPU, the GPU program runtime on lavapipe, the oracle); and
what is not a mistake (a parameter that requires grad, int64 token ids that
fit an i32 port) is read, with the results the oracle gives on fresh random
inputs.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import system_deps
from poot_mlir import errors, oracle
from poot_mlir.compiler import compile_cpu, compile_gpu, devices
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime import binding
from poot_mlir.runtime import cpu as cpu_runtime
from system_deps import require

V, D, N, CAP = 9, 4, 3, 6
STATES = ("cache", "acc")


def boundary_module():
    """Token ids gathered from a table (a weight: a constant of a GPU
    session), the first row written into a cache at pos, the rows summed into
    an accumulator; both carried as state."""
    tr = Tracer("step")
    cache = tr.state("cache", (CAP, D), "f32")
    acc = tr.state("acc", (N, D), "f32")
    table = tr.input("table", (V, D), "f32")
    ids = tr.input("ids", (N,), "i32")
    pos = tr.pos(max_pos=CAP - 1)
    rows = ops.gather(table, ids, 0)
    first = ops.slice(rows, (0, 0), (1, D), (1, 1))
    tr.output("rows", rows)
    tr.output("twice", ops.add(ids, ids))
    tr.state_out("cache", ops.dynamic_update_slice(cache, first, pos, 0))
    tr.state_out("acc", ops.add(acc, rows))
    return tr.finish()


@pytest.fixture(scope="module")
def text() -> str:
    return str(boundary_module())


@pytest.fixture(scope="module")
def cpu_path(text, tmp_path_factory):
    return compile_cpu(text, tmp_path_factory.mktemp("boundary_cpu") / "step")


@pytest.fixture(scope="module")
def gpu_path(text, tmp_path_factory):
    require("vulkan")
    return compile_gpu(text, devices.VULKAN_LAVAPIPE, tmp_path_factory.mktemp("boundary_gpu") / "step")


@pytest.fixture
def torch():
    require("torch")
    import torch

    return torch


def _state(rng) -> dict[str, np.ndarray]:
    return {
        "cache": rng.standard_normal((CAP, D)).astype(np.float32),
        "acc": rng.standard_normal((N, D)).astype(np.float32),
    }


def _inputs(rng) -> dict[str, object]:
    return {
        "table": rng.standard_normal((V, D)).astype(np.float32),
        "ids": rng.integers(0, V, N).astype(np.int32),
        "pos": np.int32(rng.integers(0, CAP)),
    }


def _want(text, state, inputs):
    """The oracle's step on int32 ids (what every other spelling must give)."""
    plain = {k: (np.asarray(v, np.int32) if k in ("ids", "pos") else np.asarray(v)) for k, v in inputs.items()}
    return oracle.run(text, {**state, **plain})


def _assert_step(got, want, state_now=None) -> None:
    np.testing.assert_array_equal(got.named["rows"], want.named["rows"])
    np.testing.assert_array_equal(got.named["twice"], want.named["twice"])
    assert got.named["twice"].dtype == np.int32
    if state_now is not None:
        for name in STATES:
            np.testing.assert_array_equal(state_now[name], want.state[name], err_msg=name)


# --- 1. unknown device names ----------------------------------------------------


def test_an_unknown_device_name_lists_the_known_ones() -> None:
    with pytest.raises(errors.UnknownDeviceError) as caught:
        devices.get("h100")
    error = caught.value
    assert isinstance(error, KeyError) and isinstance(error, errors.PootError)
    message = str(error)
    assert message.startswith("unknown device 'h100'")  # a sentence, not KeyError's repr
    for name in devices.PRESETS:
        assert name in message
    assert "Device.custom" in message
    assert error.name == "h100" and set(error.known) == set(devices.PRESETS)
    # Callers that catch KeyError still do.
    with pytest.raises(KeyError):
        devices.get("sm90")
    assert devices.get("sm_90") is devices.SM_90


def test_an_unknown_gpu_backend_lists_the_known_ones() -> None:
    from poot_mlir.runtime.program import BACKENDS, make_device

    with pytest.raises(errors.UnknownDeviceError) as caught:
        make_device("vulkn")
    for name in BACKENDS:
        assert name in str(caught.value)
    assert caught.value.known == BACKENDS


# --- 2. a session without its state ---------------------------------------------


def _check_missing(error: errors.MissingStateError, missing: tuple[str, ...]) -> None:
    assert isinstance(error, errors.MissingInputError)
    assert error.missing == missing
    message = str(error)
    for name in missing:
        assert repr(name) in message
    assert "session(" in message  # how to give it


@pytest.mark.parametrize("given", [(), ("cache",), ("acc",)])
def test_a_cpu_session_needs_every_state_up_front(cpu_path, rng, given) -> None:
    art = cpu_runtime.load(cpu_path)
    state = {k: v for k, v in _state(rng).items() if k in given}
    missing = tuple(name for name in STATES if name not in given)
    for make in (art.session, lambda s: cpu_runtime.Session(art, s)):
        with pytest.raises(errors.MissingStateError) as caught:
            make(state)
        _check_missing(caught.value, missing)
    if "cache" in missing:
        assert "'cache' (tensor<6x4xf32>)" in str(caught.value)
    with pytest.raises(errors.MissingStateError):
        art.session()


def test_the_oracle_session_needs_every_state_up_front(text, rng) -> None:
    with pytest.raises(errors.MissingStateError) as caught:
        oracle.Session(text, {"acc": _state(rng)["acc"]})
    _check_missing(caught.value, ("cache",))
    with pytest.raises(errors.BindError, match="unknown state"):
        oracle.Session(text, {**_state(rng), "bogus": np.zeros(2, np.float32)})


def test_a_full_cpu_session_steps_like_the_oracle(text, cpu_path, rng) -> None:
    art = cpu_runtime.load(cpu_path)
    state = _state(rng)
    sess = art.session(state)
    ref = oracle.Session(text, state)
    for _ in range(3):
        inputs = _inputs(rng)
        got = sess.step(inputs)
        want = ref.step(inputs)
        _assert_step(got, want)
        for name in STATES:
            np.testing.assert_array_equal(sess.state[name], ref.state[name], err_msg=name)


@pytest.mark.requires("vulkan")
def test_a_gpu_session_needs_every_state_up_front(gpu_path, rng) -> None:
    from poot_mlir.runtime.program import ProgramArtifact

    with ProgramArtifact(gpu_path, "lavapipe") as art:
        with pytest.raises(errors.MissingStateError) as caught:
            art.session({})
        _check_missing(caught.value, STATES)
        with pytest.raises(errors.MissingStateError) as caught:
            art.session({"acc": _state(rng)["acc"]}, constants={"table": _inputs(rng)["table"]})
        _check_missing(caught.value, ("cache",))
        inputs = _inputs(rng)
        with pytest.raises(errors.MissingStateError, match=r"'acc': run\(\) takes every state") as caught:
            art.run({"cache": _state(rng)["cache"], **inputs})
        assert caught.value.missing == ("acc",)


# --- 3. use after close -----------------------------------------------------------


def _step_inputs(rng) -> dict[str, object]:
    """A GPU session's step inputs (the table is its constant)."""
    return {k: v for k, v in _inputs(rng).items() if k != "table"}


def test_a_closed_cpu_session_or_artifact_refuses_to_step(text, cpu_path, rng) -> None:
    art = cpu_runtime.load(cpu_path)
    sess = art.session(_state(rng))
    sess.step(_inputs(rng))
    sess.close()
    assert sess.closed
    with pytest.raises(errors.ClosedError, match="session is closed.*artifact.session"):
        sess.step(_inputs(rng))
    with pytest.raises(errors.ClosedError):
        sess.state
    sess.close()  # idempotent

    with cpu_runtime.load(cpu_path) as art:
        state = _state(rng)
        other = art.session(state)
        inputs = _inputs(rng)
        _assert_step(art.run({**state, **inputs}), _want(text, state, inputs))
    assert art.closed
    for call in (lambda: art.run({**_state(rng), **_inputs(rng)}), lambda: art.session(_state(rng))):
        with pytest.raises(errors.ClosedError, match="artifact .* is closed.*load"):
            call()
    with pytest.raises(errors.ClosedError, match="artifact .* is closed"):
        other.step(_inputs(rng))
    # The refused step left the session's state as it was.
    for name in STATES:
        np.testing.assert_array_equal(other.state[name], state[name], err_msg=name)


@pytest.mark.requires("vulkan")
def test_a_closed_gpu_artifact_or_session_refuses_to_step(text, gpu_path, rng) -> None:
    """Today's "buffer is closed" from deep in the Vulkan runtime becomes a
    ClosedError saying what is closed, checked before anything is written."""
    from poot_mlir.runtime.program import ProgramArtifact, make_device

    art = ProgramArtifact(gpu_path, "lavapipe")
    state, inputs = _state(rng), _inputs(rng)
    table = inputs.pop("table")
    sess = art.session(state, constants={"table": table})
    got = sess.step(inputs)
    _assert_step(got, _want(text, state, {**inputs, "table": table}), sess.state)
    art.close()
    assert art.closed and sess.closed
    for call in (
        lambda: sess.step(_step_inputs(rng)),
        lambda: sess.state,
        lambda: art.run({**_state(rng), **_inputs(rng)}),
        lambda: art.session(_state(rng), constants={"table": table}),
    ):
        with pytest.raises(errors.ClosedError, match="artifact .* is closed"):
            call()

    # A session closed by itself; the artifact lives on.
    with ProgramArtifact(gpu_path, "lavapipe") as art:
        sess = art.session(_state(rng), constants={"table": table})
        sess.close()
        with pytest.raises(errors.ClosedError, match="session is closed"):
            sess.step(_step_inputs(rng))
        state, inputs = _state(rng), _inputs(rng)
        _assert_step(art.run({**state, **inputs}), _want(text, state, inputs))

    # A shared device closed by its owner.
    device = make_device("lavapipe")
    art = ProgramArtifact(gpu_path, device)
    sess = art.session(_state(rng), constants={"table": table})
    device.close()
    with pytest.raises(errors.ClosedError, match="device .* is closed"):
        sess.step(_step_inputs(rng))


# --- 4. torch tensors that require grad -----------------------------------------


def test_parameters_are_read_not_refused(text, cpu_path, rng, torch) -> None:
    art = cpu_runtime.load(cpu_path)
    state, inputs = _state(rng), _inputs(rng)
    table = torch.nn.Parameter(torch.from_numpy(inputs["table"].copy()))
    acc = torch.from_numpy(state["acc"].copy()).requires_grad_(True)
    assert table.requires_grad and acc.requires_grad
    port = next(p for p in art.signature.args if p.key == "table")
    bound = binding.normalize(port, table)
    assert bound.ctypes.data == table.data_ptr()  # read in place, no copy
    got = art.run({**state, **inputs, "table": table, "acc": acc})
    _assert_step(got, _want(text, state, inputs))
    # A computed tensor that requires grad (not a leaf) is read too.
    scaled = table * 1.0
    assert scaled.requires_grad and not scaled.is_leaf
    _assert_step(art.run({**state, **inputs, "table": scaled}), _want(text, state, inputs))
    # As a session's state, beside torch's int64 ids.
    sess = art.session({"cache": state["cache"], "acc": acc})
    res = sess.step({**inputs, "table": table, "ids": torch.tensor(inputs["ids"].tolist())})
    _assert_step(res, _want(text, state, inputs), sess.state)
    # Autograd is untouched: still a parameter, no grad accumulated.
    assert table.requires_grad and table.grad is None and acc.requires_grad


@pytest.mark.requires("vulkan")
def test_parameters_are_read_by_the_gpu_runtime(text, gpu_path, rng, torch) -> None:
    from poot_mlir.runtime.program import ProgramArtifact

    state, inputs = _state(rng), _inputs(rng)
    table = torch.nn.Parameter(torch.from_numpy(inputs.pop("table").copy()))
    acc = torch.nn.Parameter(torch.from_numpy(state["acc"].copy()))
    with ProgramArtifact(gpu_path, "lavapipe") as art:
        sess = art.session({"cache": state["cache"], "acc": acc}, constants={"table": table})
        got = sess.step(inputs)
        _assert_step(got, _want(text, state, {**inputs, "table": table.detach().numpy()}), sess.state)


# --- 5. int64 ids for an i32 port ---------------------------------------------------


def test_int64_ids_that_fit_bind_to_i32(text, cpu_path, rng) -> None:
    art = cpu_runtime.load(cpu_path)
    state, inputs = _state(rng), _inputs(rng)
    want = _want(text, state, inputs)
    wide = {**inputs, "ids": inputs["ids"].astype(np.int64), "pos": np.int64(inputs["pos"])}
    _assert_step(art.run({**state, **wide}), want)
    _assert_step(oracle.run(text, {**state, **wide}), want)
    sess = art.session(state)
    _assert_step(sess.step(wide), want, sess.state)
    # A non-contiguous int64 view converts too.
    strided = np.repeat(inputs["ids"].astype(np.int64), 2)[::2]
    _assert_step(art.run({**state, **inputs, "ids": strided}), want)


def test_torch_int64_token_ids_bind_to_i32(text, cpu_path, rng, torch) -> None:
    art = cpu_runtime.load(cpu_path)
    state, inputs = _state(rng), _inputs(rng)
    ids = torch.tensor(inputs["ids"].tolist())  # torch's default integer: int64
    assert ids.dtype == torch.int64
    pos = torch.tensor(int(inputs["pos"]))
    got = art.run({**state, **inputs, "ids": ids, "pos": pos})
    _assert_step(got, _want(text, state, inputs))


@pytest.mark.parametrize(
    "name, value, pattern",
    [
        ("ids", [1, 2**31, 0], r"'ids' \(arg3\): int64 value 2147483648 at index \(1,\) does not fit"),
        ("ids", [-(2**31) - 1, 0, 0], r"'ids' \(arg3\): int64 value -2147483649 at index \(0,\)"),
        ("ids", [0, 0, 2**40], r"'ids' .*tensor<3xi32>"),
        ("pos", CAP, r"'pos' \(arg4\): value 6 at index \(\) is outside its declared range"),
        ("pos", 2**33, r"'pos' .*#poot.range<0, 5>"),
    ],
)
def test_int64_values_that_do_not_fit_are_range_errors(text, cpu_path, rng, name, value, pattern) -> None:
    art = cpu_runtime.load(cpu_path)
    state, inputs = _state(rng), _inputs(rng)
    inputs[name] = np.asarray(value, np.int64)
    sess = art.session(state)
    for run in (lambda: art.run({**state, **inputs}), lambda: sess.step(inputs),
                lambda: oracle.run(text, {**state, **inputs})):
        with pytest.raises(errors.RangeBindError, match=pattern):
            run()
    for key in STATES:
        np.testing.assert_array_equal(sess.state[key], state[key], err_msg=key)


def test_other_integer_widths_are_still_refused(cpu_path, rng) -> None:
    art = cpu_runtime.load(cpu_path)
    state, inputs = _state(rng), _inputs(rng)
    for dtype in (np.int16, np.uint64, np.float64):
        with pytest.raises(errors.ShapeBindError, match="'ids'"):
            art.run({**state, **inputs, "ids": inputs["ids"].astype(dtype)})


@pytest.mark.requires("vulkan")
def test_int64_ids_on_the_gpu_runtime(text, gpu_path, rng) -> None:
    from poot_mlir.runtime.program import ProgramArtifact

    state, inputs = _state(rng), _inputs(rng)
    want = _want(text, state, inputs)
    table = inputs.pop("table")
    with ProgramArtifact(gpu_path, "lavapipe") as art:
        sess = art.session(state, constants={"table": table})
        wide = {**inputs, "ids": inputs["ids"].astype(np.int64)}
        _assert_step(sess.step(wide), want, sess.state)
        before = sess.state
        with pytest.raises(errors.RangeBindError, match="'ids'"):
            sess.step({**inputs, "ids": np.array([0, 2**35, 1], np.int64)})
        for name in STATES:
            np.testing.assert_array_equal(sess.state[name], before[name], err_msg=name)


# --- the test summary names `pip install vulkan` -----------------------------------


def test_the_summary_names_pip_install_vulkan_when_the_package_is_missing(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "vulkan", None)  # `import vulkan` fails: not installed
    why = "the `vulkan` Python package is not installed (No module named 'vulkan')"
    monkeypatch.setattr(system_deps, "MISSING", {"vulkan": [why, 5]})
    (line,) = system_deps.summary_lines()
    assert line.startswith("5 tests skipped, missing a Vulkan driver")
    assert "pip install vulkan" in line and system_deps.APT_VULKAN in line
    # With the package present, only the system packages are named.
    monkeypatch.setattr(system_deps, "_not_importable", lambda module: False)
    (line,) = system_deps.summary_lines()
    assert "pip install vulkan" not in line and system_deps.APT_VULKAN in line
