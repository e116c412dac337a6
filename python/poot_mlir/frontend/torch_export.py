"""Import a `torch.export.ExportedProgram` as a traced poot step.

    import torch
    from poot_mlir.frontend.torch_export import import_exported, exported_weights

    ep = torch.export.export(model.eval(), (x,))
    tracer = import_exported(ep, name="step")    # inputs: x, then every weight by name
    module = tracer.finish()                      # outputs: "out" (or out0, out1, ...)
    weights = exported_weights(ep)                # {"q_proj.weight": array, ...}

The importer walks the program's FX graph as it is given: the pre-dispatch
ATen graph `torch.export.export` returns (there
`F.scaled_dot_product_attention`, `softmax`, `linear` and 4-D `matmul` are
one node each, which the importer spells as the primitive chains the
attention rewrite reads) or the core-ATen graph of `run_decompositions()`,
whose ops (`mm`, `bmm`, `addmm`, `_softmax`, `_unsafe_view`, `permute`, ...)
are in the table too: its attention -- heads folded into `bmm` through
`expand`/`clone`/`view`, SDPA's softmax guarded by `where(row all -inf, 0,
p)` -- fuses as well (docs/torch-export.md).

Every node is checked before anything is emitted (the op is in the table
`torch_aten.EMITTERS`, its arguments are ones the table honours, every shape
is static, every dtype is one poot has); a refusal is a
`errors.TorchImportError` naming the ATen op, the node and the model's
source line. Each emitted op is located at the model's line that produced
the node (`node.meta["stack_trace"]`), so the rewrite's remarks and the
planner's refusals point at the model's code.

Dtypes: float32/float16/bfloat16/float64 map to f32/f16/bf16/f64, bool to i1,
int32 and int64 to i32 (poot's one integer type: an int64 input is bound as
i32 and must fit).
"""

from __future__ import annotations

import contextlib
import operator
import re
import sys
import weakref
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

try:
    import torch
    from torch.export import ExportedProgram
    from torch.export.graph_signature import InputKind, OutputKind
except ImportError as error:  # pragma: no cover - torch is an optional dependency
    raise ImportError(
        "poot_mlir.frontend.torch_export needs PyTorch (pip install torch)"
    ) from error

from ..errors import DynamicShapeError, TorchImportError, TraceError, UnsupportedTorchOp
from . import primitives as P
from . import torch_aten
from .location import source_position
from .tensor import Tensor
from .tracer import Tracer

__all__ = [
    "emit_exported",
    "exported_state",
    "exported_weights",
    "import_exported",
    "packed_weights",
    "import_module",
]

_DTYPES: dict[torch.dtype, str] = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.int32: "i32",
    torch.int64: "i32",
    torch.bool: "i1",
}
# complex64 intermediates (DeepSeek-V2's RoPE) are carried as (re, im) f32
# pairs (torch_aten.values.Complex); never a step's input or output.
_COMPLEX_DTYPES: dict[torch.dtype, str] = {torch.complex64: torch_aten.COMPLEX}
_TORCH_OF = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
             "f64": torch.float64, "i32": torch.int64, "i1": torch.bool}  # fmt: skip
_WEIGHT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER)

# Higher-order wrappers export records around a region (`torch.no_grad()`,
# `torch.autocast(enabled=False)` in a forward: HF's rotary embedding) whose
# body is plain ATen: inlined; the value is where their subgraph argument sits.
# Grad mode does not change a forward's values; a disabled autocast neither.
_HIGHER = torch.ops.higher_order
_AUTOCAST = getattr(_HIGHER, "wrap_with_autocast", None)
_INLINED: dict[Any, int] = {_HIGHER.wrap_with_set_grad_enabled: 1}
if _AUTOCAST is not None:
    _INLINED[_AUTOCAST] = 4  # (device_type, dtype, enabled, cache_enabled, body, *args)
_WEIGHT_MODES = ("inputs", "constants")


# --- public API ------------------------------------------------------------------------------


