"""Runs the lit suite (IR round trips, verifier diagnostics, pass tests) under
pytest, so one command runs every test and fails on any failure."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent


def test_lit_suite() -> None:
    lit = shutil.which("lit")
    assert lit, "lit is not installed (pip install lit)"
    # `python -m lit` fails with lit 23.1.5; call its script.
    proc = subprocess.run(
        [lit, "-v", "--xunit-xml-output", os.devnull, str(TEST_DIR)],
        capture_output=True,
        text=True,
    )
    sys.stdout.write(proc.stdout[-20000:])
    sys.stderr.write(proc.stderr[-20000:])
    assert proc.returncode == 0, "lit reported failures (see output above)"
    assert "Passed" in proc.stdout, "lit ran no test"
