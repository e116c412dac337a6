"""The CPU runtime's binder and Session: every refusal happens before the step
runs, is the oracle's typed error, and leaves the session state exactly as it
was; a failed validation publishes nothing. The runtime imports no MLIR.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from poot_mlir import errors, oracle
from poot_mlir.compiler import devices
from poot_mlir.compiler.cpu import compile_cpu
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime import cpu as runtime

SLOTS, CAP = 6, 8


def paged_module():
    """A pool written through a write map and read through a slot map, a KV
    slab written at pos, and a guarded length whose witness is a validation
    output."""
    tr = Tracer("step")
    pool = tr.state("pool", (SLOTS, 3), "f32")
    kc = tr.state("kc", (1, CAP, 3), "f32")
    pos = tr.pos(max_pos=CAP - 1)
    write = tr.write_map("write", 2, SLOTS)
    read = tr.slot_map("read", 1, 4, SLOTS)
    rows = tr.input("rows", (2, 3), "f32")
    n = tr.input("n", (2,), "i32")
    pool1 = ops.scatter_update(pool, write, rows)
    row0 = ops.reshape(ops.slice(rows, (0, 0), (1, 3), (1, 1)), (1, 1, 3))
    kc1 = ops.dynamic_update_slice(kc, row0, pos, 1)
    length, ok = ops.index_guard(n, 1, 4)
    tr.validation("ok", ok)
    tr.output("g", ops.gather(pool1, read, 0))
    tr.output("len", length)
    tr.state_out("pool", pool1)
    tr.state_out("kc", kc1)
    return tr.finish()


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, runtime.CpuArtifact]:
    text = str(paged_module())
    out = compile_cpu(text, tmp_path_factory.mktemp("cpu_runtime") / "step")
    return text, runtime.load(out)


def _state(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "pool": rng.standard_normal((SLOTS, 3)).astype(np.float32),
        "kc": rng.standard_normal((1, CAP, 3)).astype(np.float32),
    }


def _inputs(rng: np.random.Generator) -> dict[str, object]:
    write = rng.permutation(SLOTS)[:2].astype(np.int32)
    write[rng.integers(0, 2)] = -1 if rng.random() < 0.5 else write[0]
    if write[0] == write[1]:
        write[1] = -1
    return {
        "pos": np.int32(rng.integers(0, CAP)),
        "write": write,
        "read": rng.integers(0, SLOTS, size=(1, 4)).astype(np.int32),
        "rows": rng.standard_normal((2, 3)).astype(np.float32),
        "n": rng.integers(1, 5, size=2).astype(np.int32),
    }


def test_manifest_describes_the_signature(program) -> None:
    _, art = program
    manifest = json.loads((art.path / "manifest.json").read_text())
    assert manifest["format"] == "poot-artifact/1"
    assert manifest["target"] == "cpu"
    assert manifest["library"] == "step.so" and manifest["entry"] == "_mlir_ciface_step"
    inputs = {e["name"]: e for e in manifest["function"]["inputs"]}
    assert inputs["pool"]["slot"] == "state" and inputs["pool"]["state"] == "pool"
    assert inputs["pos"]["slot"] == "pos" and inputs["pos"]["range"] == [0, CAP - 1]
    assert inputs["pos"]["shape"] == [] and inputs["pos"]["dtype"] == "i32"
    assert inputs["write"]["slot"] == "write_map" and inputs["write"]["pool"] == SLOTS
    assert inputs["read"]["slot"] == "slot_map" and inputs["read"]["range"] == [0, SLOTS - 1]
    outputs = {e["name"]: e for e in manifest["function"]["outputs"]}
    assert outputs["ok"]["slot"] == "validation" and outputs["ok"]["dtype"] == "i1"
    assert outputs["kc"]["slot"] == "state" and outputs["g"]["shape"] == [1, 4, 3]


def test_session_steps_match_oracle(program, rng: np.random.Generator) -> None:
    text, art = program
    state = _state(rng)
    sess, ref = art.session(state), oracle.Session(text, state)
    for _ in range(3):
        inputs = _inputs(rng)
        got, want = sess.step(inputs), ref.step(inputs)
        for name in ("g", "len", "ok"):
            np.testing.assert_array_equal(got.named[name], want.named[name], err_msg=name)
        for name in ("pool", "kc"):
            np.testing.assert_array_equal(sess.state[name], ref.state[name], err_msg=name)


def test_python_scalars_and_lists_bind(program, rng: np.random.Generator) -> None:
    _, art = program
    inputs = _inputs(rng)
    plain = {k: (v.tolist() if isinstance(v, np.ndarray) else int(v)) for k, v in inputs.items()}
    plain.update(_state(rng))
    assert art.run(plain).named["g"].shape == (1, 4, 3)


# Each bad input: (what to change, the error the binder must raise).
_REFUSALS = [
    ("missing rows", lambda i: i.pop("rows"), errors.MissingInputError),
    ("rows shape", lambda i: i.update(rows=np.zeros((3, 3), np.float32) + 1), errors.ShapeBindError),
    ("rows dtype", lambda i: i.update(rows=np.ones((2, 3), np.float64)), errors.ShapeBindError),
    ("pos as float", lambda i: i.update(pos=2.5), errors.ShapeBindError),
    ("pos above range", lambda i: i.update(pos=np.int32(CAP)), errors.RangeBindError),
    ("pos below range", lambda i: i.update(pos=np.int32(-1)), errors.RangeBindError),
    ("read outside pool", lambda i: i["read"].__setitem__((0, 2), SLOTS), errors.RangeBindError),
    ("write outside pool", lambda i: i.update(write=np.array([SLOTS, -1], np.int32)), errors.WriteMapError),
    ("write below -1", lambda i: i.update(write=np.array([-2, 0], np.int32)), errors.WriteMapError),
    ("write slot twice", lambda i: i.update(write=np.array([3, 3], np.int32)), errors.WriteMapError),
    ("unknown input", lambda i: i.update(bogus=np.int32(1)), errors.BindError),
    ("state as input", lambda i: i.update(pool=np.ones((SLOTS, 3), np.float32)), errors.BindError),
]


@pytest.mark.parametrize("what,change,error", _REFUSALS, ids=[r[0] for r in _REFUSALS])
def test_refused_bind_leaves_state(program, rng: np.random.Generator, what, change, error) -> None:
    text, art = program
    state = _state(rng)
    sess = art.session(state)
    before = {k: v.copy() for k, v in sess.state.items()}
    buffers = {k: _address(v) for k, v in sess.state.items()}
    inputs = _inputs(rng)
    change(inputs)
    with pytest.raises(error):
        sess.step(inputs)
    assert sess.state.keys() == before.keys()
    for name in before:
        assert _address(sess.state[name]) == buffers[name], f"{what}: state {name} replaced"
        np.testing.assert_array_equal(sess.state[name], before[name], err_msg=what)
    # The oracle refuses the same inputs with the same error type.
    with pytest.raises(error):
        oracle.Session(text, state).step(inputs)


def test_failed_validation_publishes_nothing(program, rng: np.random.Generator) -> None:
    text, art = program
    state = _state(rng)
    sess = art.session(state)
    before = {k: v.copy() for k, v in sess.state.items()}
    inputs = _inputs(rng)
    inputs["n"] = np.array([0, 3], np.int32)  # 0 < min = 1: the witness is false
    with pytest.raises(errors.ValidationFailure):
        sess.step(inputs)
    with pytest.raises(errors.ValidationFailure):
        art.run({**inputs, **state})
    with pytest.raises(errors.ValidationFailure):
        oracle.Session(text, state).step(inputs)
    for name in before:
        np.testing.assert_array_equal(sess.state[name], before[name])
    # The session still steps afterwards, from the unchanged state.
    inputs["n"] = np.array([1, 4], np.int32)
    got = sess.step(inputs)
    want = oracle.Session(text, before).step(inputs)
    np.testing.assert_array_equal(sess.state["pool"], want.state["pool"])
    np.testing.assert_array_equal(got.named["g"], want.named["g"])


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_state_is_written_in_place(program, rng: np.random.Generator) -> None:
    """The pool and the cache are donated: the manifest says so, the ABI has
    no out-parameter for them, each step writes the session's own buffers
    (while no caller keeps a view of them: see
    test_results_stay_as_returned), and the result still matches the oracle
    step for step."""
    text, art = program
    assert {p.state: p.in_place_of for p in art.signature.results if p.state} == {
        p.state: i for i, p in enumerate(art.signature.args) if p.state
    }
    assert art.signature.validate is not None  # the step has a validation output
    sess = art.session(_state(rng))
    buffers = {k: _address(v) for k, v in sess.state.items()}
    ref = oracle.Session(text, {k: np.array(v) for k, v in sess.state.items()})
    for _ in range(3):
        inputs = _inputs(rng)
        got, want = sess.step(inputs), ref.step(inputs)
        np.testing.assert_array_equal(got.named["g"], want.named["g"])
        for name in buffers:
            assert _address(sess.state[name]) == buffers[name], name
            np.testing.assert_array_equal(sess.state[name], ref.state[name], err_msg=name)
        del got  # a result kept into the next step would be copied first
    got = sess.step(_inputs(rng))
    # What the caller gets is a view it cannot write through.
    with pytest.raises(ValueError):
        got.state["pool"][0] = 1.0
    with pytest.raises(ValueError):
        sess.state["pool"][0] = 1.0


def test_inputs_are_never_written(program, rng: np.random.Generator) -> None:
    """The step never writes a bound buffer (state in is donated to a copy)."""
    _, art = program
    inputs = {**_inputs(rng), **_state(rng)}
    copies = {k: np.array(v, copy=True) for k, v in inputs.items()}
    art.run(inputs)
    for name, value in copies.items():
        np.testing.assert_array_equal(inputs[name], value, err_msg=name)


def test_runtime_imports_no_mlir(program, rng: np.random.Generator) -> None:
    _, art = program
    inputs = {**_inputs(rng), **_state(rng)}
    np.savez(art.path.parent / "inputs.npz", **{k: np.asarray(v) for k, v in inputs.items()})
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        from poot_mlir.runtime import cpu
        art = cpu.load({str(art.path)!r})
        data = np.load({str(art.path.parent / "inputs.npz")!r})
        res = art.run({{k: data[k] for k in data.files}})
        assert res.named["g"].shape == (1, 4, 3)
        mlir = ("poot_mlir._mlir_libs", "poot_mlir.ir", "poot_mlir.passmanager", "poot_mlir.dialects", "mlir")
        loaded = [m for m in sys.modules if m.startswith(mlir)]
        assert not loaded, loaded
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_missing_artifact_files_are_typed(tmp_path) -> None:
    with pytest.raises(runtime.ArtifactError):
        runtime.load(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "poot-artifact/1", "target": "spirv"}))
    with pytest.raises(runtime.ArtifactError):
        runtime.load(tmp_path)


def test_compile_errors_are_typed(tmp_path) -> None:
    with pytest.raises(errors.CompileError):
        compile_cpu("func.func @a() { return }\nfunc.func @b() { return }", tmp_path / "x")



_TWICE = """func.func @step(%x: tensor<2xf32> {poot.name = "x"}) -> (tensor<2xf32> {poot.name = "y"}) {
  %y = poot.OP %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}
