"""Facts of the driver contract that are derived from a step's body.

One rule, used by the compiler (for every artifact manifest) and by the
oracle (for its own binder), each feeding it the function's ops as plain
data: neither re-derives it.

A write map is a forward slot map: each word is -1 or a pool slot in
`[0, S)`. Its S is the smallest of

- its declared `#poot.range` max + 1, and
- the first dimension of every pool a `poot.scatter_update` writes with
  indices that carry write-map words: the write map itself, or a value made
  from it by ops whose result words are some of their operands' words
  (reshape, broadcast, transpose, slice, concat, the gathered operand of a
  gather, either operand of a dynamic_update_slice, the chosen operands of a
  select).

Taking the smallest matters: a word a scatter does not reach is silently
dropped by it, so a binder that checks against a looser bound lets a bad
word through. When neither source exists (no range, and no scatter the
words reach through such ops), the words cannot be checked against any
pool, and the step is refused (`WriteMapPoolError`) before anything is bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

from .errors import WriteMapPoolError

# op name -> the operand positions whose words the result carries (None: all).
_WORD_CARRIERS: dict[str, tuple[int, ...] | None] = {
    "poot.reshape": (0,),
    "poot.broadcast": (0,),
    "poot.transpose": (0,),
    "poot.slice": (0,),
    "poot.concat": None,
    "poot.gather": (0,),
    "poot.dynamic_update_slice": (0, 1),
    "poot.select": (1, 2),
}


@dataclass(frozen=True)
class BodyOp:
    """One op of the step's body: its name, operand and result value keys,
    and for a `poot.scatter_update` the first dimension of its pool."""

    name: str
    operands: tuple[Hashable, ...]
    results: tuple[Hashable, ...]
    pool_rows: int | None = None


def write_map_pool(
    what: str, arg: Hashable, declared: tuple[int, int] | None, body: Sequence[BodyOp]
) -> int:
    """S for the write-map argument `arg` (a value key of `body`); `what`
    names it in the error."""
    carriers = {arg}
    bounds: list[int] = [] if declared is None else [declared[1] + 1]
    for op in body:
        if op.name == "poot.scatter_update":
            if len(op.operands) > 1 and op.operands[1] in carriers and op.pool_rows is not None:
                bounds.append(op.pool_rows)
            continue
        positions = _WORD_CARRIERS.get(op.name, ())
        chosen: Iterable[Hashable] = (
            op.operands
            if positions is None
            else (op.operands[i] for i in positions if i < len(op.operands))
        )
        if any(v in carriers for v in chosen):
            carriers.update(op.results)
    if not bounds:
        raise WriteMapPoolError(
            f"write map {what} has no pool to be checked against: it declares no "
            "#poot.range and no poot.scatter_update uses its words as indices "
            "(directly or through reshape/slice/transpose/broadcast/concat/gather/"
            "select/dynamic_update_slice); declare its range, e.g. "
            "tr.write_map(name, tokens, pool_slots)"
        )
    return min(bounds)
