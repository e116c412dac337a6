"""Choosing the next token from a step's logits, as transformers' `generate` does.

Greedy (`do_sample=False`): the argmax (the first of equal maxima, as
torch's). Sampling: the logits divided by `temperature`, then `top_k`
keeps the k largest, then `top_p` keeps the smallest set of the most
likely tokens whose probability reaches p (always at least one), then one
draw from the softmax of what is left -- transformers' processor order.
Draws come from a numpy Generator seeded once per `generate`, so a seed
reproduces the tokens exactly (not torch's random stream: the same seed
does not give transformers' tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Sampling"]


@dataclass(frozen=True)
class Sampling:
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise ValueError(f"top_k must be a positive int or None, got {self.top_k!r}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1] or None, got {self.top_p!r}")

    def next_tokens(self, logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One token per row of `logits` `[rows, vocab]` (int64)."""
        logits = np.asarray(logits, dtype=np.float64)
        if not self.do_sample:
            return np.argmax(logits, axis=-1).astype(np.int64)
        scores = logits / self.temperature
        if self.top_k is not None and self.top_k < scores.shape[-1]:
            kth = np.sort(scores, axis=-1)[:, -self.top_k][:, None]
            scores = np.where(scores < kth, -np.inf, scores)
        if self.top_p is not None and self.top_p < 1:
            scores = _top_p(scores, self.top_p)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        return np.array([rng.choice(probs.shape[-1], p=row) for row in probs], dtype=np.int64)


def _top_p(scores: np.ndarray, p: float) -> np.ndarray:
    """Hide the tokens outside the nucleus: sorted by probability, the
    smallest prefix whose mass reaches `p` stays."""
    order = np.argsort(-scores, axis=-1, kind="stable")
    ranked = np.take_along_axis(scores, order, axis=-1)
    probs = np.exp(ranked - ranked[:, :1])
    probs /= probs.sum(axis=-1, keepdims=True)
    before = np.cumsum(probs, axis=-1) - probs  # mass of the tokens ranked above
    keep_ranked = before < p  # the first token always stays
    keep = np.zeros_like(keep_ranked)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return np.where(keep, scores, -np.inf)
