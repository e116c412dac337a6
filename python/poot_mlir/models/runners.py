"""Running a CausalLM's compiled steps on one target, over one KV cache.

A runner holds the compiled steps (one per `[batch, tokens]` shape), the
weights and the cache state every step shares:

- `CpuRunner`: the steps run in-process (`runtime.cpu`); the cache is one
  set of numpy arrays every step writes in place (`run(donate=True)`), the
  weights are read where they lie, never copied.
- `GpuRunner`: the whole step as kernels (`compile_gpu`, `runtime.program`);
  the first shape's session uploads the weights (as constants) and the
  cache once; every other shape's session shares those device buffers
  (`session(share=...)`), so a prompt's chunks and the decode steps read
  and write one cache and nothing moves between them.

A step is run for what the caller reads of it: `logits` (the last
token's, `[B, vocab]`), `next_token` (the step's own argmax, `[B]`: a GPU
reads back those `B x 4` bytes, not the logits) or `advance` (a prefill
chunk whose outputs nobody reads: nothing is read back).

Tensor parallel: with a `communicator`, either runner compiles each step
as this rank's program (`compile_cpu` / `compile_gpu(tensor_parallel=
(rank, size))`), binds this rank's blocks of the weights
(`artifact.shard`), and its zeroed cache has the rank's shapes, read from
the step's own state ports (`zero_state`). Every rank runs the same steps
in the same order; the compiled all_reduces keep them in step.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .hf_export import NEXT_TOKEN

if TYPE_CHECKING:  # the compiler imports MLIR; the GPU machine runs these runners without it
    from ..compiler import devices

__all__ = ["CpuRunner", "GpuRunner", "make_runner", "rank_backend", "tensor_parallel_of", "zero_state"]

Key = tuple[int, int, bool]  # (batch, tokens, padded)


def _step_inputs(ids: np.ndarray, pos: int, extra: dict[str, Any] | None) -> dict[str, Any]:
    return {"input_ids": ids.astype(np.int32), "pos": np.int32(pos), **(extra or {})}


def _folder(key: Key) -> str:
    return f"b{key[0]}_t{key[1]}" + ("_padded" if key[2] else "")


def zero_state(signature: Any) -> dict[str, np.ndarray]:
    """A zeroed value of every state the step carries, at the shapes and
    dtypes of its own ports (a rank program's: this rank's blocks), so the
    cache's shape has one owner, the compiled step."""
    return {
        port.state: np.zeros(port.shape, port.dtype)
        for port in signature.args
        if port.state is not None
    }


def tensor_parallel_of(communicator: Any) -> "tuple[int, int] | None":
    """`compile_cpu`'s `tensor_parallel` for a communicator's rank: None
    without one, or in a world of one rank (nothing to split)."""
    if communicator is None or communicator.size == 1:
        return None
    return (communicator.rank, communicator.size)


def warn_if_whole(artifact: Any, what: str) -> None:
    """Warn when a rank program split nothing (the split pass leaves a
    projection group whole when the degree does not divide its heads or
    columns): every rank then runs the whole step, correct but neither
    smaller nor faster. (A KV cache every rank holds whole because there
    are fewer KV heads than ranks is the split working: no warning.)"""
    signature = artifact.signature
    if signature.degree == 1 or any(port.shard is not None for port in signature.args):
        return
    warnings.warn(
        f"{what}: the tensor-parallel split left the whole step on every rank (no weight or "
        f"cache is sharded), so each of the {signature.degree} ranks runs it replicated: "
        f"choose a degree that divides the attention heads and the MLP width",
        RuntimeWarning,
        stacklevel=2,
    )


class _Runner:
    """What both runners answer; `_run(key, inputs, fetch)` runs one step,
    reading back (on a GPU) only the outputs named in `fetch`."""

    def _run(self, key: Key, inputs: dict[str, Any], fetch: tuple[str, ...]) -> Any:
        raise NotImplementedError

    def logits(self, key: Key, ids: np.ndarray, pos: int, extra: dict | None = None) -> np.ndarray:
        """The step's last-token logits `[B, vocab]` as float32."""
        result = self._run(key, _step_inputs(ids, pos, extra), ("logits",))
        return np.asarray(result.named["logits"])[:, -1, :].astype(np.float32)

    def next_token(self, key: Key, ids: np.ndarray, pos: int, extra: dict | None = None) -> np.ndarray:
        """Each row's greedy token `[B]` (int64), chosen in the step."""
        result = self._run(key, _step_inputs(ids, pos, extra), (NEXT_TOKEN,))
        return np.asarray(result.named[NEXT_TOKEN]).astype(np.int64)

    def advance(self, key: Key, ids: np.ndarray, pos: int, extra: dict | None = None) -> None:
        """Run the step for its cache writes only (a prompt's inner chunk)."""
        self._run(key, _step_inputs(ids, pos, extra), ())

    def zero_state(self, key: Key) -> dict[str, np.ndarray]:
        """A zeroed cache at the shapes the compiled step `key` carries."""
        return zero_state(self._steps[key].signature)  # type: ignore[attr-defined]


