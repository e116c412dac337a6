"""poot_mlir.frontend: the tracer model step functions are written with.

    from poot_mlir.frontend import Tracer, ops

    tr = Tracer("step")
    k_cache = tr.state("k0", (1, 8, 128, 64), "f32")
    v_cache = tr.state("v0", (1, 8, 128, 64), "f32")
    pos = tr.pos(max_pos=127)
    q = tr.input("q", (1, 32, 1, 64), "f32")
    k = tr.input("k", (1, 8, 1, 64), "f32")
    v = tr.input("v", (1, 8, 1, 64), "f32")
    out, k1, v1 = ops.attention_masked(q, k, v, k_cache, v_cache, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    module = tr.finish()

Every op checks its operands in Python (a `TraceError` naming the argument)
before it emits, and every emitted op carries the source location of the
user's line. The frontend knows nothing of passes, targets or runtimes.
"""

from . import ops
from .dtypes import DTYPES, LOWEST_FINITE
from .tensor import Tensor
from .tracer import Tracer

__all__ = ["DTYPES", "LOWEST_FINITE", "Tensor", "Tracer", "ops"]
