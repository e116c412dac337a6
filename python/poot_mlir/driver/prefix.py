"""Prefix keys: a chained hash of token ids, rooted in the effective weights.

A block's K/V depend on every token before it and on the weights that
computed them, so a full block is keyed by

    key_0 = H(root, tokens[0:16]),  key_i = H(key_{i-1}, tokens[16i : 16i + 16])
    root  = H("poot-prefix/1", base identity, adapter identity or "-")

Two requests share block `i` exactly when their first `16 (i + 1)` tokens
and their effective weights agree. The base model and each LoRA adapter have
their own roots, so equal token ids under different weights never match; an
adapter that is (re)loaded gets a fresh identity (`AdapterTable`), so a hot
reload never reuses the K/V its previous version computed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .blocks import BLOCK_SIZE

_DIGEST = 16  # bytes of blake2b: 2^-64 collision odds for 2^32 blocks


def _hash(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=_DIGEST)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))  # unambiguous concatenation
        h.update(part)
    return h.digest()


def weights_fingerprint(weights: Mapping[str, np.ndarray]) -> str:
    """A content hash of named arrays (name, dtype, shape and bytes): the
    base model's identity, equal for equal checkpoints."""
    h = hashlib.blake2b(digest_size=_DIGEST)
    for name in sorted(weights):
        array = np.ascontiguousarray(weights[name])
        h.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        h.update(array.tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class WeightsIdentity:
    """The effective weights a sequence's K/V are computed with: the base
    model, and the adapter applied on top of it (None: the base alone)."""

    base: str
    adapter: str | None = None

    def root(self) -> bytes:
        return _hash(b"poot-prefix/1", self.base.encode(), (self.adapter or "-").encode())


def block_keys(
    identity: WeightsIdentity, tokens: Sequence[int], start: int = 0, parent: bytes | None = None
) -> list[bytes]:
    """Keys of the full blocks of `tokens` from block `start` on (`parent`:
    the key of block `start - 1`, needed when `start > 0`)."""
    if start == 0:
        parent = identity.root()
    elif parent is None:
        raise ValueError("block_keys: a start past block 0 needs its parent key")
    keys = []
    ids = np.asarray(tokens, dtype=np.int64)
    for block in range(start, len(ids) // BLOCK_SIZE):
        chunk = ids[block * BLOCK_SIZE : (block + 1) * BLOCK_SIZE]
        parent = _hash(parent, chunk.astype("<i8").tobytes())
        keys.append(parent)
    return keys
