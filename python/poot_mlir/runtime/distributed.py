"""Launch tensor-parallel ranks on one host: `spawn`.

    def work(rank, world_size, path):
        comm = Communicator()                      # the group spawn initialized
        ...
        return something_picklable

    results = spawn(work, 4, path)                 # [rank 0's return, ...]

Each rank is a fresh process (torch.multiprocessing's spawn: no forked MLIR
or OpenMP state) that joins a torch.distributed process group (gloo by
default) through a file store in a private temporary directory, runs
`fn(rank, world_size, *args)`, and leaves the group. `fn` must be
importable by name (a module-level function). A rank that raises or dies
makes `spawn` stop the others and raise `errors.RankFailed` with that rank's
traceback text. torch is an optional dependency, imported here only.
"""

from __future__ import annotations

import datetime
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..errors import RankFailed
from .collectives import _torch


def _threads_per_rank(world_size: int) -> int:
    """The cores each rank's step may use: the host's, shared out."""
    return max(1, (os.cpu_count() or 1) // world_size)


def _rank_main(
    rank: int,
    fn: Callable[..., Any],
    world_size: int,
    args: tuple[Any, ...],
    backend: str,
    store: str,
    timeout_s: float,
    results: str,
) -> None:
    torch, dist = _torch()
    # Ranks share the host's cores: one rank's OpenMP team (and torch's) must
    # not assume all of them. An explicit setting wins.
    threads = _threads_per_rank(world_size)
    os.environ.setdefault("POOT_CPU_THREADS", str(threads))
    torch.set_num_threads(threads)
    # All ranks are on this host: gloo talks over loopback (a container's
    # hostname need not resolve to a usable interface).
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(
        backend,
        init_method=f"file://{store}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=timeout_s),
    )
    try:
        value = fn(rank, world_size, *args)
    finally:
        dist.destroy_process_group()
    Path(results, f"rank{rank}.pickle").write_bytes(pickle.dumps(value))


def spawn(
    fn: Callable[..., Any],
    world_size: int,
    *args: Any,
    backend: str = "gloo",
    timeout_s: float = 300.0,
) -> list[Any]:
    """Run `fn(rank, world_size, *args)` in `world_size` processes joined in
    one torch.distributed group; the ranks' return values, in rank order.

    `timeout_s` bounds each collective (a rank waiting for a peer that never
    comes fails instead of hanging). Raises RankFailed for the first rank
    that fails, with its traceback."""
    if world_size < 1:
        raise ValueError(f"world_size={world_size}: expected at least 1")
    torch, _ = _torch()
    from torch.multiprocessing.spawn import ProcessException

    with tempfile.TemporaryDirectory(prefix="poot-ranks-") as scratch:
        store = os.path.join(scratch, "store")  # the file store: must not exist yet
        try:
            torch.multiprocessing.spawn(
                _rank_main,
                args=(fn, world_size, args, backend, store, timeout_s, scratch),
                nprocs=world_size,
                join=True,
            )
        except ProcessException as exc:
            raise RankFailed(
                f"rank {exc.error_index} of {world_size} failed:\n{exc}", exc.error_index
            ) from None
        return [
            pickle.loads(Path(scratch, f"rank{rank}.pickle").read_bytes())
            for rank in range(world_size)
        ]
