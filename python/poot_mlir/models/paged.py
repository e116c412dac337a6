"""Export a Hugging Face causal LM's serving step over paged KV pools.

`export_paged_step(model, rows, tokens, cap, pool_slots)` exports the
model's own forward over `PagedCache`, a transformers `Cache` whose layers
keep their keys and values in pools shared by every sequence, in the
layout, slot maps and block tables of `poot_mlir.driver` (docs/kv-driver.md):

    pool       k{i}, v{i}   [pool_slots, kv_heads, head_dim]  (the wrapper's buffers)
    tokens     [rows, T]    the row's new token ids
    pos        [rows]       position of the row's first new token
    count      [rows]       how many of its T tokens are real (the rest: padding)
    read       [rows, cap]  logical position -> pool slot (the block table, expanded)
    write      [rows * T]   pool slot of each new token, -1: padding (writes nothing)
    -> logits  [rows, 1, vocab]   each row's last real token's

A layer's `update` scatters the new K/V rows into its pools at `write`
(`index_copy_` along the slots: a `scatter_update` once imported) and
returns the row's keys and values gathered through `read` (`pool[read]`,
then `[rows, kv_heads, cap, head_dim]`): the spelling of
`ops.attention_paged`, which the attention rewrite fuses into a
`poot.attention` reading the pools through the read map. The model attends
with its own attention function (sdpa, eager) under a 4-D mask built here
from each row's positions -- causal, and for a sliding-window layer the
model's window (`kv > q - window`, transformers' rule) -- since the mask
transformers builds assumes one query offset for the whole batch. Positions
are per row (`position_ids = pos[b] + i`), so RoPE is the model's own.

The importer makes the written buffers the step's state (`k{i}`, `v{i}`),
`pos` the step's per-row position, and declares the maps' ranges, so every
binder checks them and the rewrite proves the read map inside the pool.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from ..errors import TorchImportError
from .hf_export import _text_config, cache_shapes

__all__ = ["PagedCache", "export_paged_step", "layer_windows", "pool_shapes"]

#: The attention functions whose mask form is known here: sdpa takes a bool
#: mask (True: attend), eager adds a float one (0 / the dtype's lowest).
_MASK_FORMS = {"sdpa": "bool", "eager": "float"}


def pool_shapes(model: Any, pool_slots: int) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """Each layer's K and V pool shape `[pool_slots, heads, head_dim]`, the
    heads and widths the model itself caches (`hf_export.cache_shapes`)."""
    return [
        ((pool_slots, k[1], k[3]), (pool_slots, v[1], v[3]))
        for k, v in cache_shapes(model, 1, 1)
    ]


def layer_windows(model: Any) -> list[int | None]:
    """Each layer's sliding window (None: global attention), as the model's
    own mask creation reads it: `config.layer_types` where the config has
    them, else every layer slides when `config.sliding_window` is set
    (Mistral's rule)."""
    config = _text_config(model)
    layers = int(config.num_hidden_layers)
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if types is None:
        return [window] * layers
    return [window if kind == "sliding_attention" else None for kind in types[:layers]]


class _PagedLayer(CacheLayerMixin):
    """One layer's pools; the step's maps come from the owning cache."""

    is_compileable = True

    def __init__(
        self, cache: "PagedCache", keys: torch.Tensor, values: torch.Tensor, window: int | None
    ) -> None:
        super().__init__()
        self._cache = cache
        self.keys, self.values = keys, values
        self.window = window
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        pass  # the pools exist before the first update

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        read, write = self._cache.read, self._cache.write
        for pool, new in ((self.keys, key_states), (self.values, value_states)):
            rows, heads, tokens, width = new.shape
            # Token t of row b is row b * T + t of the write map.
            pool.index_copy_(0, write, new.transpose(1, 2).reshape(rows * tokens, heads, width))
        # `pool[read]` is one gather through the read map (its declared
        # range is non-negative: no index wrap), then the model's
        # [rows, heads, cap, head_dim] layout.
        keys, values = self.keys[read].transpose(1, 2), self.values[read].transpose(1, 2)
        live = self._cache.live
        if live is None or self.window is not None:
            return keys, values
        # A decode row sees exactly its first `len` keys: zeroing the rest
        # (with the mask `t < len`) is attention_live's spelling, which the
        # rewrite fuses with a live length -- the kernel stops at each
        # row's length instead of reading the whole read map.
        t = torch.arange(read.shape[1], device=read.device).reshape(1, 1, -1, 1)
        zero = torch.zeros((), dtype=keys.dtype, device=keys.device)
        return torch.where(t < live, keys, zero), torch.where(t < live, values, zero)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return int(self._cache.read.shape[1]), 0

    def get_seq_length(self) -> int:
        return 0  # positions are per row (position_ids), never the cache's

    def get_max_length(self) -> int:
        return int(self._cache.read.shape[1])


class PagedCache(Cache):
    """Paged K/V pools for one step: `read` and `write` are set per call."""

    def __init__(
        self, pools: list[tuple[torch.Tensor, torch.Tensor]], windows: list[int | None]
    ) -> None:
        self.read: torch.Tensor | None = None
        self.write: torch.Tensor | None = None
        #: Each row's live length `[rows, 1, 1, 1]` in a decode step (None
        #: in a step with prefill chunks: their queries need a causal mask).
        self.live: torch.Tensor | None = None
        super().__init__(
            layers=[_PagedLayer(self, k, v, w) for (k, v), w in zip(pools, windows)]
        )

    def point(self, pools: list[tuple[torch.Tensor, torch.Tensor]], read, write, live) -> None:
        for layer, (k, v) in zip(self.layers, pools):
            layer.keys, layer.values = k, v
        self.read, self.write, self.live = read, write, live


class _PagedStep(torch.nn.Module):
    """`model` over a PagedCache whose pools are this module's buffers."""

    def __init__(self, model: Any, tokens: int, pool_slots: int, device: str) -> None:
        super().__init__()
        self.model = model
        config = _text_config(model)
        attn = getattr(config, "_attn_implementation", None) or "eager"
        if attn not in _MASK_FORMS:
            raise TorchImportError(
                f"the paged step builds its own mask for the attention functions "
                f"{sorted(_MASK_FORMS)}; this model uses {attn!r} (set "
                "config._attn_implementation to one of them)"
            )
        self._mask_form = _MASK_FORMS[attn]
        self._windows = layer_windows(model)
        self._types = getattr(config, "layer_types", None)
        self._tokens = tokens
        self._dtype = next(model.parameters()).dtype
        pools = []
        for i, (k_shape, v_shape) in enumerate(pool_shapes(model, pool_slots)):
            self.register_buffer(f"k{i}", torch.zeros(k_shape, dtype=self._dtype, device=device), persistent=False)
            self.register_buffer(f"v{i}", torch.zeros(v_shape, dtype=self._dtype, device=device), persistent=False)
            pools.append((getattr(self, f"k{i}"), getattr(self, f"v{i}")))
        self.cache = PagedCache(pools, self._windows)

    def _mask(
        self, positions: torch.Tensor, cap: int, window: int | None, live: torch.Tensor | None
    ) -> torch.Tensor:
        """`[rows, 1, T, cap]`: key t is seen by the query at position q iff
        t <= q (and t > q - window). A decode step's global layers: `t <
        len` (the same keys: len = pos + 1), the live length's spelling."""
        t = torch.arange(cap, device=positions.device)
        if live is not None and window is None:
            keep = t.reshape(1, 1, 1, cap) < live
        else:
            q = positions[:, :, None]
            keep = t <= q
            if window is not None:
                keep = keep & (t > q - window)
            keep = keep[:, None]
        if self._mask_form == "bool":
            return keep
        zero = torch.zeros((), dtype=self._dtype, device=positions.device)
        return torch.where(keep, zero, torch.finfo(self._dtype).min)

    def forward(
        self,
        tokens: torch.Tensor,
        pos: torch.Tensor,
        count: torch.Tensor,
        read: torch.Tensor,
        write: torch.Tensor,
    ) -> torch.Tensor:
        rows, width = tokens.shape
        cap = read.shape[1]
        # torch.export swaps the buffers for its own tensors: point the
        # cache's layers at them.
        pools = [(getattr(self, f"k{i}"), getattr(self, f"v{i}")) for i in range(len(self.cache.layers))]
        # The live-length spelling needs the score select sdpa's bool mask
        # gives (`where(mask, s, -inf)`); eager adds its mask instead.
        live = None
        if width == 1 and self._mask_form == "bool":
            live = (pos + count).reshape(rows, 1, 1, 1)
        self.cache.point(pools, read, write, live)
        positions = pos[:, None] + torch.arange(width, device=tokens.device)[None, :]
        masks = {w: self._mask(positions, cap, w, live) for w in set(self._windows)}
        if len(masks) == 1:
            mask: Any = next(iter(masks.values()))
        else:  # mixed layers (Gemma-2): the models that have them take a mapping
            mask = {
                kind: masks[w] for kind, w in zip(self._types, self._windows)
            }

        def last_token(module: Any, args: tuple) -> tuple:
            # Only each row's last real token reaches the head (and the
            # model's final softcap / scaling after it): [rows, 1, hidden].
            hidden = args[0]
            index = (count - 1).reshape(rows, 1, 1).expand(rows, 1, hidden.shape[-1])
            return (torch.gather(hidden, 1, index),) + tuple(args[1:])

        # (The head is looked up here, not kept as an attribute: a second
        # module path to it would rename its weight in the export.)
        hook = self.model.get_output_embeddings().register_forward_pre_hook(last_token)
        try:
            out = self.model(
                input_ids=tokens, attention_mask=mask, position_ids=positions,
                cache=self.cache, use_cache=True,
            )  # fmt: skip
        finally:
            hook.remove()
        return out.logits


def export_paged_step(
    model: Any, rows: int, tokens: int, cap: int, pool_slots: int, device: str = "cpu"
) -> "torch.export.ExportedProgram":
    """The exported paged step of `model` (see the module docstring) for
    `rows` sequences of `tokens` new tokens, a read map of `cap` positions
    and pools of `pool_slots` slots."""
    step = _PagedStep(model, tokens, pool_slots, device).eval()
    args = (
        torch.zeros((rows, tokens), dtype=torch.long, device=device),
        torch.zeros((rows,), dtype=torch.long, device=device),
        torch.ones((rows,), dtype=torch.long, device=device),
        torch.zeros((rows, cap), dtype=torch.long, device=device),
        torch.zeros((rows * tokens,), dtype=torch.long, device=device),
    )
    with torch.no_grad():
        return torch.export.export(step, args, strict=False)