def import_exported(
    ep: ExportedProgram,
    *,
    name: str = "step",
    weights: str = "inputs",
    output_names: Sequence[str] | None = None,
    pos: str | None = None,
    max_pos: int | None = None,
    pack_weights: bool = False,
    declare: Mapping[str, Mapping[str, Any]] | None = None,
) -> Tracer:
    """A Tracer (not finished) holding `ep`'s forward as poot primitives.

    Its inputs are the graph's user inputs, by their names, then (with
    `weights="inputs"`, the default) every parameter and buffer by its
    state-dict name (`"layers.0.q_proj.weight"`), to be bound each call
    (`exported_weights(ep)` gives their values); with `weights="constants"`
    they are baked into the module as constants instead. Its outputs are
    `output_names`, else `"out"` for a single output and `"out0"`, `"out1"`,
    ... for several. Call `finish()` for the module (or add outputs first).

    A buffer the forward writes in place (a KV cache's `index_copy_`, a
    counter's `add_`) is the step's *state*: an argument and a result of
    that name, carried by a session (`exported_state(ep)` gives the initial
    values). A forward with in-place ops is functionalized first
    (`ep.run_decompositions({})`), so in-place updates of intermediates
    import too. `pos` names a 0-d integer user input that is the decode
    position: it becomes the step's `pos` argument, declared in `[0,
    max_pos]` (every binder refuses a position outside it); a 1-D `[rows]`
    one is one position per row (a continuous batch: `Tracer.pos(rows=)`).

    `declare` maps a user input's name to what `Tracer.input` declares
    beyond its shape and dtype: `range=(lo, hi)` (i32 inputs; every binder
    checks it) and `slot="slot_map"` / `"write_map"` (a paged step's read
    and write maps, whose ranges the attention rewrite's proofs start from).

    `pack_weights=True` stores each 2-D weight the forward only reads
    transposed (`nn.Linear`'s `[out, in]`, read as `x @ W.T`) as an input of
    the transposed shape `[in, out]` under the same name: the layout the
    matmul lowerings stream (a decode step's GEMVs read it row by row);
    `exported_weights(ep, pack_weights=True)` gives the arrays to bind.
    """
    if weights not in _WEIGHT_MODES:
        raise TorchImportError(
            f"import_exported: weights must be one of {_WEIGHT_MODES}, got {weights!r}"
        )
    program = _Program(ep)
    outputs = program.output_nodes()
    names = _output_names(output_names, len(outputs))
    pos_node = _pos_input(program, pos, max_pos)
    declared = _declarations(program, declare, pos_node)
    tracer = Tracer(name)
    try:
        inputs = {
            node.name: (
                _pos_argument(tracer, node, max_pos)
                if node is pos_node
                else tracer.input(node.name, *_tensor_meta(node), **declared.get(node.name, {}))
            )
            for node in program.user_inputs()
        }
        if weights == "inputs":
            packed = program.transposed_weights() if pack_weights else set()
            bound: Mapping[str, Tensor] | str = {
                target: _weight_input(tracer, node, target, target in packed)
                for node, target in program.weights()
            }
        else:
            bound = "constants"
        states = {
            target: tracer.state(target, *_tensor_meta(node))
            for node, target in program.state_buffers()
        }
        results, new_states = program.emit(tracer, inputs, bound, states)
        for out_name, result in zip(names, results):
            tracer.output(out_name, result)
        for target, value in new_states.items():
            tracer.state_out(target, value)
    except BaseException:
        tracer.__exit__(*sys.exc_info())  # retire it: nothing half-built stays current
        raise
    return tracer


def import_module(
    module: "torch.nn.Module",
    example_args: tuple,
    example_kwargs: dict | None = None,
    **options: Any,
) -> Tracer:
    """`import_exported(torch.export.export(module, example_args))`: static
    shapes from the examples. Export the module in `eval()` mode (dropout in
    training mode is refused)."""
    ep = torch.export.export(module, tuple(example_args), kwargs=example_kwargs)
    return import_exported(ep, **options)