class CpuRunner(_Runner):
    """In-process steps; with `communicator` (a `runtime.collectives.
    Communicator`), this rank's programs over this rank's blocks."""

    def __init__(self, workdir: Path, communicator: Any = None) -> None:
        self.workdir = workdir
        self.communicator = communicator
        self._steps: dict[Key, Any] = {}
        self._weights: dict[str, np.ndarray] | None = None
        self._state: dict[str, np.ndarray] = {}

    def has(self, key: Key) -> bool:
        return key in self._steps

    def add(self, key: Key, module: Any, weights: Callable[[], dict[str, np.ndarray]]) -> None:
        from ..compiler import compile_cpu
        from ..runtime.cpu import CpuArtifact

        parallel = tensor_parallel_of(self.communicator)
        path = compile_cpu(module, self.workdir / _folder(key), tensor_parallel=parallel)
        artifact = CpuArtifact(path, communicator=self.communicator)
        warn_if_whole(artifact, f"the [{key[0]}, {key[1]}] step")
        self._steps[key] = artifact
        if self._weights is None:
            # Every shape reads the same weights, split the same way: a rank
            # program binds its blocks of them.
            full = weights()
            self._weights = artifact.shard(full) if artifact.signature.degree > 1 else full

    def reset(self, state: dict[str, np.ndarray]) -> None:
        self._state = state

    def _run(self, key: Key, inputs: dict[str, Any], fetch: tuple[str, ...]) -> Any:
        # In-process: every output is host memory already (`fetch` is moot).
        result = self._steps[key].run({**inputs, **self._weights, **self._state}, donate=True)
        self._state.update(result.state)
        return result

    def close(self) -> None:
        for artifact in self._steps.values():
            artifact.close()
        self._steps.clear()


class GpuRunner(_Runner):
    """Whole-step kernels on one device; with `communicator`, this rank's
    programs (the all_reduce commands run on it) over this rank's blocks."""

    def __init__(self, device: "devices.Device", workdir: Path, communicator: Any = None) -> None:
        from ..runtime.program import make_device

        self.device = device
        self.workdir = workdir
        self.communicator = communicator
        self._backend = make_device(rank_backend(device, communicator))
        self._steps: dict[Key, Any] = {}
        self._sessions: dict[Key, Any] = {}
        self._weights: dict[str, Any] | None = None
        self._first: Any = None  # the session that owns the cache and the weights

    def has(self, key: Key) -> bool:
        return key in self._steps

    def add(self, key: Key, module: Any, weights: Callable[[], dict[str, np.ndarray]]) -> None:
        from ..compiler.gpu import compile_gpu
        from ..runtime.program import ProgramArtifact

        parallel = tensor_parallel_of(self.communicator)
        path = compile_gpu(module, self.device, self.workdir / _folder(key), tensor_parallel=parallel)
        artifact = ProgramArtifact(path, backend=self._backend, communicator=self.communicator)
        warn_if_whole(artifact, f"the [{key[0]}, {key[1]}] step")
        self._steps[key] = artifact
        if self._weights is None:
            full = weights()
            self._weights = artifact.shard(full) if artifact.signature.degree > 1 else full

    def reset(self, state: dict[str, np.ndarray]) -> None:
        """A new cache: written into the owning session's buffers (every
        session shares them), or the first session made from it."""
        if self._first is not None and self._cache_shapes == {k: v.shape for k, v in state.items()}:
            for name, value in state.items():
                self._first.write_state(name, value)
            return
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        self._first, self._pending = None, state
        self._cache_shapes = {k: v.shape for k, v in state.items()}

    def _session(self, key: Key) -> Any:
        """`key`'s session; every one shares the first's cache and weights
        (`session(share=...)`): switching shapes moves nothing."""
        if key not in self._sessions:
            artifact = self._steps[key]
            if self._first is None:
                self._first = artifact.session(self._pending, constants=self._weights)
                self._pending = None
                self._sessions[key] = self._first
            else:
                self._sessions[key] = artifact.session(share=self._first)
        return self._sessions[key]

    def _run(self, key: Key, inputs: dict[str, Any], fetch: tuple[str, ...]) -> Any:
        return self._session(key).step(inputs, fetch=fetch)

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        for artifact in self._steps.values():
            artifact.close()
        self._sessions.clear()
        self._steps.clear()
        self._backend.close()


def is_cpu(target: Any) -> bool:
    """Whether `target` ("cpu", a GPU target name, or a Device) is the CPU."""
    if isinstance(target, str):
        return target == "cpu"
    return target.target == "cpu"  # a Device


def rank_backend(device: "devices.Device", communicator: Any) -> str:
    """The runtime backend of `device` for this rank: on CUDA, rank r runs
    on GPU r (NCCL's device for it too); Vulkan and wgpu ranks share the
    first device."""
    from .targets import backend_of

    backend = backend_of(device)
    if backend != "cuda" or communicator is None or communicator.size == 1:
        return backend
    import torch

    torch.cuda.set_device(communicator.rank)
    return f"cuda:{communicator.rank}"


def make_runner(target: Any, workdir: Path, communicator: Any = None) -> "CpuRunner | GpuRunner":
    """The runner for `target`: "cpu", a GPU target name, or a Device;
    `communicator`: this rank's (a tensor-parallel model)."""
    from ..compiler import devices
    from .targets import GPU_TARGETS, describe

    if not isinstance(target, devices.Device) and target != "cpu" and target not in GPU_TARGETS:
        raise ValueError(f"unknown target {target!r}: 'cpu', one of {GPU_TARGETS}, or a Device")
    if is_cpu(target):
        return CpuRunner(workdir, communicator)
    device = target if isinstance(target, devices.Device) else describe(target)
    return GpuRunner(device, workdir, communicator)
