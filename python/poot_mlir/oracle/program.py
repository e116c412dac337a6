"""Read a `func.func` of poot ops into plain Python data.

The interpreter never touches MLIR objects while it computes: this module
walks the function once, turns every attribute into a Python value (ints,
floats, tuples, numpy arrays for constants, strings for enum cases) and every
SSA value into an integer id. A `Program` therefore outlives the MLIR context
it came from, which lets a `Session` keep stepping without holding one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from .. import errors, ir
from ..contract import BodyOp, write_map_pool
from ..runtime.binding import Shard, tensor_parallel_of
from . import constants, dtypes

_ENUM = re.compile(r"^#poot<\s*(\w+)\s+(\w+)\s*>$")
_SLOT = re.compile(r'^#poot\.slot<\s*(\w+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*>$')
_RANGE = re.compile(r"^#poot\.range<\s*(-?\d+)\s*,\s*(-?\d+)\s*>$")

SLOT_KINDS = ("state", "pos", "slot_map", "write_map", "validation")


class UnsupportedOpError(NotImplementedError):
    """The function holds an op the oracle has no semantics for."""


@dataclass(frozen=True)
class TensorSpec:
    """A static tensor type: its shape and element type ("f32", "i1", ...)."""

    shape: tuple[int, ...]
    element: str

    @property
    def dtype(self) -> np.dtype:
        return dtypes.dtype_of_element(self.element)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.element}>"


@dataclass(frozen=True)
class Port:
    """A function argument or result with its driver markers.

    `key` is how inputs are bound and results are named in dicts: the
    `poot.name` marker when there is one, else `arg{i}` / `result{i}`.
    """

    role: str  # "arg" or "result"
    index: int
    key: str
    name: str | None
    spec: TensorSpec
    slot: str | None = None
    state: str | None = None
    range: tuple[int, int] | None = None
    shard: "Shard | None" = None

    def describe(self) -> str:
        """How error messages name this port: `'pos' (arg2)`, `arg2`, or
        `arg0 (state 'k0')`."""
        position = f"{self.role}{self.index}"
        if self.state is not None:
            position = f"{position} (state {self.state!r})"
        return position if self.name is None else f"{self.name!r} ({position})"


@dataclass(frozen=True)
class Instruction:
    """One op: its name, operand and result value ids, and attributes."""

    name: str
    operands: tuple[int, ...]
    results: tuple[int, ...]
    result_specs: tuple[TensorSpec, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    location: str = ""


@dataclass(frozen=True)
class Program:
    """A function ready to interpret.

    Value ids `0 .. len(args) - 1` are the arguments; `returns` lists the
    value id behind each function result. `write_map_pools` gives, for each
    write-map argument, the pool size S its words must stay below
    (poot_mlir.contract; loading a function whose write map has none raises
    WriteMapPoolError).
    """

    name: str
    args: tuple[Port, ...]
    results: tuple[Port, ...]
    instructions: tuple[Instruction, ...]
    returns: tuple[int, ...]
    write_map_pools: dict[int, int]
    #: (rank, degree) of a tensor-parallel rank program, else None.
    tensor_parallel: tuple[int, int] | None = None

    @property
    def state_names(self) -> tuple[str, ...]:
        """State slot names of the arguments, in argument order."""
        return tuple(a.state for a in self.args if a.state is not None)

    @property
    def signature(self):
        """The function as the shared binder (runtime.binding) reads it: the
        same description an artifact's manifest gives the runtimes."""
        from ..runtime import binding

        def port(p: Port) -> "binding.Port":
            return binding.Port(
                role=p.role, index=p.index, key=p.key, name=p.name,
                shape=tuple(p.spec.shape), element=p.spec.element, slot=p.slot,
                state=p.state, range=p.range,
                pool=self.write_map_pools.get(p.index) if p.role == "arg" else None,
                shard=p.shard,
            )

        return binding.Signature(
            name=self.name,
            args=tuple(port(p) for p in self.args),
            results=tuple(port(p) for p in self.results),
            tensor_parallel=self.tensor_parallel,
        )


# --- attribute conversion ------------------------------------------------------


def tensor_spec(type_: Any) -> TensorSpec:
    """A `TensorSpec` from an MLIR ranked tensor type with a static shape."""
    tensor = ir.RankedTensorType(type_)
    if not tensor.has_static_shape:
        raise UnsupportedOpError(f"dynamic shapes are not supported: {type_}")
    return TensorSpec(tuple(int(d) for d in tensor.shape), str(tensor.element_type))


def _attr_value(attr: Any, result_spec: TensorSpec | None) -> Any:
    """A Python value for one op attribute."""
    if isinstance(attr, ir.UnitAttr):
        return True
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.StringAttr):
        return str(attr.value)
    if isinstance(attr, (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr)):
        return tuple(int(v) for v in attr)
    if isinstance(attr, ir.DenseElementsAttr):
        spec = result_spec or tensor_spec(attr.type)
        return constants.dense_to_numpy(attr, spec.shape, spec.dtype)
    text = str(attr)
    enum = _ENUM.match(text)
    if enum is not None:
        return enum.group(2)
    return text


def _marker_dict(array_attr: Any, index: int) -> dict[str, str]:
    """The printed markers of argument/result `index` (empty when absent)."""
    if array_attr is None:
        return {}
    entry = ir.DictAttr(array_attr[index])
    return {entry[i].name: str(entry[i].attr) for i in range(len(entry))}


