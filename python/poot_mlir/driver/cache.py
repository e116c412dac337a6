"""The paged KV cache: block tables, prefix reuse and copy-on-write.

`PagedKVCache` keeps one block table per sequence over a shared
`BlockAllocator`. Logical position `p` of a sequence lives in pool slot

    slot(p) = table[p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE

in every layer's K and V pool. Blocks are allocated when a sequence's tokens
reach them and released when the sequence is freed, so the pool holds the
tokens of the running sequences (plus cached prefixes), not rows x capacity.

Prefix caching: once a step that wrote a block completes (`commit`), a full
block is published under its prefix key (`prefix.block_keys`). `admit`
points a new sequence's table at the longest run of published blocks that
matches its prompt and its weights identity, pins them, and reports the
tokens whose prefill is skipped (at most `len(prompt) - 1`: the last prompt
token is always computed, its logits are the first output).

Copy-on-write: `fork` shares every block of a sequence, including a partial
last block. The first append into a shared partial block gives the writer a
fresh block; the copy of the filled slots is queued (`take_copies`) for the
caller to apply to every pool before the next dispatch.

Every operation either completes or raises a typed error
(`poot_mlir.errors`: KVCacheError, PoolExhausted, SequenceFull) having
changed nothing. `snapshot` / `restore` undo whole steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from ..errors import KVCacheError, PoolExhausted, SequenceFull
from .blocks import BLOCK_SIZE, BlockAllocator
from .prefix import WeightsIdentity, block_keys


@dataclass
class SequenceTable:
    """One sequence's block table and the tokens whose K/V it holds."""

    identity: WeightsIdentity
    tokens: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)
    keys: list[bytes] = field(default_factory=list)  # of the published-or-offered full blocks
    reused: int = 0  # tokens taken from the prefix cache at admission

    def __len__(self) -> int:
        return len(self.tokens)

    def copy(self) -> "SequenceTable":
        return SequenceTable(
            self.identity, list(self.tokens), list(self.blocks), list(self.keys), self.reused
        )


@dataclass(frozen=True)
class Copy:
    """Copy slots `[src, src + count)` to `[dst, dst + count)` of every pool."""

    src: int
    dst: int
    count: int


