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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..compiler import devices
from .hf_export import NEXT_TOKEN

__all__ = ["CpuRunner", "GpuRunner", "make_runner"]

Key = tuple[int, int, bool]  # (batch, tokens, padded)


def _numpy_dtype(model: Any) -> np.dtype:
    import torch

    dtype = next(model.parameters()).dtype
    if dtype == torch.bfloat16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(str(dtype).removeprefix("torch."))


def _step_inputs(ids: np.ndarray, pos: int, extra: dict[str, Any] | None) -> dict[str, Any]:
    return {"input_ids": ids.astype(np.int32), "pos": np.int32(pos), **(extra or {})}


def _folder(key: Key) -> str:
    return f"b{key[0]}_t{key[1]}" + ("_padded" if key[2] else "")


class _Runner:
    """What both runners answer; `_run(key, inputs, fetch)` runs one step,
    reading back (on a GPU) only the outputs named in `fetch`."""

    numpy_dtype = staticmethod(_numpy_dtype)

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


class CpuRunner(_Runner):
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._steps: dict[Key, Any] = {}
        self._weights: dict[str, np.ndarray] | None = None
        self._state: dict[str, np.ndarray] = {}

    def has(self, key: Key) -> bool:
        return key in self._steps

    def add(self, key: Key, module: Any, weights: Callable[[], dict[str, np.ndarray]]) -> None:
        from ..compiler import compile_cpu
        from ..runtime.cpu import CpuArtifact

        path = compile_cpu(module, self.workdir / _folder(key))
        self._steps[key] = CpuArtifact(path)
        if self._weights is None:  # every shape reads the same weights
            self._weights = weights()

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
    def __init__(self, device: "devices.Device", workdir: Path) -> None:
        from ..runtime.program import make_device
        from .targets import backend_of

        self.device = device
        self.workdir = workdir
        self._backend = make_device(backend_of(device))
        self._steps: dict[Key, Any] = {}
        self._sessions: dict[Key, Any] = {}
        self._weights: dict[str, Any] | None = None
        self._first: Any = None  # the session that owns the cache and the weights

    def has(self, key: Key) -> bool:
        return key in self._steps

    def add(self, key: Key, module: Any, weights: Callable[[], dict[str, np.ndarray]]) -> None:
        from ..compiler.gpu import compile_gpu
        from ..runtime.program import ProgramArtifact

        path = compile_gpu(module, self.device, self.workdir / _folder(key))
        self._steps[key] = ProgramArtifact(path, backend=self._backend)
        if self._weights is None:
            self._weights = weights()

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


def make_runner(target: Any, workdir: Path) -> "CpuRunner | GpuRunner":
    """The runner for `target`: "cpu", a GPU target name, or a Device."""
    from .targets import GPU_TARGETS, describe

    if isinstance(target, devices.Device):
        return CpuRunner(workdir) if target.target == "cpu" else GpuRunner(target, workdir)
    if target == "cpu":
        return CpuRunner(workdir)
    if target in GPU_TARGETS:
        return GpuRunner(describe(target), workdir)
    raise ValueError(f"unknown target {target!r}: 'cpu', one of {GPU_TARGETS}, or a Device")
