"""poot_mlir.compiler: pass pipelines driven from Python.

    fuse_attention(module, remarks=False)        # the attention rewrite, in place
    compile_cpu(module, out_dir)                 # fuse, plan, lower: step.so + manifest
    compile_gpu(module, devices.SM_90, out_dir)  # the whole step as kernels + its program
    PassTrace(print_ir_after=[...], timing=True) # trace= of each: IR dumps, pass timings
"""

from . import devices
from .cpu import compile_cpu
from .fuse import FuseReport, fuse_attention
from .gpu import compile_gpu
from .trace import IrDump, PassTrace

__all__ = [
    "FuseReport",
    "IrDump",
    "PassTrace",
    "compile_cpu",
    "compile_gpu",
    "devices",
    "fuse_attention",
]
