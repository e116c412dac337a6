"""The block allocator: fixed-size blocks of one shared pool, reference counted.

Every layer's K and V pools are `[pool_slots, kv_heads, head_dim]` with
`pool_slots = num_blocks * BLOCK_SIZE`; block `b` is the slots
`[b * BLOCK_SIZE, (b + 1) * BLOCK_SIZE)` of every pool at once, so one
allocator serves all layers.

A block is in exactly one of three states:

    owned   ref > 0: in at least one sequence's block table (and maybe
            indexed by the prefix cache too);
    cached  ref == 0 but its content is indexed by a prefix key: it is kept
            for a later request with the same prefix, and is evictable, least
            recently released first;
    free    ref == 0 and no content worth keeping.

`allocate` takes a free block, else evicts the least recently used cached
one, else raises `PoolExhausted`: a pinned (owned) block is never evicted.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ..errors import KVCacheError, PoolExhausted

#: Tokens per block (poot_llm::driver::block_table::BLOCK_SIZE in the spec).
BLOCK_SIZE = 16


@dataclass(frozen=True)
class AllocatorState:
    """A copy of the allocator's bookkeeping (`snapshot` / `restore`)."""

    ref: tuple[int, ...]
    free: tuple[int, ...]
    lru: tuple[int, ...]
    by_key: tuple[tuple[bytes, int], ...]


class BlockAllocator:
    """Reference counts, the free list, and the prefix index of `num_blocks`
    blocks."""

    def __init__(self, num_blocks: int) -> None:
        if isinstance(num_blocks, bool) or not isinstance(num_blocks, int) or num_blocks < 1:
            raise KVCacheError(f"num_blocks must be a positive int, got {num_blocks!r}")
        self.num_blocks = num_blocks
        self._ref = [0] * num_blocks
        # Lowest block first, so a fresh pool fills from slot 0 (readable logs).
        self._free = list(range(num_blocks - 1, -1, -1))
        self._lru: OrderedDict[int, None] = OrderedDict()  # cached blocks, oldest first
        self._by_key: dict[bytes, int] = {}
        self._key_of: dict[int, bytes] = {}
        self.evictions = 0

    # --- counts --------------------------------------------------------------

    @property
    def free_blocks(self) -> int:
        return len(self._free)

    @property
    def cached_blocks(self) -> int:
        """Unpinned blocks kept for the prefix cache (evictable)."""
        return len(self._lru)

    @property
    def available(self) -> int:
        """Blocks `allocate` can hand out: free plus evictable."""
        return len(self._free) + len(self._lru)

    @property
    def blocks_in_use(self) -> int:
        """Blocks some sequence holds (ref > 0)."""
        return self.num_blocks - self.available

    def ref(self, block: int) -> int:
        return self._ref[block]

    def is_cached(self, block: int) -> bool:
        """True while the block is unpinned and evictable."""
        return block in self._lru

    # --- allocation and reference counts -------------------------------------

    def allocate(self) -> int:
        """A block with ref 1 and no prefix key: a free one, else the least
        recently used cached one (evicted from the prefix index)."""
        if self._free:
            block = self._free.pop()
        elif self._lru:
            block, _ = self._lru.popitem(last=False)
            del self._by_key[self._key_of.pop(block)]
            self.evictions += 1
        else:
            raise PoolExhausted(
                f"the pool's {self.num_blocks} blocks are all held by running sequences: "
                "no block is free and none can be evicted"
            )
        self._ref[block] = 1
        return block

    def retain(self, block: int) -> None:
        """One more holder; a cached block is pinned (leaves the LRU)."""
        self._check_block(block)
        if self._ref[block] == 0:
            if block not in self._lru:
                raise KVCacheError(
                    f"block {block} is free: only an owned or cached block is retained"
                )
            del self._lru[block]
        self._ref[block] += 1

    def release(self, block: int) -> None:
        """One holder fewer; at zero the block is cached when its content is
        indexed, free otherwise."""
        self._check_block(block)
        if self._ref[block] <= 0:
            raise KVCacheError(f"block {block} is released more often than it was held")
        self._ref[block] -= 1
        if self._ref[block] == 0:
            if block in self._key_of:
                self._lru[block] = None  # most recently used end
            else:
                self._free.append(block)

    # --- the prefix index ----------------------------------------------------

    def lookup(self, key: bytes) -> int | None:
        """The block whose content is indexed under `key`, if any."""
        return self._by_key.get(key)

    def publish(self, block: int, key: bytes) -> bool:
        """Index an owned, full block's content under `key`. Returns False
        (and indexes nothing) when another block already holds that key or
        this block already has one: one block per key."""
        self._check_block(block)
        if self._ref[block] <= 0:
            raise KVCacheError(f"block {block} is not owned; only a written block is published")
        if key in self._by_key or block in self._key_of:
            return False
        self._by_key[key] = block
        self._key_of[block] = key
        return True

    def key_of(self, block: int) -> bytes | None:
        return self._key_of.get(block)

    def drop_cached(self) -> int:
        """Forget every cached (unpinned) block's content: each goes back to
        the free list and leaves the prefix index. Blocks a sequence holds
        keep theirs. Returns how many were dropped."""
        dropped = list(self._lru)
        for block in dropped:
            del self._by_key[self._key_of.pop(block)]
            self._free.append(block)
        self._lru.clear()
        return len(dropped)

    # --- transactions and invariants -----------------------------------------

    def snapshot(self) -> AllocatorState:
        return AllocatorState(
            tuple(self._ref), tuple(self._free), tuple(self._lru), tuple(self._by_key.items())
        )

    def restore(self, state: AllocatorState) -> None:
        self._ref = list(state.ref)
        self._free = list(state.free)
        self._lru = OrderedDict((b, None) for b in state.lru)
        self._by_key = dict(state.by_key)
        self._key_of = {b: k for k, b in state.by_key}

    def check(self) -> list[str]:
        """Every broken invariant, as text (empty when consistent): each block
        in exactly one state, the index one-to-one, counts never negative."""
        problems = []
        free, lru = set(self._free), set(self._lru)
        if len(free) != len(self._free):
            problems.append("a block is on the free list twice")
        if free & lru:
            problems.append(f"blocks {sorted(free & lru)} are both free and cached")
        for block, ref in enumerate(self._ref):
            if ref < 0:
                problems.append(f"block {block} has ref {ref}")
            elif ref == 0 and block not in free and block not in lru:
                problems.append(f"block {block} has ref 0 but is neither free nor cached (leaked)")
            elif ref > 0 and (block in free or block in lru):
                problems.append(f"block {block} is owned (ref {ref}) but also free or cached")
        if any(block not in self._key_of for block in lru):
            problems.append("a cached block has no prefix key")
        if any(block in self._key_of for block in free):
            problems.append("a free block still has a prefix key")
        if {b: k for k, b in self._by_key.items()} != self._key_of:
            problems.append("the prefix index is not one-to-one")
        return problems

    def _check_block(self, block: int) -> None:
        if (
            isinstance(block, bool)
            or not isinstance(block, int)
            or not 0 <= block < self.num_blocks
        ):
            raise KVCacheError(
                f"block {block!r} is not a block of this {self.num_blocks}-block pool"
            )
