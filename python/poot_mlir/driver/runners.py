"""Step runners for the serving engine: the compiled step shapes of one
model over one set of KV pools, with the weights bound once.

A runner holds one compiled step per *bucket* (its `[rows, tokens]` token
block: the full `tokens` for steps that carry prefill chunks, and `1` for
steps where every row decodes, so a decode row carries no padding tokens)
and answers the engine's calls:

    step(inputs, fetch=)  run the bucket whose shape `inputs["tokens"]` has
                          (`fetch`: the outputs to read back; default all)
    check(inputs)         every refusal `step` would raise, nothing run
    copy_rows(copies)     copy-on-write: pool rows copied in place
    buckets               the token counts it has, ascending

- `HostRunner` (the CPU): the pools are one set of numpy arrays every
  bucket writes in place (`run(donate=True)`); the weights are read where
  they lie.
- `DeviceRunner` (Vulkan, wgpu, CUDA): the first bucket's session uploads the
  weights (as session constants) and the pools once; every other bucket's
  session shares those device buffers (`session(share=...)`). A step moves
  only its own inputs in and its outputs out; copy-on-write is a
  device-side copy; nothing reads a pool back (the `traffic` counters of
  the device say so), and with `fetch` only the named outputs come back
  (a greedy step's `[rows]` tokens, not its logits).
"""

from __future__ import annotations

from typing import Any, Collection, Mapping, Sequence

import numpy as np

from ..errors import BindError
from .cache import Copy, apply_copies

__all__ = ["DeviceRunner", "HostRunner"]


def _bucket(inputs: Mapping[str, Any], steps: Mapping[int, Any]) -> Any:
    tokens = inputs.get("tokens")
    width = int(np.shape(tokens)[1]) if tokens is not None and np.ndim(tokens) == 2 else None
    if width not in steps:
        raise BindError(f"no compiled step takes {width} tokens per row (buckets: {sorted(steps)})")
    return steps[width]


class HostRunner:
    """CPU artifacts (one per bucket, by tokens per row) over one host state."""

    def __init__(
        self,
        artifacts: Mapping[int, Any],
        state: Mapping[str, np.ndarray],
        weights: Mapping[str, Any],
    ) -> None:
        self._steps = dict(artifacts)
        self._state = {name: np.array(value, copy=True) for name, value in state.items()}
        self.constants = dict(weights)
        self.buckets = tuple(sorted(self._steps))
        self.artifact = self._steps[self.buckets[-1]]  # the widest: the engine's signature

    @property
    def state(self) -> dict[str, np.ndarray]:
        return self._state

    def check(self, inputs: Mapping[str, Any]) -> None:
        _bucket(inputs, self._steps).bind({**inputs, **self.constants, **self._state})

    def step(self, inputs: Mapping[str, Any], fetch: Collection[str] | None = None) -> Any:
        # In-process, every output is host memory already: `fetch` is moot.
        result = _bucket(inputs, self._steps).run(
            {**inputs, **self.constants, **self._state}, donate=True
        )
        self._state.update(result.state)
        return result

    def copy_rows(self, pools: Sequence[str], copies: Sequence[Copy]) -> None:
        apply_copies(self._state, pools, copies)

    def close(self) -> None:
        for artifact in self._steps.values():
            artifact.close()


class DeviceRunner:
    """Whole-step GPU artifacts (one per bucket) sharing one device's pools
    and weights; see the module docstring."""

    def __init__(
        self,
        artifacts: Mapping[int, Any],
        state: Mapping[str, np.ndarray],
        weights: Mapping[str, Any],
    ) -> None:
        self.buckets = tuple(sorted(artifacts))
        self.artifact = artifacts[self.buckets[-1]]
        first = self.artifact.session(state, constants=weights)
        self._sessions = {self.buckets[-1]: first}
        for tokens in self.buckets[:-1]:
            self._sessions[tokens] = artifacts[tokens].session(share=first)
        self.constants: dict[str, Any] = {}  # on the device already: not step inputs
        self.traffic = getattr(self.artifact.device, "traffic", None)

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The pools, read back (for tests and debugging; the engine never asks)."""
        return self._sessions[self.buckets[-1]].state

    def check(self, inputs: Mapping[str, Any]) -> None:
        _bucket(inputs, self._sessions).check(inputs)

    def step(self, inputs: Mapping[str, Any], fetch: Collection[str] | None = None) -> Any:
        return _bucket(inputs, self._sessions).step(inputs, fetch=fetch)

    def copy_rows(self, pools: Sequence[str], copies: Sequence[Copy]) -> None:
        session = self._sessions[self.buckets[-1]]
        for name in pools:
            for c in copies:
                session.copy_state_rows(name, c.src, c.dst, c.count)

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
