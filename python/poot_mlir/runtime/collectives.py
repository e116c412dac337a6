"""The communicator a tensor-parallel step's `poot.all_reduce` runs on.

poot_mlir has no transport of its own: a `Communicator` wraps a
torch.distributed process group (gloo on CPU ranks). torch is an optional
dependency, imported only when a communicator is made.

    import torch.distributed as dist
    dist.init_process_group("gloo", ...)       # or poot_mlir.runtime.distributed.spawn
    comm = Communicator()                      # the default group
    art = runtime.cpu.load(path, communicator=comm)

The CPU runtime calls `all_reduce_` from the compiled step (through the
library's `poot_all_reduce_hook`, see docs/tensor-parallel.md) with a raw
pointer, an element count and a dtype code; the GPU runtime (runtime.program)
calls it on a host copy of a device buffer (Vulkan, wgpu) or `sum_` on a
torch tensor over the device buffer (CUDA). Both runtimes share what is
here: `check_communicator` when an artifact loads, `everywhere` (the ranks'
agreement, `refusals`) before every step, so that a step runs on every rank
or on none, and `SiteFailures`, which keeps a step's first failed collective.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

from ..errors import CommunicatorError, RankRefused

#: The hook's dtype codes (the compiled code's contract) -> torch dtype names.
DTYPE_CODES = {0: "float32", 1: "float16", 2: "bfloat16", 3: "float64"}
#: Bytes of one element of each dtype code.
DTYPE_BYTES = {0: 4, 1: 2, 2: 2, 3: 8}


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
        self.sum_(self._tensor(pointer, count, dtype_code))

    def sum_(self, tensor: Any) -> None:
        """Sum a torch tensor (host or device memory) over the ranks, in
        place. f16/bf16 widen to f32 exactly, sum in f32 and round once."""
        if tensor.dtype in (self._torch.float16, self._torch.bfloat16):
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


def check_communicator(signature: Any, communicator: Any, where: str) -> None:
    """A tensor-parallel rank program (`signature`: binding.Signature) needs
    a communicator of its degree whose rank is the program's rank; a
    CommunicatorError naming the fix. `where` names the artifact."""
    if communicator is None:
        if signature.degree > 1:
            rank, degree = signature.tensor_parallel
            raise CommunicatorError(
                f"{where} is rank {rank}'s program of a step split over {degree} ranks "
                "(tensor_parallel): load it in each rank's process with "
                "communicator=poot_mlir.runtime.collectives.Communicator() after "
                "torch.distributed.init_process_group (poot_mlir.runtime.distributed.spawn does both)"
            )
        return
    if communicator.size != signature.degree:
        raise CommunicatorError(
            f"{where} runs on {signature.degree} rank(s) but the communicator has "
            f"{communicator.size}: compile with tensor_parallel=(rank, {communicator.size}) "
            "or use a process group of the artifact's degree"
        )
    rank = 0 if signature.tensor_parallel is None else signature.tensor_parallel[0]
    if communicator.rank != rank:
        raise CommunicatorError(
            f"{where} is rank {rank}'s program but the communicator's rank is "
            f"{communicator.rank}: load the artifact compiled with "
            f"tensor_parallel=({communicator.rank}, {signature.degree}) in this process"
        )


def everywhere(communicator: Any, attempt: Callable[[], Any]) -> Any:
    """`attempt()`, after every rank has said whether its own attempt
    succeeded: a rank that failed raises its error, the others RankRefused,
    so either every rank goes on or none does. Without a communicator, just
    `attempt()`.

    Everything that may refuse a step (binding, validation, allocating its
    buffers) belongs in `attempt`, and nothing that changes state: a rank
    that raises before reaching here would leave its peers waiting."""
    if communicator is None:
        return attempt()
    try:
        value, error = attempt(), None
    except Exception as exc:  # every failure must reach the other ranks
        value, error = None, exc
    refused = communicator.refusals(error is None)
    if error is not None:
        raise error
    if refused:
        raise RankRefused(
            f"rank(s) {list(refused)} of this tensor-parallel step refused it (their "
            "inputs failed to bind or validate; see their errors): a step runs on every "
            f"rank or on none, so rank {communicator.rank} did not run it and its "
            "state is as it was",
            refused,
        )
    return value


class SiteFailures:
    """The first collective of a step that failed, raised once the step is
    over (`raise_failure`).

    A rank whose collective fails still runs the step's later ones: its
    peers are waiting in them, and a rank that skipped them would leave
    the others hanging until the group's timeout."""

    def __init__(self, communicator: Any) -> None:
        self.communicator = communicator
        self.failure: tuple[int, BaseException] | None = None

    def run(self, site: int, call: Callable[[], None]) -> bool:
        """`call()`; False (and the failure kept) when it raised."""
        try:
            call()
            return True
        except BaseException as exc:  # noqa: BLE001 -- raised after the step
            if self.failure is None:
                self.failure = (site, exc)
            return False

    def raise_failure(self) -> None:
        """Raise (as a CommunicatorError) the step's first collective failure."""
        if self.failure is None:
            return
        site, exc = self.failure
        self.failure = None
        raise CommunicatorError(
            f"poot.all_reduce #{site} failed on rank {self.communicator.rank}: "
            f"{type(exc).__name__}: {exc} (the step's results are not usable; a state "
            "written in place may hold part of the step)"
        ) from exc