"""


def test_recompiling_into_the_same_directory_reloads(tmp_path) -> None:
    """The loader caches libraries by path; each load must see its own code."""
    x = np.array([1.5, -2.0], np.float32)
    first = runtime.load(compile_cpu(_TWICE.replace("OP", "add"), tmp_path / "a"))
    second = runtime.load(compile_cpu(_TWICE.replace("OP", "mul"), tmp_path / "a"))
    np.testing.assert_array_equal(first.run({"x": x}).named["y"], x + x)
    np.testing.assert_array_equal(second.run({"x": x}).named["y"], x * x)


# --- issue 28: results that stay as returned; memory limits -----------------------


def test_results_stay_as_returned(program, rng: np.random.Generator) -> None:
    """A step's `result.state` (and the state outputs, and `sess.state`) keep
    the values they had when returned, whatever runs next: later in-place
    steps and a driver's edits through `writable_state` write a private copy
    once a view is kept. Before issue 28 they were live views of the buffers
    the next step overwrote."""
    text, art = program
    sess = art.session(_state(rng))
    first = sess.step(_inputs(rng))
    state_then = sess.state
    kept = {name: view.copy() for name, view in first.state.items()}
    outputs = [np.array(o) for o in first.outputs]
    buffers = {name: _address(view) for name, view in first.state.items()}
    for _ in range(3):
        sess.step(_inputs(rng))
    for array in sess.writable_state().values():  # a driver's edit between steps
        array[...] = 7.0
    sess.step(_inputs(rng))
    for name, value in kept.items():
        np.testing.assert_array_equal(first.state[name], value, err_msg=name)
        np.testing.assert_array_equal(state_then[name], value, err_msg=name)
        assert _address(first.state[name]) == buffers[name]  # the views were left alone
        assert not np.array_equal(sess.state[name], value), name  # the session moved on
    for port, before, now in zip(art.signature.results, outputs, first.outputs):
        np.testing.assert_array_equal(now, before, err_msg=port.key)
        if port.state is not None:  # a state output is the carried state: read-only
            assert not now.flags.writeable, port.key
    # Nothing kept: the next step writes the session's own buffers again.
    del first, state_then
    buffers = {name: _address(view) for name, view in sess.state.items()}
    sess.step(_inputs(rng))
    assert {name: _address(view) for name, view in sess.state.items()} == buffers


def _wide_module(rows: int):
    """x [1, 4] broadcast to [rows, 4], through tanh, reduced to [4]."""
    tr = Tracer("step")
    x = tr.input("x", (1, 4), "f32")
    tr.output("sum", ops.reduce_sum(ops.tanh(ops.broadcast_to(x, (rows, 4))), 0))
    return tr.finish()


def test_compile_refuses_a_value_past_max_alloc_bytes(tmp_path) -> None:
    """A 128 GiB temporary against the CPU's 64 GiB max_alloc_bytes: refused
    when compiled (BufferBytes, at the line that traced it, both sizes named),
    not a crash when the step mallocs it. Before issue 28 it compiled."""
    with pytest.raises(errors.BufferBytes) as caught:
        compile_cpu(_wide_module(1 << 33), tmp_path / "huge")
    refusal = caught.value
    assert refusal.nbytes == 128 << 30 and refusal.limit == devices.CPU.max_alloc_bytes == 64 << 30
    assert "a temporary (poot.broadcast result #0, tensor<8589934592x4xf32>)" in str(refusal)
    assert "137438953472 bytes (128.0 GiB)" in str(refusal) and "68719476736 bytes" in str(refusal)
    assert refusal.location and refusal.location.startswith(__file__)
    # The limit is the device's: a 4 KiB result against 1000 bytes, by name
    # (the 4 KiB argument is the caller's buffer, not the step's to allocate).
    tr = Tracer("step")
    tr.output("y", ops.tanh(tr.input("x", (256, 4), "f32")))
    small = devices.CPU.with_limits(max_alloc_bytes=1000)
    with pytest.raises(errors.BufferBytes, match=r"result 'y' of @step .* 4096 bytes \(4.0 KiB\)"):
        compile_cpu(tr.finish(), tmp_path / "small", device=small)
    fits = devices.CPU.with_limits(max_alloc_bytes=4096)
    art = runtime.load(compile_cpu(tr.finish(), tmp_path / "fits", device=fits))
    x = np.linspace(-2, 2, 1024, dtype=np.float32).reshape(256, 4)
    np.testing.assert_allclose(art.run({"x": x}).named["y"], np.tanh(x), rtol=1e-6, atol=1e-7)


#: The start of a child-process script run under an address-space limit:
#: what the memory tests import (numpy.testing before the limit: only the
#: step may run out) and `vm_bytes()`, the process's current address space.
_UNDER_A_MEMORY_LIMIT = textwrap.dedent(
    """
    import resource
    import numpy as np
    import numpy.testing
    from poot_mlir import errors
    from poot_mlir.runtime import cpu

    def vm_bytes():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    """
)


_ROWS = 1 << 24  # a [2^24, 4] f32 result: 256 MiB


def _stateful_wide_temporary_module():
    """A 256 MiB temporary (x broadcast to [2^24, 4] through tanh: one op
    once poot-fuse-elementwise-chains has run) reduced to [4] and added to
    the state."""
    tr = Tracer("step")
    acc = tr.state("acc", (4,), "f32")
    x = tr.input("x", (1, 4), "f32")
    widest = ops.reduce_max(ops.tanh(ops.broadcast_to(x, (_ROWS, 4))), 0)
    tr.state_out("acc", ops.add(acc, widest))
    return tr.finish()


def test_temporaries_that_cannot_be_allocated_are_typed(tmp_path) -> None:
    """Out of memory for the step's temporaries: they live in one arena the
    runtime allocates before the step runs (poot-cpu-plan-arena), so it is an
    AllocationError naming the arena and its size, nothing ran and the state
    is as it was; the session steps once memory is back. Before issue 28 the
    compiled code called malloc and the process died. Run in a child process
    under an address-space limit."""
    path = compile_cpu(_stateful_wide_temporary_module(), tmp_path / "temp", parallel="serial")
    arena = json.loads((path / "manifest.json").read_text())["function"]["arena_bytes"]
    assert _ROWS * 16 <= arena < _ROWS * 16 + 4096, arena
    script = _UNDER_A_MEMORY_LIMIT + textwrap.dedent(
        f"""
        art = cpu.load({str(path)!r})
        sess = art.session({{"acc": np.zeros(4, np.float32)}})
        x = np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4)
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + (64 << 20), hard))
        try:
            sess.step({{"x": x}})
        except errors.AllocationError as error:
            assert isinstance(error, MemoryError)
            assert error.buffer == "arena" and error.nbytes == {arena}, (error.buffer, error.nbytes)
            assert "the temporaries of @step" in str(error), str(error)
        else:
            raise AssertionError("the step ran")
        np.testing.assert_array_equal(sess.state["acc"], np.zeros(4, np.float32))
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        sess.step({{"x": x}})
        sess.step({{"x": x}})
        np.testing.assert_array_equal(sess.state["acc"], 2 * np.tanh(x[0]))
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr)


