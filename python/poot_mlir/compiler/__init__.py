"""poot_mlir.compiler: pass pipelines driven from Python.

    fuse_attention(module, remarks=False)   # the attention rewrite, in place
"""

from .fuse import FuseReport, fuse_attention
from .cpu import compile_cpu  # noqa: F401  (the CPU target)

__all__ = ["FuseReport", "fuse_attention"]
