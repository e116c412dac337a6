"""poot_mlir.compiler: pass pipelines driven from Python.

    fuse_attention(module, remarks=False)   # the attention rewrite, in place
"""

from .fuse import FuseReport, fuse_attention

__all__ = ["FuseReport", "fuse_attention"]