def test_temporaries_share_the_arena_by_live_range(tmp_path, rng) -> None:
    """A chain of four matmuls x @ w0 @ w1 @ w2 @ w3 (no elementwise chain
    that fusion would remove): its three temporaries are live two at a time,
    so the arena holds two of them, not three; the step still matches the
    float64 oracle, step after step (the arena is reused)."""
    tr = Tracer("step")
    x = tr.input("x", (64, 64), "f32")
    ws = [tr.input(f"w{i}", (64, 64), "f32") for i in range(4)]
    y = x
    for w in ws:
        y = ops.matmul(y, w)
    tr.output("y", y)
    path = compile_cpu(tr.finish(), tmp_path / "chain")
    assert json.loads((path / "manifest.json").read_text())["function"]["arena_bytes"] == 2 * 64 * 64 * 4
    art = runtime.load(path)
    for _ in range(3):
        feeds = {n: (rng.standard_normal((64, 64)) / 8).astype(np.float32) for n in ["x", "w0", "w1", "w2", "w3"]}
        want = feeds["x"].astype(np.float64)
        for i in range(4):
            want = want @ feeds[f"w{i}"].astype(np.float64)
        np.testing.assert_allclose(art.run(feeds).named["y"], want, rtol=1e-4, atol=1e-5)


