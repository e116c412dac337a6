"""The paged cache's policies one by one: blocks on demand, prefix reuse
keyed by tokens and weights identity (adapter isolation, hot reload), LRU
eviction, copy-on-write, typed refusals that change nothing."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from poot_mlir.driver import BLOCK_SIZE, AdapterTable, BlockAllocator, PagedKVCache, WeightsIdentity
from poot_mlir.errors import KVCacheError, PoolExhausted, SequenceFull

BASE = WeightsIdentity("base-fingerprint")


def prefilled(cache: PagedKVCache, seq, prompt, identity=BASE) -> int:
    """Admit and prefill `prompt` as a completed step would (then publish)."""
    reused = cache.admit(seq, prompt, identity)
    cache.append(seq, prompt[reused:])
    cache.commit()
    assert cache.check() == []
    return reused


def tokens(rng: np.random.Generator, n: int) -> list[int]:
    return [int(t) for t in rng.integers(0, 1000, n)]


def test_block_size_is_the_specs() -> None:
    assert BLOCK_SIZE == 16


def test_blocks_follow_the_tokens_held(rng: np.random.Generator) -> None:
    cache = PagedKVCache(8)
    prefilled(cache, "a", tokens(rng, 1))
    assert cache.blocks_in_use == 1
    slots = cache.append("a", tokens(rng, 32))  # positions 1..32: two more blocks
    assert cache.blocks_in_use == 3
    table = cache.table("a")
    assert slots == [table.blocks[p // 16] * 16 + p % 16 for p in range(1, 33)]
    np.testing.assert_array_equal(cache.read_row("a", 40)[:33], cache.slots("a"))
    assert (cache.read_row("a", 40)[33:] == 0).all()
    cache.free("a")
    assert cache.blocks_in_use == 0 and cache.check() == []


def test_prefix_hit_pins_the_blocks_and_skips_their_prefill(rng: np.random.Generator) -> None:
    cache = PagedKVCache(16)
    shared = tokens(rng, 40)
    assert prefilled(cache, "a", shared + tokens(rng, 3)) == 0
    reused = cache.admit("b", shared + tokens(rng, 9), BASE)
    assert reused == 32  # two full blocks; the third differs after token 40
    a, b = cache.table("a"), cache.table("b")
    assert b.blocks == a.blocks[:2] and b.tokens == shared[:32]
    assert [cache.allocator.ref(x) for x in a.blocks[:2]] == [2, 2]
    assert (cache.prefix_hits, cache.tokens_skipped) == (1, 32)
    # The hit survives the first request: its published blocks stay cached.
    cache.free("a")
    cache.free("b")
    assert cache.admit("c", shared, BASE) == 32 and cache.check() == []


def test_a_whole_prompt_match_still_computes_its_last_token(rng: np.random.Generator) -> None:
    cache = PagedKVCache(8)
    prompt = tokens(rng, 32)
    prefilled(cache, "a", prompt)
    assert cache.admit("b", prompt, BASE) == 16  # not 32: the last token's logits are needed


def test_no_hit_before_the_writing_step_completes(rng: np.random.Generator) -> None:
    cache = PagedKVCache(8)
    prompt = tokens(rng, 40)
    cache.admit("a", prompt, BASE)
    cache.append("a", prompt)  # planned, not committed: nothing published yet
    assert cache.admit("b", prompt, BASE) == 0
    cache.commit()
    assert cache.admit("c", prompt, BASE) == 32


def test_adapter_isolation_same_tokens_different_weights(rng: np.random.Generator) -> None:
    cache = PagedKVCache(32)
    prompt = tokens(rng, 50)
    lora_x, lora_y = WeightsIdentity(BASE.base, "x"), WeightsIdentity(BASE.base, "y")
    prefilled(cache, "base", prompt, BASE)
    assert cache.admit("x", prompt, lora_x) == 0  # the base model's K/V are not the adapter's
    cache.append("x", prompt)
    cache.commit()
    assert cache.admit("y", prompt, lora_y) == 0
    assert cache.admit("x2", prompt, lora_x) == 48
    assert cache.admit("base2", prompt, BASE) == 48
    assert set(cache.table("x2").blocks).isdisjoint(cache.table("base2").blocks)
    # A different base model never matches either.
    assert cache.admit("other", prompt, WeightsIdentity("another-base")) == 0


def test_hot_reload_gets_a_fresh_identity_and_no_hit(rng: np.random.Generator) -> None:
    shapes = {"w.lora_a": (4, 2), "w.lora_b": (2, 4)}
    table = AdapterTable("base-fingerprint", 3, shapes)
    arrays = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    first = table.load("A", arrays)
    slot, identity = table.resolve("A")
    assert identity == first and slot == 1
    np.testing.assert_array_equal(table.tables()["w.lora_a"][1], arrays["w.lora_a"])
    assert not table.tables()["w.lora_a"][0].any()  # slot 0: the base model

    cache = PagedKVCache(16)
    prompt = tokens(rng, 40)
    prefilled(cache, "old", prompt, first)
    table.hold(slot)  # a sequence still runs on the old version
    second = table.load("A", arrays)  # the same bytes, reloaded: still a new identity
    assert second != first and second.root() != first.root()
    new_slot, _ = table.resolve("A")
    assert new_slot == 2  # the old version's slot is kept for its running sequence
    assert cache.admit("new", prompt, second) == 0
    table.release(slot)
    assert table.load("A", arrays) != second and table.resolve("A")[0] == 1  # slot 1 free again
    with pytest.raises(KVCacheError, match="no adapter named"):
        table.resolve("missing")


def test_lru_evicts_least_recently_released_tail_first(rng: np.random.Generator) -> None:
    cache = PagedKVCache(4)
    p, q = tokens(rng, 33), tokens(rng, 17)
    prefilled(cache, "p", p)  # blocks: p0 p1 (full, published) + a partial one
    p_blocks = list(cache.table("p").blocks)
    cache.free("p")
    prefilled(cache, "q", q)
    q_blocks = list(cache.table("q").blocks)
    cache.free("q")
    assert cache.allocator.cached_blocks == 3 and cache.allocator.free_blocks == 1
    # Two new blocks: the free one, then the oldest cached: p's tail (p1).
    cache.admit("r", [1], BASE)
    cache.append("r", list(range(17)))
    assert cache.allocator.evictions == 1
    assert p_blocks[1] in cache.table("r").blocks and p_blocks[0] not in cache.table("r").blocks
    # p's head block still serves its first 16 tokens; its tail is gone.
    assert cache.admit("p2", p, BASE) == 16
    assert q_blocks[0] not in cache.table("r").blocks


def test_pool_exhausted_is_typed_and_changes_nothing(rng: np.random.Generator) -> None:
    cache = PagedKVCache(3)
    prefilled(cache, "a", tokens(rng, 40))  # 3 blocks, all pinned
    before = cache.snapshot()
    with pytest.raises(PoolExhausted, match="free or evictable"):
        cache.append("a", tokens(rng, 9))
    after = cache.snapshot()
    assert (after.allocator, after.tables) == (before.allocator, before.tables)
    allocator = BlockAllocator(1)
    allocator.allocate()
    with pytest.raises(PoolExhausted, match="none can be evicted"):
        allocator.allocate()


def test_sequence_full_is_typed(rng: np.random.Generator) -> None:
    cache = PagedKVCache(8, max_tokens=20)
    with pytest.raises(SequenceFull):
        cache.admit("a", tokens(rng, 21), BASE)
    prefilled(cache, "a", tokens(rng, 20))
    with pytest.raises(SequenceFull, match="exceed"):
        cache.append("a", [1])
    assert len(cache.table("a")) == 20


def test_copy_on_write_of_a_shared_partial_block(rng: np.random.Generator) -> None:
    cache = PagedKVCache(8)
    prefilled(cache, "a", tokens(rng, 20))  # block 0 full, block 1 holds 4
    cache.fork("a", "b")
    shared = cache.table("a").blocks[1]
    assert cache.allocator.ref(shared) == 2
    slots = cache.append("b", [7])
    fresh = cache.table("b").blocks[1]
    assert fresh != shared and slots == [fresh * 16 + 4]
    [copy] = cache.take_copies()
    assert (copy.src, copy.dst, copy.count) == (shared * 16, fresh * 16, 4)
    assert cache.table("a").blocks[1] == shared and cache.allocator.ref(shared) == 1
    assert cache.table("b").blocks[0] == cache.table("a").blocks[0]  # the full block stays shared
    # `a` now owns its partial block alone: it writes in place.
    assert cache.append("a", [8]) == [shared * 16 + 4] and cache.take_copies() == []
    assert cache.check() == []


def test_snapshot_restore_undoes_a_step(rng: np.random.Generator) -> None:
    cache = PagedKVCache(8)
    prefilled(cache, "a", tokens(rng, 20))
    before = cache.snapshot()
    cache.admit("b", tokens(rng, 5), BASE)
    cache.append("a", tokens(rng, 30))
    cache.restore(before)
    assert cache.sequences == ["a"] and len(cache.table("a")) == 20 and cache.blocks_in_use == 2
    assert cache.check() == []


def test_misuse_is_typed(rng: np.random.Generator) -> None:
    cache = PagedKVCache(4)
    with pytest.raises(KVCacheError, match="no sequence"):
        cache.append("ghost", [1])
    cache.admit("a", [1, 2], BASE)
    with pytest.raises(KVCacheError, match="already"):
        cache.admit("a", [1], BASE)
    with pytest.raises(KVCacheError, match="empty prompt"):
        cache.admit("b", [], BASE)
    with pytest.raises(KVCacheError, match="released more often"):
        BlockAllocator(2).release(0)


def test_the_driver_imports_no_mlir() -> None:
    code = (
        "import sys, poot_mlir.driver, poot_mlir.driver.engine\n"
        "bad = [m for m in sys.modules if m.startswith(('poot_mlir.ir', 'poot_mlir._mlir_libs',"
        " 'poot_mlir.dialects', 'poot_mlir.compiler', 'poot_mlir.frontend', 'mlir'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
