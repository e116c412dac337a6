"""`Session`: a function stepped repeatedly over state it carries.

The session owns the state arrays (keyed by state slot name). A step binds
the caller's other inputs beside them, runs, and publishes the new state only
when the whole step succeeded, so a refused or failed step leaves the state
exactly as it was: the driver's no-partial-publish rule. The carried arrays
are read-only (`state` hands them out; a step's `result.state` holds its own
copies), so nothing a caller writes changes what the next step reads.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import BindError
from ..runtime import binding
from .program import load
from .interpreter import Collective
from .runner import Result, run_program


def _frozen_copy(value: Any) -> np.ndarray:
    """A private read-only copy of `value`."""
    array = np.array(value, copy=True)
    array.flags.writeable = False
    return array


class Session:
    """Step a function of `module` with state carried between steps,
    starting from the initial value of every state (a missing one is a
    MissingStateError naming it)."""

    def __init__(
        self,
        module: Any,
        state: Mapping[str, np.ndarray] | None = None,
        *,
        func: str | None = None,
        reference: bool = False,
        all_reduce: "Collective | None" = None,
    ) -> None:
        self.program = load(module, func)
        self.reference = reference
        # A rank program's collective (oracle.run's `all_reduce`); None: a world of one.
        self.all_reduce = all_reduce
        state = dict(state or {})
        # Every state, and nothing else (the runtimes' rule: MissingStateError).
        signature = self.program.signature
        specs = {p.state: p.spec() for p in signature.args if p.state is not None}
        binding.check_session_state(signature.state_names, state, specs)
        # Private copies: the caller mutating its arrays must not change ours.
        self._state = {name: _frozen_copy(value) for name, value in state.items()}

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The current state arrays (read-only), by state slot name."""
        return dict(self._state)

    def step(self, inputs: Mapping[str, Any]) -> Result:
        """Run one step. `inputs` maps the non-state arguments (by poot.name
        or arg{i}) to values; the state arguments come from the session. On
        success the state results replace the session's state; on a
        BindError or a ValidationFailure nothing changes."""
        if not isinstance(inputs, Mapping):
            raise BindError(
                "Session.step takes a mapping from argument names to values (the state "
                f"comes from the session), got {type(inputs).__name__}"
            )
        bound: dict[str, Any] = dict(inputs)
        carried: dict[int, np.ndarray] = {}
        for index, port in enumerate(self.program.args):
            if port.state is None:
                continue
            if port.key in bound or port.state in bound:
                raise BindError(
                    f"state argument {port.describe()} comes from the session, not the inputs"
                )
            if port.state in self._state:
                value = self._state[port.state]
                if self.reference and value.dtype != port.spec.dtype:
                    # Reference state is carried in float64: the binder checks
                    # it at the declared type, execution gets the wide values.
                    carried[index] = value
                    value = value.astype(port.spec.dtype)
                bound[port.key] = value
        result = run_program(
            self.program, bound, reference=self.reference, carried=carried,
            all_reduce=self.all_reduce,
        )
        published = dict(self._state)
        # Copies: a state result may be an input array (a pass-through).
        published.update({k: _frozen_copy(v) for k, v in result.state.items()})
        self._state = published
        return result
