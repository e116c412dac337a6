"""A torch-style Linear on the CPU target: `x @ W.T` with the weight stored
[out, in] (nn.Linear's layout), traced through the Python API and imported
from torch.export without `pack_weights`, against float64 on fresh random
inputs. The step reads W in place (poot-cpu-vectorize-matmuls' dot-product
tiles): no transposed copy of the weight among its temporaries. The shapes
cover the tiles' remainders: M not a multiple of the 4-row tile, N not a
multiple of the column tile, K not a multiple of the vector, batch axes on x.
The [K, N] layout (`x @ W`) is checked the same way: decode, batched decode
(output tiles carried in registers through K) and bf16 operands.
"""

from __future__ import annotations

import copy

import ml_dtypes
import numpy as np
import pytest

from poot_mlir.compiler import devices
from poot_mlir.compiler.cpu import compile_cpu
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime.cpu import CpuArtifact
from system_deps import require

BF16 = np.dtype(ml_dtypes.bfloat16)


def _linear_step(x_shape: tuple[int, ...], n: int, dtype: str):
    tr = Tracer("step")
    x = tr.input("x", x_shape, dtype)
    w = tr.input("w", (n, x_shape[-1]), dtype)  # [out, in], as nn.Linear stores it
    tr.output("y", x @ ops.transpose(w, (1, 0)))
    return tr.finish()


def _bound(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """|x| @ |w|.T in float64: the scale of each output's rounding error
    (an f32 sum of K products is off by at most ~K u of it, any order)."""
    return np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T


@pytest.mark.parametrize(
    "x_shape,n,dtype",
    [
        ((1, 512), 1000, "f32"),  # decode: one row, N not a multiple of the tile
        ((6, 40), 10, "f32"),  # row, column and K remainders; a serial loop
        ((16, 256), 72, "f32"),  # batched decode rows
        ((2, 3, 64), 96, "f32"),  # batch axes on x are more rows
        ((3, 200), 50, "bf16"),  # bf16 weights and rows: f32 accumulation
    ],
)
def test_linear_with_out_in_weight_matches_float64(rng, tmp_path, x_shape, n, dtype) -> None:
    np_dtype = np.float32 if dtype == "f32" else BF16
    k = x_shape[-1]
    x = rng.standard_normal(x_shape).astype(np_dtype)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np_dtype)
    path = compile_cpu(_linear_step(x_shape, n, dtype), tmp_path / "step",
                       device=devices.CPU.with_limits(compute_units=2))  # fmt: skip
    for threads in (1, 2):
        art = CpuArtifact(path, threads=threads)
        # W is read where it is: no [in, out] copy of it among the temporaries.
        assert art.manifest["function"].get("arena_bytes", 0) < w.nbytes
        y = art.run({"x": x, "w": w}).named["y"]
        want = x.astype(np.float64) @ w.astype(np.float64).T
        assert y.shape == want.shape and y.dtype == np_dtype
        bound = _bound(x.reshape(-1, k), w).reshape(want.shape)
        # f32: the sum's own rounding; bf16: the result rounded once to bf16
        # (2^-8 of it) on top of that.
        tol = 4 * k * 2.0**-24 * bound + (2.0**-8 * np.abs(want) if dtype == "bf16" else 0)
        err = np.abs(y.astype(np.float64) - want)
        assert np.all(err <= tol + 1e-30), f"max error {err.max()} (threads {threads})"
        art.close()


def test_imported_linear_without_pack_weights_matches_float64(rng, tmp_path) -> None:
    """nn.Linear(512, 300) + a second Linear, exported by torch and imported
    as it is (weights [out, in], read through `t`): the compiled step equals
    the module run in float64."""
    require("torch")
    import torch

    from poot_mlir.frontend.torch_export import exported_weights, import_exported

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(512, 300)
            self.out = torch.nn.Linear(300, 97, bias=False)

        def forward(self, x):
            return self.out(torch.relu(self.proj(x)))

    torch.manual_seed(int(rng.integers(1 << 31)))
    model = Head().eval()
    x = torch.from_numpy(rng.standard_normal((1, 2, 512)).astype(np.float32))
    ep = torch.export.export(model, (x,))
    tracer = import_exported(ep)
    weights = exported_weights(ep)
    assert weights["proj.weight"].shape == (300, 512)  # as torch stores it
    path = compile_cpu(tracer.finish(), tmp_path / "head")
    art = CpuArtifact(path)
    assert art.manifest["function"].get("arena_bytes", 0) < weights["proj.weight"].nbytes
    (y,) = art.run({"x": x.numpy(), **weights}).outputs
    with torch.no_grad():
        want = copy.deepcopy(model).double()(x.double()).numpy()
    np.testing.assert_allclose(y, want, rtol=0, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize(
    "m,k,n,dtype",
    [
        (1, 512, 3000, "f32"),  # decode: column chunks over the threads
        (16, 200, 96, "f32"),  # batched decode: K bands, output tiles in registers
        (6, 64, 97, "f32"),  # N prime: one-column tiles
        (16, 256, 160, "bf16"),  # bf16 operands, f32 accumulation
    ],
)
def test_linear_with_in_out_weight_matches_float64(rng, tmp_path, m, k, n, dtype) -> None:
    """The [K, N] layout (`x @ W`, W stored [in, out]) through the same
    compiler: decode, batched decode and 16-bit operands against float64."""
    np_dtype = np.float32 if dtype == "f32" else BF16
    tr = Tracer("step")
    x_in = tr.input("x", (m, k), dtype)
    w_in = tr.input("w", (k, n), dtype)
    tr.output("y", x_in @ w_in)
    x = rng.standard_normal((m, k)).astype(np_dtype)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np_dtype)
    path = compile_cpu(tr.finish(), tmp_path / "step", device=devices.CPU.with_limits(compute_units=2))
    want = x.astype(np.float64) @ w.astype(np.float64)
    bound = _bound(x, w.T)
    tol = 4 * k * 2.0**-24 * bound + (2.0**-8 * np.abs(want) if dtype == "bf16" else 0)
    for threads in (1, 2):
        art = CpuArtifact(path, threads=threads)
        y = art.run({"x": x, "w": w}).named["y"]
        err = np.abs(y.astype(np.float64) - want)
        assert np.all(err <= tol + 1e-30), f"max error {err.max()} (threads {threads})"
        art.close()


