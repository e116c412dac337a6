"""The communicator a tensor-parallel step's `poot.all_reduce` runs on.

poot_mlir has no transport of its own: a `Communicator` wraps a
torch.distributed process group (gloo on CPU ranks). torch is an optional
dependency, imported only when a communicator is made.

    import torch.distributed as dist
    dist.init_process_group("gloo", ...)       # or poot_mlir.runtime.distributed.spawn
    comm = Communicator()                      # the default group
    art = runtime.cpu.load(path, communicator=comm)

The runtime calls `all_reduce_` from the compiled step (through the
library's `poot_all_reduce_hook`, see docs/tensor-parallel.md) with a raw
pointer, an element count and a dtype code, and `refusals` before every step,
so that a step runs on every rank or on none.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..errors import CommunicatorError

#: The hook's dtype codes (the compiled code's contract) -> torch dtype names.
DTYPE_CODES = {0: "float32", 1: "float16", 2: "bfloat16", 3: "float64"}
#: Two-byte floats are summed in float32 and rounded once (the op's contract).
_WIDENED = ("float16", "bfloat16")


def _torch() -> tuple[Any, Any]:
    """(torch, torch.distributed), or a CommunicatorError naming the fix."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        raise CommunicatorError(
            f"tensor-parallel steps run their collectives on torch.distributed, which cannot "
            f"be imported ({exc}): `pip install torch`"
        ) from None
    if not dist.is_available():
        raise CommunicatorError("this torch build has no torch.distributed: install one that does")
    return torch, dist


class Communicator:
    """The ranks of a torch.distributed process group (`group`; the default
    group when None), which must already be initialized."""

    def __init__(self, group: Any = None) -> None:
        self._torch, self._dist = _torch()
        if not self._dist.is_initialized():
            raise CommunicatorError(
                "torch.distributed has no process group yet: call "
                "torch.distributed.init_process_group(...) in every rank first "
                "(poot_mlir.runtime.distributed.spawn does it for you)"
            )
        self.group = group
        self.rank = int(self._dist.get_rank(group))
        self.size = int(self._dist.get_world_size(group))

    def __repr__(self) -> str:
        return f"Communicator(rank={self.rank}, size={self.size})"

    def _tensor(self, pointer: int, count: int, dtype_code: int) -> Any:
        """A torch tensor over `count` elements at `pointer` (no copy)."""
        if dtype_code not in DTYPE_CODES:
            raise CommunicatorError(
                f"all_reduce of dtype code {dtype_code}: the runtime knows "
                f"{sorted(DTYPE_CODES.items())}"
            )
        dtype = getattr(self._torch, DTYPE_CODES[dtype_code])
        nbytes = count * self._torch.empty((), dtype=dtype).element_size()
        memory = (ctypes.c_char * nbytes).from_address(pointer)
        return self._torch.frombuffer(memory, dtype=dtype, count=count)

    def all_reduce_(self, pointer: int, count: int, dtype_code: int) -> None:
        """Sum `count` contiguous elements at `pointer` over the ranks, in
        place. f16/bf16 widen to f32 exactly, sum in f32 and round once."""
        if count <= 0:
            return
        if not pointer:
            raise CommunicatorError(f"all_reduce of {count} elements at a null pointer")
        tensor = self._tensor(pointer, count, dtype_code)
        if DTYPE_CODES[dtype_code] in _WIDENED:
            wide = tensor.float()
            self._dist.all_reduce(wide, group=self.group)
            tensor.copy_(wide)  # round to nearest even, once
        else:
            self._dist.all_reduce(tensor, group=self.group)

    def refusals(self, ok: bool) -> tuple[int, ...]:
        """Every rank says whether it can go on; all learn which ranks cannot.
        (One small all_reduce: a one-hot vector of this rank's refusal.)"""
        flags = self._torch.zeros(self.size, dtype=self._torch.int32)
        flags[self.rank] = 0 if ok else 1
        self._dist.all_reduce(flags, group=self.group)
        return tuple(int(r) for r in self._torch.nonzero(flags).flatten().tolist())

    def agree(self, ok: bool) -> bool:
        """True when every rank is ok (the MIN of the flags over the ranks)."""
        return not self.refusals(ok)
