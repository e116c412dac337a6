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

The compiled step also returns `next_token [batch]` i32, the argmax of
each row's logits computed in the step (`add_next_token`): a greedy
generate reads back those tokens, not `[batch, vocab]` logits.

Sliding-window layers get a full-length cache (as transformers' ExecuTorch
recipe does): the window is the mask's, so the tokens are the same as
transformers' `generate`, at the cost of `capacity` slots per layer.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

__all__ = ["NEXT_TOKEN", "add_next_token", "cache_shapes", "export_step"]

#: The name of the imported steps' greedy-token output (`add_next_token`):
#: the CausalLM runners and the serving engine ask for it by this name.
NEXT_TOKEN = "next_token"


def _text_config(model: Any) -> Any:
    config = model.config
    return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config


Shape = tuple[int, int, int, int]


def cache_shapes(model: Any, batch: int, capacity: int) -> list[tuple[Shape, Shape]]:
    """Each layer's key and value cache shapes `[batch, heads, capacity,
    head_dim]`, read from what the model itself caches for one token (a
    forward with its default dynamic cache, on the model's device: free on
    the meta device). The model knows its own heads and widths: GQA's KV
    heads, Gemma's head_dim, DeepSeek's absorbed MLA (one head, the latent
    as the key and the RoPE part as the value), per-layer variations."""
    device = next(model.parameters()).device
    ids = torch.zeros((1, 1), dtype=torch.long, device=device)
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
    cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
    if cache is None or not getattr(cache, "layers", None):
        raise TypeError(f"{type(model).__name__} returned no KV cache layers (a causal LM with a KV cache?)")
    shapes = []
    for layer in cache.layers:
        k, v = layer.keys, layer.values
        shapes.append(((batch, k.shape[1], capacity, k.shape[-1]), (batch, v.shape[1], capacity, v.shape[-1])))
    return shapes


class _StaticCacheStep(torch.nn.Module):
    """`model` over a StaticCache whose tensors are this module's buffers."""

    def __init__(
        self, model: Any, batch: int, capacity: int, shapes: list[tuple[Shape, Shape]], device: str
    ) -> None:
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
        dtype = next(model.parameters()).dtype
        for layer, (k_shape, v_shape) in zip(self.cache.layers, shapes):
            # Allocate each layer's full-capacity tensors now (export needs
            # them before the first update): what the cache's own lazy
            # initialization does, given empty states of the right widths.
            empty_k = torch.zeros(k_shape[:2] + (0, k_shape[3]), dtype=dtype, device=device)
            empty_v = torch.zeros(v_shape[:2] + (0, v_shape[3]), dtype=dtype, device=device)
            layer.lazy_initialization(empty_k, empty_v)
        for i, layer in enumerate(self.cache.layers):
            self.register_buffer(f"cache_k{i}", layer.keys, persistent=False)
            self.register_buffer(f"cache_v{i}", layer.values, persistent=False)
        params = inspect.signature(model.forward).parameters
        self._keep_last = "logits_to_keep" in params

    def forward(
        self,
        input_ids: torch.Tensor,
        pos: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        # torch.export swaps the module's buffers for its own tensors: point
        # the cache at them, and start its length at `pos` (a fresh tensor:
        # the cache bumps it in place, which must not write the input).
        for i, layer in enumerate(self.cache.layers):
            layer.keys = getattr(self, f"cache_k{i}")
            layer.values = getattr(self, f"cache_v{i}")
            layer.cumulative_length = pos.clone()
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._keep_last else {}
        if attention_mask is not None:  # padded rows: the model's own masking and positions
            kwargs.update(attention_mask=attention_mask, position_ids=position_ids)
        logits = self.model(input_ids=input_ids, cache=self.cache, use_cache=True, **kwargs).logits
        return logits[:, -1:, :]


def export_step(
    model: Any, batch: int, tokens: int, capacity: int, device: str = "cpu", padded: bool = False
) -> "torch.export.ExportedProgram":
    """The exported step of `model` for `[batch, tokens]` token ids at a
    position (its buffers `cache_k{i}` / `cache_v{i}` are the KV cache).
    `padded`: the step also takes `attention_mask [batch, capacity]` (0 for
    a padding slot) and `position_ids [batch, tokens]` (each row's own
    positions), as transformers' generate passes them for left-padded
    prompts. `device="meta"` exports a model built on the meta device (no
    weight memory: for compiling steps whose weights are bound elsewhere)."""
    shapes = cache_shapes(model, batch, capacity)
    step = _StaticCacheStep(model, batch, capacity, shapes, device).eval()
    args: tuple = (
        torch.zeros((batch, tokens), dtype=torch.long, device=device),
        torch.tensor(0, device=device),
    )
    if padded:
        args += (
            torch.ones((batch, capacity), dtype=torch.long, device=device),
            torch.zeros((batch, tokens), dtype=torch.long, device=device),
        )
    with torch.no_grad():
        return torch.export.export(step, args, strict=False)


def add_next_token(tracer: Any, logits: str = "logits") -> None:
    """Give an imported step (an open Tracer whose output `logits` is
    `[rows, 1, vocab]`: each row's last token's, as `export_step` and
    `models.paged` keep them) the output `next_token [rows]` i32: each row's
    argmax (`frontend.ops.argmax`: the first maximum, as torch's, so the
    tokens are transformers' greedy ones), computed in the step on its
    device."""
    from ..errors import TraceError
    from ..frontend import ops

    out = tracer.result(logits)
    if out.rank != 3 or out.shape[1] != 1:
        raise TraceError(
            f"add_next_token: the step's {logits!r} is {list(out.shape)}; it must be "
            "[rows, 1, vocab] (each row's last token's logits)"
        )
    rows, _, vocab = out.shape
    tracer.output(NEXT_TOKEN, ops.argmax(ops.reshape(out, (rows, vocab))))
