"""Attention test cases shared by the kernel tests (CPU, Vulkan, CUDA).

Each case is one `poot.attention` form written as MLIR text, with inputs
drawn fresh from the test's generator. The step function's arguments carry
`poot.name`s, so every runtime and the oracle bind the same dict.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np


@dataclasses.dataclass(frozen=True)
class Form:
    """Shape and options of one attention form."""

    name: str
    batch: int = 2
    q_heads: int = 4
    kv_heads: int = 2
    q_len: int = 1
    key_len: int = 300
    key_width: int = 16
    value_width: int = 16
    shared_width: int = 0  # MLA split key
    mask: str | None = None  # None, "shared" (causal over Lq x Lk), "per_head"
    softcap: float | None = None
    pool: int = 0  # paged: pool slots S
    live: bool = False
    empty_row: bool = False  # one row whose keys are all masked (-> NaN)
    causal: bool = False  # the op's causal kind (t <= i + Lk - Lq), no mask tensor
    window: int = 0  # with causal: the sliding window (t > i + Lk - Lq - window)


FORMS = [
    Form("dense", q_heads=4, kv_heads=4),
    Form("gqa", q_heads=8, kv_heads=2),
    Form("mqa", q_heads=4, kv_heads=1),
    Form("alibi", mask="per_head"),
    Form("prefill_causal", q_len=12, key_len=12, mask="shared"),
    Form("softcap", softcap=5.0),
    Form("dv_ne_dk", key_width=16, value_width=8),
    Form("mla_split_key", key_width=12, shared_width=4, value_width=8),
    Form("paged", pool=700),
    Form("live", live=True),
    Form("paged_live", pool=700, live=True),
    Form("empty_row", mask="per_head", empty_row=True),
    Form("causal_chunk", q_len=12, key_len=40, causal=True),
    # The sliding window: a decode row sees the last 261 keys of 300 (the
    # split-KV chunks divide those 261), a chunk its 9-key band.
    Form("window_decode", q_heads=8, kv_heads=2, causal=True, window=261),
    Form("window_chunk", q_len=12, key_len=40, causal=True, window=9),
]


def _t(shape, dtype="f32") -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{dtype}>"


#: numpy dtypes of the float element types a case may take.
NP_FLOAT = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}


def build(
    form: Form, rng: np.random.Generator, dtype: str = "f32", mask_dtype: str | None = None
) -> tuple[str, dict[str, np.ndarray]]:
    """(MLIR text of @step, inputs by name) for one form: Q, K, V (and the
    shared key) in `dtype`, the mask in `mask_dtype` (default `dtype`; f32
    with a two-byte `dtype` is the op's other allowed mask type). Two-byte
    inputs are N(0, 1) draws rounded once to the type."""
    mask_dtype = mask_dtype or dtype
    B, Hq, Hkv, Lq, Lk = form.batch, form.q_heads, form.kv_heads, form.q_len, form.key_len
    dk, dv, s = form.key_width, form.value_width, form.shared_width
    scale = float(1.0 / np.sqrt(dk + s))

    def normal(shape):
        if dtype == "f32":
            return rng.standard_normal(shape, dtype=np.float32)
        return rng.standard_normal(shape).astype(NP_FLOAT[dtype])

    inputs: dict[str, np.ndarray] = {"q": normal((B, Hq, Lq, dk + s))}
    args = [f'%q: {_t(inputs["q"].shape, dtype)} {{poot.name = "q"}}']
    if form.pool:
        inputs["k"] = normal((form.pool, Hkv, dk))
        inputs["v"] = normal((form.pool, Hkv, dv))
    else:
        inputs["k"] = normal((B, Hkv, Lk, dk))
        inputs["v"] = normal((B, Hkv, Lk, dv))
    args += [f'%k: {_t(inputs["k"].shape, dtype)} {{poot.name = "k"}}']
    args += [f'%v: {_t(inputs["v"].shape, dtype)} {{poot.name = "v"}}']
    optional = []
    if form.mask:
        heads = Hq if form.mask == "per_head" else 1
        if form.mask == "shared":
            rows = np.arange(Lq)[:, None]
            cols = np.arange(Lk)[None, :]
            mask = np.where(cols > rows + (Lk - Lq), -np.inf, 0.0)[None, None]
            mask = np.broadcast_to(mask, (1, 1, Lq, Lk))
        else:
            slopes = rng.uniform(0.01, 0.5, size=(1, heads, 1, 1))
            mask = -slopes * np.arange(Lk)[None, None, None, ::-1]
            mask = np.broadcast_to(mask, (1, heads, Lq, Lk)).copy()
            mask[..., rng.random(Lk) < 0.2] = -np.inf  # some keys hidden
            if form.empty_row:
                mask[0, 1, 0, :] = -np.inf  # head 1 sees nothing: NaN
        inputs["mask"] = np.ascontiguousarray(mask).astype(NP_FLOAT[mask_dtype])
        args += [f'%mask: {_t(inputs["mask"].shape, mask_dtype)} {{poot.name = "mask"}}']
        optional.append(f'mask(%mask : {_t(inputs["mask"].shape, mask_dtype)})')
    if s:
        inputs["k_shared"] = normal((B, 1, Lk, s))
        args += [f'%ks: {_t(inputs["k_shared"].shape, dtype)} {{poot.name = "k_shared"}}']
        optional.append(f'key_shared(%ks : {_t(inputs["k_shared"].shape, dtype)})')
    if form.pool:
        read = np.stack([rng.permutation(form.pool)[:Lk] for _ in range(B)]).astype(np.int32)
        inputs["read"] = read
        args += [
            f'%read: {_t(read.shape, "i32")} {{poot.name = "read", '
            f"poot.range = #poot.range<0, {form.pool - 1}>, poot.slot = #poot.slot<slot_map>}}"
        ]
        optional.append(f'read(%read : {_t(read.shape, "i32")})')
    if form.live:
        length = rng.integers(1, Lk + 1, size=(B,)).astype(np.int32)
        length[0] = Lk  # the full cache is a valid length too
        inputs["len"] = length
        args += [f'%len: {_t(length.shape, "i32")} {{poot.name = "len", poot.range = #poot.range<1, {Lk}>}}']
        optional.append(f'len(%len : {_t(length.shape, "i32")})')
    if form.causal:
        optional.append("causal")
    if form.window:
        optional.append(f"window {form.window}")
    out_shape = (B, Hq, Lq, dv)
    attrs = f"scale = {scale!r} : f64" + (f", softcap = {form.softcap!r} : f64" if form.softcap else "")
    text = f"""
func.func @step({", ".join(args)}) -> ({_t(out_shape, dtype)} {{poot.name = "out"}}) {{
  %o = poot.attention %q, %k, %v {" ".join(optional)} {{{attrs}}}
      : {_t(inputs["q"].shape, dtype)}, {_t(inputs["k"].shape, dtype)}, {_t(inputs["v"].shape, dtype)} -> {_t(out_shape, dtype)}
  return %o : {_t(out_shape, dtype)}
}}
"""
    return text, inputs


def assert_matches(out: np.ndarray, ref: np.ndarray, *, rtol: float, atol: float) -> None:
    """Equal within tolerance, with NaN exactly where the reference has NaN."""
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, equal_nan=True)


def run_on(text: str, inputs, device, vulkan, path):
    """Compiles `text` for `device` as the client `vulkan` runs (raw Vulkan or
    wgpu) and runs it: (the manifest's first attention record, the output)."""
    from poot_mlir.compiler import gpu
    from poot_mlir.runtime.gpu import GpuArtifact

    if vulkan.client == "wgpu":
        device = device.with_limits(client="wgpu")
    artifact = GpuArtifact(gpu.compile_gpu(text, device, path), backend=vulkan)
    return artifact.manifest["attention"][0], artifact.run(inputs).outputs[0]
