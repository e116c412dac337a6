"""Slicing full (unsharded) arrays for a tensor-parallel rank, and back.

A rank program's sharded arguments carry `shard` (`#poot.shard<dim, block,
parts>`, `binding.Shard`): the rank binds block `block` of `parts` equal
blocks along `dim` of the unsharded array. Every rank is handed the same
full weights and initial state and takes its own blocks with `shard_inputs`
(`CpuArtifact.shard`); `unshard` puts the ranks' blocks back together (to
compare a sharded state with the unsharded oracle's). Numpy only.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import BindError
from .binding import Port, Shard, Signature, host_value


def _signature(ports: Any) -> Signature:
    signature = getattr(ports, "signature", ports)
    if not isinstance(signature, Signature):
        raise TypeError(f"expected an artifact or a binding.Signature, got {type(ports).__name__}")
    return signature


def _port_for(signature: Signature, key: str) -> Port | None:
    for port in signature.args:
        if key in (port.key, port.state):
            return port
    return None


def shard_inputs(ports: Any, full: Mapping[str, Any]) -> dict[str, Any]:
    """This rank's values of `full` (argument name or state name -> the
    unsharded value): a sharded argument's block, C-contiguous; every other
    value as it is. `ports` is a loaded artifact (anything with a
    `signature`) or a `binding.Signature`. A name the step does not take is
    a BindError (it would be refused at the step anyway; here the message
    can say so early)."""
    signature = _signature(ports)
    out: dict[str, Any] = {}
    for key, value in full.items():
        port = _port_for(signature, key)
        if port is None:
            expected = ", ".join(p.key for p in signature.args)
            raise BindError(f"shard_inputs: the step takes no {key!r} (arguments: {expected})")
        if port.shard is None:
            out[key] = value
            continue
        array = np.asarray(host_value(value))
        if array.ndim != len(port.shape):
            raise BindError(
                f"shard_inputs: {port.describe()} is block {port.shard.block} of "
                f"{port.shard.parts} along dim {port.shard.dim} of a rank-{len(port.shape)} "
                f"tensor; got a {array.shape} array"
            )
        out[key] = port.shard.take(array)
    return out


def unshard(blocks: Sequence[np.ndarray], shards: Sequence[Shard | None]) -> np.ndarray:
    """The unsharded array from every rank's block (`blocks[r]` with
    `shards[r]`, rank order). Ranks holding the same block (replicated KV
    heads) must hold identical bits, and an unsharded value (shard None)
    must be identical on every rank: a ValueError says which rank differs."""
    first = np.asarray(blocks[0])
    if shards[0] is None:
        for rank, block in enumerate(blocks):
            if not np.array_equal(np.asarray(block), first, equal_nan=True):
                raise ValueError(f"the replicated value differs on rank {rank} from rank 0")
        return first.copy()
    shard0 = shards[0]
    shape = list(first.shape)
    shape[shard0.dim] *= shard0.parts
    full = np.empty(shape, dtype=first.dtype)
    owner: dict[int, int] = {}
    for rank, (block, shard) in enumerate(zip(blocks, shards)):
        if shard is None or (shard.dim, shard.parts, shard.segments) != (
            shard0.dim, shard0.parts, shard0.segments
        ):
            raise ValueError(f"rank {rank} holds {shard}, rank 0 holds {shard0}: not one split")
        pieces = shard.pieces(shape)
        if shard.block in owner:
            if not all(np.array_equal(full[w], block[m], equal_nan=True) for w, m in pieces):
                raise ValueError(
                    f"ranks {owner[shard.block]} and {rank} replicate block {shard.block} "
                    "with different values"
                )
            continue
        owner[shard.block] = rank
        for window, mine in pieces:
            full[window] = block[mine]
    missing = sorted(set(range(shard0.parts)) - set(owner))
    if missing:
        raise ValueError(f"no rank holds block(s) {missing} of {shard0.parts}")
    return full
