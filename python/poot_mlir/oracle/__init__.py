"""poot_mlir.oracle: the numpy reference interpreter for poot programs.

The reference for every number the project produces. It interprets poot ops
one by one with plain numpy (`semantics`), following each op's documented
math exactly, and never calls compiled code or passes (MLIR is used only to
parse the program).

    res = oracle.run(module, inputs, func=None, reference=False)
    oracle.check_bind(module_or_func, inputs)
    sess = oracle.Session(module, state={...}); sess.step(inputs)
    oracle.semantics.attention(q, k, v, scale=..., ...)
"""

from . import semantics
from .program import Program, UnsupportedOpError, load
from .runner import Result, check_bind, run
from .session import Session

__all__ = [
    "Program",
    "Result",
    "Session",
    "UnsupportedOpError",
    "check_bind",
    "load",
    "run",
    "semantics",
]
