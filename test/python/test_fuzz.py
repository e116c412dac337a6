"""A bounded, seeded mutation-fuzz campaign (tools/poot-fuzz): no mutant of
the project's own IR tests (the .mlir files and the modules test/Frontend
prints), run through a random pipeline of poot's passes, crashes or hangs
poot-opt. A long campaign is the same tool with more
mutants (docs/fuzzing.md).

The harness itself is checked on a stand-in poot-opt that crashes on a
marker, so a campaign that found nothing really looked.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "poot-fuzz"))

import poot_fuzz  # noqa: E402

# The CI campaign: fixed seed (reproducible), a few thousand mutants on two
# processes. POOT_FUZZ_MUTANTS / POOT_FUZZ_SEED widen it locally.
MUTANTS = int(os.environ.get("POOT_FUZZ_MUTANTS", "5000"))
SEED = int(os.environ.get("POOT_FUZZ_SEED", "11"))


def _poot_opt() -> str:
    found = os.environ.get("POOT_OPT") or shutil.which("poot-opt")
    assert found, "poot-opt not found: install the package or set POOT_OPT"
    return found


def test_campaign_finds_no_crash_or_hang(tmp_path: Path) -> None:
    report = poot_fuzz.campaign(
        _poot_opt(), seed=SEED, mutants=MUTANTS, jobs=2, out=tmp_path / "findings",
        frontend=poot_fuzz.TEST_DIR / "Frontend",
    )
    print(report.summary())
    assert report.mutants == MUTANTS
    details = "\n".join(
        f"{sig}\n  pipeline: {group[0].pipeline}\n  input:\n{textwrap.indent(group[0].text, '    ')}"
        for sig, group in report.findings.items()
    )
    assert not report.findings, f"{report.summary()}\n{details}"


def test_campaign_is_reproducible() -> None:
    corpus = poot_fuzz.load_corpus([poot_fuzz.TEST_DIR])
    passes = [poot_fuzz.PassInfo("poot-plan-attention", {"max-grid-x": "long"}, {}),
              poot_fuzz.PassInfo("cse", {}, {})]
    runs = [
        [(b.pipeline, b.mutants) for b in
         poot_fuzz.make_batches(random.Random(5), corpus, passes, 60, 25)]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert len(corpus) > 100


FAKE = """#!/usr/bin/env python3
import os, signal, sys
args = sys.argv[1:]
if "--help" in args:
    print("      --poot-fake                     -   A pass\\n"
          "        --mode=<value>                - How\\n"
          "    =fast                             -   Fast\\n"
          "    =slow                             -   Slow\\n"
          "  --other-tool-option                 - Not a pass")
    sys.exit(0)
text = sys.stdin.read()
if "poot.crash_me" in text:
    os.kill(os.getpid(), signal.SIGSEGV)
if "poot.assert_me" in text:
    sys.stderr.write("poot-opt: File.cpp:1: f(): Assertion `x && \\"boom\\"' failed.\\n"
                     "PLEASE submit a bug report\\n #0 0x0 mlir::poot::boom() Fake.cpp:0:0\\n")
    os.kill(os.getpid(), signal.SIGABRT)
if "poot.hang_me" in text:
    import time; time.sleep(60)
sys.exit(1 if "error" in text else 0)
"""


def test_harness_finds_and_isolates_crashes(tmp_path: Path) -> None:
    """Crashing, aborting and hanging mutants hidden among harmless ones in
    one batch are each isolated (the rest of the batch is not blamed) and
    grouped by signature."""
    fake = tmp_path / "poot-opt"
    fake.write_text(FAKE)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (passes,) = poot_fuzz.registered_passes(str(fake))
    assert (passes.name, passes.options, passes.enums) == ("poot-fake", {"mode": "enum"}, {"mode": ["fast", "slow"]})
    ok = ["func.func @f() { return }\n"] * 5
    mutants = ok[:2] + ["poot.crash_me\n"] + ok[2:4] + ["poot.assert_me\n", "poot.hang_me\n"] + ok[4:]
    found = poot_fuzz.run_batch(str(fake), poot_fuzz.Batch("builtin.module(poot-fake)", mutants),
                                timeout=1.0, memory=1 << 30, allowance=0.2)
    kinds = sorted((f.kind, f.text.strip()) for f in found)
    assert kinds == [("signal", "poot.assert_me"), ("signal", "poot.crash_me"),
                     ("timeout", "poot.hang_me")]
    sigs = {f.text.strip(): f.signature for f in found}
    assert sigs["poot.assert_me"] == "signal: Assertion `x && \"boom\"' @ mlir::poot::boom"
