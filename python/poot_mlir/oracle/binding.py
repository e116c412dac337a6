"""Bind inputs to a function's arguments, refusing bad ones before anything runs.

The oracle binds through the one binder every runtime uses
(`poot_mlir.runtime.binding`, numpy only), over the same description of the
function an artifact's manifest carries (`Program.signature`): each argument
gets exactly one value of its declared shape and element type, every
declared `#poot.range` holds, and every write map is a checked forward slot
map. A refusal raises a `BindError` subclass and touches nothing; the rules
(typing of numpy and Python values, DLPack host tensors) are that module's.
"""

from __future__ import annotations

import numpy as np

from ..runtime import binding
from ..runtime.binding import Inputs
from .program import Program

__all__ = ["Inputs", "bind"]


def bind(program: Program, inputs: Inputs) -> list[np.ndarray]:
    """Check `inputs` against `program`'s arguments; the argument arrays in
    order. Raises MissingInputError, ShapeBindError, RangeBindError or
    WriteMapError (all BindErrors) for the first argument that is refused."""
    return binding.bind(program.signature, inputs)
