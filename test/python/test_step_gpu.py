"""Whole steps on a GPU: every primitive and the attention as kernels, the
state resident on the device and written in place (compiler.gpu,
runtime.program), on Mesa lavapipe through raw Vulkan and through wgpu,
against the float64 oracle on fresh random inputs; PTX for sm_90 through
ptxas; ROCDL IR.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from poot_mlir import errors, oracle  # noqa: E402
from poot_mlir.compiler import devices  # noqa: E402
from poot_mlir.compiler.gpu import compile_gpu  # noqa: E402
from poot_mlir.examples.decoder import (  # noqa: E402
    DecoderConfig,
    build_decoder,
    init_state,
    init_weights,
)
from poot_mlir.runtime.program import ProgramArtifact  # noqa: E402
from system_deps import ptxas_path, require  # noqa: E402
from test_cpu_ops import _inputs as op_inputs  # noqa: E402
from test_cpu_ops import _OPS, _program, assert_matches  # noqa: E402
from test_cpu_runtime import SLOTS, _inputs as paged_inputs, _state as paged_state  # noqa: E402
from test_cpu_runtime import paged_module  # noqa: E402


#: Each device-backed fixture runs on lavapipe twice: raw Vulkan, and wgpu
#: with SPIR-V compiled for it. name -> (system dependency, device, backend)
RUNTIMES = {
    "vulkan": ("vulkan", devices.VULKAN_LAVAPIPE, "lavapipe"),
    "wgpu": ("wgpu", devices.WGPU_LAVAPIPE, "wgpu-lavapipe"),
}


def _runtime(request):
    dependency, device, backend = RUNTIMES[request.param]
    require(dependency)
    return device, backend


@contextlib.contextmanager
def _compiled(tr, device, backend, folder):
    """The traced program's float64 reference text and its artifact for
    `device` (closed on exit)."""
    reference = tr.mlir()
    art = ProgramArtifact(compile_gpu(tr.finish(), device, folder), backend)
    try:
        yield reference, art
    finally:
        art.close()


def _assert_matches_oracle(art, reference, inputs, names=("out",)) -> None:
    got = art.run(inputs).named
    want = oracle.run(reference, inputs, reference=True).named
    for name in names:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5,
                                   atol=1e-5 * float(np.abs(want[name]).max()), err_msg=name)


@pytest.fixture(scope="module", params=list(RUNTIMES))
def decoder(request, tmp_path_factory):
    device, backend = _runtime(request)
    config = DecoderConfig(layers=2, cap=16)
    tracer = build_decoder(config)
    reference = tracer.mlir()
    path = compile_gpu(tracer.finish(), device, tmp_path_factory.mktemp("step") / "dec")
    art = ProgramArtifact(path, backend)
    yield config, reference, art
    art.close()


def _tokens(config, step, token):
    return {"pos": np.int32(step), "token": np.array([[token]], np.int32)}


def test_decoder_steps_match_oracle_with_refusals_between(decoder, rng) -> None:
    """8 greedy steps on the device against the float64 oracle stepping the
    unfused module; a refused bind between steps leaves the device state
    exactly as it was, and the session carries on."""
    config, reference, art = decoder
    weights = init_weights(config, int(rng.integers(0, 1000)))
    state0 = init_state(config)
    sess = art.session(state0)
    ref = oracle.Session(reference, state0)
    token = int(rng.integers(0, config.vocab))
    for step in range(8):
        inputs = {**_tokens(config, step, token), **weights}
        if step in (3, 6):
            before = sess.state
            bad = dict(inputs, pos=np.int32(config.cap))  # outside the declared range
            with pytest.raises(errors.RangeBindError):
                sess.step(bad)
            with pytest.raises(errors.RangeBindError):  # int64 binds to i32 only when it fits
                sess.step(dict(inputs, token=np.array([[2**40]], np.int64)))
            for name, value in sess.state.items():
                np.testing.assert_array_equal(value, before[name], err_msg=name)
        got = sess.step(inputs).named["logits"]
        want = ref.step(inputs).named["logits"]
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * float(np.abs(want).max()))
        for name, value in sess.state.items():
            np.testing.assert_allclose(value, ref.state[name], rtol=2e-5, atol=1e-5, err_msg=name)
        token = int(np.argmax(want))


def test_step_reads_back_only_the_fetched_outputs(decoder, rng) -> None:
    """`step(fetch=names)` reads back only those outputs (the device's
    `traffic` counter); the others stay on the device, absent from the
    result, and the step itself is the same (the next step's logits match a
    session that read everything). `fetch=()` reads nothing; an unknown
    name is a BindError before anything runs; `device_outputs` needs CUDA."""
    config, _, art = decoder
    weights = init_weights(config, int(rng.integers(0, 1000)))
    full, lean = art.session(init_state(config)), art.session(init_state(config))
    traffic = art.device.traffic
    (logits,) = [i for i, p in enumerate(art.signature.results) if p.key == "logits"]
    logits_bytes = int(np.prod(art.signature.results[logits].shape)) * 4
    tokens = [int(t) for t in rng.integers(0, config.vocab, 4)]
    for step, token in enumerate(tokens):
        inputs = {**_tokens(config, step, token), **weights}
        want = full.step(inputs).named["logits"]
        fetch = ("logits",) if step % 2 else ()
        read = traffic.read
        got = lean.step(inputs, fetch=fetch)
        assert traffic.read - read == (logits_bytes if fetch else 0)
        if fetch:
            np.testing.assert_array_equal(got.named["logits"], want)
        else:
            assert got.named == {} and got.outputs[logits] is None
    before = lean.state
    with pytest.raises(errors.BindError, match="no output named"):
        lean.step({**_tokens(config, 4, 1), **weights}, fetch=("logit",))
    with pytest.raises(errors.PootError, match="needs the CUDA backend"):
        lean.step({**_tokens(config, 4, 1), **weights}, device_outputs=True)
    for name, value in lean.state.items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)


def test_decoder_state_is_in_place(decoder) -> None:
    """Every state result is its argument's device buffer (nothing copied
    back), and the host side is launches only."""
    _, _, art = decoder
    outputs = art.manifest["function"]["outputs"]
    states = [o for o in outputs if o["slot"] == "state"]
    assert states and all("in_place_of" in o for o in states)
    program = art.programs[art.signature.name]
    assert all("launch" in c for c in program["commands"])
    # Each cache argument is written by a launch (its new row), never copied.
    args = {b["index"]: i for i, b in enumerate(program["buffers"]) if b["kind"] == "arg"}
    written = {a for c in program["commands"] for a in c["launch"]["args"]}
    for o in states:
        assert args[o["in_place_of"]] in written


def test_arena_reuses_bytes(decoder) -> None:
    """The arena is smaller than the sum of the temporaries: buffers whose
    live ranges do not overlap share bytes (first fit over live ranges)."""
    _, _, art = decoder
    program = art.programs[art.signature.name]
    temps = [b for b in program["buffers"] if b["kind"] == "temp"]
    total = sum(-(-b["bytes"] // 256) * 256 for b in temps)
    assert program["arena_bytes"] < total
    assert all(b["offset"] % 256 == 0 for b in temps)


def test_buffer_plan_matches_a_hand_count(tmp_path, rng) -> None:
    """x[1,32] @ w1 -> h1 [1,48] (192 B), h1 @ w2 -> h2 [1,32] (128 B),
    h2 @ w3 -> out [1,16] (64 B); every reduction is under 64 products
    (two chunks of poot-gpu-split-reductions' min-chunk 32), so none is
    split. By hand, every buffer starting 256-byte aligned (the Vulkan and
    CUDA offset alignment): h1 and h2 are live together while h2 is
    computed (h1 at 0, h2 at 256); out is written after h1's last read, so
    it reuses h1's bytes at offset 0: a 512-byte arena, not the 768 of
    three aligned buffers. The reuse is checked by running it against the
    oracle."""
    require("vulkan")
    from poot_mlir.frontend import Tracer, ops

    shapes = (("x", (1, 32)), ("w1", (32, 48)), ("w2", (48, 32)), ("w3", (32, 16)))
    tr = Tracer("mlp")
    x, w1, w2, w3 = (tr.input(name, shape) for name, shape in shapes)
    tr.output("out", ops.matmul(ops.matmul(ops.matmul(x, w1), w2), w3))
    with _compiled(tr, devices.VULKAN_LAVAPIPE, "lavapipe", tmp_path / "mlp") as (reference, art):
        program = art.programs["mlp"]
        temps = [b for b in program["buffers"] if b["kind"] == "temp"]
        assert sorted(b["bytes"] for b in temps) == [64, 128, 192]
        assert program["arena_bytes"] == 2 * 256
        offsets = {b["bytes"]: b["offset"] for b in temps}
        assert offsets[64] == offsets[192] == 0 and offsets[128] == 256
        inputs = {name: rng.standard_normal(shape, dtype=np.float32) for name, shape in shapes}
        _assert_matches_oracle(art, reference, inputs)


def test_decode_matmul_reductions_split_over_threads(tmp_path, rng) -> None:
    """A decode matmul ([1, 2048] x [2048, 256]: 256 outputs) runs on 64x
    the threads as partial sums plus a final reduction
    (poot-gpu-split-reductions), matching the oracle."""
    require("vulkan")
    from poot_mlir.frontend import Tracer, ops

    tr = Tracer("gemv")
    x, w = tr.input("x", (1, 2048)), tr.input("w", (2048, 256))
    tr.output("out", ops.matmul(x, w))
    with _compiled(tr, devices.VULKAN_LAVAPIPE, "lavapipe", tmp_path / "gemv") as (reference, art):
        program = art.programs["gemv"]
        temps = [b["bytes"] for b in program["buffers"] if b["kind"] == "temp"]
        assert 64 * 256 * 4 in temps  # the partials: ratio min(131072 / (256 / 4), 2048 / 32) = 64
        inputs = {"x": rng.standard_normal((1, 2048), dtype=np.float32),
                  "w": rng.standard_normal((2048, 256), dtype=np.float32)}
        _assert_matches_oracle(art, reference, inputs)


@pytest.mark.parametrize("runtime", list(RUNTIMES))
@pytest.mark.parametrize("rows,jam", [(16, 8), (12, 6), (16, 1)])
def test_batched_decode_matmul_rows_share_weight_loads(tmp_path, rng, runtime, rows, jam) -> None:
    """A batched decode matmul ([rows, 2048] x [2048, 256]): each partial-sum
    thread computes `jam` rows (poot-gpu-jam-rows, the largest divisor of
    the rows up to Device.jam_rows = 8), so the split counts threads per
    group of rows and keeps the partials to a quarter of the weight's bytes
    (ratio min(131072 / threads, 2048 / 32, 2 MiB / (16 x rows x 256))), and
    the result matches the float64 oracle. jam_rows=1 keeps a thread per
    row (the ratio of an unjammed op: 64)."""
    dependency, device, backend = RUNTIMES[runtime]
    require(dependency)
    from poot_mlir.frontend import Tracer, ops

    k, n = 2048, 256
    tr = Tracer("gemm")
    x, w = tr.input("x", (rows, k)), tr.input("w", (k, n))
    tr.output("out", ops.matmul(x, w))
    device = device.with_limits(jam_rows=8 if jam > 1 else 1)
    with _compiled(tr, device, backend, tmp_path / "gemm") as (reference, art):
        program = art.programs["gemm"]
        groups = n // 4  # 4 columns a thread (f32)
        if jam > 1:
            threads = rows // jam * groups
            ratio = min(131072 // threads, k // 32, 2 * 2**20 // (16 * rows * n))
            ratio = 1 << (ratio.bit_length() - 1)
        else:
            threads, ratio = rows * groups, 64
        temps = sorted(b["bytes"] for b in program["buffers"] if b["kind"] == "temp")
        assert ratio * rows * n * 4 in temps, (ratio, temps)
        first = _launches(program)[0]
        assert first["grid"][0] * first["block"][0] >= ratio * threads
        inputs = {"x": rng.standard_normal((rows, k), dtype=np.float32),
                  "w": rng.standard_normal((k, n), dtype=np.float32)}
        _assert_matches_oracle(art, reference, inputs)


def _launches(program: dict) -> list[dict]:
    return [c["launch"] for c in program["commands"] if "launch" in c]


# (K, N, split ratio, threads of the partial-sum kernel, launches):
# 2000 x 1000 is split 16 ways (min(131072 / 250, 2000 / 32) = 62 rounds
# down to 32, which does not divide 2000; 16 does: chunks of 125, so the
# 8-way unrolled loop leaves a remainder of 5), 4 columns per thread
# (1000 / 4 = 250 groups, 4000 threads, not a multiple of 128: the last
# block is guarded), then a
# final reduction; its fills fold into the reductions (2 launches, no
# zero-fill kernels). 1001 x 1002: no power of two divides K (whole), N is
# not a multiple of 4 (a thread per column, scalar loads), one launch.
GEMVS = [(2000, 1000, 16, 16 * 250, 2), (1001, 1002, 1, 1002, 1)]


@pytest.mark.parametrize("runtime", list(RUNTIMES))
@pytest.mark.parametrize("k,n,ratio,threads,launches", GEMVS)
def test_gemv_kernels_at_remainder_shapes(tmp_path, rng, runtime, k, n, ratio, threads, launches) -> None:
    """Decode GEMVs (poot-gpu-split-reductions, -fold-fills,
    -vectorize-columns) at shapes with remainders everywhere, on lavapipe
    against the float64 oracle; every kernel passes spirv-val."""
    dependency, device, backend = RUNTIMES[runtime]
    require(dependency)
    require("spirv-tools")
    from poot_mlir.frontend import Tracer, ops

    tr = Tracer("gemv")
    x, w = tr.input("x", (1, k)), tr.input("w", (k, n))
    tr.output("out", ops.matmul(x, w))
    with _compiled(tr, device, backend, tmp_path / "gemv") as (reference, art):
        # The column groups load lane by lane on SPIR-V: upstream's vector
        # load casts pointers, which spirv-val refuses (toolchain-notes).
        for spv in sorted(art.path.glob("*.spv")):
            subprocess.run(["spirv-val", "--target-env", "vulkan1.2", str(spv)], check=True)
        program = art.programs["gemv"]
        found = _launches(program)
        assert len(found) == launches
        first = found[0]
        assert first["grid"][0] == -(-threads // first["block"][0])
        temps = sorted(b["bytes"] for b in program["buffers"] if b["kind"] == "temp")
        assert temps == sorted([n * 4] + ([ratio * n * 4] if ratio > 1 else []))  # result (+ partials)
        inputs = {"x": rng.standard_normal((1, k), dtype=np.float32),
                  "w": rng.standard_normal((k, n), dtype=np.float32)}
        _assert_matches_oracle(art, reference, inputs)


@pytest.mark.parametrize("runtime", list(RUNTIMES))
@pytest.mark.parametrize("d", [4100, 1999])
def test_row_reductions_split_at_odd_lengths(tmp_path, rng, runtime, d) -> None:
    """An RMSNorm's keepdim sum of squares and a keepdim max over rows
    (poot-gpu-split-reductions drops the kept unit dimension, then splits:
    4100 = 4 x 1025 splits 4 ways into odd chunks; 1999 does not split),
    on lavapipe against the float64 oracle."""
    dependency, device, backend = RUNTIMES[runtime]
    require(dependency)
    from poot_mlir.frontend import Tracer, ops

    tr = Tracer("rows")
    x, g, y = tr.input("x", (1, 1, d)), tr.input("g", (d,)), tr.input("y", (3, d))
    tr.output("norm", ops.rms_norm(x, g, 1e-6))
    tr.output("max", ops.reduce_max(y, -1, keepdim=True))
    with _compiled(tr, device, backend, tmp_path / "rows") as (reference, art):
        inputs = {"x": rng.standard_normal((1, 1, d), dtype=np.float32),
                  "g": (1 + 0.1 * rng.standard_normal(d)).astype(np.float32),
                  "y": rng.standard_normal((3, d), dtype=np.float32)}
        _assert_matches_oracle(art, reference, inputs, ("norm", "max"))


@pytest.fixture(scope="module", params=list(RUNTIMES))
def paged(request, tmp_path_factory):
    device, backend = _runtime(request)
    text = str(paged_module())
    path = compile_gpu(text, device, tmp_path_factory.mktemp("step") / "paged")
    art = ProgramArtifact(path, backend)
    yield text, art
    art.close()


def test_paged_step_with_failing_validation_between(paged, rng) -> None:
    """A pool scattered through a write map, a slab written at pos, a gather
    through a read map and a guarded length: 8 steps against the oracle; a
    failing validation (the prologue) and bad maps leave the device state
    unchanged."""
    text, art = paged
    assert art.signature.validate is not None
    state = paged_state(rng)
    sess, ref = art.session(state), oracle.Session(text, state)
    for step in range(8):
        inputs = paged_inputs(rng)
        if step in (2, 5):
            before = sess.state
            bad = dict(inputs, n=np.array([0, 3], np.int32))  # below the guard's min
            with pytest.raises(errors.ValidationFailure):
                sess.step(bad)
            with pytest.raises(errors.WriteMapError):
                sess.step(dict(inputs, write=np.array([SLOTS, -1], np.int32)))
            for name, value in sess.state.items():
                np.testing.assert_array_equal(value, before[name], err_msg=name)
        got, want = sess.step(inputs), ref.step(inputs)
        for name in ("g", "len", "ok"):
            np.testing.assert_array_equal(got.named[name], want.named[name], err_msg=name)
        for name, value in sess.state.items():
            np.testing.assert_array_equal(value, ref.state[name], err_msg=name)


def _one_row_paged_attention():
    """A paged decode step with one row (B=1): the write map's scatter is
    unrolled, leaving its bounds check as a host `scf.if` around the copy
    loops, which poot-gpu-host-to-parallel moves into the loops."""
    from poot_mlir.compiler import fuse_attention
    from poot_mlir.frontend import Tracer, ops

    slots, hq, hkv, d, cap = 40, 4, 2, 16, 8
    tr = Tracer("step")
    kp = tr.state("kp", (slots, hkv, d))
    vp = tr.state("vp", (slots, hkv, d))
    pos = tr.pos(max_pos=cap - 1)
    write = tr.write_map("write", 1, slots)
    read = tr.slot_map("read", 1, cap, slots)
    q = tr.input("q", (1, hq, 1, d))
    k = tr.input("k", (1, hkv, 1, d))
    v = tr.input("v", (1, hkv, 1, d))
    out, kp1, vp1 = ops.attention_paged(q, k, v, kp, vp, write, read, pos)
    tr.output("out", out)
    tr.state_out("kp", kp1)
    tr.state_out("vp", vp1)
    text = tr.mlir()
    module = tr.finish()
    fuse_attention(module)
    return text, module, (slots, hq, hkv, d, cap)


@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_one_row_paged_attention_step(runtime, tmp_path, rng) -> None:
    """B=1 paged decode on the device: 6 steps (one of them writing no row:
    slot -1) against the oracle, the pools in place."""
    dependency, device, backend = RUNTIMES[runtime]
    require(dependency)
    text, module, (slots, hq, hkv, d, cap) = _one_row_paged_attention()
    art = ProgramArtifact(compile_gpu(module, device, tmp_path / "b1"), backend)
    try:
        state = {name: rng.standard_normal((slots, hkv, d)).astype(np.float32) for name in ("kp", "vp")}
        sess, ref = art.session(state), oracle.Session(text, state)
        table = rng.permutation(slots)[:cap].astype(np.int32).reshape(1, cap)
        for step in range(6):
            inputs = {
                "q": rng.standard_normal((1, hq, 1, d)).astype(np.float32),
                "k": rng.standard_normal((1, hkv, 1, d)).astype(np.float32),
                "v": rng.standard_normal((1, hkv, 1, d)).astype(np.float32),
                "pos": np.int32(step),
                "write": np.array([-1 if step == 3 else table[0, step]], np.int32),
                "read": table,
            }
            got, want = sess.step(inputs), ref.step(inputs)
            np.testing.assert_allclose(got.named["out"], want.named["out"], rtol=1e-5, atol=1e-5)
            for name in ("kp", "vp"):
                np.testing.assert_array_equal(sess.state[name], ref.state[name], err_msg=name)
    finally:
        art.close()


# Every f32/i32/i1 primitive (the SPIR-V step lowering has no f16/bf16
# arithmetic emulation yet, and GLSL.std.450 has no f64 exp/log/tanh; see
# docs/gpu-steps.md).
_GPU_OPS = [op for op in _OPS if all(t not in op[2] for t in ("f16", "bf16", "f64"))]


@pytest.fixture(scope="module", params=list(RUNTIMES))
def primitives(request, tmp_path_factory):
    device, backend = _runtime(request)
    text, names = _program(_GPU_OPS)
    path = compile_gpu(text, device, tmp_path_factory.mktemp("step") / "ops", fuse=False)
    art = ProgramArtifact(path, backend)
    yield text, names, art
    art.close()


def _run_with_oracle(text: str, art, rng):
    """The per-op program on fresh inputs (those its signature takes): the
    device's results and the oracle's."""
    used = {p.key for p in art.signature.args}
    inputs = {k: v for k, v in op_inputs(rng).items() if k in used}
    return art.run(inputs), oracle.run(text, inputs)


def test_every_primitive_on_lavapipe(primitives, rng) -> None:
    """The GPU twin of the CPU per-op test: every f32/i32/i1 primitive in
    one step, on fresh inputs, each output against the oracle."""
    text, names, art = primitives
    assert len(names) >= 30
    got, want = _run_with_oracle(text, art, rng)
    for name in names:
        assert_matches(name, got.named[name], want.named[name])


#: Two-byte floats on the GPU: every convert to and from f16/bf16 (f64 ones
#: aside: GLSL.std.450 has no f64 math) and arithmetic, math, reductions,
#: a matmul, compare and select in f16 and in bf16 (bf16 is carried as its
#: bits on SPIR-V and computed per op in f32: poot-spirv-bf16-as-i16).
_TWO_BYTE_OPS = [op for op in _OPS if "convert" in op[2] and "f64" not in op[2]
                 and ("f16" in op[2] or "bf16" in op[2])] + [
    (f"{p}_{name}", f"tensor<{shape}x{'i1' if name == 'lt' else t}>", text.format(t=t, x=x))
    for p, t, x in (("h", "f16", "%h"), ("bf", "bf16", "%bf"))
    for name, shape, text in (
        ("add", "2x3x4", "poot.add {x}, {x} : (tensor<2x3x4x{t}>, tensor<2x3x4x{t}>) -> tensor<2x3x4x{t}>"),
        ("mul", "2x3x4", "poot.mul {x}, {x} : (tensor<2x3x4x{t}>, tensor<2x3x4x{t}>) -> tensor<2x3x4x{t}>"),
        ("exp", "2x3x4", "poot.exp {x} : tensor<2x3x4x{t}>"),
        ("tanh", "2x3x4", "poot.tanh {x} : tensor<2x3x4x{t}>"),
        ("rsum", "2x1x4", "poot.reduce sum {x} axis = 1 keepdim : tensor<2x3x4x{t}> -> tensor<2x1x4x{t}>"),
        ("rmax", "2x3", "poot.reduce max {x} axis = 2 : tensor<2x3x4x{t}> -> tensor<2x3x{t}>"),
        ("lt", "2x3x4", "poot.compare lt, {x}, %x_t : (tensor<2x3x4x{t}>, tensor<2x3x4x{t}>) -> tensor<2x3x4xi1>"),
        ("select", "2x3x4", "poot.select %p, {x}, %x_t : (tensor<2x3x4xi1>, tensor<2x3x4x{t}>, tensor<2x3x4x{t}>) -> tensor<2x3x4x{t}>"),
        ("matmul", "2x3x3", "poot.matmul {x}, %x_tt : (tensor<2x3x4x{t}>, tensor<2x4x3x{t}>) -> tensor<2x3x3x{t}>"),
    )
]


def _two_byte_program() -> tuple[str, list[str]]:
    """The ops above in one step; %x_t (x converted) and %x_tt (its
    transpose) are computed inside it per dtype."""
    ops = []
    for name, type_, text in _TWO_BYTE_OPS:
        prefix = name.split("_")[0]
        if prefix in ("h", "bf") and not any(o[0] == f"{prefix}_xt" for o in ops):
            t = "f16" if prefix == "h" else "bf16"
            ops.append((f"{prefix}_xt", f"tensor<2x3x4x{t}>",
                        f"poot.convert %x : tensor<2x3x4xf32> -> tensor<2x3x4x{t}>"))
            ops.append((f"{prefix}_xtt", f"tensor<2x4x3x{t}>",
                        f"poot.transpose %{prefix}_xt perm = [0, 2, 1] : tensor<2x3x4x{t}> -> tensor<2x4x3x{t}>"))
        ops.append((name, type_, text.replace("%x_tt", f"%{prefix}_xtt").replace("%x_t", f"%{prefix}_xt")))
    return _program(ops)


@pytest.fixture(scope="module")
def two_byte(tmp_path_factory):
    """Raw Vulkan only: naga (wgpu) has no 16-bit integers to carry bf16
    (test_wgpu_refuses_bf16_steps)."""
    require("vulkan")
    device, backend = devices.VULKAN_LAVAPIPE, "lavapipe"
    text, names = _two_byte_program()
    path = compile_gpu(text, device, tmp_path_factory.mktemp("step") / "two_byte", fuse=False)
    art = ProgramArtifact(path, backend)
    yield text, names, art
    art.close()


def test_two_byte_primitives_on_lavapipe(two_byte, rng) -> None:
    """f16 and bf16 primitives on the device against the oracle (which
    rounds in the element type after every op, as the kernels do); the
    converts bit for bit."""
    text, names, art = two_byte
    assert len(names) >= 25
    got, want = _run_with_oracle(text, art, rng)
    for name in names:
        assert_matches(name, got.named[name], want.named[name])
        if "_" in name and name.split("_")[0] in ("f32", "f16", "bf16", "i32"):
            np.testing.assert_array_equal(got.named[name].view(np.uint16) if got.named[name].itemsize == 2
                                          else got.named[name], want.named[name].view(np.uint16)
                                          if want.named[name].itemsize == 2 else want.named[name], err_msg=name)


def test_wgpu_refuses_bf16_steps(tmp_path) -> None:
    """A bf16 step for the wgpu client is refused at compile time with a
    typed DtypeLowering (its kernels would carry bf16 as i16), never
    mis-lowered."""
    text = """
func.func @step(%a: tensor<4xbf16> {poot.name = "a"}) -> (tensor<4xbf16> {poot.name = "y"}) {
  %0 = poot.add %a, %a : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}"""
    with pytest.raises(errors.DtypeLowering, match="no 16-bit"):
        compile_gpu(text, devices.WGPU_LAVAPIPE, tmp_path / "bf16", fuse=False)


def test_wgpu_runs_f16_steps_with_nonfinite_constants(tmp_path, rng) -> None:
    """An unfused f16 max-reduction (its start value is -inf) and a clamp to
    +-inf on wgpu: the kernels' non-finite f16 constants are built through
    f32 (naga has no 16-bit integers to bitcast from; issue 28 defect 7: the
    module compiled, then naga refused it at load). Planted NaN and
    infinities come out as the oracle's."""
    require("wgpu")
    from poot_mlir.frontend import Tracer, ops

    tr = Tracer("step")
    x = tr.input("x", (6, 40), "f16")
    tr.output("max", ops.reduce_max(x, 1))
    tr.output("min", ops.reduce_min(x, 0))
    reference = tr.mlir()
    art = ProgramArtifact(compile_gpu(tr.finish(), devices.WGPU_LAVAPIPE, tmp_path / "f16",
                                      fuse=False), "wgpu-lavapipe")
    try:
        x = rng.standard_normal((6, 40)).astype(np.float16)
        x[1, 3], x[2, 0], x[3, 7], x[4, :] = np.nan, np.inf, -np.inf, -np.inf
        got = art.run({"x": x}).named
        want = oracle.run(reference, {"x": x}, reference=True).named
        for name in ("max", "min"):
            np.testing.assert_array_equal(got[name], want[name].astype(np.float16), err_msg=name)
        assert np.isnan(got["max"][1]) and got["max"][4] == -np.inf and got["max"][2] == np.inf
    finally:
        art.close()


def test_sm90_step_ptx_is_accepted_by_ptxas(tmp_path) -> None:
    """The whole decoder step for NVVM: every kernel module's PTX assembles
    for sm_90."""
    require("ptxas")
    tracer = build_decoder(DecoderConfig(layers=2, cap=16))
    path = compile_gpu(tracer.finish(), devices.SM_90, tmp_path / "nvvm")
    manifest = json.loads((path / "manifest.json").read_text())
    files = {c["launch"]["kernel"] for c in manifest["programs"][manifest["function"]["name"]]["commands"]}
    assert len(files) > 10
    for name in sorted(files):
        subprocess.run([ptxas_path(), "-arch=sm_90", str(path / name), "-o", str(tmp_path / "k.cubin")],
                       check=True)


def test_gfx942_step_rocdl_ir(tmp_path) -> None:
    """The whole decoder step for ROCDL: every kernel module is LLVM IR with
    AMDGPU kernels."""
    tracer = build_decoder(DecoderConfig(layers=1, cap=16))
    path = compile_gpu(tracer.finish(), devices.GFX942, tmp_path / "rocdl")
    lls = sorted(path.glob("*.ll"))
    assert len(lls) > 5
    for ll in lls:
        assert "amdgpu_kernel" in ll.read_text(), ll.name


def test_gfx942_step_hsaco_code_objects(tmp_path) -> None:
    """With Debian's llvm-22/lld-22 there, compile_gpu for gfx942 writes one
    HSACO code object per kernel module, named in every launch: an AMDGPU
    ELF for gfx942 whose symbols include each launch's kernel entry and its
    kernel descriptor; the manifest's note says how to run them."""
    require("amdgpu-llvm")
    tracer = build_decoder(DecoderConfig(layers=1, cap=16))
    path = compile_gpu(tracer.finish(), devices.GFX942, tmp_path / "rocdl")
    manifest = json.loads((path / "manifest.json").read_text())
    assert any(note.startswith("HSACO code objects for gfx942") for note in manifest["notes"])
    launches = [c["launch"] for program in manifest["programs"].values()
                for c in program["commands"] if "launch" in c]
    assert len(launches) > 5
    entries: dict[str, set[str]] = {}
    for launch in launches:
        entries.setdefault(launch["hsaco"], set()).add(launch["entry"])
    for name, wanted in sorted(entries.items()):
        header = subprocess.run(["llvm-readelf-22", "-h", "-s", str(path / name)],
                                capture_output=True, text=True, check=True).stdout
        assert "EM_AMDGPU" in header and "gfx942" in header, (name, header[:800])
        for entry in wanted:
            assert f" {entry}\n" in header and f" {entry}.kd\n" in header, (name, entry)


def test_dependent_launch_kernels_wait_first(tmp_path) -> None:
    """Device.dependent_launch (sm_90): every kernel of the step -- the
    primitives', the tensor-core matmuls' and the attention's -- begins with
    griddepcontrol.wait then launch_dependents, before any load or store;
    the manifest's device records it, so the CUDA runtime launches them
    with programmatic stream serialization; ptxas assembles them. An older
    chip is refused where the pipeline is parsed (griddepcontrol is sm_90's)."""
    require("ptxas")
    tracer = build_decoder(DecoderConfig(layers=1, d_model=256, q_heads=8, kv_heads=2, ffn=512,
                                         cap=64, vocab=512, dtype="bf16"))
    device = devices.SM_90.with_limits(dependent_launch=True)
    path = compile_gpu(tracer.finish(), device, tmp_path / "pdl")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["device"]["dependent_launch"] is True
    launches = [c["launch"] for c in manifest["programs"][manifest["function"]["name"]]["commands"]
                if "launch" in c]
    entries = {(l["kernel"], l["entry"]) for l in launches}
    assert any(e.startswith("mma_matmul") for _, e in entries)
    for kernel, entry in sorted(entries):
        text = (path / kernel).read_text()
        body = text[text.index(f".entry {entry}("):]
        body = body[body.index("{"):]
        # The first memory instructions but the kernel's parameters.
        first = [line.strip() for line in body.splitlines()
                 if line.strip().startswith(("griddepcontrol", "ld.", "st.", "cp.", "atom.", "red."))
                 and not line.strip().startswith("ld.param")][:2]
        assert first == ["griddepcontrol.wait;", "griddepcontrol.launch_dependents;"], (entry, first)
    for name in sorted({k for k, _ in entries}):
        subprocess.run([ptxas_path(), "-arch=sm_90", str(path / name), "-o", str(tmp_path / "k.cubin")],
                       check=True)
    # Without the option nothing waits (the default artifacts are unchanged).
    plain = compile_gpu(tracer.finish(), devices.SM_90, tmp_path / "plain")
    assert "dependent_launch" not in json.loads((plain / "manifest.json").read_text())["device"]
    assert not any("griddepcontrol" in p.read_text() for p in plain.glob("*.ptx"))
    with pytest.raises(errors.PootError, match="dependent-launch needs sm_90 or newer"):
        compile_gpu(tracer.finish(), device.with_limits(chip="sm_80"), tmp_path / "sm80")
