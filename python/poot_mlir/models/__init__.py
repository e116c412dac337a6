"""Whole models compiled by poot_mlir.

`CausalLM.from_hf(model, target=...)` compiles a Hugging Face causal LM's
steps (prefill chunks and decode) with the KV cache as compiled state;
`generate` returns token ids as transformers' `generate` does
(docs/models.md). torch and transformers load only when `CausalLM` is used
(`models.targets` needs neither).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CausalLM"]


def __getattr__(name: str) -> Any:
    if name == "CausalLM":
        from .causal_lm import CausalLM

        return CausalLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
