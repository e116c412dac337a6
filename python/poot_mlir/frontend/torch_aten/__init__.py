"""The ATen op table of `torch_export`: one emitter per ATen op packet.

Each emitter receives the node's arguments bound to the op's schema names
(`a["self"]`, `a["dim"]`, ...; FX nodes already replaced by the traced
Tensors), and the node's result metadata (`out.shape`, `out.dtype`: what
torch.export says the result is), and emits the poot primitive chain of the
op through `primitives` / `composites`. A check (`refuse`) runs on every node
before anything is emitted, so an argument the table cannot honour
(`dropout_p > 0`, `gelu` without the tanh approximation) is refused before
the importer builds anything.

Dtype promotion is torch's: the result dtype comes from the node's metadata,
and every tensor operand is converted to it first (an f32 mask added to bf16
scores gives f32 scores, as in torch).

The table is split by op family, one module each: `elementwise`, `shapes`,
`reductions`, `linalg` (contractions and attention); `_table` holds the
registry they fill and the helpers they share; `values` the importer's
non-Tensor values (zero-sized and complex intermediates) and the dispatch
around every emitter that handles them. Importing the package
registers every family.
"""

from __future__ import annotations

from . import elementwise, linalg, reductions, shapes, writes  # noqa: F401  (they register)
from . import values  # noqa: F401,E402  (last: wraps every emitter for complex values)
from ._table import EMITTERS, IGNORED, REFUSALS, Context, Meta, aten
from .values import COMPLEX, DROPS_EMPTY, Complex, Empty

__all__ = ["COMPLEX", "DROPS_EMPTY", "EMITTERS", "IGNORED", "REFUSALS", "Complex", "Context",
           "Empty", "Meta", "aten"]
