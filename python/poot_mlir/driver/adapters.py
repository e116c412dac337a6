"""LoRA adapters bound per row of a step, each load with a fresh identity.

A step function serving several adapters at once takes stacked adapter
tables (e.g. `l0.wq.lora_a [A, d, r]`, `l0.wq.lora_b [A, r, out]`) and one
adapter slot per row (`adapter [rows]`); slot 0 is the base model (all
zeros: the delta is exactly 0). `AdapterTable` owns those tables:

- `load(name, arrays)` writes an adapter into a free slot and gives it a
  fresh `WeightsIdentity` -- every load, so a hot reload under the same name
  never matches the K/V cached under its previous version;
- a sequence `hold`s the slot of the adapter it was admitted with and
  `release`s it when it completes: a reload while sequences still run under
  the old version writes the new one into another slot, and the old slot is
  reused only once its last sequence is gone.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Mapping

import numpy as np

from ..errors import KVCacheError
from .prefix import WeightsIdentity

_LOADS = itertools.count()


class AdapterTable:
    """`slots` adapter slots (slot 0: the base model) over the step inputs
    named in `shapes` (name -> per-adapter shape, stacked to [slots, ...])."""

    def __init__(
        self, base: str, slots: int, shapes: Mapping[str, tuple[int, ...]], dtype=np.float32
    ) -> None:
        if slots < 1:
            raise KVCacheError(f"an adapter table needs at least the base slot, got {slots}")
        self.base = WeightsIdentity(base)
        self.slots = slots
        self.shapes = {name: tuple(shape) for name, shape in shapes.items()}
        self._tables = {
            name: np.zeros((slots, *shape), dtype) for name, shape in self.shapes.items()
        }
        self._current: dict[str, tuple[int, WeightsIdentity]] = {}  # name -> (slot, identity)
        self._users = [0] * slots
        self._loaded: list[WeightsIdentity | None] = [self.base] + [None] * (slots - 1)

    def tables(self) -> dict[str, np.ndarray]:
        """The stacked tables, as step inputs."""
        return self._tables

    def load(self, name: str, arrays: Mapping[str, np.ndarray]) -> WeightsIdentity:
        """Load (or hot-reload) adapter `name`; returns its new identity."""
        if set(arrays) != set(self.shapes):
            raise KVCacheError(
                f"adapter {name!r} gives {sorted(arrays)}; the table holds {sorted(self.shapes)}"
            )
        for key, value in arrays.items():
            if np.shape(value) != self.shapes[key]:
                raise KVCacheError(
                    f"adapter {name!r}: {key} has shape {np.shape(value)}, "
                    f"expected {self.shapes[key]}"
                )
        slot = self._free_slot(name)
        for key, value in arrays.items():
            self._tables[key][slot] = value
        identity = WeightsIdentity(self.base.base, f"{name}@{next(_LOADS)}-{uuid.uuid4().hex}")
        self._current[name] = (slot, identity)
        self._loaded[slot] = identity
        return identity

    def _free_slot(self, name: str) -> int:
        in_use = {slot for slot, _ in self._current.values()}
        previous = self._current.get(name)
        for slot in range(1, self.slots):
            # The name's own slot is reused only when no sequence runs on it.
            mine = previous is not None and previous[0] == slot
            if self._users[slot] == 0 and (slot not in in_use or mine):
                return slot
        raise KVCacheError(
            f"no adapter slot free for {name!r}: all {self.slots - 1} hold adapters in use"
        )

    def resolve(self, name: str | None) -> tuple[int, WeightsIdentity]:
        """(slot, identity) of the current version of `name` (None: base)."""
        if name is None:
            return 0, self.base
        if name not in self._current:
            raise KVCacheError(f"no adapter named {name!r} is loaded")
        return self._current[name]

    def hold(self, slot: int) -> None:
        """A sequence runs on `slot`: it is not overwritten until released."""
        self._users[slot] += 1

    def release(self, slot: int) -> None:
        if self._users[slot] <= 0:
            raise KVCacheError(f"adapter slot {slot} is released more often than it was acquired")
        self._users[slot] -= 1

    def identity_of(self, slot: int) -> WeightsIdentity | None:
        """The identity last loaded into `slot`."""
        return self._loaded[slot]
