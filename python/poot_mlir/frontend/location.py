"""Source locations of the user's code, attached to every emitted op.

Borrowed from Triton: a diagnostic about a traced op (a verifier error, a
refused lowering, a matcher remark) should point at the line of the model
that made it, not at the frontend's own code. The user's frame is the first
one on the stack whose module is not part of `poot_mlir.frontend`, so a
composite such as `ops.attention_masked` stamps all of its primitives with
the line that called it.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from types import FrameType
from typing import Iterator

from .. import ir

_PACKAGE = __name__.rpartition(".")[0]  # "poot_mlir.frontend"

# A source position that stands in for the calling frame: an importer that
# replays another program (torch.export's FX graph) stamps each op with the
# line of the model that made it, not with the importer's caller.
_OVERRIDE: list[tuple[str, int, int]] = []


@contextlib.contextmanager
def source_position(file: str, line: int, column: int = 1) -> Iterator[None]:
    """Within the block, every emitted op is located at `file:line:column`."""
    _OVERRIDE.append((file, line, column))
    try:
        yield
    finally:
        _OVERRIDE.pop()


def _is_frontend(frame: FrameType) -> bool:
    module = frame.f_globals.get("__name__", "")
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


def user_frame() -> FrameType | None:
    """The innermost frame outside the frontend package (None if none)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _is_frontend(frame):
        frame = frame.f_back
    return frame


def _column(frame: FrameType) -> int:
    """1-based column of the frame's current instruction (1 if unknown)."""
    try:
        positions = frame.f_code.co_positions()
        _, _, col, _ = next(itertools.islice(positions, frame.f_lasti // 2, None))
    except (AttributeError, StopIteration, ValueError):
        return 1
    return (col or 0) + 1


def user_location(context: ir.Context) -> ir.Location:
    """`loc("file.py":line:col)` of the user's calling frame (or of the
    innermost `source_position` block)."""
    if _OVERRIDE:
        file, line, column = _OVERRIDE[-1]
        return ir.Location.file(file, line, column, context=context)
    frame = user_frame()
    if frame is None:
        return ir.Location.unknown(context)
    return ir.Location.file(
        frame.f_code.co_filename, frame.f_lineno, _column(frame), context=context
    )