def _rounded(tokens: int) -> int:
    """`tokens` rounded up to whole blocks."""
    return -(-tokens // BLOCK_SIZE) * BLOCK_SIZE


def apply_copies(state: Mapping[str, Any], pools: Sequence[str], copies: Sequence[Copy]) -> None:
    """Apply `copies` to each pool array of `state` named in `pools`, in
    place (host arrays: a device runner copies on the device instead)."""
    for name in pools:
        pool = state[name]
        for c in copies:
            pool[c.dst : c.dst + c.count] = pool[c.src : c.src + c.count]


@dataclass
class _Snapshot:
    allocator: object
    # seq_id -> (its table, len(blocks), its last block, len(tokens),
    # len(keys), reused): a table's tokens, keys and blocks only grow while
    # it lives (but for its last block, which copy-on-write may swap), so
    # their lengths and that block undo a step without copying any list.
    tables: dict
    copies: list
    stats: tuple


class PagedKVCache:
    """Block tables of the sequences sharing one pool of `num_blocks` blocks.

    `max_tokens` bounds a sequence's length (the step's read-map capacity
    minus its tokens plus one); past it an append raises SequenceFull.
    """

    def __init__(self, num_blocks: int, *, max_tokens: int | None = None) -> None:
        self.allocator = BlockAllocator(num_blocks)
        self.pool_slots = num_blocks * BLOCK_SIZE
        self.max_tokens = max_tokens
        self._tables: dict[Hashable, SequenceTable] = {}
        self._copies: list[Copy] = []
        self.prefix_hits = 0  # admissions that reused at least one block
        self.tokens_skipped = 0  # prefill tokens those admissions skipped

    # --- queries ---------------------------------------------------------------

    @property
    def sequences(self) -> list[Hashable]:
        return list(self._tables)

    def table(self, seq_id: Hashable) -> SequenceTable:
        if seq_id not in self._tables:
            raise KVCacheError(f"no sequence {seq_id!r} in the cache")
        return self._tables[seq_id]

    def __contains__(self, seq_id: Hashable) -> bool:
        return seq_id in self._tables

    @property
    def blocks_in_use(self) -> int:
        return self.allocator.blocks_in_use

    def match(self, prompt: Sequence[int], identity: WeightsIdentity) -> list[int]:
        """The published blocks a new sequence with this prompt and weights
        would reuse (no side effects)."""
        reusable = (len(prompt) - 1) // BLOCK_SIZE if len(prompt) else 0
        blocks = []
        for key in block_keys(identity, prompt[: reusable * BLOCK_SIZE]):
            block = self.allocator.lookup(key)
            if block is None:
                break
            blocks.append(block)
        return blocks

    def slots(self, seq_id: Hashable) -> np.ndarray:
        """The pool slot of each of the sequence's positions, in order."""
        table = self.table(seq_id)
        return self.read_rows([seq_id], _rounded(len(table)))[0, : len(table)].astype(np.int64)

    def read_row(self, seq_id: Hashable, cap: int, filler: int = 0) -> np.ndarray:
        """The sequence's row of a read map `[cap]`: its slots, then `filler`
        (some slot of the pool: the live length stops before it)."""
        return self.read_rows([seq_id], cap, filler)[0]

    def read_rows(self, seq_ids: Sequence[Hashable], cap: int, filler: int = 0) -> np.ndarray:
        """`read_row` of each sequence, as one `[len(seq_ids), cap]` i32 map
        (a serving step's read input): the block tables are expanded to
        slots in one vectorized pass, not one sequence at a time."""
        tables = [self.table(seq_id) for seq_id in seq_ids]
        for seq_id, table in zip(seq_ids, tables):
            if len(table) > cap:
                raise SequenceFull(
                    f"sequence {seq_id!r} holds {len(table)} tokens, more than cap {cap}"
                )
        width = -(-cap // BLOCK_SIZE)
        blocks = np.zeros((len(tables), width), np.int32)
        lengths = np.empty(len(tables), np.int64)
        for r, table in enumerate(tables):
            held = -(-len(table) // BLOCK_SIZE)
            blocks[r, :held] = table.blocks[:held]
            lengths[r] = len(table)
        within = np.arange(BLOCK_SIZE, dtype=np.int32)
        rows = (blocks[:, :, None] * BLOCK_SIZE + within).reshape(len(tables), -1)[:, :cap]
        rows[np.arange(cap)[None, :] >= lengths[:, None]] = filler
        return rows

    # --- sequences ---------------------------------------------------------------

    def admit(self, seq_id: Hashable, prompt: Sequence[int], identity: WeightsIdentity) -> int:
        """A new sequence for `prompt` under `identity`; its table starts with
        the matching published prefix blocks (pinned). Returns the number of
        prompt tokens already in the cache (their prefill is skipped)."""
        if seq_id in self._tables:
            raise KVCacheError(f"sequence {seq_id!r} is already in the cache")
        if not isinstance(identity, WeightsIdentity):
            raise KVCacheError(f"identity must be a WeightsIdentity, got {type(identity).__name__}")
        if len(prompt) == 0:
            raise KVCacheError(f"sequence {seq_id!r}: an empty prompt has nothing to compute")
        if self.max_tokens is not None and len(prompt) > self.max_tokens:
            raise SequenceFull(
                f"sequence {seq_id!r}: a {len(prompt)}-token prompt exceeds the {self.max_tokens} "
                "tokens a sequence may hold"
            )
        blocks = self.match(prompt, identity)
        reused = len(blocks) * BLOCK_SIZE
        for block in blocks:
            self.allocator.retain(block)
        keys: list[bytes] = [self.allocator.key_of(b) for b in blocks]  # type: ignore[misc]
        tokens = [int(t) for t in prompt[:reused]]
        self._tables[seq_id] = SequenceTable(identity, tokens, list(blocks), keys, reused)
        if reused:
            self.prefix_hits += 1
            self.tokens_skipped += reused
        return reused

    def blocks_needed(self, seq_id: Hashable, count: int) -> int:
        """Blocks an append of `count` tokens would allocate (copy-on-write included)."""
        return self._blocks_needed(self.table(seq_id), count)

    def _blocks_needed(self, table: SequenceTable, count: int) -> int:
        length = len(table)
        fresh = -(-(length + count) // BLOCK_SIZE) - -(-length // BLOCK_SIZE)
        shared_tail = length % BLOCK_SIZE and count and self.allocator.ref(table.blocks[-1]) > 1
        return fresh + (1 if shared_tail else 0)

    def append(self, seq_id: Hashable, tokens: Sequence[int]) -> list[int]:
        """Positions for `tokens` after the sequence's last one; returns the
        pool slot each token's K/V is written to. Allocates blocks on demand;
        a shared partial last block is copied on write first."""
        table = self.table(seq_id)
        length, count = len(table.tokens), len(tokens)
        if self.max_tokens is not None and length + count > self.max_tokens:
            raise SequenceFull(
                f"sequence {seq_id!r}: {length} + {count} tokens exceed the "
                f"{self.max_tokens} a sequence may hold"
            )
        needed = self._blocks_needed(table, count)
        if needed > self.allocator.available:
            raise PoolExhausted(
                f"sequence {seq_id!r} needs {needed} more blocks, but only "
                f"{self.allocator.available} are free or evictable (the rest are pinned)"
            )
        blocks = table.blocks
        offset = length % BLOCK_SIZE
        if tokens and offset and self.allocator.ref(blocks[-1]) > 1:
            # The first token goes into a shared partial block: copy it on
            # write (the later ones land in the fresh block or new ones).
            shared, fresh = blocks[-1], self.allocator.allocate()
            self._copies.append(Copy(shared * BLOCK_SIZE, fresh * BLOCK_SIZE, offset))
            self.allocator.release(shared)
            blocks[-1] = fresh
        end = length + count
        for _ in range(-(-end // BLOCK_SIZE) - len(blocks)):
            blocks.append(self.allocator.allocate())
        if count == 1:  # a decode row's token
            slots = [blocks[length // BLOCK_SIZE] * BLOCK_SIZE + offset]
        else:
            slots = [blocks[p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE for p in range(length, end)]
        table.tokens.extend(map(int, tokens))
        return slots

    def fork(self, parent: Hashable, child: Hashable) -> None:
        """`child` shares every block of `parent` (its partial last block
        too, until one of them writes it)."""
        source = self.table(parent)
        if child in self._tables:
            raise KVCacheError(f"sequence {child!r} is already in the cache")
        for block in source.blocks:
            self.allocator.retain(block)
        self._tables[child] = source.copy()
        self._tables[child].reused = 0

    def free(self, seq_id: Hashable) -> None:
        """Release the sequence's blocks (tail first, so the LRU evicts a
        prefix's tail before its head: a head alone can still be reused)."""
        table = self.table(seq_id)
        del self._tables[seq_id]
        for block in reversed(table.blocks):
            self.allocator.release(block)

    def reset_prefix_cache(self) -> int:
        """Drop every cached prefix block no sequence holds (a benchmark's
        cold start, or after the weights behind `WeightsIdentity` changed in
        place); returns how many. The running sequences are untouched."""
        return self.allocator.drop_cached()

    # --- steps -------------------------------------------------------------------

    def take_copies(self) -> list[Copy]:
        """The copy-on-write copies queued since the last call, in order;
        apply them to every pool before the next dispatch."""
        copies, self._copies = self._copies, []
        return copies

    def commit(self) -> int:
        """After a step completed: publish every newly full block under its
        prefix key (its K/V are now written). Returns how many were published."""
        published = 0
        for table in self._tables.values():
            full = len(table) // BLOCK_SIZE
            if full <= len(table.keys):
                continue
            start = len(table.keys)
            parent = table.keys[-1] if table.keys else None
            for i, key in enumerate(block_keys(table.identity, table.tokens, start, parent)):
                table.keys.append(key)
                published += self.allocator.publish(table.blocks[start + i], key)
        return published

    def snapshot(self) -> _Snapshot:
        return _Snapshot(
            self.allocator.snapshot(),
            {
                seq_id: (t, len(t.blocks), t.blocks[-1] if t.blocks else None,
                         len(t.tokens), len(t.keys), t.reused)
                for seq_id, t in self._tables.items()
            },
            list(self._copies),
            (self.prefix_hits, self.tokens_skipped),
        )

    def restore(self, snapshot: _Snapshot) -> None:
        self.allocator.restore(snapshot.allocator)  # type: ignore[arg-type]
        self._tables = {}
        for seq_id, (table, blocks, last, tokens, keys, reused) in snapshot.tables.items():
            del table.blocks[blocks:]
            if blocks:
                table.blocks[-1] = last
            del table.tokens[tokens:]
            del table.keys[keys:]
            table.reused = reused
            self._tables[seq_id] = table
        self._copies = list(snapshot.copies)
        self.prefix_hits, self.tokens_skipped = snapshot.stats

    def check(self) -> list[str]:
        """Every broken invariant (empty when consistent): the allocator's,
        plus each block's ref equal to the tables holding it, no table
        holding a block twice, and each table covering exactly its tokens."""
        problems = self.allocator.check()
        holders = [0] * self.allocator.num_blocks
        for seq_id, table in self._tables.items():
            if len(set(table.blocks)) != len(table.blocks):
                problems.append(f"sequence {seq_id!r} holds a block twice")
            if len(table.blocks) != -(-len(table) // BLOCK_SIZE):
                problems.append(
                    f"sequence {seq_id!r} has {len(table.blocks)} blocks for {len(table)} tokens"
                )
            for block in table.blocks:
                holders[block] += 1
        for block, count in enumerate(holders):
            if self.allocator.ref(block) != count:
                problems.append(
                    f"block {block} has ref {self.allocator.ref(block)} but {count} tables hold it"
                )
        return problems
