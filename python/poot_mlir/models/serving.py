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

On tensor-parallel ranks (a CausalLM made with `communicator=`), each
bucket is this rank's program: the pools are split by KV heads (their
shapes come from the compiled step's state ports), the weights are this
rank's blocks, and every rank's engine makes the same decisions -- it is
deterministic given the same requests, greedy picks are the argmax of
logits every rank has bit for bit (the lm_head stays whole), and a sampled
request must carry its seed.
This module imports no MLIR until a step is compiled: `EngineShape` is the
one owner of an engine's step shape and pool size on a machine that only
runs prebuilt steps (bench/causal_lm_serving.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..driver import (
    BLOCK_SIZE,
    Engine,
    PagedKVCache,
    Request,
    StepShape,
    WeightsIdentity,
    weights_fingerprint,
)
from ..driver.runners import DeviceRunner, HostRunner
from ..errors import CommunicatorError, KVCacheError
from .runners import rank_backend, tensor_parallel_of, warn_if_whole, zero_state

__all__ = ["EngineShape", "RankEngine", "build_engine", "compile_runner", "step_modules"]


def compile_runner(
    target: Any,
    modules: Mapping[int, Any],
    out: Path,
    state: Mapping[str, np.ndarray] | None,
    weights: Mapping[str, Any],
    *,
    backend: Any = None,
    communicator: Any = None,
) -> tuple[Any, str]:
    """The compiled step's buckets (tokens per row -> module) as one runner
    over one set of pools, the weights bound once: in-process on the CPU,
    or the whole step as kernels on a device (pools and weights resident
    there, copy-on-write a device-side copy). `target`: "cpu", a GPU target
    name ("vulkan", "wgpu", "cuda") or a Device; `backend`: a runtime
    backend to run on (default: a new one for the device). `state`: the
    pools' initial values, or None for zeroed pools at the compiled step's
    own shapes. `communicator`: compile and bind this rank's program
    (weights and a given `state` are the unsharded arrays; the runner takes
    this rank's blocks). Returns the runner and where it runs, in words."""
    from ..compiler import devices
    from .targets import GPU_TARGETS, describe

    if isinstance(target, str) and target != "cpu" and target not in GPU_TARGETS:
        raise ValueError(f"unknown target {target!r}: 'cpu', one of {GPU_TARGETS}, or a Device")
    rank = "" if communicator is None else f" (rank {communicator.rank} of {communicator.size})"
    if target == "cpu" or (isinstance(target, devices.Device) and target.target == "cpu"):
        artifacts = _artifacts(modules, out, communicator, _cpu_loader(communicator))
        weights, state = _rank_values(artifacts, weights, state)
        return HostRunner(artifacts, state, weights), "the CPU" + rank
    device = describe(target) if isinstance(target, str) else target
    if backend is None:
        from ..runtime.program import make_device

        backend = make_device(rank_backend(device, communicator))
    artifacts = _artifacts(modules, out, communicator, _gpu_loader(device, backend, communicator))
    weights, state = _rank_values(artifacts, weights, state)
    return DeviceRunner(artifacts, state, weights), f"{device.name} (the whole step as kernels){rank}"


def _cpu_loader(communicator: Any) -> Any:
    from ..compiler import compile_cpu
    from ..runtime.cpu import CpuArtifact

    parallel = tensor_parallel_of(communicator)
    return lambda module, out: CpuArtifact(
        compile_cpu(module, out, tensor_parallel=parallel), communicator=communicator
    )


def _gpu_loader(device: Any, backend: Any, communicator: Any) -> Any:
    from ..compiler.gpu import compile_gpu
    from ..runtime.program import ProgramArtifact

    parallel = tensor_parallel_of(communicator)
    return lambda module, out: ProgramArtifact(
        compile_gpu(module, device, out, tensor_parallel=parallel),
        backend=backend, communicator=communicator,
    )  # fmt: skip


def _artifacts(modules: Mapping[int, Any], out: Path, communicator: Any, load: Any) -> dict[int, Any]:
    """Each bucket compiled and loaded (`load(module, folder)`): this rank's
    program with `communicator` (a warning when the split left it whole)."""
    artifacts = {}
    for n, module in modules.items():
        artifacts[n] = load(module, out / f"t{n}")
        warn_if_whole(artifacts[n], f"the serving step of {n} token(s) per row")
    return artifacts


def _rank_values(
    artifacts: Mapping[int, Any], weights: Mapping[str, Any], state: Mapping[str, np.ndarray] | None
) -> tuple[Mapping[str, Any], Mapping[str, np.ndarray]]:
    """(weights, pools) as this rank binds them: its blocks of the given
    unsharded ones, the pools zeroed at the compiled step's own shapes when
    none are given. Every bucket splits them the same way."""
    widest = artifacts[max(artifacts)]
    if widest.signature.degree > 1:
        weights = widest.shard(weights)
        state = None if state is None else widest.shard(state)
    return weights, zero_state(widest.signature) if state is None else state


class RankEngine(Engine):
    """An `Engine` that is one tensor-parallel rank of several: every rank
    must choose the same tokens, so a sampled request needs its seed (an
    unseeded draw differs on every rank, and the ranks' caches would part)."""

    def submit(self, request: Request) -> None:
        sampling = request.sampling
        if sampling is not None and sampling.do_sample and request.seed is None:
            raise CommunicatorError(
                f"request {request.rid!r} samples without a seed: on tensor-parallel ranks "
                "every rank draws its own tokens, and only the same seed makes them the "
                "same: give it Request(seed=...)"
            )
        super().submit(request)


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

    model = lm.model
    built = step_modules(model, shape, lm.vocab_size)
    modules = {n: module for n, (module, _) in built.items()}
    # Every bucket reads the same weights under the same names.
    weights = exported_weights(built[shape.chunk][1], pack_weights=True)
    s = shape.step
    out = lm._workdir / f"engine_r{s.rows}_t{s.tokens}_c{s.cap}_b{shape.num_blocks}"
    target = getattr(lm._runner, "device", "cpu")
    communicator = lm.communicator
    # The pools: zeroed at the compiled step's shapes (a rank's: its KV heads).
    runner, _ = compile_runner(
        target, modules, out, None, weights,
        backend=getattr(lm._runner, "_backend", None), communicator=communicator,
    )  # fmt: skip
    cache = PagedKVCache(shape.num_blocks, max_tokens=s.max_tokens)
    # The unsharded weights' fingerprint: the same identity on every rank.
    identity = WeightsIdentity(weights_fingerprint(weights))
    engine_class = Engine if communicator is None or communicator.size == 1 else RankEngine
    return engine_class(
        runner, cache, s, pools=list(runner.artifact.signature.state_names), base=identity,
        preempt=preempt, keep_logits=keep_logits, next_token=NEXT_TOKEN,
    )  # fmt: skip
