"""poot_mlir.driver: the paged KV-cache driver (pure Python + numpy, no MLIR).

    blocks    BLOCK_SIZE = 16; BlockAllocator (reference counts, free list,
              LRU of cached unpinned blocks, the prefix index)
    prefix    WeightsIdentity; chained prefix keys of full blocks
    cache     PagedKVCache: a block table per sequence, prefix reuse,
              copy-on-write forks, the read/write map rows of a step
    adapters  AdapterTable: per-row LoRA slots, a fresh identity per load
    engine    Engine: continuous batching of requests through a compiled step

A step function it drives is traced with the frontend's per-row paged
attention (`ops.attention_paged(..., pos [B], count=...)`); see
`poot_mlir.examples.serve` and docs/kv-driver.md.
"""

from .adapters import AdapterTable
from .blocks import BLOCK_SIZE, BlockAllocator
from .cache import Copy, PagedKVCache, SequenceTable
from .engine import Completion, Engine, Request, RowPlan, StepPlan, StepReport, StepShape
from .prefix import WeightsIdentity, block_keys, weights_fingerprint

__all__ = [
    "BLOCK_SIZE",
    "AdapterTable",
    "BlockAllocator",
    "Completion",
    "Copy",
    "Engine",
    "PagedKVCache",
    "Request",
    "RowPlan",
    "SequenceTable",
    "StepPlan",
    "StepReport",
    "StepShape",
    "WeightsIdentity",
    "block_keys",
    "weights_fingerprint",
]