def emit_exported(
    ep: ExportedProgram,
    inputs: Mapping[str, Tensor],
    *,
    weights: Mapping[str, Tensor] | str = "constants",
) -> list[Tensor]:
    """Replay `ep`'s forward into the tracer the `inputs` Tensors belong to
    (keyed by the graph's user input names) and return its outputs, so an
    exported piece composes with the rest of a hand-traced step (its state,
    pos and attention composites). `weights`: "constants", or a mapping from
    each state-dict name to a traced Tensor. Every node is checked before
    anything is emitted."""
    program = _Program(ep)
    tensors = list(inputs.values())
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise TorchImportError(
            "emit_exported: inputs must map each user input name to a traced Tensor"
        )
    if program.state_buffers():
        written = ", ".join(t for _, t in program.state_buffers())
        raise TorchImportError(
            f"emit_exported: the forward writes buffers in place ({written}): import it whole "
            "with import_exported, where they become the step's state"
        )
    return program.emit(tensors[0].tracer, inputs, weights)[0]


def exported_weights(ep: ExportedProgram, *, pack_weights: bool = False) -> dict[str, np.ndarray]:
    """The value of every parameter and buffer input `import_exported` makes
    (weights="inputs"), by its input name: numpy arrays in the input's dtype
    (bfloat16 as `ml_dtypes.bfloat16`, int64 as int32); with `pack_weights`,
    the transposed ones transposed (contiguous), as `import_exported(ep,
    pack_weights=True)` declares them. Buffers the forward writes are
    state, not weights: `exported_state`."""
    program = _Program(ep)
    packed = program.transposed_weights() if pack_weights else set()
    out = {}
    for _, target in program.weights():
        value = program.value_of(target)
        out[target] = _to_numpy(value.t() if target in packed else value)
    return out


def packed_weights(ep: ExportedProgram) -> set[str]:
    """The weights `pack_weights=True` stores transposed (`[in, out]`): for
    a caller binding its own tensors (torch's, on a device) instead of
    `exported_weights`."""
    return _Program(ep).transposed_weights()


def _weight_input(tracer: Tracer, node: "torch.fx.Node", target: str, packed: bool) -> Tensor:
    """The traced value of weight `target`: its input, or with `packed` the
    transpose of an input stored `[in, out]` (the forward's own transposes
    of it then compose with this one and fold away)."""
    shape, dtype = _tensor_meta(node)
    if not packed:
        return tracer.input(target, shape, dtype)
    stored = tracer.input(target, shape[::-1], dtype)
    return P.transpose(stored, [1, 0])


def _reads_transposed(user: "torch.fx.Node", weight: "torch.fx.Node") -> bool:
    """Whether `user` reads the 2-D `weight` only as its transpose: a
    linear's weight, `t`, `permute([1, 0])` or a transpose of its two axes."""
    if user.op != "call_function" or not isinstance(user.target, torch._ops.OpOverload):
        return False
    packet = _packet(user)
    args = _bind(user)
    if packet == "linear":
        return args.get("weight") is weight and args.get("input") is not weight
    if packet in ("t", "numpy_T"):
        return True
    if packet == "permute":
        return [d % 2 for d in args["dims"]] == [1, 0]
    if packet in ("transpose", "swapaxes"):
        dims = {args.get("dim0", args.get("axis0")) % 2, args.get("dim1", args.get("axis1")) % 2}
        return dims == {0, 1}
    return False


def exported_state(ep: ExportedProgram) -> dict[str, np.ndarray]:
    """The initial value of every state `import_exported` makes (the buffers
    the forward writes in place), by state name, as `exported_weights`."""
    program = _Program(ep)
    return {target: _to_numpy(program.value_of(target)) for _, target in program.state_buffers()}


