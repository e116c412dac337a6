"""Serving a `CausalLM` with the paged engine (continuous batching, prefix
caching, preemption: `poot_mlir.driver.Engine`).

    engine = lm.engine(max_batch=8, num_blocks=64, chunk=16)
    engine.submit(Request("a", prompt_ids, max_new_tokens=32))
    completions = engine.run()          # rid -> Completion(tokens=..., ...)

`build_engine` exports the model's paged step (`models.paged`) for two
buckets -- `[max_batch, chunk]` for steps that carry prefill chunks and
`[max_batch, 1]` for steps where every row decodes -- compiles both for the
CausalLM's target, and hands them to a driver runner (`HostRunner` on the
CPU, `DeviceRunner` on a GPU: the weights and pools uploaded once, shared by
both buckets) over one `PagedKVCache`. Each bucket also returns
`next_token [max_batch]` i32, each row's argmax computed in the step
(`hf_export.add_next_token`): with `keep_logits=False` a step whose rows
are all greedy reads back those tokens alone, not the logits.

`compile_runner` (the buckets' modules -> one runner) is shared with
`examples/serve.py`, which serves the hand-traced decoder the same way.
This module imports no MLIR until a step is compiled: `EngineShape` is the
one owner of an engine's step shape and pool size on a machine that only
runs prebuilt steps (bench/causal_lm_serving.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..driver import BLOCK_SIZE, Engine, PagedKVCache, StepShape, WeightsIdentity, weights_fingerprint
from ..driver.runners import DeviceRunner, HostRunner
from ..errors import KVCacheError

__all__ = ["EngineShape", "build_engine", "compile_runner", "step_modules"]


def compile_runner(
    target: Any,
    modules: Mapping[int, Any],
    out: Path,
    state: Mapping[str, np.ndarray],
    weights: Mapping[str, Any],
    *,
    backend: Any = None,
) -> tuple[Any, str]:
    """The compiled step's buckets (tokens per row -> module) as one runner
    over one set of pools, the weights bound once: in-process on the CPU,
    or the whole step as kernels on a device (pools and weights resident
    there, copy-on-write a device-side copy). `target`: "cpu", a GPU target
    name ("vulkan", "wgpu", "cuda") or a Device; `backend`: a runtime
    backend to run on (default: a new one for the device). Returns the
    runner and where it runs, in words."""
    from ..compiler import devices
    from .targets import GPU_TARGETS, backend_of, describe

    if target == "cpu" or (isinstance(target, devices.Device) and target.target == "cpu"):
        from ..compiler import compile_cpu
        from ..runtime.cpu import CpuArtifact

        artifacts = {n: CpuArtifact(compile_cpu(m, out / f"t{n}")) for n, m in modules.items()}
        return HostRunner(artifacts, state, weights), "the CPU"
    if isinstance(target, str) and target not in GPU_TARGETS:
        raise ValueError(f"unknown target {target!r}: 'cpu', one of {GPU_TARGETS}, or a Device")
    from ..compiler.gpu import compile_gpu
    from ..runtime.program import ProgramArtifact, make_device

    device = describe(target) if isinstance(target, str) else target
    if backend is None:
        backend = make_device(backend_of(device))
    artifacts = {
        n: ProgramArtifact(compile_gpu(m, device, out / f"t{n}"), backend=backend)
        for n, m in modules.items()
    }
    return DeviceRunner(artifacts, state, weights), f"{device.name} (the whole step as kernels)"


@dataclasses.dataclass(frozen=True)
class EngineShape:
    """What an engine over a CausalLM is built for: `max_batch` sequences
    per step, prefill chunks of up to `chunk` tokens, sequences of up to
    `max_seq_len` tokens (prompt + generated), and a pool of `num_blocks`
    blocks of `BLOCK_SIZE` (16) tokens shared by every sequence."""

    max_batch: int
    chunk: int
    max_seq_len: int
    num_blocks: int

    def __post_init__(self) -> None:
        for name in ("max_batch", "chunk", "max_seq_len", "num_blocks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise KVCacheError(f"engine: {name} must be a positive int, got {value!r}")

    @property
    def step(self) -> StepShape:
        # The read map spans a sequence's whole length plus one chunk's
        # padding: StepShape.max_tokens is then exactly max_seq_len.
        return StepShape(self.max_batch, self.chunk, self.max_seq_len + self.chunk - 1)

    @property
    def pool_slots(self) -> int:
        return self.num_blocks * BLOCK_SIZE

    def buckets(self) -> list[int]:
        """Tokens per row of the compiled steps: 1 (decode-only steps) and `chunk`."""
        return sorted({1, self.chunk})


def step_modules(
    model: Any, shape: EngineShape, vocab: int, device: str = "cpu"
) -> dict[int, Any]:
    """Each bucket's paged step, exported from `model` and imported (not yet
    compiled), with the driver contract's declared ranges: tokens per row ->
    (module, ExportedProgram). `device="meta"`: a model built on the meta
    device (no weight memory: compiling for weights bound elsewhere)."""
    from ..frontend.torch_export import import_exported
    from .hf_export import add_next_token
    from .paged import export_paged_step

    s, slots = shape.step, shape.pool_slots
    modules = {}
    for tokens in shape.buckets():
        ep = export_paged_step(model, s.rows, tokens, s.cap, slots, device=device)
        tracer = import_exported(
            ep, name=f"serve_r{s.rows}_t{tokens}", output_names=["logits"],
            pos="pos", max_pos=s.cap - tokens, pack_weights=True,
            declare={
                "tokens": {"range": (0, vocab - 1)},
                "count": {"range": (1, tokens)},
                "read": {"slot": "slot_map", "range": (0, slots - 1)},
                "write": {"slot": "write_map", "range": (-1, slots - 1)},
            },
        )  # fmt: skip
        add_next_token(tracer)
        modules[tokens] = (tracer.finish(), ep)
    return modules


def build_engine(
    lm: Any, shape: EngineShape, *, preempt: bool = False, keep_logits: bool = True
) -> Engine:
    """An `Engine` serving `lm` (a CausalLM) on its target; see the module
    docstring. The engine's `close()` releases its runner."""
    from ..frontend.torch_export import exported_weights
    from .hf_export import NEXT_TOKEN
    from .paged import pool_shapes

    model = lm.model
    built = step_modules(model, shape, lm.vocab_size)
    modules = {n: module for n, (module, _) in built.items()}
    # Every bucket reads the same weights under the same names.
    weights = exported_weights(built[shape.chunk][1], pack_weights=True)
    dtype = lm._runner.numpy_dtype(model)
    state = {}
    for i, (k_shape, v_shape) in enumerate(pool_shapes(model, shape.pool_slots)):
        state[f"k{i}"] = np.zeros(k_shape, dtype)
        state[f"v{i}"] = np.zeros(v_shape, dtype)
    s = shape.step
    out = lm._workdir / f"engine_r{s.rows}_t{s.tokens}_c{s.cap}_b{shape.num_blocks}"
    target = getattr(lm._runner, "device", "cpu")
    runner, _ = compile_runner(
        target, modules, out, state, weights, backend=getattr(lm._runner, "_backend", None)
    )
    cache = PagedKVCache(shape.num_blocks, max_tokens=s.max_tokens)
    identity = WeightsIdentity(weights_fingerprint(weights))
    return Engine(
        runner, cache, s, pools=list(state), base=identity, preempt=preempt,
        keep_logits=keep_logits, next_token=NEXT_TOKEN,
    )  # fmt: skip
