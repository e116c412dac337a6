"""poot_mlir.oracle: the numpy reference interpreter for poot programs.

The reference for every number the project produces. It interprets poot ops
one by one with plain numpy (`semantics`), following each op's documented
math exactly, and never calls compiled code or passes (MLIR is used only to
parse the program).

    res = oracle.run(module, inputs, func=None, reference=False)
    oracle.check_bind(module_or_func, inputs)
    sess = oracle.Session(module, state={...}); sess.step(inputs)
    oracle.run(rank_program, inputs, all_reduce=oracle.Lockstep(n).member(rank))
    oracle.semantics.attention(q, k, v, scale=..., ...)
"""

import importlib
from typing import Any

from . import semantics

# The interpreter parses MLIR; `semantics` is plain numpy. Importing the
# parts that need MLIR lazily lets a machine without the compiler (a GPU
# server) use `oracle.semantics` as its reference.
_LAZY = {
    "Program": ".program",
    "UnsupportedOpError": ".program",
    "load": ".program",
    "Result": ".runner",
    "check_bind": ".runner",
    "run": ".runner",
    "Session": ".session",
    "Lockstep": ".lockstep",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Program",
    "Lockstep",
    "Result",
    "Session",
    "UnsupportedOpError",
    "check_bind",
    "load",
    "run",
    "semantics",
]