def _pos_input(program: "_Program", pos: str | None, max_pos: int | None):
    """The user input node `pos` names (0-d integer), or None."""
    if pos is None:
        if max_pos is not None:
            raise TorchImportError("import_exported: max_pos needs pos (the input it declares)")
        return None
    node = next((n for n in program.user_inputs() if n.name == pos), None)
    if node is None:
        names = [n.name for n in program.user_inputs()]
        raise TorchImportError(f"import_exported: pos={pos!r} is not a user input (inputs: {names})")
    shape, dtype = _tensor_meta(node)
    if len(shape) > 1 or dtype != "i32":
        raise TorchImportError(
            f"import_exported: pos input {pos!r} must be a 0-d integer tensor (or [rows]: one "
            f"position per row), got {list(shape)} {node.meta['val'].dtype}"
        )
    if not isinstance(max_pos, int) or isinstance(max_pos, bool) or max_pos < 0:
        raise TorchImportError(f"import_exported: pos needs max_pos, an int >= 0, got {max_pos!r}")
    return node


def _pos_argument(tracer: Tracer, node: "torch.fx.Node", max_pos: int) -> Tensor:
    """The step's `pos`: 0-d, or one word per row for a `[rows]` input."""
    shape, _ = _tensor_meta(node)
    return tracer.pos(max_pos, name=node.name, rows=shape[0] if shape else None)


_DECLARABLE = ("range", "slot")


def _declarations(
    program: "_Program", declare: Mapping[str, Mapping[str, Any]] | None, pos_node: Any
) -> dict[str, dict[str, Any]]:
    """`declare`, checked: each key a user input other than `pos`, each
    value a mapping of `Tracer.input`'s `range` / `slot` only."""
    if declare is None:
        return {}
    names = [n.name for n in program.user_inputs()]
    out = {}
    for input_name, what in declare.items():
        if input_name not in names or (pos_node is not None and input_name == pos_node.name):
            raise TorchImportError(
                f"import_exported: declare names {input_name!r}, not a user input other than pos "
                f"(inputs: {names})"
            )
        if not isinstance(what, Mapping) or set(what) - set(_DECLARABLE):
            raise TorchImportError(
                f"import_exported: declare[{input_name!r}] must map some of {_DECLARABLE}, "
                f"got {what!r}"
            )
        out[input_name] = dict(what)
    return out


def _has_mutation(graph: "torch.fx.Graph") -> bool:
    """Whether any op of `graph` writes a tensor in place."""
    return any(
        node.op == "call_function"
        and isinstance(node.target, torch._ops.OpOverload)
        and node.target._schema.is_mutable
        for node in graph.nodes
    )


# One functionalization per program: `import_exported`, `exported_weights`
# and `exported_state` of one ExportedProgram share it.
_FUNCTIONAL: "weakref.WeakKeyDictionary[ExportedProgram, ExportedProgram]" = (
    weakref.WeakKeyDictionary()
)


def _functional(ep: ExportedProgram) -> ExportedProgram:
    """`ep` with its in-place ops made functional (`run_decompositions({})`:
    no op decomposed, the writes of buffers become BUFFER_MUTATION outputs),
    or `ep` itself when nothing writes in place."""
    if not _has_mutation(ep.graph_module.graph):
        return ep
    if ep not in _FUNCTIONAL:
        _FUNCTIONAL[ep] = ep.run_decompositions({})
    return _FUNCTIONAL[ep]


# --- the program ---------------------------------------------------------------------