def _stateful_wide_module():
    tr = Tracer("step")
    acc = tr.state("acc", (4,), "f32")
    x = tr.input("x", (1, 4), "f32")
    tr.output("wide", ops.broadcast_to(x, (_ROWS, 4)))
    tr.state_out("acc", ops.add(acc, ops.reshape(x, (4,))))
    return tr.finish()


def test_a_result_that_cannot_be_allocated_is_typed(tmp_path) -> None:
    """Out of memory for a result the runtime allocates: an AllocationError
    (also a MemoryError) naming the result and its size, before anything
    runs, and the session's state as it was; the session steps once memory
    is back. Run in a child process under an address-space limit."""
    path = compile_cpu(_stateful_wide_module(), tmp_path / "wide", parallel="serial")
    script = _UNDER_A_MEMORY_LIMIT + textwrap.dedent(
        f"""
        art = cpu.load({str(path)!r})
        sess = art.session({{"acc": np.zeros(4, np.float32)}})
        x = np.ones((1, 4), np.float32)
        sess.step({{"x": x}})  # loads everything the step needs, at full memory
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + (64 << 20), hard))
        for attempt in (lambda: sess.step({{"x": x}}), lambda: art.run({{"x": x, "acc": np.zeros(4, np.float32)}})):
            try:
                attempt()
            except errors.AllocationError as error:
                assert isinstance(error, MemoryError)
                assert error.buffer == "wide" and error.nbytes == {_ROWS * 16}, (error.buffer, error.nbytes)
                assert "'wide' (result0)" in str(error) and "268435456 bytes" in str(error), str(error)
            else:
                raise AssertionError("the step ran")
        np.testing.assert_array_equal(sess.state["acc"], np.ones(4, np.float32))
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        sess.step({{"x": x}})
        np.testing.assert_array_equal(sess.state["acc"], np.full(4, 2, np.float32))
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
