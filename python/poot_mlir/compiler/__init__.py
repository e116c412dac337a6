"""poot_mlir.compiler: pass pipelines driven from Python.

    fuse_attention(module, remarks=False)        # the attention rewrite, in place
    compile_cpu(module, out_dir)                 # fuse, plan, lower: step.so + manifest
    compile_gpu(module, devices.SM_90, out_dir)  # fuse, plan, generate: kernels + manifest
    compile_hybrid(module, device, out_dir)      # host step on the CPU, attention on a GPU
    PassTrace(print_ir_after=[...], timing=True) # trace= of each: IR dumps, pass timings
"""

from . import devices
from .cpu import compile_cpu
from .fuse import FuseReport, fuse_attention
from .gpu import compile_gpu
from .hybrid import compile_hybrid
from .trace import IrDump, PassTrace

__all__ = [
    "FuseReport",
    "IrDump",
    "PassTrace",
    "compile_cpu",
    "compile_gpu",
    "compile_hybrid",
    "devices",
    "fuse_attention",
]