class _Program:
    """One ExportedProgram, functionalized when it writes in place, and
    checked whole on construction: its signature (buffers may be written:
    they are state; inputs may not), static shapes, and every node against
    the op table."""

    def __init__(self, ep: ExportedProgram) -> None:
        if not isinstance(ep, ExportedProgram):
            raise TorchImportError(
                f"expected a torch.export.ExportedProgram, got {type(ep).__name__}"
            )
        ep = _functional(ep)
        self.ep = ep
        self.graph = ep.graph_module.graph
        self.placeholders = {n.name: n for n in self.graph.nodes if n.op == "placeholder"}
        self._check_shapes()
        self._check_signature()
        for node in self.graph.nodes:
            self._check_node(node)

    # --- signature ---------------------------------------------------------------

    def _check_signature(self) -> None:
        for spec in self.ep.graph_signature.input_specs:
            node = self.placeholders.get(spec.arg.name)
            if spec.kind == InputKind.USER_INPUT:
                if node is None or not isinstance(node.meta.get("val"), torch.Tensor):
                    raise TorchImportError(
                        f"user input {spec.arg.name!r} is not a tensor (export specializes Python "
                        "numbers into the graph; pass tensors only)"
                    )
                _tensor_meta(node)
            elif spec.kind not in _WEIGHT_KINDS and spec.kind != InputKind.CONSTANT_TENSOR:
                raise TorchImportError(
                    f"input {spec.arg.name!r} is a {spec.kind.name} (only tensors, parameters, "
                    "buffers and constant tensors import)"
                )
        for spec in self.ep.graph_signature.output_specs:
            if spec.kind not in (OutputKind.USER_OUTPUT, OutputKind.BUFFER_MUTATION):
                target = f" {spec.target!r}" if spec.target else ""
                raise TorchImportError(
                    f"the forward writes{target} in place ({spec.kind.name}): only buffers may "
                    "be written (they become the step's state); register it as a buffer"
                )

    def _check_shapes(self) -> None:
        symbolic = []
        for node in self.graph.nodes:
            val = node.meta.get("val")
            vals = val if isinstance(val, (list, tuple)) else [val]
            for v in vals:
                if isinstance(v, torch.Tensor) and not all(isinstance(d, int) for d in v.shape):
                    symbolic.append((node, tuple(v.shape)))
                elif isinstance(v, torch.SymInt):
                    symbolic.append((node, (v,)))
        if symbolic or self.ep.range_constraints:
            inputs = [(n, s) for n, s in symbolic if n.op == "placeholder"]
            where = ", ".join(f"{n.name} {list(s)}" for n, s in inputs[:4])
            where = where or ", ".join(f"{n.name} {list(s)}" for n, s in symbolic[:2])
            raise DynamicShapeError(
                f"the exported program has dynamic shapes ({where}; symbols "
                f"{sorted(str(s) for s in self.ep.range_constraints)}): poot steps have static "
                "shapes only; export without dynamic_shapes (one import per shape)"
            )

    def _check_node(self, node: "torch.fx.Node") -> None:
        if node.op in ("placeholder", "output"):
            return
        if node.op == "get_attr":  # a wrapper's subgraph, checked where it is called
            return
        if node.op == "call_function" and node.target in _INLINED:
            if node.target is _AUTOCAST and node.args[2]:
                raise _node_error(
                    UnsupportedTorchOp, node, "an enabled torch.autocast region (its casts are "
                    "not in the graph); export the model in its own dtype",
                )  # fmt: skip
            graph, _ = self._subgraph(node)
            for inner in graph.nodes:
                self._check_node(inner)
            return
        if node.op != "call_function":
            raise _node_error(UnsupportedTorchOp, node, f"a {node.op} node ({node.target})")
        if node.target is operator.getitem:
            return
        packet = _packet(node)
        if packet is None:
            raise _node_error(UnsupportedTorchOp, node, "not an ATen op (no poot primitive chain)")
        if packet in torch_aten.IGNORED:
            return
        if node.target._schema.is_mutable:
            # Functionalization (`_functional`) removed every in-place op it
            # can; one left is one torch could not make functional.
            raise _node_error(
                TorchImportError, node,
                "an in-place op functionalization left in the graph",
            )  # fmt: skip
        if packet not in torch_aten.EMITTERS:
            raise _node_error(UnsupportedTorchOp, node, "no poot primitive chain for this op")
        refuse = torch_aten.REFUSALS.get(packet)
        reason = refuse(_bind(node)) if refuse is not None else None
        if reason is not None:
            raise _node_error(UnsupportedTorchOp, node, reason)
        val = node.meta.get("val")
        for v in val if isinstance(val, (list, tuple)) else [val]:
            if isinstance(v, torch.Tensor):
                if v.dtype not in _DTYPES and v.dtype not in _COMPLEX_DTYPES:
                    raise _node_error(
                        UnsupportedTorchOp, node, f"a {v.dtype} result (poot has {_dtype_list()})"
                    )
                if 0 in v.shape and not _only_concatenated(node):
                    raise _node_error(
                        UnsupportedTorchOp, node, f"a zero-sized result {list(v.shape)} "
                        "(only a `cat` may read one: it drops it)",
                    )  # fmt: skip

    # --- inputs and weights ------------------------------------------------------

    def user_inputs(self) -> list["torch.fx.Node"]:
        return [
            self.placeholders[s.arg.name]
            for s in self.ep.graph_signature.input_specs
            if s.kind == InputKind.USER_INPUT
        ]

    def _written(self) -> dict[str, "torch.fx.Node"]:
        """Each buffer the forward writes -> the node holding its new value."""
        out = next(n for n in self.graph.nodes if n.op == "output")
        values = list(out.args[0]) if isinstance(out.args[0], (list, tuple)) else [out.args[0]]
        return {
            spec.target: value
            for spec, value in zip(self.ep.graph_signature.output_specs, values)
            if spec.kind == OutputKind.BUFFER_MUTATION
        }

    def weights(self) -> list[tuple["torch.fx.Node", str]]:
        """The parameters and the buffers the forward only reads."""
        written = self._written()
        return [
            (self.placeholders[s.arg.name], s.target)
            for s in self.ep.graph_signature.input_specs
            if s.kind in _WEIGHT_KINDS and s.target not in written
        ]

    def transposed_weights(self) -> set[str]:
        """The 2-D weights every reader reads transposed (`pack_weights`)."""
        out = set()
        for node, target in self.weights():
            shape = tuple(node.meta["val"].shape)
            users = list(node.users)
            if len(shape) == 2 and users and all(_reads_transposed(u, node) for u in users):
                out.add(target)
        return out

    def state_buffers(self) -> list[tuple["torch.fx.Node", str]]:
        """The buffers the forward writes (the step's state), in input order."""
        written = self._written()
        return [
            (self.placeholders[s.arg.name], s.target)
            for s in self.ep.graph_signature.input_specs
            if s.kind == InputKind.BUFFER and s.target in written
        ]

    def value_of(self, target: str) -> "torch.Tensor":
        if target in self.ep.state_dict:
            return self.ep.state_dict[target]
        return self.ep.constants[target]

    def output_nodes(self) -> list[Any]:
        """The user outputs (a written buffer's new value is not one)."""
        out = next(n for n in self.graph.nodes if n.op == "output")
        values = list(out.args[0]) if isinstance(out.args[0], (list, tuple)) else [out.args[0]]
        specs = self.ep.graph_signature.output_specs
        values = [v for spec, v in zip(specs, values) if spec.kind == OutputKind.USER_OUTPUT]
        for v in values:
            if not isinstance(v, torch.fx.Node) or not isinstance(v.meta.get("val"), torch.Tensor):
                raise TorchImportError(f"output {v!r} is not a tensor (only tensor outputs import)")
            if v.meta["val"].dtype in _COMPLEX_DTYPES:
                raise UnsupportedTorchOp(f"output {v.name!r} is complex (poot has no complex type)")
        return values

    # --- emission ----------------------------------------------------------------

    def emit(
        self,
        tracer: Tracer,
        inputs: Mapping[str, Tensor],
        weights: Mapping[str, Tensor] | str,
        states: Mapping[str, Tensor] | None = None,
    ) -> tuple[list[Tensor], dict[str, Tensor]]:
        """Emit the forward; returns its user outputs and, per written
        buffer (bound from `states` by target), its new value."""
        env: dict[str, Any] = {}
        for node in self.user_inputs():
            if node.name not in inputs:
                raise TorchImportError(f"no traced Tensor for user input {node.name!r}")
            env[node.name] = inputs[node.name]
        kinds = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        for name, node in self.placeholders.items():
            spec = kinds[name]
            if spec.kind == InputKind.USER_INPUT:
                continue
            if states and spec.target in states:
                env[name] = states[spec.target]
            elif spec.kind in _WEIGHT_KINDS and not isinstance(weights, str):
                if spec.target not in weights:
                    raise TorchImportError(f"no traced Tensor for weight {spec.target!r}")
                env[name] = weights[spec.target]
            else:
                shape, dtype = _tensor_meta(node)
                env[name] = P.constant(_to_numpy(self.value_of(spec.target)), dtype, tracer=tracer)
        self._run(self.graph, env, torch_aten.Context(tracer, _result_type))
        written = {target: env[node.name] for target, node in self._written().items()}
        return [env[n.name] for n in self.output_nodes()], written

    def _run(self, graph: "torch.fx.Graph", env: dict[str, Any], context) -> None:
        """Emit every call of `graph` (its placeholders already in `env`)."""
        for node in graph.nodes:
            if node.op != "call_function":
                continue
            if node.target is operator.getitem:
                env[node.name] = env[node.args[0].name][node.args[1]]
            elif node.target in _INLINED:
                env[node.name] = self._inline(node, env, context)
            elif _packet(node) not in torch_aten.IGNORED:
                env[node.name] = self._emit_node(node, _packet(node), env, context)

    def _subgraph(self, node: "torch.fx.Node") -> tuple["torch.fx.Graph", list[Any]]:
        """A grad-mode / disabled-autocast wrapper's graph and its operands."""
        at = _INLINED[node.target]
        return getattr(self.ep.graph_module, node.args[at].target).graph, list(node.args[at + 1 :])

    def _inline(self, node: "torch.fx.Node", env: dict[str, Any], context) -> list[Any]:
        graph, operands = self._subgraph(node)
        inner = dict(env)
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        for placeholder, operand in zip(placeholders, operands):
            inner[placeholder.name] = _resolve(operand, env)
        self._run(graph, inner, context)
        out = next(n for n in graph.nodes if n.op == "output").args[0]
        return [_resolve(v, inner) for v in (out if isinstance(out, (list, tuple)) else [out])]

    def _emit_node(self, node, packet: str, env: dict[str, Any], context) -> Any:
        meta = _meta(node)
        if meta is not None and 0 in meta.shape:  # only a cat reads it (_check_node)
            return torch_aten.Empty(meta.shape, meta.dtype)
        args = {k: _resolve(v, env) for k, v in _bind(node).items()}
        file, line, _ = _source(node)
        position = source_position(file, line) if file else contextlib.nullcontext()
        try:
            with position:
                context.packet = packet
                context.node, context.env = node, env
                result = torch_aten.EMITTERS[packet](args, meta, context)
        except (TraceError, ValueError, TypeError) as error:
            if isinstance(error, TorchImportError):
                raise
            raise _node_error(UnsupportedTorchOp, node, str(error)) from error
        _check_result(node, result, meta)
        return result


