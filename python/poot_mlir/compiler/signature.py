"""A step function's signature as plain data, for artifact manifests.

The runtimes import no MLIR, so everything they need to bind inputs and
publish outputs (names, shapes, dtypes, slot kinds, state names, declared
ranges, each write map's pool size, and for a tensor-parallel rank program
each argument's `shard`, the function's `tensor_parallel` {rank, degree} and
its `all_reduce_sites`) is read here from the function's `poot.*` markers and
body and written into the manifest. A write map whose
pool cannot be derived is refused here (`WriteMapPoolError`), so no artifact
binds one unchecked.
"""

from __future__ import annotations

import re
from typing import Any

from .. import errors
from ..contract import BodyOp, write_map_pool
from ..ir import ArrayAttr, DictAttr, RankedTensorType, StringAttr, Type
from ..runtime.binding import Shard, tensor_parallel_of

_SLOT = re.compile(r'#poot\.slot<(\w+)(?:\s+"([^"]*)")?>')
_RANGE = re.compile(r"#poot\.range<(-?\d+),\s*(-?\d+)>")


def dtype_name(element: Type) -> str:
    """Our dtype names: f64 f32 f16 bf16 i32 i1."""
    return str(element)


def _describe(kind: str, index: int, type_: Type, attrs: DictAttr | None) -> dict[str, Any]:
    if type_.typeid != RankedTensorType.static_typeid:
        # A memref or unranked tensor: no runtime binds one (a typed error,
        # not the binding's ValueError).
        raise errors.CompileError(
            f"the step {'argument' if kind == 'arg' else 'result'} #{index} is a {type_}; "
            "a step's arguments and results are ranked tensors"
        )
    tensor = RankedTensorType(type_)
    entry: dict[str, Any] = {
        "name": f"{kind}{index}",
        "shape": list(tensor.shape),
        "dtype": dtype_name(tensor.element_type),
        "slot": None,
        "state": None,
        "range": None,
    }
    if attrs is None:
        return entry
    if "poot.name" in attrs:
        entry["name"] = StringAttr(attrs["poot.name"]).value
    if "poot.slot" in attrs:
        match = _SLOT.fullmatch(str(attrs["poot.slot"]))
        if match:
            entry["slot"] = match.group(1)
            entry["state"] = match.group(2)
            if entry["slot"] == "state" and "poot.name" not in attrs:
                entry["name"] = match.group(2)
    if "poot.range" in attrs:
        match = _RANGE.fullmatch(str(attrs["poot.range"]))
        if match:
            entry["range"] = [int(match.group(1)), int(match.group(2))]
    if "poot.shard" in attrs:
        entry["shard"] = Shard.parse(str(attrs["poot.shard"])).to_json()
    return entry


def _attr_list(func_op, name: str, count: int) -> list[DictAttr | None]:
    if name not in func_op.attributes:
        return [None] * count
    return [DictAttr(a) for a in ArrayAttr(func_op.attributes[name])]


def _body(func_op) -> list[BodyOp]:
    """The entry block's ops as plain data for the contract rules (values
    are keyed by the `ir.Value`s themselves, which hash by identity)."""
    ops = []
    for op in func_op.regions[0].blocks[0].operations:
        rows = None
        if op.operation.name == "poot.scatter_update":
            rows = int(RankedTensorType(op.operands[0].type).shape[0])
        ops.append(BodyOp(op.operation.name, tuple(op.operands), tuple(op.results), rows))
    return ops


def _write_map_pools(func_op, inputs: list[dict[str, Any]]) -> None:
    """Give each write-map input its pool size S (poot_mlir.contract)."""
    maps = [i for i, entry in enumerate(inputs) if entry["slot"] == "write_map"]
    if not maps:
        return
    block = func_op.regions[0].blocks[0]
    body = _body(func_op)
    for index in maps:
        entry = inputs[index]
        declared = tuple(entry["range"]) if entry["range"] is not None else None
        entry["pool"] = write_map_pool(
            f"{entry['name']!r} (arg{index})", block.arguments[index], declared, body
        )


def function_signature(func_op) -> dict[str, Any]:
    """{"name", "inputs": [...], "outputs": [...]} of a func.func; each
    write-map input also carries `pool`."""
    ftype = func_op.type
    arg_attrs = _attr_list(func_op, "arg_attrs", len(ftype.inputs))
    res_attrs = _attr_list(func_op, "res_attrs", len(ftype.results))
    inputs = [
        _describe("arg", i, t, a) for i, (t, a) in enumerate(zip(ftype.inputs, arg_attrs))
    ]
    _write_map_pools(func_op, inputs)
    signature = {
        "name": StringAttr(func_op.attributes["sym_name"]).value,
        "inputs": inputs,
        "outputs": [
            _describe("result", i, t, a)
            for i, (t, a) in enumerate(zip(ftype.results, res_attrs))
        ],
    }
    _tensor_parallel(func_op, signature)
    return signature


def _tensor_parallel(func_op, signature: dict[str, Any]) -> None:
    """Record a rank program's `{rank, degree}` (`poot.tensor_parallel`) and
    how many `poot.all_reduce` it runs: the runtime installs its collective
    (and requires a communicator of that degree) from these."""
    if "poot.tensor_parallel" in func_op.attributes:
        rank, degree = tensor_parallel_of(str(func_op.attributes["poot.tensor_parallel"]))
        signature["tensor_parallel"] = {"rank": rank, "degree": degree}
    sites = sum(1 for op in _body(func_op) if op.name == "poot.all_reduce")
    if sites:
        signature["all_reduce_sites"] = sites
