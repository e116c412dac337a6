"""Execute a `Program` op by op with the numpy semantics.

Each op's handler unpacks the instruction's operands and attributes and calls
the matching function in `semantics`. Every result is then checked against
the op's declared result type, so a semantics bug (a wrong shape, a silently
promoted dtype) fails loudly here instead of skewing a comparison downstream.

In reference mode every float value is held in float64 instead of its
declared type: inputs and constants are widened exactly, and `poot.convert`
between float types does not round. Integer and i1 values are unchanged.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import dtypes, semantics
from .program import Instruction, Program, TensorSpec

Values = Sequence[np.ndarray]
Handler = Callable[[Instruction, Values, bool], Sequence[np.ndarray]]
#: A rank's side of `poot.all_reduce`: takes this rank's operand (as the
#: oracle holds it) and returns the sum over every rank, same shape and dtype
#: (`semantics.all_reduce` of all ranks' operands; `oracle.Lockstep` makes one
#: for rank programs run in threads).
Collective = Callable[[np.ndarray], np.ndarray]


class OracleInternalError(AssertionError):
    """A semantics function produced a value its op's type does not allow."""


def _held(spec: TensorSpec, reference: bool) -> np.dtype:
    """The dtype a value of this type is held in."""
    return dtypes.compute_dtype(spec.dtype, reference)


def _constant(inst: Instruction, args: Values, reference: bool) -> list[np.ndarray]:
    value = inst.attrs["value"]
    return [value.astype(_held(inst.result_specs[0], reference))]


def _iota(inst: Instruction, args: Values, reference: bool) -> list[np.ndarray]:
    spec = inst.result_specs[0]
    return [semantics.iota(spec.shape, inst.attrs["dim"], _held(spec, reference))]


def _convert(inst: Instruction, args: Values, reference: bool) -> list[np.ndarray]:
    return [semantics.convert(args[0], _held(inst.result_specs[0], reference))]


def _shape_op(fn: Callable[[np.ndarray, tuple[int, ...]], np.ndarray]) -> Handler:
    def handler(inst: Instruction, args: Values, reference: bool) -> list[np.ndarray]:
        return [fn(args[0], inst.result_specs[0].shape)]

    return handler


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Handler:
    return lambda inst, args, reference: [fn(args[0])]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Handler:
    return lambda inst, args, reference: [fn(args[0], args[1])]


def _attention(inst: Instruction, args: Values, reference: bool) -> list[np.ndarray]:
    sizes = inst.attrs["operandSegmentSizes"]
    names = ("query", "key", "value", "mask", "key_shared", "read", "length")
    groups: dict[str, np.ndarray | None] = {}
    at = 0
    for name, size in zip(names, sizes):
        groups[name] = args[at] if size else None
        at += size
    out = semantics.attention(
        groups["query"],
        groups["key"],
        groups["value"],
        scale=inst.attrs["scale"],
        softcap=inst.attrs.get("softcap"),
        mask=groups["mask"],
        key_shared=groups["key_shared"],
        read=groups["read"],
        length=groups["length"],
        causal="causal" in inst.attrs,
        window=inst.attrs.get("window"),
    )
    return [out]