# --- helpers -------------------------------------------------------------------------


def _only_concatenated(node: "torch.fx.Node") -> bool:
    """Every reader of `node` is a `cat`, which drops a zero-sized operand
    (Phi-3's `cat([rotated, x[..., rot:]])` with rot the whole head)."""
    return bool(node.users) and all(
        user.op == "call_function" and _packet(user) in torch_aten.DROPS_EMPTY
        for user in node.users
    )


def _packet(node: "torch.fx.Node") -> str | None:
    target = node.target
    if isinstance(target, torch._ops.OpOverload) and target.namespace == "aten":
        return target.overloadpacket.__name__
    return None


def _bind(node: "torch.fx.Node") -> dict[str, Any]:
    """The node's arguments by the names of its op's schema (defaults filled)."""
    schema = node.target._schema
    bound: dict[str, Any] = {}
    positional = list(node.args)
    for arg in schema.arguments:
        if not arg.kwarg_only and positional:
            bound[arg.name] = positional.pop(0)
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def _resolve(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, torch.fx.Node):
        return env[value.name]
    if isinstance(value, (list, tuple)):
        return type(value)(_resolve(v, env) for v in value)
    return value


def _dtype_list() -> str:
    return ", ".join(sorted({str(d).removeprefix("torch.") for d in _DTYPES}))


