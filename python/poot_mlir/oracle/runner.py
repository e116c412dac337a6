"""`run` and `check_bind`: one step of a function, checked, bound and executed.

A step either completes or publishes nothing: the inputs are bound and
checked first (`BindError`), the program runs, and only when every
`#poot.slot<validation>` output is true does a `Result` come back
(`ValidationFailure` otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ValidationFailure
from . import binding, interpreter
from .binding import Inputs
from .program import Program, load


@dataclass
class Result:
    """What a step produced.

    `outputs` holds every function result in order; `named` maps each
    result's `poot.name` to its array; `state` maps each state slot name to
    the state result that replaces it.
    """

    outputs: list[np.ndarray]
    named: dict[str, np.ndarray] = field(default_factory=dict)
    state: dict[str, np.ndarray] = field(default_factory=dict)


def check_validation(program: Program, outputs: list[np.ndarray]) -> None:
    """Raise ValidationFailure when a validation output is false."""
    for port, value in zip(program.results, outputs):
        if port.slot == "validation" and not bool(np.all(value)):
            raise ValidationFailure(
                f"validation output {port.describe()} of @{program.name} is false: "
                "the step failed and publishes no state"
            )


def package(program: Program, outputs: list[np.ndarray]) -> Result:
    """Sort a step's outputs into a `Result`."""
    named = {p.name: v for p, v in zip(program.results, outputs) if p.name is not None}
    state = {p.state: v for p, v in zip(program.results, outputs) if p.state is not None}
    return Result(outputs, named, state)


def run_program(
    program: Program,
    inputs: Inputs,
    *,
    reference: bool = False,
    carried: "dict[int, np.ndarray] | None" = None,
    all_reduce: "interpreter.Collective | None" = None,
) -> Result:
    """Bind, execute and validate one step of an already loaded program.

    `carried` (argument index -> array) replaces bound arguments after the
    bind check: a reference Session carries its state in float64 between
    steps, while the binder checks the declared types. `all_reduce` is the
    rank's collective (see `run`)."""
    arrays = binding.bind(program, inputs)
    for index, array in (carried or {}).items():
        arrays[index] = array
    outputs = interpreter.execute(program, arrays, reference, all_reduce)
    check_validation(program, outputs)
    return package(program, outputs)


def run(
    module: Any,
    inputs: Inputs,
    *,
    func: str | None = None,
    reference: bool = False,
    all_reduce: "interpreter.Collective | None" = None,
) -> Result:
    """Interpret one step of a function with numpy.

    `module` is a `poot_mlir.ir.Module`, a `func.func` op or MLIR text;
    `inputs` is a dict keyed by each argument's `poot.name` (else `arg{i}`;
    a state argument also answers to its state name) or a list in argument
    order. With `reference=True` every float op computes in float64 and the
    float outputs are float64; otherwise each op computes in its own dtype.

    `all_reduce` makes a tensor-parallel rank program's `poot.all_reduce`
    sum over its peers: it gets this rank's operand and returns the sum over
    every rank (`oracle.Lockstep(n).member(rank)` for n rank programs run in
    threads). Without it `poot.all_reduce` is the identity (a world of one).
    """
    return run_program(load(module, func), inputs, reference=reference, all_reduce=all_reduce)


def check_bind(module_or_func: Any, inputs: Inputs, *, func: str | None = None) -> list[np.ndarray]:
    """Refuse bad inputs exactly as `run` would, without running anything.

    Returns the bound argument arrays in order (shape and dtype checked).
    """
    return binding.bind(load(module_or_func, func), inputs)
