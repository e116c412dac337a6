"""`Lockstep`: the oracle's `poot.all_reduce` across rank programs run in threads.

Each of n threads interprets one rank program (`oracle.run(...,
all_reduce=group.member(rank))`); every `poot.all_reduce` waits until all n
ranks have reached it, then each gets `semantics.all_reduce` of all n
operands, summed in rank order, so every rank sees the same bits. A rank
that fails (or never arrives within `timeout` seconds) breaks the barrier:
the others raise `threading.BrokenBarrierError` instead of waiting forever.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from . import semantics


class Lockstep:
    """The collective of `size` rank programs interpreted in threads."""

    def __init__(self, size: int, timeout: float = 60.0) -> None:
        if size < 1:
            raise ValueError(f"a group has at least one rank, got size={size}")
        self.size = size
        self._operands: list[np.ndarray | None] = [None] * size
        self._result: np.ndarray | None = None
        # Two phases per collective: everyone has written its operand (one
        # thread sums), then everyone has read the sum (slots may be reused).
        self._arrived = threading.Barrier(size, action=self._sum, timeout=timeout)
        self._read = threading.Barrier(size, timeout=timeout)

    def _sum(self) -> None:
        self._result = semantics.all_reduce(self._operands)  # type: ignore[arg-type]

    def member(self, rank: int) -> Callable[[np.ndarray], np.ndarray]:
        """Rank `rank`'s `all_reduce` callable for `oracle.run` / `oracle.Session`."""
        if not 0 <= rank < self.size:
            raise ValueError(f"rank {rank} is not in a group of {self.size}")

        def all_reduce(operand: np.ndarray) -> np.ndarray:
            self._operands[rank] = operand
            self._arrived.wait()
            total = self._result
            self._read.wait()
            return np.array(total, copy=True)

        return all_reduce

    def abort(self) -> None:
        """Release every waiting rank (they raise BrokenBarrierError): call it
        when a rank fails, so its peers do not wait out the timeout."""
        self._arrived.abort()
        self._read.abort()