def _tensor_meta(node: "torch.fx.Node") -> tuple[tuple[int, ...], str]:
    val = node.meta["val"]
    if val.dtype not in _DTYPES:
        raise TorchImportError(
            f"input {node.name!r} is {val.dtype} (poot has {_dtype_list()})", node=node.name
        )
    if 0 in val.shape:
        raise TorchImportError(f"input {node.name!r} has a zero-sized shape {list(val.shape)}")
    return tuple(int(d) for d in val.shape), _DTYPES[val.dtype]


def _meta(node: "torch.fx.Node") -> torch_aten.Meta | None:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        dtype = _DTYPES.get(val.dtype) or _COMPLEX_DTYPES[val.dtype]
        return torch_aten.Meta(tuple(int(d) for d in val.shape), dtype)
    return None


def _check_result(node, result: Any, meta: torch_aten.Meta | None) -> None:
    """The importer's result must be what torch.export says the node is (a
    mismatch is an importer bug, reported with the node)."""
    if meta is None:
        return
    if isinstance(result, torch_aten.Complex) and meta.dtype == torch_aten.COMPLEX:
        for part in (result.re, result.im):  # each part: the node's shape, f32
            _check_result(node, part, torch_aten.Meta(meta.shape, "f32"))
        return
    if not isinstance(result, Tensor) or (result.shape, result.dtype) != (meta.shape, meta.dtype):
        got = (
            f"{result.shape} {result.dtype}"
            if isinstance(result, Tensor)
            else type(result).__name__
        )
        raise _node_error(
            TorchImportError, node, f"imported as {got}, but torch says {meta.shape} {meta.dtype}"
        )


