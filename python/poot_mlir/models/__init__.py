"""Whole models compiled by poot_mlir.

`CausalLM.from_hf(model, target=...)` compiles a Hugging Face causal LM's
steps (prefill chunks and decode) with the KV cache as compiled state;
`generate` returns token ids as transformers' `generate` does
(docs/models.md).
"""

from .causal_lm import CausalLM

__all__ = ["CausalLM"]
