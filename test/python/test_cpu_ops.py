"""Every poot primitive through the CPU target, against the numpy oracle.

One step function uses every primitive op (each result a named output), is
compiled once per test module, and every test runs the artifact on fresh
random inputs (seeded and printed by the `rng` fixture; never zeros) and
compares one output with `oracle.run` on the same inputs.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from poot_mlir import oracle
from poot_mlir.compiler.cpu import compile_cpu
from poot_mlir.runtime import cpu as runtime

BF16 = np.dtype(ml_dtypes.bfloat16)

# (name, result type, op text using %-names of the arguments below)
_ARGS = """
  %x: tensor<2x3x4xf32> {poot.name = "x"},
  %y: tensor<3x1xf32> {poot.name = "y"},
  %den: tensor<2x3x4xf32> {poot.name = "den"},
  %xp: tensor<2x3x4xf32> {poot.name = "xp"},
  %a: tensor<2x3x4xi32> {poot.name = "a"},
  %b: tensor<3x4xi32> {poot.name = "b"},
  %p: tensor<2x3x4xi1> {poot.name = "p"},
  %q: tensor<4xi1> {poot.name = "q"},
  %h: tensor<2x3x4xf16> {poot.name = "h"},
  %bf: tensor<2x3x4xbf16> {poot.name = "bf"},
  %d: tensor<2x3x4xf64> {poot.name = "d"},
  %start: tensor<i32> {poot.name = "start"},
  %cache: tensor<1x2x8x4xf32> {poot.name = "cache"},
  %upd: tensor<1x2x3x4xf32> {poot.name = "upd"},
  %pool: tensor<6x2x3xf32> {poot.name = "pool"},
  %idx: tensor<2x5xi32> {poot.name = "idx"},
  %sidx: tensor<4xi32> {poot.name = "sidx"},
  %rows: tensor<4x2x3xf32> {poot.name = "rows"},
  %t: tensor<3x10xf32> {poot.name = "t"},
  %g: tensor<5xi32> {poot.name = "g"},
  %m1: tensor<2x1x3x5xf32> {poot.name = "m1"},
  %m2: tensor<4x5x2xf32> {poot.name = "m2"}