def _result_type(operands: Iterable[Any]) -> str:
    """torch's promotion of operands (Tensors by their poot dtype, 0-d ones
    as 0-d, Python numbers as numbers)."""
    values = [
        torch.empty(o.shape, dtype=_TORCH_OF[o.dtype], device="meta")
        if isinstance(o, Tensor)
        else o
        for o in operands
    ]
    return _DTYPES[torch.result_type(*values)]


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _source(node: "torch.fx.Node") -> tuple[str | None, int, str]:
    """(file, line, code) of the innermost frame of the node's stack trace:
    the model line that made it (None when torch recorded none)."""
    trace = node.meta.get("stack_trace") or ""
    frames = list(_FRAME.finditer(trace))
    if not frames:
        return None, 0, ""
    last = frames[-1]
    code = trace[last.end() :].split("\n")[1].strip() if "\n" in trace[last.end() :] else ""
    return last.group(1), int(last.group(2)), code


def _node_error(cls: type[TorchImportError], node, reason: str) -> TorchImportError:
    op = str(node.target) if node.op == "call_function" else node.op
    file, line, code = _source(node)
    source = f"{file}:{line}" if file else None
    where = f"{source}: " if source else ""
    text = f"{where}cannot import {op} (node {node.name!r}): {reason}"
    if code:
        text += f"\n    {code}"
    return cls(text, op=op, node=node.name, source=source)


def _output_names(names: Sequence[str] | None, count: int) -> list[str]:
    if names is None:
        return ["out"] if count == 1 else [f"out{i}" for i in range(count)]
    names = list(names)
    if len(names) != count:
        raise TorchImportError(f"output_names has {len(names)} names for {count} outputs")
    return names


def _to_numpy(t: "torch.Tensor") -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype == torch.int64:
        info = np.iinfo(np.int32)
        if t.numel() and (int(t.min()) < info.min or int(t.max()) > info.max):
            raise TorchImportError("an int64 weight holds values outside i32")
        return t.numpy().astype(np.int32)
    return t.numpy()
