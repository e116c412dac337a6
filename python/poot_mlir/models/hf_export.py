"""Export a Hugging Face causal LM's step with its KV cache as buffers.

`export_step(model, batch, tokens, capacity)` wraps the model in
`_StaticCacheStep`: a module holding one transformers `StaticCache` whose
key/value tensors are the wrapper's buffers (`cache_k{i}`, `cache_v{i}`,
`[batch, kv_heads, capacity, head_dim]`), with the forward

    logits = step(input_ids [batch, tokens], pos [])   # the last token's logits

writing the tokens' keys and values at `pos .. pos + tokens - 1` in place
(StaticCache's `index_copy_`) and attending over the whole cache under the
model's own mask (causal, sliding window, softcaps: what its
`create_causal_mask` builds from the positions). `torch.export` records that;
the importer (`frontend.torch_export.import_exported`) functionalizes it and
makes the written buffers the compiled step's state, the position its `pos`.

Sliding-window layers get a full-length cache (as transformers' ExecuTorch
recipe does): the window is the mask's, so the tokens are the same as
transformers' `generate`, at the cost of `capacity` slots per layer.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

__all__ = ["cache_shape", "export_step"]


def _text_config(model: Any) -> Any:
    config = model.config
    return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config


def cache_shape(model: Any, batch: int, capacity: int) -> tuple[int, int, int, int]:
    """`[batch, kv_heads, capacity, head_dim]` of one layer's key cache."""
    config = _text_config(model)
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return batch, kv_heads, capacity, head_dim


class _StaticCacheStep(torch.nn.Module):
    """`model` over a StaticCache whose tensors are this module's buffers."""

    def __init__(self, model: Any, batch: int, capacity: int, device: str = "cpu") -> None:
        from transformers import StaticCache
        from transformers.cache_utils import StaticLayer

        super().__init__()
        self.model = model
        config = _text_config(model)
        self.cache = StaticCache(config=config, max_cache_len=capacity)
        # A sliding-window layer's rolling cache has data-dependent control
        # flow; a full-length one with the model's window mask gives the
        # same attention.
        for i, layer in enumerate(self.cache.layers):
            if not isinstance(layer, StaticLayer) or type(layer) is not StaticLayer:
                self.cache.layers[i] = StaticLayer(max_cache_len=capacity)
        _, kv_heads, _, head_dim = cache_shape(model, batch, capacity)
        dtype = next(model.parameters()).dtype
        self.cache.early_initialization(batch, kv_heads, head_dim, dtype, torch.device(device))
        for i, layer in enumerate(self.cache.layers):
            self.register_buffer(f"cache_k{i}", layer.keys, persistent=False)
            self.register_buffer(f"cache_v{i}", layer.values, persistent=False)
        params = inspect.signature(model.forward).parameters
        self._keep_last = "logits_to_keep" in params

    def forward(self, input_ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        # torch.export swaps the module's buffers for its own tensors: point
        # the cache at them, and start its length at `pos` (a fresh tensor:
        # the cache bumps it in place, which must not write the input).
        for i, layer in enumerate(self.cache.layers):
            layer.keys = getattr(self, f"cache_k{i}")
            layer.values = getattr(self, f"cache_v{i}")
            layer.cumulative_length = pos.clone()
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._keep_last else {}
        logits = self.model(input_ids=input_ids, cache=self.cache, use_cache=True, **kwargs).logits
        return logits[:, -1:, :]


def export_step(
    model: Any, batch: int, tokens: int, capacity: int, device: str = "cpu"
) -> "torch.export.ExportedProgram":
    """The exported step of `model` for `[batch, tokens]` token ids at a
    position (its buffers `cache_k{i}` / `cache_v{i}` are the KV cache).
    `device="meta"` exports a model built on the meta device (no weight
    memory: for compiling steps whose weights are bound elsewhere)."""
    step = _StaticCacheStep(model, batch, capacity, device).eval()
    ids = torch.zeros((batch, tokens), dtype=torch.long, device=device)
    with torch.no_grad():
        return torch.export.export(step, (ids, torch.tensor(0, device=device)), strict=False)
