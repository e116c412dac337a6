"""Shared helpers of the attention-rewrite tests (test_rewrite*.py): fresh
random inputs for any traced step function, and the before/after check."""

from __future__ import annotations

from collections import Counter

import numpy as np

from poot_mlir import ir, oracle
from poot_mlir.oracle import dtypes
from poot_mlir.compiler import FuseReport, fuse_attention
from poot_mlir.passmanager import PassManager

# F32 chains: the fused op against the primitive chain it replaced.
F32_RTOL = 1e-5
# Every float op in float64 (oracle reference mode). Not 1e-15: the rewrite
# reads an f32 constant 1/c (a scale or softcap written as a product) as the
# exact c, which differs by f32 rounding (~6e-8 relative).
F64_RTOL = 1e-6


def random_inputs(module: object, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One value per argument of `module`'s function, drawn fresh: normal
    floats, i32 words inside each declared range (read maps anywhere in the
    pool, write maps distinct slots, the position anywhere it may be)."""
    program = oracle.load(module)
    inputs: dict[str, np.ndarray] = {}
    for port in program.args:
        spec = port.spec
        if spec.element == "i1":
            value = rng.random(spec.shape) < 0.5
        elif spec.element == "i32":
            lo, hi = port.range if port.range is not None else (0, 7)
            if port.slot == "write_map":
                slots = np.arange(max(lo, 0), hi + 1)
                value = rng.choice(slots, size=spec.shape, replace=False)
            else:
                value = rng.integers(lo, hi + 1, size=spec.shape)
            value = np.asarray(value, np.int32)
        else:
            value = rng.standard_normal(spec.shape).astype(spec.dtype)
        inputs[port.key] = value
    return inputs


def copy_module(module: ir.Module) -> ir.Module:
    """An independent copy in a fresh context, source locations kept (so a
    remark on the copy still points at the user's Python line)."""
    text = module.operation.get_asm(enable_debug_info=True)
    with ir.Context():
        return ir.Module.parse(text)


def fused_copy(module: ir.Module, *, remarks: bool = True) -> FuseReport:
    """`fuse_attention` on a copy, leaving `module` as traced."""
    return fuse_attention(copy_module(module), remarks=remarks)


def run_pipeline(module: ir.Module, pipeline: str) -> ir.Module:
    """A copy of `module` with a textual pipeline applied."""
    copy = copy_module(module)
    with copy.context:
        PassManager.parse(pipeline).run(copy.operation)
    return copy


def op_histogram(module: ir.Module) -> Counter:
    """How many ops of each name the module holds (constants excluded: the
    canonicalizer merges and hoists them)."""
    counts: Counter = Counter()

    def visit(op: ir.Operation) -> None:
        if op.name != "poot.constant":
            counts[op.name] += 1
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    visit(module.operation)
    return counts


def assert_same_results(
    before: oracle.Result, after: oracle.Result, rtol: float, what: str
) -> None:
    """Every result: floats within `rtol` of the largest magnitude (NaNs in
    the same places), everything else bit for bit."""
    assert len(before.outputs) == len(after.outputs)
    for index, (want, got) in enumerate(zip(before.outputs, after.outputs)):
        label = f"{what}: result #{index}"
        assert want.shape == got.shape and want.dtype == got.dtype, label
        if np.issubdtype(want.dtype, np.floating) or want.dtype.kind == "V":
            w = np.asarray(want, np.float64)
            g = np.asarray(got, np.float64)
            assert np.array_equal(np.isnan(w), np.isnan(g)), f"{label}: NaN positions differ"
            finite = ~np.isnan(w)
            scale = max(float(np.max(np.abs(w[finite]), initial=0.0)), 1e-30)
            error = float(np.max(np.abs(w[finite] - g[finite]), initial=0.0)) / scale
            assert error <= rtol, f"{label}: relative error {error:.3g} > {rtol:g}"
        else:
            np.testing.assert_array_equal(got, want, err_msg=label)


def check_rewrite(
    module: ir.Module,
    rng: np.random.Generator,
    *,
    fused: int,
    trials: int = 2,
    exact: bool = False,
) -> FuseReport:
    """Fuse a copy of `module`, check it holds `fused` poot.attention ops, and
    that the oracle gives the same results before and after on fresh random
    inputs (f32 within F32_RTOL, float64 reference within F64_RTOL; bit for
    bit when `exact`, i.e. when nothing fused)."""
    report = fused_copy(module)
    assert (
        report.attention == fused
    ), f"expected {fused} poot.attention, got {report.attention}: {report.remarks}"
    for _ in range(trials):
        inputs = random_inputs(module, rng)
        for reference, rtol in ((False, F32_RTOL), (True, F64_RTOL)):
            before = oracle.run(module, inputs, reference=reference)
            after = oracle.run(report.module, inputs, reference=reference)
            what = "float64 reference" if reference else "own dtype"
            if not reference and not exact and _two_byte(before):
                # Two-byte attention is the chain's exact math rounded once
                # (docs/two-byte-attention.md), not the chain's own roundings.
                exact_chain = oracle.run(module, inputs, reference=True)
                assert_rounded_once(exact_chain, after)
                continue
            assert_same_results(before, after, 0.0 if exact else rtol, what)
    return report


def _two_byte(result: oracle.Result) -> bool:
    return any(out.dtype in dtypes.HALF_DTYPES for out in result.outputs)


def assert_rounded_once(exact: oracle.Result, fused: oracle.Result) -> None:
    """Every two-byte result of `fused` is the float64 `exact` rounded once
    to its type: equal, or one ulp away where the rewrite's exact reading of
    a scale (F64_RTOL) moved the value across a rounding boundary."""
    for index, (want, got) in enumerate(zip(exact.outputs, fused.outputs)):
        if got.dtype not in dtypes.HALF_DTYPES:
            continue
        rounded = dtypes.round_float64(want, got.dtype).astype(np.float64)
        g = got.astype(np.float64)
        label = f"result #{index} ({got.dtype})"
        assert np.array_equal(np.isnan(rounded), np.isnan(g)), f"{label}: NaN positions differ"
        ok = ~np.isnan(g)
        ulp = np.abs(np.nextafter(got, np.array(np.inf, got.dtype)).astype(np.float64) - g)
        assert (np.abs(g[ok] - rounded[ok]) <= ulp[ok]).all(), f"{label}: not the exact value rounded once"
        assert np.mean(g[ok] == rounded[ok]) > 0.95, label