HANDLERS: dict[str, Handler] = {
    "poot.constant": _constant,
    "poot.iota": _iota,
    "poot.convert": _convert,
    "poot.dynamic_update_slice": lambda inst, a, r: [
        semantics.dynamic_update_slice(a[0], a[1], a[2], axis=inst.attrs["axis"])
    ],
    "poot.reshape": _shape_op(semantics.reshape),
    "poot.broadcast": _shape_op(semantics.broadcast),
    "poot.transpose": lambda inst, a, r: [semantics.transpose(a[0], inst.attrs["permutation"])],
    "poot.slice": lambda inst, a, r: [
        semantics.slice_(a[0], inst.attrs["start"], inst.attrs["limit"], inst.attrs["strides"])
    ],
    "poot.concat": lambda inst, a, r: [semantics.concat(a, axis=inst.attrs["axis"])],
    "poot.gather": lambda inst, a, r: [semantics.gather(a[0], a[1], axis=inst.attrs["axis"])],
    "poot.scatter_update": lambda inst, a, r: [semantics.scatter_update(a[0], a[1], a[2])],
    "poot.matmul": _binary(semantics.matmul),
    "poot.reduce": lambda inst, a, r: [
        semantics.reduce(
            a[0], inst.attrs["kind"], axis=inst.attrs["axis"], keepdim="keepdim" in inst.attrs
        )
    ],
    "poot.top_k": lambda inst, a, r: list(semantics.top_k(a[0], inst.attrs["k"])),
    "poot.add": _binary(semantics.add),
    "poot.sub": _binary(semantics.sub),
    "poot.mul": _binary(semantics.mul),
    "poot.div": _binary(semantics.div),
    "poot.max": _binary(semantics.max_),
    "poot.min": _binary(semantics.min_),
    "poot.and": _binary(semantics.and_),
    "poot.or": _binary(semantics.or_),
    "poot.exp": _unary(semantics.exp),
    "poot.log": _unary(semantics.log),
    "poot.tanh": _unary(semantics.tanh),
    "poot.logistic": _unary(semantics.logistic),
    "poot.sqrt": _unary(semantics.sqrt),
    "poot.rsqrt": _unary(semantics.rsqrt),
    "poot.sin": _unary(semantics.sin),
    "poot.cos": _unary(semantics.cos),
    "poot.neg": _unary(semantics.neg),
    "poot.abs": _unary(semantics.abs_),
    "poot.compare": lambda inst, a, r: [semantics.compare(inst.attrs["direction"], a[0], a[1])],
    "poot.select": lambda inst, a, r: [semantics.select(a[0], a[1], a[2])],
    "poot.index_guard": lambda inst, a, r: list(
        semantics.index_guard(a[0], inst.attrs["min"], inst.attrs["max"])
    ),
    "poot.rope": lambda inst, a, r: [semantics.rope(a[0], a[1], a[2])],
    # A world of one rank; `execute` answers it with its collective when given one.
    "poot.all_reduce": lambda inst, a, r: [semantics.all_reduce([a[0]])],
    "poot.attention": _attention,
    "poot.block_topk": lambda inst, a, r: [
        semantics.block_topk(a[0], a[1], k=inst.attrs["k"], block_size=inst.attrs["block_size"])
    ],
    "poot.selected_attention": lambda inst, a, r: [
        semantics.selected_attention(
            a[0],
            a[1],
            a[2],
            a[3],
            a[4],
            block_size=inst.attrs["block_size"],
            scale=inst.attrs["scale"],
            softcap=inst.attrs.get("softcap"),
        )
    ],
}


def _conform(inst: Instruction, values: Sequence[np.ndarray], reference: bool) -> list[np.ndarray]:
    """Check each result against its declared type; hand back plain arrays."""
    if len(values) != len(inst.result_specs):
        raise OracleInternalError(
            f"{inst.name} produced {len(values)} results, declared {len(inst.result_specs)}"
        )
    out = []
    for value, spec in zip(values, inst.result_specs):
        array = np.asarray(value)
        want = _held(spec, reference)
        if array.shape != spec.shape or array.dtype != want:
            raise OracleInternalError(
                f"{inst.name} at {inst.location} produced {array.dtype}{list(array.shape)}, "
                f"its type is {spec} (held as {want})"
            )
        out.append(array)
    return out


def execute(
    program: Program,
    arguments: Sequence[np.ndarray],
    reference: bool,
    all_reduce: Collective | None = None,
) -> list[np.ndarray]:
    """Run `program` on bound argument arrays; its results in order.

    `arguments` must already have passed `binding.bind` (declared shapes and
    dtypes). They are never modified. `all_reduce` answers each
    `poot.all_reduce` in program order (a rank program run beside its peers);
    without it the op is the identity (a world of one).
    """
    env: dict[int, np.ndarray] = {}
    for port, array in zip(program.args, arguments):
        env[port.index] = array.astype(_held(port.spec, reference))
    # inf, NaN and integer wrap-around are defined results here, not warnings.
    with np.errstate(all="ignore"):
        for inst in program.instructions:
            handler = HANDLERS.get(inst.name)
            if handler is None:
                raise NotImplementedError(f"the oracle has no semantics for {inst.name}")
            operands = [env[i] for i in inst.operands]
            if inst.name == "poot.all_reduce" and all_reduce is not None:
                raw: Sequence[np.ndarray] = [all_reduce(operands[0])]
            else:
                raw = handler(inst, operands, reference)
            values = _conform(inst, raw, reference)
            env.update(zip(inst.results, values))
    return [np.array(env[i], copy=True) for i in program.returns]
