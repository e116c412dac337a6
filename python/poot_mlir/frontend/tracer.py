"""`Tracer`: records one step function as a poot `func.func`.

A model's step function is written against a Tracer: it declares the
function's arguments (state buffers, the decode position, plain inputs, slot
maps), calls `ops.*` on the resulting Tensors, and names the results. The
tracer owns its own `ir.Context`; nothing MLIR-specific reaches user code
unless asked for (`finish()` returns the `ir.Module`, `mlir()` its text).

The driver contract lives in argument/result attributes (see PootBase.td):

    argument                 attributes
    tr.state("k0", ...)      poot.name "k0", poot.slot<state "k0">
    tr.pos(max_pos=P)        poot.name "pos", poot.slot<pos>, poot.range<0, P>
    tr.pos(P, rows=B)        the same on a tensor<Bxi32>: one position per row
    tr.input("x", ...)       poot.name "x" [, poot.slot<slot_map|write_map>]
                             [, poot.range<lo, hi>]
    result
    tr.output("y", t)        poot.name "y"
    tr.state_out("k0", t)    poot.name "k0", poot.slot<state "k0">
    tr.validation("ok", w)   poot.name "ok", poot.slot<validation>

Arguments and results appear in the order they were declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from .. import ir
from ..dialects import func, poot
from ..errors import TraceError
from . import checks
from .dtypes import check_dtype, tensor_type
from .location import user_location
from .tensor import Tensor

T = TypeVar("T")

_ARG_SLOTS = ("slot_map", "write_map")


@dataclass
class _Arg:
    name: str
    tensor: Tensor
    slot: str | None = None  # "state" | "pos" | "slot_map" | "write_map"
    range: tuple[int, int] | None = None


@dataclass
class _Result:
    name: str
    tensor: Tensor
    slot: str | None = None  # "state" | "validation"


@dataclass
class _Counters:
    """Per-tracer counters for names the frontend makes up itself."""

    live_guards: int = 0


_ACTIVE: list["Tracer"] = []

_I32 = (-(2**31), 2**31 - 1)


def _check_i32_range(what: str, lo: int, hi: int) -> None:
    """A declared range bounds i32 elements, so it must lie in i32 (the
    dialect refuses one that does not)."""
    if lo < _I32[0] or hi > _I32[1]:
        raise TraceError(f"{what}: range ({lo}, {hi}) does not fit i32 [{_I32[0]}, {_I32[1]}]")


class Tracer:
    """Builds one `func.func @name` in a fresh context.

    Creating a Tracer makes it the current one (`Tracer.current()`), which is
    what tensor-less ops such as `ops.iota` and `ops.constant` emit into;
    `finish()` retires it. `with Tracer("step") as tr:` works as well.
    """

    def __init__(self, name: str = "step") -> None:
        if not isinstance(name, str) or not name:
            raise TraceError(f"Tracer: name must be a non-empty string, got {name!r}")
        self.name = name
        self.context = ir.Context()
        self._args: list[_Arg] = []
        self._results: list[_Result] = []
        self._module: ir.Module | None = None
        self.counters = _Counters()
        with self.context, user_location(self.context):
            self._open_module = ir.Module.create()
            with ir.InsertionPoint(self._open_module.body):
                self._func = func.FuncOp(name, ir.FunctionType.get([], []))
            self._block = self._func.body.blocks.append()
        _ACTIVE.append(self)

    # --- the current tracer -------------------------------------------------

    @staticmethod
    def current() -> "Tracer":
        """The most recently created tracer that is not finished."""
        if not _ACTIVE:
            raise TraceError("no active Tracer: create one with Tracer(name) or pass tracer=")
        return _ACTIVE[-1]

    def __enter__(self) -> "Tracer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and self._module is None:
            self.finish()
        elif self in _ACTIVE:
            _ACTIVE.remove(self)

    @property
    def finished(self) -> bool:
        return self._module is not None

    # --- emission (used by ops) ---------------------------------------------

    def emit(self, build: Callable[[], T]) -> T:
        """Run `build` with this tracer's context, the user's source location
        and the insertion point at the end of the function body."""
        self._check_open("emit an op")
        with self.context, user_location(self.context), ir.InsertionPoint(self._block):
            return build()

    def _check_open(self, what: str) -> None:
        if self._module is not None:
            raise TraceError(f"Tracer {self.name!r} is finished; cannot {what}")

    # --- arguments ----------------------------------------------------------

    def _check_arg_name(self, name: str, what: str) -> None:
        if not isinstance(name, str) or not name:
            raise TraceError(f"{what}: name must be a non-empty string, got {name!r}")
        if any(a.name == name for a in self._args):
            raise TraceError(f"{what}: an argument named {name!r} already exists")

    def _add_arg(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: str,
        slot: str | None,
        range_: tuple[int, int] | None,
    ) -> Tensor:
        self._check_open(f"add argument {name!r}")
        with self.context, user_location(self.context) as loc:
            value = self._block.add_argument(tensor_type(shape, dtype), loc)
        tensor = Tensor(self, value, declared_range=range_, name=name)
        self._args.append(_Arg(name, tensor, slot, range_))
        return tensor

    def state(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Tensor:
        """A buffer carried across steps (a KV cache, a pool). It needs a
        `state_out` of the same name before `finish()`."""
        self._check_arg_name(name, f"state {name!r}")
        dims = checks.static_shape(f"state {name!r}", shape)
        check_dtype(dtype, f"state {name!r}")
        return self._add_arg(name, dims, dtype, "state", None)

    def pos(
        self, max_pos: int, *, name: str = "pos", min_pos: int = 0, rows: int | None = None
    ) -> Tensor:
        """The decode position, `tensor<i32>` declared in `[min_pos, max_pos]`
        (every binder checks it). With `rows`, one position per batch row,
        `tensor<rows x i32>`, each word declared in the same range: the rows
        of a continuous batch sit at different positions."""
        self._check_arg_name(name, "pos")
        if any(a.slot == "pos" for a in self._args):
            raise TraceError("pos: the function already has a pos argument (at most one)")
        if not isinstance(max_pos, int) or not isinstance(min_pos, int) or min_pos > max_pos:
            raise TraceError(f"pos: max_pos must be an int >= min_pos ({min_pos}), got {max_pos!r}")
        _check_i32_range("pos", min_pos, max_pos)
        if rows is None:
            return self._add_arg(name, (), "i32", "pos", (min_pos, max_pos))
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise TraceError(f"pos: rows must be a positive int, got {rows!r}")
        return self._add_arg(name, (rows,), "i32", "pos", (min_pos, max_pos))

    def input(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str = "f32",
        *,
        range: tuple[int, int] | None = None,  # noqa: A002 - the attribute's name
        slot: str | None = None,
    ) -> Tensor:
        """A plain input bound by name, optionally with a declared inclusive
        value range (i32 only) and a paged-map slot ("slot_map" for the
        `[rows, cap]` read map, "write_map" for the `[rows * tokens]` write
        map)."""
        what = f"input {name!r}"
        self._check_arg_name(name, what)
        dims = checks.static_shape(what, shape)
        check_dtype(dtype, what)
        if range is not None:
            if dtype != "i32":
                raise TraceError(f"{what}: range needs an i32 input, got dtype {dtype}")
            try:
                lo, hi = (int(range[0]), int(range[1]))
            except (TypeError, IndexError, ValueError):
                raise TraceError(f"{what}: range must be (lo, hi), got {range!r}") from None
            if lo > hi:
                raise TraceError(f"{what}: range ({lo}, {hi}) is empty")
            _check_i32_range(what, lo, hi)
            range = (lo, hi)
        if slot is not None:
            if slot not in _ARG_SLOTS:
                raise TraceError(f"{what}: slot must be one of {_ARG_SLOTS}, got {slot!r}")
            rank = 2 if slot == "slot_map" else 1
            if dtype != "i32" or len(dims) != rank:
                layout = "[rows, cap]" if slot == "slot_map" else "[rows * tokens]"
                raise TraceError(
                    f"{what}: a {slot} must be a {rank}-D i32 tensor {layout}, got {dims} {dtype}"
                )
        return self._add_arg(name, dims, dtype, slot, range)

    def slot_map(self, name: str, rows: int, cap: int, pool_slots: int) -> Tensor:
        """The paged read map `[rows, cap]` i32, declared in `[0, pool_slots - 1]`."""
        return self.input(name, (rows, cap), "i32", range=(0, pool_slots - 1), slot="slot_map")

    def write_map(self, name: str, tokens: int, pool_slots: int) -> Tensor:
        """The paged write map `[rows * tokens]` i32, declared in
        `[-1, pool_slots - 1]` (-1 writes nothing)."""
        return self.input(name, (tokens,), "i32", range=(-1, pool_slots - 1), slot="write_map")

    # --- results ------------------------------------------------------------

    def _check_result(self, name: str, tensor: Tensor, what: str) -> None:
        self._check_open(f"add result {name!r}")
        if not isinstance(name, str) or not name:
            raise TraceError(f"{what}: name must be a non-empty string, got {name!r}")
        if not isinstance(tensor, Tensor):
            raise TraceError(f"{what}: value must be a traced Tensor, got {type(tensor).__name__}")
        if tensor.tracer is not self:
            raise TraceError(f"{what}: value was traced by another Tracer ({tensor.tracer.name!r})")
        if any(r.name == name for r in self._results):
            raise TraceError(f"{what}: a result named {name!r} already exists")

    def output(self, name: str, tensor: Tensor) -> None:
        """A plain result, bound by name."""
        self._check_result(name, tensor, f"output {name!r}")
        self._results.append(_Result(name, tensor))

    def state_out(self, name: str, tensor: Tensor) -> None:
        """The new value of state `name` (same type as its argument)."""
        what = f"state_out {name!r}"
        self._check_result(name, tensor, what)
        arg = next((a for a in self._args if a.slot == "state" and a.name == name), None)
        if arg is None:
            raise TraceError(f"{what}: no state argument named {name!r}")
        if (tensor.shape, tensor.dtype) != (arg.tensor.shape, arg.tensor.dtype):
            raise TraceError(
                f"{what}: value has shape {tensor.shape} {tensor.dtype} but the state "
                f"argument has {arg.tensor.shape} {arg.tensor.dtype}"
            )
        self._results.append(_Result(name, tensor, "state"))

    def validation(self, name: str, witness: Tensor) -> None:
        """An i1 witness result: when false at run time the step fails and
        publishes no state."""
        what = f"validation {name!r}"
        self._check_result(name, witness, what)
        if witness.shape != () or witness.dtype != "i1":
            raise TraceError(
                f"{what}: witness must be a 0-d i1 tensor, got {witness.shape} {witness.dtype}"
            )
        self._results.append(_Result(name, witness, "validation"))

    # --- introspection ------------------------------------------------------

    @property
    def argument_names(self) -> list[str]:
        return [a.name for a in self._args]

    @property
    def result_names(self) -> list[str]:
        return [r.name for r in self._results]

    def arguments(self) -> list[tuple[str, tuple[int, ...], str]]:
        """(name, shape, dtype) of each argument, in order."""
        return [(a.name, a.tensor.shape, a.tensor.dtype) for a in self._args]

    def result(self, name: str) -> Tensor:
        """The Tensor already returned as result `name`: more outputs may be
        traced from it before `finish()` (an imported step's logits -> its
        greedy token, `models.hf_export.add_next_token`)."""
        self._check_open(f"read result {name!r}")
        for res in self._results:
            if res.name == name:
                return res.tensor
        raise TraceError(f"result {name!r}: no such result (the results: {self.result_names})")

    # --- finishing ----------------------------------------------------------

    def finish(self) -> ir.Module:
        """Close the function (return, signature, markers), verify it and
        return the module. Idempotent; the tracer accepts nothing after it."""
        if self._module is not None:
            return self._module
        for arg in self._args:
            if arg.slot == "state" and not any(
                r.slot == "state" and r.name == arg.name for r in self._results
            ):
                raise TraceError(f"finish: state {arg.name!r} has no state_out")
        with self.context, user_location(self.context):
            with ir.InsertionPoint(self._block):
                func.ReturnOp([r.tensor.value for r in self._results])
            self._func.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(
                    [a.tensor.value.type for a in self._args],
                    [r.tensor.value.type for r in self._results],
                )
            )
            self._func.arg_attrs = ir.ArrayAttr.get([self._arg_attrs(a) for a in self._args])
            self._func.res_attrs = ir.ArrayAttr.get([self._result_attrs(r) for r in self._results])
        try:
            self._open_module.operation.verify()
        except Exception as exc:  # MLIRError; its text carries the diagnostics
            raise TraceError(f"finish: the traced module does not verify:\n{exc}") from exc
        self._module = self._open_module
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        return self._module

    @staticmethod
    def _arg_attrs(arg: _Arg) -> ir.DictAttr:
        attrs: dict[str, ir.Attribute] = {"poot.name": ir.StringAttr.get(arg.name)}
        if arg.slot == "state":
            attrs["poot.slot"] = poot.slot_attr("state", arg.name)
        elif arg.slot is not None:
            attrs["poot.slot"] = poot.slot_attr(arg.slot)
        if arg.range is not None:
            attrs["poot.range"] = poot.range_attr(*arg.range)
        return ir.DictAttr.get(attrs)

    @staticmethod
    def _result_attrs(res: _Result) -> ir.DictAttr:
        attrs: dict[str, ir.Attribute] = {"poot.name": ir.StringAttr.get(res.name)}
        if res.slot == "state":
            attrs["poot.slot"] = poot.slot_attr("state", res.name)
        elif res.slot == "validation":
            attrs["poot.slot"] = poot.slot_attr("validation")
        return ir.DictAttr.get(attrs)

    def mlir(self, *, debug_info: bool = False) -> str:
        """The finished module's text (`debug_info` prints source locations)."""
        module = self.finish()
        return module.operation.get_asm(enable_debug_info=debug_info)