def _port(role: str, index: int, spec: TensorSpec, markers: dict[str, str]) -> Port:
    """Build a Port from the printed `poot.*` markers."""
    name = None
    if "poot.name" in markers:
        name = str(ir.StringAttr(ir.Attribute.parse(markers["poot.name"])).value)
    slot = state = None
    if "poot.slot" in markers:
        match = _SLOT.match(markers["poot.slot"])
        if match is None or match.group(1) not in SLOT_KINDS:
            raise ValueError(f"cannot read slot marker {markers['poot.slot']!r}")
        slot, state = match.group(1), match.group(2)
    bounds = None
    if "poot.range" in markers:
        match = _RANGE.match(markers["poot.range"])
        if match is None:
            raise ValueError(f"cannot read range marker {markers['poot.range']!r}")
        bounds = (int(match.group(1)), int(match.group(2)))
    shard = Shard.parse(markers["poot.shard"]) if "poot.shard" in markers else None
    key = name if name is not None else f"{role}{index}"
    return Port(role, index, key, name, spec, slot, state, bounds, shard)


# --- module / function selection -----------------------------------------------


def _functions(module: Any) -> list[Any]:
    return [op for op in module.body.operations if op.operation.name == "func.func"]


def _sym_name(func: Any) -> str:
    return str(ir.StringAttr(func.attributes["sym_name"]).value)


def _is_public(func: Any) -> bool:
    attrs = func.attributes
    if "sym_visibility" not in attrs:
        return True
    return str(ir.StringAttr(attrs["sym_visibility"]).value) == "public"


def select_function(module: Any, func: str | None) -> Any:
    """The `func.func` named `func`, else the only / first public one."""
    funcs = _functions(module)
    if func is not None:
        for candidate in funcs:
            if _sym_name(candidate) == func:
                return candidate
        names = ", ".join(_sym_name(f) for f in funcs)
        raise KeyError(f"no func.func @{func} in the module (has: {names})")
    public = [f for f in funcs if _is_public(f)]
    if not public:
        raise KeyError("the module has no public func.func")
    return public[0]


# --- the walk ------------------------------------------------------------------


def _pool_sizes(
    args: Iterable[Port], instructions: tuple[Instruction, ...], specs: dict[int, TensorSpec]
) -> dict[int, int]:
    """S for every write-map argument (the rule of poot_mlir.contract; a
    write map with no derivable pool is refused there)."""
    body = [
        BodyOp(
            inst.name,
            inst.operands,
            inst.results,
            specs[inst.operands[0]].shape[0] if inst.name == "poot.scatter_update" else None,
        )
        for inst in instructions
    ]
    return {
        port.index: write_map_pool(port.describe(), port.index, port.range, body)
        for port in args
        if port.slot == "write_map"
    }


def read_function(func: Any) -> Program:
    """Turn a `func.func` (in an active MLIR context) into a `Program`."""
    attrs = func.attributes
    ftype = ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value)
    arg_attrs = attrs["arg_attrs"] if "arg_attrs" in attrs else None
    res_attrs = attrs["res_attrs"] if "res_attrs" in attrs else None
    args = tuple(
        _port("arg", i, tensor_spec(t), _marker_dict(arg_attrs, i))
        for i, t in enumerate(ftype.inputs)
    )
    results = tuple(
        _port("result", i, tensor_spec(t), _marker_dict(res_attrs, i))
        for i, t in enumerate(ftype.results)
    )
    block = func.regions[0].blocks[0]
    ids: dict[Any, int] = {}
    specs: dict[int, TensorSpec] = {}
    for i, value in enumerate(block.arguments):
        ids[value] = i
        specs[i] = args[i].spec
    instructions: list[Instruction] = []
    returns: tuple[int, ...] | None = None
    for op in block.operations:
        name = op.operation.name
        operands = tuple(ids[v] for v in op.operands)
        if name == "func.return":
            returns = operands
            continue
        if not name.startswith("poot."):
            raise UnsupportedOpError(f"the oracle interprets poot ops only, got {name}")
        result_ids = []
        result_specs = []
        for value in op.results:
            ids[value] = len(ids)
            result_ids.append(ids[value])
            spec = tensor_spec(value.type)
            specs[ids[value]] = spec
            result_specs.append(spec)
        named = op.operation.attributes
        first = result_specs[0] if result_specs else None
        op_attrs = {named[i].name: _attr_value(named[i].attr, first) for i in range(len(named))}
        instructions.append(
            Instruction(
                name,
                operands,
                tuple(result_ids),
                tuple(result_specs),
                op_attrs,
                str(op.location),
            )
        )
    if returns is None:
        raise ValueError(f"@{_sym_name(func)} has no func.return")
    frozen = tuple(instructions)
    parallel = None
    if "poot.tensor_parallel" in attrs:
        parallel = tensor_parallel_of(str(attrs["poot.tensor_parallel"]))
    return Program(
        _sym_name(func), args, results, frozen, returns, _pool_sizes(args, frozen, specs),
        parallel,
    )


def load(module_or_func: Any, func: str | None = None) -> Program:
    """A `Program` from MLIR text, a `Module`, or a `func.func` op.

    Text is parsed in a fresh context (registering the poot dialect), so the
    caller needs none.
    """
    if isinstance(module_or_func, Program):
        return module_or_func
    if isinstance(module_or_func, str):
        with ir.Context():
            try:
                module = ir.Module.parse(module_or_func)
            except ir.MLIRError as error:
                raise errors.parse_error(error, "the module text") from None
            return read_function(select_function(module, func))
    operation = getattr(module_or_func, "operation", None)
    context = module_or_func.context
    with context:
        if operation is not None and operation.name == "func.func":
            return read_function(module_or_func)
        if operation is not None and operation.name != "builtin.module":
            raise TypeError(f"expected a module or a func.func, got {operation.name}")
        if not module_or_func.operation.verify():
            raise ValueError("the module does not verify")
        return read_function(select_function(module_or_func, func))
