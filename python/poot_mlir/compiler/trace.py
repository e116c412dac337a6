"""IR dumps and pass timing for the pipelines the compiler runs.

What `poot-opt --mlir-print-ir-after=PASS` and `--mlir-timing` give on the
command line, from Python:

    trace = PassTrace(print_ir_after=["poot-plan-attention"], timing=True)
    compile_cpu(module, "out", trace=trace)       # also compile_gpu, fuse_attention
    print(trace.ir_after("poot-plan-attention"))  # the module after that pass
    print(trace.timing_report)                    # MLIR's execution time report
    trace.pass_times()                            # [(pass name, seconds), ...]

It uses upstream's instrumentation (`PassManager.enable_ir_printing`,
`enable_timing`). Both write to the process's stderr -- the IR after each pass
as it runs, the timing report when the pass manager is destroyed -- so while a
traced pipeline runs, file descriptor 2 goes to a temporary file that is then
read back; whatever else was written there meanwhile is passed on to stderr.
IR printing is at module scope, which MLIR allows only with the context's
multithreading off: it is switched off for the traced run.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Sequence

# `// -----// IR Dump After CSE (cse) ('builtin.module' operation) //----- //`
_DUMP = re.compile(
    r"^// -----// IR Dump After (.*?)(?: \(([^()']*)\))?(?: \('[^']*' operation[^)]*\))? //----- //$",
    re.M,
)
_TIMING_START = re.compile(r"^===-+===\n\s*\.\.\. Execution time report \.\.\.", re.M)
_TIMING_ROW = re.compile(r"^\s+(\d+\.\d+) \(\s*[\d.]+%\)\s+(\S.*)$")


@dataclass(frozen=True)
class IrDump:
    """The IR printed after one pass of one pipeline run."""

    pipeline: str  # the textual pipeline that ran
    pass_name: str  # e.g. "Canonicalizer"
    argument: str  # its command-line flag, e.g. "canonicalize"
    ir: str


@dataclass
class PassTrace:
    """Ask a compile for IR dumps and pass timings; the results land here.

    `print_ir_after`: pass flags ("poot-plan-attention", "canonicalize",
    ...) whose output IR to keep, or True for every pass. `timing`: keep
    MLIR's execution time report of every pipeline run."""

    print_ir_after: "Sequence[str] | bool" = ()
    timing: bool = False
    dumps: list[IrDump] = field(default_factory=list)
    timing_reports: list[str] = field(default_factory=list)
    pipelines: list[str] = field(default_factory=list)
    """Every pipeline run under this trace, in order."""

    @property
    def wants_ir(self) -> bool:
        return self.print_ir_after is True or bool(self.print_ir_after)

    def _keeps(self, argument: str) -> bool:
        return self.print_ir_after is True or argument in self.print_ir_after

    def ir_after(self, argument: str) -> str:
        """The IR after the last run of the pass `argument`; KeyError if
        it did not run (or was not asked for)."""
        for dump in reversed(self.dumps):
            if dump.argument == argument:
                return dump.ir
        ran = sorted({d.argument for d in self.dumps})
        raise KeyError(f"no IR kept after {argument!r} (kept: {ran})")

    @property
    def timing_report(self) -> str:
        """Every timing report, one per pipeline run, in order."""
        return "\n".join(self.timing_reports)

    def pass_times(self) -> list[tuple[str, float]]:
        """(name, wall seconds) of every pass and nested pipeline of every
        timing report, in report order (a nested pass after its pipeline);
        the reports' `Rest` and `Total` rows are left out."""
        rows = []
        for report in self.timing_reports:
            for line in report.splitlines():
                match = _TIMING_ROW.match(line)
                if match and match.group(2).strip() not in ("Rest", "Total"):
                    rows.append((match.group(2).strip(), float(match.group(1))))
        return rows

    def _record(self, pipeline: str, text: str) -> str:
        """Take the dumps and the timing report out of captured stderr;
        returns what is left (other output, to be passed on)."""
        self.pipelines.append(pipeline)
        timing = _TIMING_START.search(text)
        if timing:
            # The report starts at the separator line before the title.
            self.timing_reports.append(f"pipeline {pipeline}\n{text[timing.start():].rstrip()}")
            text = text[: timing.start()]
        heads = list(_DUMP.finditer(text))
        rest = text[: heads[0].start()] if heads else text
        for head, following in zip(heads, heads[1:] + [None]):
            body = text[head.end() : following.start() if following else len(text)]
            argument = head.group(2) or head.group(1)
            if self._keeps(argument):
                self.dumps.append(IrDump(pipeline, head.group(1), argument, body.strip("\n") + "\n"))
        return rest


@contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Redirect file descriptor 2 to a temporary file; the yielded list gets
    its text on exit."""
    sys.stderr.flush()
    saved = os.dup(2)
    holder: list[str] = []
    with tempfile.TemporaryFile(mode="w+b", prefix="poot-trace-") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield holder
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            holder.append(sink.read().decode("utf-8", errors="replace"))


def configure(pm, trace: PassTrace) -> None:
    """Turn on the pass manager's IR printing / timing that `trace` asks for."""
    if trace.wants_ir:
        pm.enable_ir_printing(print_after_all=True, print_module_scope=True)
    if trace.timing:
        pm.enable_timing()
