"""The torch.export importer (poot_mlir.frontend.torch_export): PyTorch
modules written the way PyTorch and Hugging Face write them, exported,
imported, compiled for the CPU and run, against the same module run by torch
in float64 on the same fresh seeded inputs and weights; the compiled
manifest must show the attention fused. Plus the refusals: each a typed
error naming the ATen op, the node and the model's source line."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

from system_deps import require

try:
    # torch.export imports torch._dynamo, which imports triton where it is
    # installed (CUDA builds of torch; CI's CPU build has none). Loading
    # triton's bundled LLVM after the GPU runtime tests have loaded theirs
    # segfaults, so it loads here, while pytest collects (toolchain-notes).
    import torch._dynamo  # noqa: F401  (what torch.export.export imports first)
except ImportError:  # the torch fixture skips (or fails under CI=true)
    pass

from poot_mlir import errors, oracle
from poot_mlir.compiler import compile_cpu, fuse_attention
from poot_mlir.runtime.cpu import CpuArtifact

# F32: the compiled step against torch's float64 run, relative to the largest
# output (f32 matmuls of 8-64 terms, a softmax and a few projections).
F32_RTOL = 2e-5
# Two-byte attention alone: the exact value rounded once (u = 2^-8 relative)
# plus the op's f32 math.
BF16_U = 2.0**-8
# bf16 models: the projections, RoPE and the output projection each round to
# bf16, in torch, in the oracle (once per op) and in the compiled step (whose
# elementwise chains may round less often), so results differ by a few u of
# the largest output. Measured worst over 24 seeded runs (2026-12-01): 1.8e-2
# against the oracle, 2.4e-2 against torch float64; a wrong mask, scale or
# head mapping is an O(1) error.
BF16_MODEL_RTOL = 16 * BF16_U


@pytest.fixture(scope="module")
def torch():
    require("torch")
    import torch

    return torch


@pytest.fixture(scope="module")
def models(torch):
    import torch_models

    return torch_models


@pytest.fixture
def seeded(torch, rng):
    """torch's generator seeded from the test's printed seed (weights are
    drawn by the modules' own initializers)."""
    torch.manual_seed(int(rng.integers(2**31)))
    return torch


def tensors(torch, rng, *shapes, dtype=None):
    out = [torch.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    return [t.to(dtype) for t in out] if dtype is not None else out


def numpy_of(torch, t):
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype == torch.int64:  # poot's integers are i32: int64 inputs bind as int32
        return t.numpy().astype(np.int32)
    return t.numpy()


def reference(torch, model, args):
    """The same module run by torch in float64 (weights and inputs widened
    exactly)."""
    wide = copy.deepcopy(model).double()
    with torch.no_grad():
        out = wide(*[a.double() if a.is_floating_point() else a for a in args])
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def compile_and_run(torch, model, args, tmp_path, *, names, weights="inputs", decompose=False):
    """Export (`decompose`: then to core ATen), import, compile for the CPU,
    run: (outputs, manifest, module, inputs)."""
    from poot_mlir.frontend.torch_export import exported_weights, import_exported

    ep = torch.export.export(model, tuple(args))
    if decompose:
        ep = ep.run_decompositions()
    module = import_exported(ep, weights=weights).finish()
    path = compile_cpu(module, tmp_path / "step")
    manifest = json.loads((path / "manifest.json").read_text())
    inputs = {name: numpy_of(torch, a) for name, a in zip(names, args)}
    if weights == "inputs":
        inputs.update(exported_weights(ep))
    result = CpuArtifact(path).run(inputs)
    return result.outputs, manifest, module, inputs


def relative_error(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape and np.isfinite(want).all()
    return float(np.abs(got - want).max() / np.abs(want).max())


def assert_fused(manifest, count=1) -> None:
    fusion = manifest["fusion"]
    assert fusion["attention"] == count and not fusion["declined"], fusion
    assert len(manifest["attention"]) == count


def fused_ir(module) -> str:
    """The module after fuse_attention (on a copy), as text."""
    from poot_mlir import ir

    with ir.Context():
        copy_ = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
    report = fuse_attention(copy_, remarks=True)
    return str(copy_), report


# --- (1) a bare SDPA with is_causal ---------------------------------------------------------


def test_sdpa_is_causal(seeded, models, rng, tmp_path) -> None:
    torch = seeded
    q, k, v = tensors(torch, rng, (1, 4, 16, 16), (1, 4, 16, 16), (1, 4, 16, 16))
    model = models.Sdpa(is_causal=True)
    (out,), manifest, module, _ = compile_and_run(torch, model, (q, k, v), tmp_path, names="qkv")
    assert_fused(manifest)
    # The importer emits is_causal as an iota compare: the op's causal kind.
    text, _ = fused_ir(module)
    assert re.search(r"poot.attention [^\n]* causal", text), text
    # The fused op keeps the model's line: the SDPA call in torch_models.py.
    assert "torch_models.py" in manifest["attention"][0]["location"], manifest["attention"]
    assert relative_error(out, reference(torch, model, (q, k, v))[0]) <= F32_RTOL


# --- (2) HF Llama attention, GQA, both causal-mask spellings --------------------------------


@pytest.mark.parametrize(
    "mask, decompose",
    [(mask, decompose) for decompose in (False, True)
     for mask in ("triu", "finfo", "tril", "tril_where")],  # fmt: skip
)
def test_llama_attention(seeded, models, rng, tmp_path, mask, decompose) -> None:
    """`decompose`: the core ATen program (`run_decompositions()`), whose
    matmuls fold the heads into `bmm`: it fuses the same way."""
    torch = seeded
    model = models.LlamaAttention(hidden=32, heads=4, kv_heads=2, mask=mask)
    x, cos, sin = tensors(torch, rng, (2, 8, 32), (2, 8, 8), (2, 8, 8))
    (out,), manifest, module, inputs = compile_and_run(
        torch, model, (x, cos, sin), tmp_path, names=("hidden_states", "cos", "sin"),
        decompose=decompose,
    )  # fmt: skip
    assert_fused(manifest)
    assert set(inputs) == {"hidden_states", "cos", "sin", "q_proj.weight", "k_proj.weight",
                           "v_proj.weight", "o_proj.weight"}  # fmt: skip
    # GQA: the op reads the 2 key heads directly (repeat_kv folded away), in
    # the decomposed program too (its head-folded bmm reads repeat_kv as
    # unsqueeze/expand/clone/view composed with the fold).
    text, _ = fused_ir(module)
    assert re.search(r"poot.attention [^\n]*tensor<2x4x8x8xf32>, tensor<2x2x8x8xf32>", text), text
    # full(-inf or finfo.min).triu(1) added, and the bool tril(ones) applied
    # by masked_fill(~keep) or torch.where(keep) (read through their boolean
    # identities; decomposed: arange compares of unsqueezed index vectors):
    # the op's causal kind, no mask tensor (docs/torch-export.md).
    assert re.search(r"poot.attention [^\n]* causal", text), text
    assert not re.search(r"poot.attention [^\n]* mask\(", text), text
    assert relative_error(out, reference(torch, model, (x, cos, sin))[0]) <= F32_RTOL


# --- (3) SDPA with enable_gqa and an attn_mask -----------------------------------------------


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float"])
def test_sdpa_gqa_with_mask(seeded, models, rng, tmp_path, mask_kind) -> None:
    torch = seeded
    q, k, v = tensors(torch, rng, (2, 8, 5, 16), (2, 2, 12, 16), (2, 2, 12, 8))
    args, names = [q, k, v], ["q", "k", "v"]
    if mask_kind == "bool":
        keep = torch.from_numpy(rng.random((2, 1, 5, 12)) < 0.6)
        keep[..., 0] = True  # every row sees a key (test_attention_spellings_fuse hides one)
        args.append(keep)
    elif mask_kind == "float":
        args.append(torch.from_numpy(rng.standard_normal((1, 8, 5, 12)).astype(np.float32)))
    if len(args) == 4:
        names.append("mask")
    model = models.Sdpa(enable_gqa=True, scale=0.3)
    (out,), manifest, _, _ = compile_and_run(torch, model, args, tmp_path, names=names)
    assert_fused(manifest)
    assert manifest["attention"][0]["scale"] == pytest.approx(0.3)
    assert relative_error(out, reference(torch, model, args)[0]) <= F32_RTOL


def test_hf_mask_creation_and_no_grad_rotary(seeded, models, rng, tmp_path) -> None:
    """transformers 5.x's mask creation (diff, cumsum, advanced indexing, &)
    and its no_grad rotary region import; the bool mask fuses as the op's
    mask."""
    torch = seeded
    q, k, v = tensors(torch, rng, (1, 4, 12, 16), (1, 2, 12, 16), (1, 2, 12, 16))
    model = models.HfMaskedSdpa(head_dim=16)
    (out,), manifest, _, _ = compile_and_run(torch, model, (q, k, v), tmp_path, names="qkv")
    assert_fused(manifest)
    assert relative_error(out, reference(torch, model, (q, k, v))[0]) <= F32_RTOL


# --- (4) a decoder layer: RMSNorm, RoPE from a buffer, attention, SwiGLU ------------------------


@pytest.mark.parametrize("weights", ["inputs", "constants"])
def test_llama_decoder_layer(seeded, models, rng, tmp_path, weights) -> None:
    torch = seeded
    model = models.LlamaDecoderLayer(hidden=32, heads=4, kv_heads=2, intermediate=64)
    (x,) = tensors(torch, rng, (1, 16, 32))
    (out,), manifest, module, inputs = compile_and_run(
        torch, model, (x,), tmp_path, names=("hidden_states",), weights=weights
    )
    assert_fused(manifest)
    if weights == "constants":
        assert set(inputs) == {"hidden_states"}
    else:
        assert "mlp.gate_proj.weight" in inputs and "rotary_emb.inv_freq" in inputs
    assert relative_error(out, reference(torch, model, (x,))[0]) <= F32_RTOL


# --- (5) bf16: the HF attention (f32 softmax around bf16) and a bare SDPA ---------------------


@pytest.mark.parametrize("mask", ["triu", "finfo"])
def test_llama_attention_bf16(seeded, models, rng, tmp_path, mask) -> None:
    """"triu": an f32 causal bias (torch promotes the bf16 scores to f32
    before the f32 softmax); "finfo": a bf16 bias (the softmax's dtype=f32
    widens them). Both are two-byte attention."""
    torch = seeded
    model = models.LlamaAttention(hidden=32, heads=4, kv_heads=2, mask=mask).to(torch.bfloat16)
    args = tensors(torch, rng, (1, 8, 32), (1, 8, 8), (1, 8, 8), dtype=torch.bfloat16)
    (out,), manifest, module, inputs = compile_and_run(
        torch, model, args, tmp_path, names=("hidden_states", "cos", "sin")
    )
    assert_fused(manifest)
    text, report = fused_ir(module)
    assert re.search(r"poot.attention [^\n]* causal [^\n]*-> tensor<1x4x8x8xbf16>", text), text
    assert out.dtype.name == "bfloat16"
    # The compiled step against the oracle of the fused module (the same
    # per-op bf16 roundings, two-byte attention rounded once)...
    fused_oracle = oracle.run(report.module, inputs).outputs[0]
    assert relative_error(out, fused_oracle) <= BF16_MODEL_RTOL
    # ...and against torch's float64 run of the same bf16 weights.
    assert relative_error(out, reference(torch, model, args)[0]) <= BF16_MODEL_RTOL


def test_sdpa_bf16_is_the_exact_value_rounded_once(seeded, models, rng, tmp_path) -> None:
    torch = seeded
    q, k, v = tensors(torch, rng, (1, 4, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16), dtype=torch.bfloat16)
    model = models.Sdpa(is_causal=True, enable_gqa=True)
    (out,), manifest, _, _ = compile_and_run(torch, model, (q, k, v), tmp_path, names="qkv")
    assert_fused(manifest)
    exact = reference(torch, model, (q, k, v))[0]
    got = out.astype(np.float64)
    assert (np.abs(got - exact) <= BF16_U * np.abs(exact) + 1e-6).all()


# --- (6) the attention spellings of real models, pre-dispatch and core ATen ------------------


def _hidden_rows(torch, rng, keep):
    """A bool keep mask [.., Lq, Lk] with one query row whose keys are all
    hidden (torch's SDPA gives 0 there) and every other row seeing a key."""
    keep = keep.clone()
    keep[..., 0] = True
    keep[..., int(rng.integers(keep.shape[-2])), :] = False
    return keep


def _hf_mask(torch, rng, b, lq, lk_max, dtype=None):
    """transformers' 4-D additive mask: causal (bottom-right) and left padding
    of some rows' first keys, `finfo(dtype).min` where hidden, wider than the
    key length (the model slices it); every query row sees a key."""
    dtype = dtype or torch.float32
    i = torch.arange(lq)[:, None] + (lk_max - 4 - lq)
    j = torch.arange(lk_max)[None, :]
    keep = (j <= i).expand(b, 1, lq, lk_max).clone()
    keep[0, :, :, : int(rng.integers(0, 3))] = False
    keep[..., lk_max - 4 - lq] = True  # the first query row's own key
    mask = torch.zeros(b, 1, lq, lk_max, dtype=dtype)
    return mask.masked_fill(~keep, torch.finfo(dtype).min)


def _spelling(name, torch, models, rng):
    """(model, args, names, expect): expect["causal"] the op's causal kind,
    ["kv_heads"] the heads the op's K reads (the KV heads behind repeat_kv),
    ["bf16"] a two-byte chain."""
    qkv = lambda hq, hkv, lq, lk, d=16, dtype=None: tensors(  # noqa: E731
        torch, rng, (2, hq, lq, d), (2, hkv, lk, d), (2, hkv, lk, d), dtype=dtype)
    expect = {"causal": False, "kv_heads": None, "bf16": False}
    if name == "sdpa":
        return models.Sdpa(), qkv(4, 4, 6, 10), "qkv", expect
    if name == "sdpa_scale":
        return models.Sdpa(scale=0.3), qkv(4, 4, 6, 10), "qkv", expect
    if name == "sdpa_is_causal":
        return models.Sdpa(is_causal=True), qkv(4, 4, 8, 8), "qkv", {**expect, "causal": True}
    if name == "sdpa_is_causal_rect":  # torch's top-left diagonal: a mask tensor
        return models.Sdpa(is_causal=True), qkv(4, 4, 4, 8), "qkv", expect
    if name == "sdpa_bool_mask":
        keep = _hidden_rows(torch, rng, torch.from_numpy(rng.random((2, 1, 6, 10)) < 0.6))
        return models.Sdpa(), [*qkv(4, 4, 6, 10), keep], ["q", "k", "v", "mask"], expect
    if name == "sdpa_float_mask":
        bias = torch.from_numpy(rng.standard_normal((1, 4, 6, 10)).astype(np.float32))
        bias[0, 1, 2] = float("-inf")  # a row whose keys are all hidden
        bias[0, 3, :, 4:7] = float("-inf")
        return models.Sdpa(), [*qkv(4, 4, 6, 10), bias], ["q", "k", "v", "mask"], expect
    if name == "sdpa_gqa_bool_mask":
        keep = _hidden_rows(torch, rng, torch.from_numpy(rng.random((2, 1, 6, 10)) < 0.6))
        return (models.Sdpa(enable_gqa=True, scale=0.3), [*qkv(8, 2, 6, 10), keep],
                ["q", "k", "v", "mask"], {**expect, "kv_heads": 2})  # fmt: skip
    if name == "sdpa_gqa_causal":
        return models.Sdpa(is_causal=True, enable_gqa=True), qkv(8, 2, 8, 8), "qkv", {
            **expect, "causal": True, "kv_heads": 2}  # fmt: skip
    if name == "sdpa_mqa_causal":
        return models.Sdpa(is_causal=True, enable_gqa=True), qkv(4, 1, 8, 8), "qkv", {
            **expect, "causal": True, "kv_heads": 1}  # fmt: skip
    if name == "sdpa_bf16_gqa":  # core ATen: the max reads the scores' 4-D view
        return (models.Sdpa(enable_gqa=True), qkv(4, 2, 6, 10, dtype=torch.bfloat16), "qkv",
                {**expect, "kv_heads": 2, "bf16": True})  # fmt: skip
    if name == "sdpa_bf16_mask":
        keep = _hidden_rows(torch, rng, torch.from_numpy(rng.random((2, 1, 6, 10)) < 0.6))
        return (models.Sdpa(enable_gqa=True), [*qkv(4, 2, 6, 10, dtype=torch.bfloat16), keep],
                ["q", "k", "v", "mask"], {**expect, "kv_heads": 2, "bf16": True})  # fmt: skip
    if name == "alibi":
        return models.AlibiSdpa(heads=4), qkv(4, 4, 8, 8), "qkv", expect
    if name == "sliding_window":
        # The bool band `(j <= i) & (j > i - 3)`: the causal kind's window.
        return models.SlidingWindowSdpa(window=3), qkv(4, 4, 8, 8), "qkv", {
            **expect, "causal": True, "window": 3}  # fmt: skip
    if name in ("hf_eager", "hf_softcap", "hf_eager_bf16"):
        dtype = torch.bfloat16 if name == "hf_eager_bf16" else None
        model = models.HfEagerAttention(n_rep=2, scaling=0.25,
                                        softcap=2.0 if name == "hf_softcap" else None)  # fmt: skip
        args = [*qkv(4, 2, 6, 8, dtype=dtype), _hf_mask(torch, rng, 2, 6, 12, dtype)]
        return (model.eval(), args, ["query", "key", "value", "attention_mask"],
                {**expect, "kv_heads": 2, "bf16": dtype is not None})  # fmt: skip
    raise AssertionError(name)


SPELLINGS = ["sdpa", "sdpa_scale", "sdpa_is_causal", "sdpa_is_causal_rect", "sdpa_bool_mask",
             "sdpa_float_mask", "sdpa_gqa_bool_mask", "sdpa_gqa_causal", "sdpa_mqa_causal",
             "sdpa_bf16_gqa", "sdpa_bf16_mask", "alibi", "sliding_window", "hf_eager", "hf_softcap",
             "hf_eager_bf16"]  # fmt: skip


@pytest.mark.parametrize("graph", ["pre_dispatch", "core_aten"])
@pytest.mark.parametrize("name", SPELLINGS)
def test_attention_spellings_fuse(seeded, models, rng, tmp_path, name, graph) -> None:
    """Each spelling, exported as is (pre-dispatch) and after
    `run_decompositions()` (core ATen: heads folded into bmm, repeat_kv as
    unsqueeze/expand/clone/view, the scale split over q and k, and SDPA's
    softmax guarded by `where(row all -inf, 0, p)`), fuses into one
    poot.attention, and the compiled CPU step matches torch's float64 run
    -- rows whose keys are all hidden included (torch's SDPA gives 0)."""
    torch = seeded
    model, args, names, expect = _spelling(name, torch, models, rng)
    outs, manifest, module, inputs = compile_and_run(
        torch, model, args, tmp_path, names=names, decompose=graph == "core_aten")
    assert_fused(manifest)
    text, report = fused_ir(module)
    assert not report.remarks, report.remarks
    line = next(l for l in text.splitlines() if "poot.attention" in l)
    assert (" causal" in line) == expect["causal"], line
    window = expect.get("window")
    assert (" window " in line) == bool(window) and (not window or f" window {window} " in line), line
    if expect["kv_heads"] is not None:
        # The op reads the KV heads behind repeat_kv (or the decomposed
        # unsqueeze/expand/clone/view), not the repeated ones.
        k_type = re.findall(r"tensor<[0-9x]+(?:bf16|f32)>", line.rsplit("} : ", 1)[1])[1]
        assert k_type.startswith(f"tensor<2x{expect['kv_heads']}x"), line
    (want,) = reference(torch, model, args)
    got = np.asarray(outs[0], np.float64)
    if expect["bf16"]:
        assert outs[0].dtype.name == "bfloat16"
        # Two-byte attention: the exact value rounded once.
        assert (np.abs(got - want) <= BF16_U * np.abs(want) + 1e-6).all()
    else:
        assert relative_error(got, want) <= F32_RTOL


@pytest.mark.parametrize("graph", ["pre_dispatch", "core_aten"])
def test_guarded_sdpa_on_lavapipe(seeded, models, rng, tmp_path, vulkan, graph) -> None:
    """SDPA with enable_gqa and a bool mask hiding a whole row, compiled for
    a GPU (lavapipe, through raw Vulkan and wgpu): the fused op, then the
    guard's zeroing select, torch's float64 result with 0 on that row."""
    from poot_mlir.compiler import devices, gpu
    from poot_mlir.frontend.torch_export import import_exported
    from poot_mlir.runtime.gpu import GpuArtifact

    torch = seeded
    model, args, names, _ = _spelling("sdpa_gqa_bool_mask", torch, models, rng)
    ep = torch.export.export(model, tuple(args))
    if graph == "core_aten":
        ep = ep.run_decompositions()
    device = devices.VULKAN_LAVAPIPE
    if vulkan.client == "wgpu":
        device = device.with_limits(client="wgpu")
    artifact = GpuArtifact(gpu.compile_gpu(import_exported(ep).finish(), device, tmp_path / "g"),
                           backend=vulkan)  # fmt: skip
    assert_fused(artifact.manifest)
    out = artifact.run({n: numpy_of(torch, a) for n, a in zip(names, args)}).outputs[0]
    want = reference(torch, model, args)[0]
    assert (want == 0).all(axis=-1).any()  # the hidden row is torch's 0
    assert relative_error(out, want) <= F32_RTOL


@pytest.mark.parametrize("graph", ["pre_dispatch", "core_aten"])
@pytest.mark.parametrize("name", ["sdpa_f64", "any_hidden_rows_zeroed"])
def test_attention_spellings_that_cannot_fuse_say_why(seeded, models, rng, tmp_path, name,
                                                      graph) -> None:
    """An f64 SDPA (the kernels read f32/f16/bf16) and a select after the
    softmax that is not the fully-masked-row guard stay primitive: the
    compiled step still matches torch float64, and the remark, at the
    model's line, names the check."""
    torch = seeded
    if name == "sdpa_f64":
        model, names = models.Sdpa(), ["q", "k", "v"]
        args = tensors(torch, rng, (1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 8), dtype=torch.float64)
        why = "element type f64 is not f32, f16 or bf16"
    else:
        model, names = models.AnyHiddenRowsZeroed(), ["q", "k", "v", "mask"]
        args = tensors(torch, rng, (1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 8))
        mask = torch.zeros(1, 1, 4, 6)
        mask[..., 1, 2:4] = float("-inf")  # one row with some keys hidden
        args.append(mask)
        why = "'poot.select' after the softmax is not the fully-masked-row guard"
    outs, manifest, module, _ = compile_and_run(
        torch, model, args, tmp_path, names=names, decompose=graph == "core_aten")
    fusion = manifest["fusion"]
    assert fusion["attention"] == 0 and len(fusion["declined"]) == 1, fusion
    assert why in fusion["declined"][0] and "torch_models.py" in fusion["declined"][0], fusion
    assert relative_error(outs[0], reference(torch, model, args)[0]) <= F32_RTOL


# --- the other ops: embedding, LayerNorm, GELU, log_softmax, var, chunk, two outputs -------------


def test_misc_ops(seeded, models, rng, tmp_path) -> None:
    torch = seeded
    model = models.Misc(vocab=16, hidden=8)
    ids = torch.from_numpy(rng.integers(0, 16, (2, 5)))
    (x,) = tensors(torch, rng, (2, 5, 8))
    outs, manifest, _, _ = compile_and_run(torch, model, (ids, x), tmp_path, names=("ids", "x"))
    assert manifest["fusion"]["attention"] == 0
    for got, want in zip(outs, reference(torch, model, (ids, x))):
        assert relative_error(got, want) <= F32_RTOL
    # import_module exports itself; int64 ids become an i32 input, two outputs.
    from poot_mlir.frontend.torch_export import import_module

    tracer = import_module(model, (ids, x), weights="constants", output_names=["logp", "peak"])
    assert tracer.arguments() == [("ids", (2, 5), "i32"), ("x", (2, 5, 8), "f32")]
    assert tracer.result_names == ["logp", "peak"]
    tracer.finish()


def test_assorted_ops(seeded, models, rng, tmp_path) -> None:
    torch = seeded
    x = torch.from_numpy(rng.standard_normal((2, 3, 4)).astype(np.float32))
    y = torch.from_numpy(rng.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32))
    model = models.Assorted()
    outs, _, _, _ = compile_and_run(torch, model, (x, y), tmp_path, names=("x", "y"))
    for got, want in zip(outs, reference(torch, model, (x, y))):
        assert relative_error(got, want) <= F32_RTOL


# --- docs/torch-export.md runs as written --------------------------------------------------


def test_doc_examples_run(torch, tmp_path, monkeypatch) -> None:
    """The doc's Python blocks, in order, in one namespace (as test_readme
    runs README.md): the SDPA block against torch float64, and the decode
    step that composes an exported piece with the tracer's state API."""
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "torch-export.md"
    text = doc.read_text()
    blocks = list(re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M))
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        # Padded to its line in the doc, so locations name the doc's lines.
        padding = "\n" * text[: block.start(1)].count("\n")
        exec(compile(padding + block.group(1), str(doc), "exec"), namespace)
    assert namespace["manifest"]["fusion"]["attention"] == 1
    assert json.loads((tmp_path / "out/torch_decode/manifest.json").read_text())["fusion"]["attention"] == 1


# --- refusals ------------------------------------------------------------------------------------


def _refusal(torch, model, args, **kwargs):
    from poot_mlir.frontend import tracer
    from poot_mlir.frontend.torch_export import import_exported

    ep = torch.export.export(model, tuple(args), **kwargs)
    active = list(tracer._ACTIVE)
    with pytest.raises(errors.TorchImportError) as caught:
        import_exported(ep)
    assert tracer._ACTIVE == active  # no tracer left half-built
    return caught.value


def test_unsupported_op_is_refused_naming_op_node_and_line(torch) -> None:
    class Cumprod(torch.nn.Module):
        def forward(self, x):
            y = torch.exp(x)
            return torch.cumprod(y, dim=-1)  # the refused line

    error = _refusal(torch, Cumprod(), (torch.randn(2, 3),))
    assert isinstance(error, errors.UnsupportedTorchOp) and isinstance(error, errors.TraceError)
    assert error.op == "aten.cumprod.default" and error.node == "cumprod"
    assert error.source and error.source.startswith(__file__)
    assert "aten.cumprod.default" in str(error) and "# the refused line" in str(error)


def test_sdpa_dropout_is_refused(torch, models) -> None:
    class Dropout(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1)

    q = torch.randn(1, 2, 4, 8)
    error = _refusal(torch, Dropout(), (q, q, q))
    assert isinstance(error, errors.UnsupportedTorchOp)
    assert error.op == "aten.scaled_dot_product_attention.default"
    assert "dropout_p=0.1" in str(error)


def test_dynamic_shapes_are_refused(torch, models) -> None:
    from torch.export import Dim

    q = torch.randn(1, 2, 8, 8)
    length = Dim("length", min=2, max=64)
    shapes = ({2: length}, {2: length}, {2: length})
    error = _refusal(torch, models.Sdpa(), (q, q, q), dynamic_shapes=shapes)
    assert isinstance(error, errors.DynamicShapeError)
    assert "static shapes only" in str(error) and "q [1, 2, " in str(error)


def test_written_buffers_are_state(torch, rng, tmp_path) -> None:
    """A forward that writes buffers in place (a counter's `add_`, a cache's
    `index_copy_` at `arange + pos`, an in-place update of an intermediate)
    imports functionalized: each written buffer is a state of the step
    (argument and result of its name), the read-only ones stay weights, and
    a session carries the state across steps like torch's module does."""

    class Cached(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros(1))
            self.register_buffer("cache", torch.zeros(2, 8, 4))
            self.register_buffer("scale", torch.full((4,), 0.5))

        def forward(self, x, pos):
            self.count.add_(1.0)
            self.cache.index_copy_(1, torch.arange(x.shape[1]) + pos, x)
            y = self.cache * self.scale
            y += self.count  # in place on an intermediate
            return y.sum(dim=1)

    x0 = torch.from_numpy(rng.standard_normal((2, 3, 4)).astype(np.float32))
    ep = torch.export.export(Cached(), (x0, torch.tensor(0)))
    from poot_mlir.frontend.torch_export import exported_state, exported_weights, import_exported

    tracer = import_exported(ep, pos="pos", max_pos=5)
    module = tracer.finish()
    assert tracer.argument_names == ["x", "pos", "scale", "count", "cache"]
    assert tracer.result_names == ["out", "count", "cache"]
    state = exported_state(ep)
    assert sorted(state) == ["cache", "count"]
    assert list(exported_weights(ep)) == ["scale"]
    artifact = CpuArtifact(compile_cpu(module, tmp_path / "stateful"))
    session = artifact.session(state)
    reference = Cached()
    for pos in (0, 3, 5):
        x = torch.from_numpy(rng.standard_normal((2, 3, 4)).astype(np.float32))
        with torch.no_grad():
            want = reference(x, torch.tensor(pos)).numpy()
        got = session.step({"x": x.numpy(), "pos": np.int32(pos), "scale": np.full(4, 0.5, np.float32)})
        np.testing.assert_allclose(got.named["out"], want, rtol=F32_RTOL, atol=F32_RTOL)
        np.testing.assert_array_equal(session.state["cache"], reference.cache.numpy())
    # The position is declared: one past the capacity is refused at bind.
    with pytest.raises(errors.RangeBindError):
        session.step({"x": x.numpy(), "pos": np.int32(6), "scale": np.full(4, 0.5, np.float32)})


def test_input_mutation_is_refused(torch) -> None:
    class WritesInput(torch.nn.Module):
        def forward(self, x):
            x.add_(1.0)
            return x * 2

    error = _refusal(torch, WritesInput(), (torch.randn(3),))
    assert "only buffers may be written" in str(error) and "USER_INPUT_MUTATION" in str(error)


def test_pack_weights_stores_transposed_weights(torch, rng, tmp_path) -> None:
    """`pack_weights=True`: a 2-D weight every reader transposes (a
    Linear's, `x @ w.t()`, square or not) is an input `[in, out]` of the
    same name, bound from `exported_weights(ep, pack_weights=True)`; a
    weight also read as is (a tied embedding, gathered) stays as it is;
    the step computes the same values either way."""
    from poot_mlir.frontend.torch_export import (
        exported_weights,
        import_exported,
        packed_weights,
    )

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(11, 8)
            self.square = torch.nn.Linear(8, 8)
            self.wide = torch.nn.Parameter(torch.randn(24, 8))

        def forward(self, ids):
            h = self.square(self.embed(ids))
            h = torch.relu(h @ self.wide.t())[..., :8]
            return h @ self.embed.weight.t()  # tied: read as is and transposed

    model = Tied().eval()
    ids = torch.from_numpy(rng.integers(0, 11, (1, 5)))
    ep = torch.export.export(model, (ids,))
    assert packed_weights(ep) == {"square.weight", "wide"}
    outs = []
    for pack in (False, True):
        tracer = import_exported(ep, pack_weights=pack)
        shapes = {name: shape for name, shape, _ in tracer.arguments()}
        assert shapes["wide"] == ((8, 24) if pack else (24, 8))
        assert shapes["embed.weight"] == (11, 8)
        weights = exported_weights(ep, pack_weights=pack)
        assert weights["wide"].shape == shapes["wide"] and weights["wide"].flags.c_contiguous
        path = compile_cpu(tracer.finish(), tmp_path / f"packed{pack}")
        outs.append(CpuArtifact(path).run({"ids": ids.numpy(), **weights}).named["out"])
    with torch.no_grad():
        want = copy.deepcopy(model).double()(ids).numpy()
    for out in outs:
        np.testing.assert_allclose(out, want, rtol=F32_RTOL, atol=F32_RTOL * np.abs(want).max())