@pytest.mark.parametrize("x_shape,n", [((1, 4096), 96), ((16, 1000), 40), ((5, 77), 33)])
def test_bf16_dot_products_match_float64(rng, tmp_path, x_shape, n) -> None:
    """bf16 x bf16 [N, K] tiles on AVX512-BF16 (`Device.bf16_dot`:
    vdpbf16ps, two exact products a lane added in f32): within the f32
    accumulation bound of float64 and the one bf16 rounding, as the widened
    FMA tiles are (compiled beside them, same inputs). K 4096 is where a
    bf16-accumulating sum would be 7-8% off; 77 leaves a scalar tail. A
    host without the instruction compiles the widened tiles either way
    (the dot's IR is checked by the lit test poot-cpu-vectorize-matmuls-
    bf16-dot.mlir there)."""
    k = x_shape[-1]
    x = rng.standard_normal(x_shape).astype(BF16)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(BF16)
    want = x.astype(np.float64) @ w.astype(np.float64).T
    tol = 4 * k * 2.0**-24 * _bound(x, w) + 2.0**-8 * np.abs(want)
    host = devices.CPU.with_limits(vector_width=16)
    outputs = {}
    for dot in (True, False):
        path = compile_cpu(_linear_step(x_shape, n, "bf16"), tmp_path / f"dot{int(dot)}",
                           device=host.with_limits(bf16_dot=dot), keep_ir=True)  # fmt: skip
        ir = (path / "step.ll").read_text()
        assert ("llvm.x86.avx512bf16.dpbf16ps.512" in ir) == (dot and devices.CPU.bf16_dot)
        with CpuArtifact(path) as art:
            outputs[dot] = art.run({"x": x, "w": w}).named["y"].astype(np.float64)
        err = np.abs(outputs[dot] - want)
        assert np.all(err <= tol + 1e-30), f"bf16_dot={dot}: max error {err.max()}"
    if True in outputs:
        # The two summation orders agree to the bf16 rounding of the result.
        assert np.all(np.abs(outputs[True] - outputs[False]) <= 2 * tol + 1e-30)


@pytest.mark.parametrize("m,k,n", [(40, 300, 48), (42, 128, 96), (64, 4096, 64), (33, 77, 64),
                                   (16, 512, 256), (6, 1000, 64)])
def test_bf16_pair_tiles_match_float64(rng, tmp_path, m, k, n) -> None:
    """bf16 x bf16 [K, N] matmuls with prefill-sized rows on AVX512-BF16:
    each strip's K band interleaved into (W[k, j], W[k+1, j]) pairs once,
    then vdpbf16ps per output vector (poot-cpu-vectorize-matmuls' pair
    tiles), against float64 within the f32 accumulation bound and the one
    bf16 rounding, and beside the widened FMA tiles on the same inputs.
    Shapes: 3 K bands over 16-column strips; a 2-row remainder tile over
    32-column strips; K 4096 (a bf16-accumulating sum would be 7-8% off);
    odd K (77: no pairs, the widened tiles either way); batched decode rows
    (16: 128-column strips, 4 column tiles each; 6: a 2-row remainder)."""
    x = rng.standard_normal((m, k)).astype(BF16)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(BF16)
    tr = Tracer("step")
    tr.output("y", tr.input("x", (m, k), "bf16") @ tr.input("w", (k, n), "bf16"))
    module = tr.finish()
    want = x.astype(np.float64) @ w.astype(np.float64)
    tol = 4 * k * 2.0**-24 * _bound(x, w.T) + 2.0**-8 * np.abs(want)
    host = devices.CPU.with_limits(vector_width=16, compute_units=2)
    outputs = {}
    for dot in (True, False):
        path = compile_cpu(module, tmp_path / f"dot{int(dot)}", device=host.with_limits(bf16_dot=dot),
                           keep_ir=True)
        ir = (path / "step.ll").read_text()
        assert ("llvm.x86.avx512bf16.dpbf16ps.512" in ir) == (dot and devices.CPU.bf16_dot and k % 2 == 0)
        for threads in (1, 2):
            with CpuArtifact(path, threads=threads) as art:
                outputs[dot] = art.run({"x": x, "w": w}).named["y"].astype(np.float64)
            err = np.abs(outputs[dot] - want)
            assert np.all(err <= tol + 1e-30), f"bf16_dot={dot}, {threads} threads: max error {err.max()}"
    assert np.all(np.abs(outputs[True] - outputs[False]) <= 2 * tol + 1e-30)
