"""A randomized stateful test of the paged cache (hypothesis): admit with
prefix reuse, append, commit, fork on a shared prefix, free and evict over
thousands of operations.

Beside the cache runs a shadow pool: every slot holds what was last written
to it -- (weights identity, position, the tokens up to that position) -- and
copy-on-write copies move it like the real pools. After every operation:
0 leaked blocks, 0 double-owned blocks (`PagedKVCache.check`: each block's
reference count equals the tables that hold it, each unowned block is free
or cached, never both), and every position of every live sequence reads
exactly the content its own tokens and weights would have written. A prefix
match that hands out the wrong block, a missing copy-on-write, or an evicted
block still indexed all break the last check.
"""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from poot_mlir.driver import BLOCK_SIZE, PagedKVCache, WeightsIdentity
from poot_mlir.errors import PoolExhausted, SequenceFull

_BOOLEANS = st.booleans()
BLOCKS = 12
MAX_TOKENS = 80
IDENTITIES = [
    WeightsIdentity("base"),
    WeightsIdentity("base", "lora-1"),
    WeightsIdentity("base", "lora-2"),
]
# Prompts share prefixes: a common root, and branches off it.
ROOT = list(range(100, 140))
PREFIXES = [ROOT, ROOT[:20], ROOT[:33] + [7, 7, 7], [5] * 16 + ROOT[:10], list(range(60))]


class CacheMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cache = PagedKVCache(BLOCKS, max_tokens=MAX_TOKENS)
        self.shadow: dict[int, tuple] = {}
        self.next_id = 0
        self.ops = 0
        self.copies = 0

    # --- the model of the pool's content ------------------------------------------

    def _write(self, seq: int, slots: list[int]) -> None:
        for c in self.cache.take_copies():
            self.copies += 1
            for i in range(c.count):
                self.shadow[c.dst + i] = self.shadow[c.src + i]
        table = self.cache.table(seq)
        first = len(table) - len(slots)
        for i, slot in enumerate(slots):
            p = first + i
            self.shadow[slot] = (table.identity, p, tuple(table.tokens[: p + 1]))

    def _expect_unchanged(self, before, action) -> None:
        """`action` raised a typed error: the cache must be as it was."""
        after = self.cache.snapshot()
        assert after.allocator == before.allocator
        assert after.tables == before.tables

    # --- rules ------------------------------------------------------------------------

    @rule(
        prefix=st.sampled_from(PREFIXES),
        extra=st.integers(0, 20),
        ident=st.sampled_from(IDENTITIES),
        cut=st.integers(1, 60),
    )
    def admit_and_prefill(self, prefix, extra, ident, cut) -> None:
        prompt = (prefix + list(range(200, 200 + extra)))[:cut]
        seq = self.next_id
        self.next_id += 1
        before = self.cache.snapshot()
        reused = self.cache.admit(seq, prompt, ident)
        assert reused % BLOCK_SIZE == 0 and reused < len(prompt)
        try:
            slots = self.cache.append(seq, prompt[reused:])
        except PoolExhausted:
            self.cache.free(seq)  # the admission is given back, as the engine would
            self.cache.restore(before)
            return
        self._write(seq, slots)
        self.cache.commit()
        self.ops += 1

    @precondition(lambda self: self.cache.sequences)
    @rule(data=st.data(), n=st.integers(1, 20))
    def append(self, data, n) -> None:
        seq = data.draw(st.sampled_from(sorted(self.cache.sequences)))
        table = self.cache.table(seq)
        before = self.cache.snapshot()
        needed = self.cache.blocks_needed(seq, n)
        try:
            slots = self.cache.append(seq, [len(table) * 3 + i for i in range(n)])
        except PoolExhausted:
            assert needed > self.cache.allocator.available
            self._expect_unchanged(before, "append")
            return
        except SequenceFull:
            assert len(table) + n > MAX_TOKENS
            self._expect_unchanged(before, "append")
            return
        assert len(set(slots)) == len(slots)
        self._write(seq, slots)
        if data.draw(_BOOLEANS):
            self.cache.commit()
        self.ops += 1

    @precondition(lambda self: self.cache.sequences)
    @rule(data=st.data())
    def fork(self, data) -> None:
        parent = data.draw(st.sampled_from(sorted(self.cache.sequences)))
        child = self.next_id
        self.next_id += 1
        self.cache.fork(parent, child)
        self.ops += 1

    @precondition(lambda self: self.cache.sequences)
    @rule(data=st.data())
    def free(self, data) -> None:
        seq = data.draw(st.sampled_from(sorted(self.cache.sequences)))
        self.cache.commit()  # a finishing step publishes before it frees
        self.cache.free(seq)
        self.ops += 1

    # --- invariants -------------------------------------------------------------------

    @invariant()
    def no_leak_no_double_owner(self) -> None:
        assert self.cache.check() == []

    @invariant()
    def every_position_reads_its_own_content(self) -> None:
        for seq in self.cache.sequences:
            table = self.cache.table(seq)
            for p, slot in enumerate(self.cache.slots(seq)):
                want = (table.identity, p, tuple(table.tokens[: p + 1]))
                assert self.shadow.get(int(slot)) == want, (seq, p, int(slot))

    @invariant()
    def block_counts_add_up(self) -> None:
        a = self.cache.allocator
        assert a.free_blocks + a.cached_blocks + a.blocks_in_use == BLOCKS


CacheMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCacheMachine = CacheMachine.TestCase


def test_the_machine_runs_thousands_of_operations() -> None:
    """The settings above explore 60 runs x 80 steps = 4,800 operations;
    make sure a run really reaches the interesting states (eviction, reuse,
    copy-on-write) rather than refusing everything."""
    import random

    rng = random.Random(1234)
    machine = CacheMachine()
    for _ in range(4000):
        seqs = sorted(machine.cache.sequences)
        choice = rng.random()
        if not seqs or choice < 0.3:
            machine.admit_and_prefill(
                rng.choice(PREFIXES), rng.randint(0, 20), rng.choice(IDENTITIES), rng.randint(1, 60)
            )
        elif choice < 0.6:
            machine.append(_Draw(rng, seqs), rng.randint(1, 20))
        elif choice < 0.75:
            machine.fork(_Draw(rng, seqs))
        else:
            machine.free(_Draw(rng, seqs))
        machine.no_leak_no_double_owner()
        machine.every_position_reads_its_own_content()
        machine.block_counts_add_up()
    print(
        f"ops {machine.ops}, prefix hits {machine.cache.prefix_hits}, evictions "
        f"{machine.cache.allocator.evictions}, copies {machine.copies}"
    )
    assert machine.ops > 2000, machine.ops
    assert machine.cache.prefix_hits > 50, machine.cache.prefix_hits
    assert machine.cache.allocator.evictions > 50, machine.cache.allocator.evictions
    assert machine.copies > 20, machine.copies


class _Draw:
    """Stands in for hypothesis' `data` in the hand-driven run."""

    def __init__(self, rng, seqs) -> None:
        self.rng, self.seqs = rng, seqs

    def draw(self, strategy):
        if strategy is _BOOLEANS:
            return self.rng.random() < 0.5
        return self.rng.choice(self.seqs)