"""

_OPS: list[tuple[str, str, str]] = [
    # Elementwise float with numpy broadcasting.
    ("add", "tensor<2x3x4xf32>", "poot.add %x, %y : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>"),
    ("sub", "tensor<2x3x4xf32>", "poot.sub %y, %x : (tensor<3x1xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>"),
    ("mul", "tensor<2x3x4xf32>", "poot.mul %x, %den : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>"),
    ("div", "tensor<2x3x4xf32>", "poot.div %x, %den : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>"),
    ("max", "tensor<2x3x4xf32>", "poot.max %x, %y : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>"),
    ("min", "tensor<2x3x4xf32>", "poot.min %x, %y : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>"),
    # Elementwise i32 (floor division, x / 0 = 0) and i1.
    ("iadd", "tensor<2x3x4xi32>", "poot.add %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("isub", "tensor<2x3x4xi32>", "poot.sub %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("imul", "tensor<2x3x4xi32>", "poot.mul %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("idiv", "tensor<2x3x4xi32>", "poot.div %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("imax", "tensor<2x3x4xi32>", "poot.max %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("imin", "tensor<2x3x4xi32>", "poot.min %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("iand", "tensor<2x3x4xi32>", "poot.and %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("ior", "tensor<2x3x4xi32>", "poot.or %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi32>"),
    ("band", "tensor<2x3x4xi1>", "poot.and %p, %q : (tensor<2x3x4xi1>, tensor<4xi1>) -> tensor<2x3x4xi1>"),
    ("bor", "tensor<2x3x4xi1>", "poot.or %p, %q : (tensor<2x3x4xi1>, tensor<4xi1>) -> tensor<2x3x4xi1>"),
    # Unary.
    ("exp", "tensor<2x3x4xf32>", "poot.exp %x : tensor<2x3x4xf32>"),
    ("log", "tensor<2x3x4xf32>", "poot.log %xp : tensor<2x3x4xf32>"),
    ("tanh", "tensor<2x3x4xf32>", "poot.tanh %x : tensor<2x3x4xf32>"),
    ("logistic", "tensor<2x3x4xf32>", "poot.logistic %x : tensor<2x3x4xf32>"),
    ("sqrt", "tensor<2x3x4xf32>", "poot.sqrt %xp : tensor<2x3x4xf32>"),
    ("rsqrt", "tensor<2x3x4xf32>", "poot.rsqrt %xp : tensor<2x3x4xf32>"),
    ("sin", "tensor<2x3x4xf32>", "poot.sin %x : tensor<2x3x4xf32>"),
    ("cos", "tensor<2x3x4xf32>", "poot.cos %x : tensor<2x3x4xf32>"),
    ("neg", "tensor<2x3x4xf32>", "poot.neg %x : tensor<2x3x4xf32>"),
    ("abs", "tensor<2x3x4xf32>", "poot.abs %x : tensor<2x3x4xf32>"),
    ("ineg", "tensor<2x3x4xi32>", "poot.neg %a : tensor<2x3x4xi32>"),
    ("iabs", "tensor<2x3x4xi32>", "poot.abs %a : tensor<2x3x4xi32>"),
    ("dexp", "tensor<2x3x4xf64>", "poot.exp %d : tensor<2x3x4xf64>"),
    # Compare (float and int, broadcasting) and select.
    ("lt", "tensor<2x3x4xi1>", "poot.compare lt, %x, %y : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xi1>"),
    ("le", "tensor<2x3x4xi1>", "poot.compare le, %x, %den : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xi1>"),
    ("gt", "tensor<2x3x4xi1>", "poot.compare gt, %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi1>"),
    ("ge", "tensor<2x3x4xi1>", "poot.compare ge, %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi1>"),
    ("eq", "tensor<2x3x4xi1>", "poot.compare eq, %a, %b : (tensor<2x3x4xi32>, tensor<3x4xi32>) -> tensor<2x3x4xi1>"),
    ("ne", "tensor<2x3x4xi1>", "poot.compare ne, %p, %q : (tensor<2x3x4xi1>, tensor<4xi1>) -> tensor<2x3x4xi1>"),
    ("select", "tensor<2x3x4xf32>", "poot.select %p, %x, %y : (tensor<2x3x4xi1>, tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>"),
    # Converts, f16/bf16 included.
    ("f32_i32", "tensor<2x3x4xi32>", "poot.convert %den : tensor<2x3x4xf32> -> tensor<2x3x4xi32>"),
    ("i32_f32", "tensor<2x3x4xf32>", "poot.convert %a : tensor<2x3x4xi32> -> tensor<2x3x4xf32>"),
    ("f32_f16", "tensor<2x3x4xf16>", "poot.convert %x : tensor<2x3x4xf32> -> tensor<2x3x4xf16>"),
    ("f32_bf16", "tensor<2x3x4xbf16>", "poot.convert %x : tensor<2x3x4xf32> -> tensor<2x3x4xbf16>"),
    ("f16_f32", "tensor<2x3x4xf32>", "poot.convert %h : tensor<2x3x4xf16> -> tensor<2x3x4xf32>"),
    ("bf16_f32", "tensor<2x3x4xf32>", "poot.convert %bf : tensor<2x3x4xbf16> -> tensor<2x3x4xf32>"),
    ("f16_bf16", "tensor<2x3x4xbf16>", "poot.convert %h : tensor<2x3x4xf16> -> tensor<2x3x4xbf16>"),
    ("bf16_f16", "tensor<2x3x4xf16>", "poot.convert %bf : tensor<2x3x4xbf16> -> tensor<2x3x4xf16>"),
    ("f64_f32", "tensor<2x3x4xf32>", "poot.convert %d : tensor<2x3x4xf64> -> tensor<2x3x4xf32>"),
    ("f64_bf16", "tensor<2x3x4xbf16>", "poot.convert %d : tensor<2x3x4xf64> -> tensor<2x3x4xbf16>"),
    ("f32_f64", "tensor<2x3x4xf64>", "poot.convert %x : tensor<2x3x4xf32> -> tensor<2x3x4xf64>"),
    ("i1_f32", "tensor<2x3x4xf32>", "poot.convert %p : tensor<2x3x4xi1> -> tensor<2x3x4xf32>"),
    ("f32_i1", "tensor<2x3x4xi1>", "poot.convert %i32_f32 : tensor<2x3x4xf32> -> tensor<2x3x4xi1>"),
    ("i1_i32", "tensor<2x3x4xi32>", "poot.convert %p : tensor<2x3x4xi1> -> tensor<2x3x4xi32>"),
    ("i32_i1", "tensor<2x3x4xi1>", "poot.convert %a : tensor<2x3x4xi32> -> tensor<2x3x4xi1>"),
    ("i32_bf16", "tensor<2x3x4xbf16>", "poot.convert %a : tensor<2x3x4xi32> -> tensor<2x3x4xbf16>"),
    # Index generators and constants.
    ("iota", "tensor<2x5x3xi32>", "poot.iota dim = 1 : tensor<2x5x3xi32>"),
    ("iota_f", "tensor<4x3xf32>", "poot.iota dim = 0 : tensor<4x3xf32>"),
    ("const", "tensor<2x3xf32>", "poot.constant dense<[[1.5, -2.0, 3.25], [0.5, 7.0, -0.125]]> : tensor<2x3xf32>"),
    ("const_b", "tensor<3xi1>", "poot.constant dense<[true, false, true]> : tensor<3xi1>"),
    # Shapes and data movement.
    ("reshape", "tensor<4x6xf32>", "poot.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>"),
    ("reshape0", "tensor<1x1xi32>", "poot.reshape %start : tensor<i32> -> tensor<1x1xi32>"),
    ("broadcast", "tensor<2x2x3x4xf32>", "poot.broadcast %y : tensor<3x1xf32> -> tensor<2x2x3x4xf32>"),
    ("transpose", "tensor<4x2x3xf32>", "poot.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>"),
    ("slice", "tensor<2x2x2xf32>", "poot.slice %x [0, 1, 0] to [2, 3, 4] step [1, 1, 2] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>"),
    ("slice_pad", "tensor<2x3x1xf32>", "poot.slice %x [0, 0, 3] to [2, 3, 4] step [1, 1, 1] : tensor<2x3x4xf32> -> tensor<2x3x1xf32>"),
    ("concat", "tensor<2x3x9xf32>", "poot.concat %x, %x, %slice_pad axis = 2 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x9xf32>"),
    ("dus", "tensor<1x2x8x4xf32>", "poot.dynamic_update_slice %cache, %upd, %start axis = 2 : tensor<1x2x8x4xf32>, tensor<1x2x3x4xf32>, tensor<i32>"),
    ("gather", "tensor<2x5x2x3xf32>", "poot.gather %pool[%idx] axis = 0 : (tensor<6x2x3xf32>, tensor<2x5xi32>) -> tensor<2x5x2x3xf32>"),
    ("gather1", "tensor<6x2x5xf32>", "poot.gather %pool[%idx] axis = 2 : (tensor<6x2x3xf32>, tensor<2x5xi32>) -> tensor<6x2x2x5xf32>"),
    ("scatter", "tensor<6x2x3xf32>", "poot.scatter_update %pool[%sidx], %rows : tensor<6x2x3xf32>, tensor<4xi32>, tensor<4x2x3xf32>"),
    # Contractions and reductions.
    ("matmul", "tensor<2x4x3x2xf32>", "poot.matmul %m1, %m2 : (tensor<2x1x3x5xf32>, tensor<4x5x2xf32>) -> tensor<2x4x3x2xf32>"),
    ("rsum", "tensor<2x1x4xf32>", "poot.reduce sum %x axis = 1 keepdim : tensor<2x3x4xf32> -> tensor<2x1x4xf32>"),
    ("rmax", "tensor<3x4xf32>", "poot.reduce max %x axis = 0 : tensor<2x3x4xf32> -> tensor<3x4xf32>"),
    ("rmin", "tensor<2x3x1xf32>", "poot.reduce min %x axis = 2 keepdim : tensor<2x3x4xf32> -> tensor<2x3x1xf32>"),
    ("risum", "tensor<2x3xi32>", "poot.reduce sum %a axis = 2 : tensor<2x3x4xi32> -> tensor<2x3xi32>"),
    ("rimax", "tensor<2x4xi32>", "poot.reduce max %a axis = 1 : tensor<2x3x4xi32> -> tensor<2x4xi32>"),
    ("rbsum", "tensor<3x4xi1>", "poot.reduce sum %p axis = 0 : tensor<2x3x4xi1> -> tensor<3x4xi1>"),
    ("index_guard", "tensor<5xi32>", "poot.index_guard %g min = 1 max = 8 : tensor<5xi32>"),
    ("top_k", "tensor<3x4xf32>", "poot.top_k %t k = 4 : tensor<3x10xf32> -> tensor<3x4xf32>, tensor<3x4xi32>"),
]

# Ops with two results: the extra result, as (name, type, "%op#1").
_EXTRA = {
    "index_guard": ("index_guard_ok", "tensor<i1>"),
    "top_k": ("top_k_idx", "tensor<3x4xi32>"),
}

# The gather along axis 2 has a 4-d result.
_TYPES = {"gather1": "tensor<6x2x2x5xf32>"}


def _program(ops: list[tuple[str, str, str]] = _OPS) -> tuple[str, list[str]]:
    """One step computing every op of `ops` (each result a named output)."""
    lines, results = [], []
    for name, type_, text in ops:
        type_ = _TYPES.get(name, type_)
        if name in _EXTRA:
            lines.append(f"  %{name}:2 = {text}")
            results.append((name, f"%{name}#0", type_))
            extra, extra_type = _EXTRA[name]
            results.append((extra, f"%{name}#1", extra_type))
        else:
            lines.append(f"  %{name} = {text}")
            results.append((name, f"%{name}", type_))
    sig = ", ".join(f'{t} {{poot.name = "{n}"}}' for n, _, t in results)
    ret = ", ".join(v for _, v, _ in results)
    ret_types = ", ".join(t for _, _, t in results)
    text = (
        f"func.func @step({_ARGS}) -> ({sig}) {{\n"
        + "\n".join(lines)
        + f"\n  return {ret} : {ret_types}\n}}\n"
    )
    return text, [n for n, _, _ in results]


PROGRAM, OUTPUTS = _program()


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> runtime.CpuArtifact:
    out = compile_cpu(PROGRAM, tmp_path_factory.mktemp("cpu_ops") / "step")
    return runtime.load(out)


def _nonzero(rng: np.random.Generator, shape, lo=0.5, hi=2.0) -> np.ndarray:
    """Values with |v| in [lo, hi), random sign: never zero."""
    mag = rng.uniform(lo, hi, size=shape)
    return np.where(rng.random(shape) < 0.5, -mag, mag)


def _inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    f32 = np.float32
    ints = rng.integers(-20, 21, size=(2, 3, 4)).astype(np.int32)
    ints[0, 0, 0] = np.iinfo(np.int32).min  # INT_MIN // -1 wraps, as numpy
    divisors = rng.integers(-5, 6, size=(3, 4)).astype(np.int32)
    divisors[0, :3] = (0, -1, 1)
    # Ties in every row of top_k: few distinct values.
    t = rng.integers(-4, 5, size=(3, 10)).astype(f32) * f32(0.5)
    return {
        "x": rng.standard_normal((2, 3, 4)).astype(f32) * f32(2),
        "y": rng.standard_normal((3, 1)).astype(f32),
        "den": _nonzero(rng, (2, 3, 4)).astype(f32),
        "xp": rng.uniform(0.1, 4.0, size=(2, 3, 4)).astype(f32),
        "a": ints,
        "b": divisors,
        "p": rng.random((2, 3, 4)) < 0.5,
        "q": np.array([True, False, True, False]) ^ (rng.random(4) < 0.5),
        "h": rng.standard_normal((2, 3, 4)).astype(np.float16),
        "bf": rng.standard_normal((2, 3, 4)).astype(BF16),
        "d": rng.standard_normal((2, 3, 4)),
        "start": np.int32(rng.integers(-4, 12)),  # clamped into [0, 5]
        "cache": rng.standard_normal((1, 2, 8, 4)).astype(f32),
        "upd": rng.standard_normal((1, 2, 3, 4)).astype(f32),
        "pool": rng.standard_normal((6, 2, 3)).astype(f32),
        "idx": rng.integers(-3, 9, size=(2, 5)).astype(np.int32),  # clipped
        "sidx": np.array(rng.choice([-1, -3, 7, 0, 2, 4, 5], size=4), dtype=np.int32),
        "rows": rng.standard_normal((4, 2, 3)).astype(f32),
        "t": t,
        "g": rng.integers(-3, 12, size=5).astype(np.int32),
        "m1": rng.standard_normal((2, 1, 3, 5)).astype(f32),
        "m2": rng.standard_normal((4, 5, 2)).astype(f32),
    }


def assert_matches(name: str, actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape, name
    assert actual.dtype == expected.dtype, f"{name}: {actual.dtype} != {expected.dtype}"
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=name)
        return
    tol = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5}.get(actual.dtype, 1e-2)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    # Transcendentals and reassociated sums: relative error, with an absolute
    # floor of 1e-6 (f32) for values near zero.
    atol = 1e-6 if actual.dtype == np.float32 else 0.0
    np.testing.assert_allclose(a, e, rtol=tol, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", OUTPUTS)
def test_op_matches_oracle(artifact: runtime.CpuArtifact, rng: np.random.Generator, name: str) -> None:
    inputs = _inputs(rng)
    got = artifact.run(inputs)
    want = oracle.run(PROGRAM, inputs)
    assert_matches(name, got.named[name], want.named[name])


def test_low_precision_converts_are_bit_exact(artifact: runtime.CpuArtifact, rng: np.random.Generator) -> None:
    """f16/bf16 conversions round to nearest even: bit for bit with numpy/ml_dtypes."""
    inputs = _inputs(rng)
    got = artifact.run(inputs).named
    x, h, bf, d = inputs["x"], inputs["h"], inputs["bf"], inputs["d"]
    np.testing.assert_array_equal(got["f32_f16"].view(np.uint16), x.astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(got["f32_bf16"].view(np.uint16), x.astype(BF16).view(np.uint16))
    np.testing.assert_array_equal(got["f16_f32"], h.astype(np.float32))
    np.testing.assert_array_equal(got["bf16_f32"], bf.astype(np.float32))
    np.testing.assert_array_equal(got["f16_bf16"].view(np.uint16), h.astype(np.float32).astype(BF16).view(np.uint16))
    np.testing.assert_array_equal(got["f64_bf16"].view(np.uint16), d.astype(np.float32).astype(BF16).view(np.uint16))


def test_edge_semantics_independently(artifact: runtime.CpuArtifact, rng: np.random.Generator) -> None:
    """The documented edge rules, by independent numpy formulas."""
    inputs = _inputs(rng)
    got = artifact.run(inputs).named
    a, b = inputs["a"].astype(np.int64), np.broadcast_to(inputs["b"], (2, 3, 4)).astype(np.int64)
    safe = np.where(b == 0, 1, b)
    want = np.where(b == 0, 0, np.floor_divide(a, safe))
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)  # INT_MIN // -1 wraps
    np.testing.assert_array_equal(got["idiv"], want)
    # dynamic_update_slice clamps its start into [0, 8 - 3].
    s = int(np.clip(inputs["start"], 0, 5))
    cache = inputs["cache"].copy()
    cache[:, :, s : s + 3, :] = inputs["upd"]
    np.testing.assert_array_equal(got["dus"], cache)
    # gather clips, scatter skips indices outside [0, 6).
    np.testing.assert_array_equal(got["gather"], inputs["pool"][np.clip(inputs["idx"], 0, 5)])
    pool = inputs["pool"].copy()
    for i, slot in enumerate(inputs["sidx"]):
        if 0 <= slot < 6:
            pool[slot] = inputs["rows"][i]
    np.testing.assert_array_equal(got["scatter"], pool)
    # top_k: descending, ties to the lower index (a stable sort of -x).
    order = np.argsort(-inputs["t"], axis=-1, kind="stable")[:, :4]
    np.testing.assert_array_equal(got["top_k_idx"], order.astype(np.int32))
    np.testing.assert_array_equal(got["top_k"], np.take_along_axis(inputs["t"], order, -1))
    g = inputs["g"]
    np.testing.assert_array_equal(got["index_guard"], np.clip(g, 1, 8))
    assert bool(got["index_guard_ok"]) == bool(np.all((g >= 1) & (g <= 8)))


def test_artifact_is_self_contained(artifact: runtime.CpuArtifact) -> None:
    """step.so needs libc and libm only, and exports just the C interface."""
    import json
    import subprocess

    manifest = json.loads((artifact.path / "manifest.json").read_text())
    assert manifest["format"] == "poot-artifact/1" and manifest["target"] == "cpu"
    assert manifest["entry"] == "_mlir_ciface_step"
    assert [e["name"] for e in manifest["function"]["outputs"]] == OUTPUTS
    nm = subprocess.run(["nm", "-D", str(artifact.path / "step.so")], capture_output=True, text=True)
    if nm.returncode == 0:
        defined = [l.split()[-1] for l in nm.stdout.splitlines() if " T " in l]
        assert defined == ["_mlir_ciface_step"]
        undefined = {l.split()[-1].split("@")[0] for l in nm.stdout.splitlines() if " U " in l}
        assert "memrefCopy" not in undefined
        assert undefined <= {"malloc", "free", "memcpy", "memset", "memmove", "expf", "exp", "logf", "log",
                             "tanhf", "tanh", "sinf", "sin", "cosf", "cos", "sqrtf", "sqrt"}, undefined
