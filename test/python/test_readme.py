"""Every code block of README.md runs as written.

The ```python and ```bash blocks are run in README order, in one fresh
temporary directory, the way a reader pastes them: the Python blocks in one
Python session (names carry over from block to block, and the source file of
their code is `README.md` at its real line numbers), each bash block in
`bash -euo pipefail` between them. A block may be skipped only with a marker
on the line above its fence, giving the reason:

    <!-- readme-test: skip (installs the package) -->

(for the install, the test suite itself, and the developer build). Other
fences must say what they are (```text for sample output and diagrams).

Sample output the text promises is checked too: a ```text block marked

    <!-- readme-test: output of the block above -->

must appear in what the nearest runnable block before it printed: each
sample line, in order, matches an output line (numbers may differ, `...`
stands for any text or, alone on a line, for any lines).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
_FENCE = re.compile(r"^```(\S*)\s*$")
_SKIP = re.compile(r"^<!-- readme-test: skip \((.+)\) -->$")
_OUTPUT = "<!-- readme-test: output of the block above -->"
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


@dataclass
class Block:
    lang: str
    line: int  # 1-based line of the first code line
    code: str
    skip: str | None
    sample: bool = False  # a ```text block of the block above's output


def blocks(text: str) -> list[Block]:
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        lang = match.group(1)
        marker = _SKIP.match(lines[i - 1]) if i else None
        start, i = i + 1, i + 1
        while i < len(lines) and lines[i] != "```":
            i += 1
        sample = lang == "text" and i > 1 and lines[start - 2] == _OUTPUT
        found.append(Block(lang, start + 1, "\n".join(lines[start:i]) + "\n", marker and marker.group(1),
                           sample))
        i += 1
    return found


# Runs the blocks in one process: Python blocks share one namespace, bash
# blocks run in between; prints one JSON line per block.
_DRIVER = r"""
import json, subprocess, sys, traceback
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for b in blocks:
    print(f"--- README.md:{b['line']} ({b['lang']})", flush=True)
    if b["lang"] == "python":
        code = "\n" * (b["line"] - 1) + b["code"]  # README line numbers
        try:
            exec(compile(code, "README.md", "exec"), ns)
        except BaseException:
            traceback.print_exc()
            print(json.dumps({"failed": b["line"]}), flush=True)
            raise SystemExit(1)
    else:
        sys.stdout.flush()
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", b["code"]])
        if proc.returncode:
            print(json.dumps({"failed": b["line"], "rc": proc.returncode}), flush=True)
            raise SystemExit(1)
print(json.dumps({"ran": len(blocks)}), flush=True)
"""


def sample_pattern(line: str) -> re.Pattern:
    """A sample output line as a pattern: its numbers any numbers, `...`
    any text, runs of blanks any blanks; matched at the line's start."""
    pattern = ""
    for piece in re.split(r"(\.\.\.|\s+)", line.strip()):
        if piece == "...":
            pattern += ".*"
        elif piece.strip() == "" and piece:
            pattern += r"\s+"
        else:
            last = 0
            for number in _NUMBER.finditer(piece):
                pattern += re.escape(piece[last:number.start()]) + _NUMBER.pattern
                last = number.end()
            pattern += re.escape(piece[last:])
    return re.compile(r"\s*" + pattern)


def missing_sample_lines(sample: str, output: str) -> list[str]:
    """The sample's lines that the output does not print, in order."""
    lines, at, missing = output.splitlines(), 0, []
    for want in sample.splitlines():
        if not want.strip() or want.strip() == "...":
            continue
        pattern = sample_pattern(want)
        hit = next((i for i in range(at, len(lines)) if pattern.match(lines[i])), None)
        if hit is None:
            missing.append(want)
        else:
            at = hit + 1
    return missing


def test_sample_matching_is_strict_enough() -> None:
    sample = "compiled for the CPU in 0.75 s\nstep   0  token  87    1.262 ms/step\n...\ngenerated [87, ...]; ok"
    good = "compiled for the CPU in 1.02 s (cache)\nstep   0  token   5    0.3 ms/step\nstep 1\ngenerated [5, 6]; ok"
    assert missing_sample_lines(sample, good) == []
    assert missing_sample_lines(sample, good.replace("CPU", "GPU")) == ["compiled for the CPU in 0.75 s"]
    assert missing_sample_lines(sample, "generated [5]; ok\ncompiled for the CPU in 1 s") != []


def test_every_block_is_runnable_or_marked() -> None:
    found = blocks(README.read_text())
    assert found, "README.md has no code blocks"
    for block in found:
        assert block.lang in ("python", "bash", "text"), (
            f"README.md:{block.line}: fence ```{block.lang} -- use python, bash or text"
        )
        if block.skip:
            assert block.lang == "bash", f"README.md:{block.line}: only bash blocks may be skipped"
    runnable = [b for b in found if b.lang in ("python", "bash") and not b.skip]
    assert any("poot_mlir.examples.decode" in b.code for b in runnable), "the main job must run"
    assert any(b.code.lstrip().startswith("poot-opt") or "\npoot-opt" in b.code for b in runnable)
    assert any(b.lang == "python" for b in runnable)
    samples = [b for b in found if b.sample]
    assert samples, "the main job's sample output must be marked and checked"


def test_readme_blocks_run(tmp_path: Path) -> None:
    runnable = [
        {"lang": b.lang, "line": b.line, "code": b.code}
        for b in blocks(README.read_text())
        if b.lang in ("python", "bash") and not b.skip
    ]
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(runnable))
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ)
    # The blocks run in a temp dir: a dev tree's relative PYTHONPATH /
    # POOT_OPT (build/python_packages, build/bin/poot-opt) must still hold.
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    # `python` and `poot-opt` as a reader has them: this interpreter's bin
    # folder (a venv's), and the tool the other tests use (POOT_OPT in a dev
    # tree, else the installed console script).
    tools = tmp_path / "bin"
    tools.mkdir()
    if os.environ.get("POOT_OPT"):
        (tools / "poot-opt").symlink_to(os.path.abspath(os.environ["POOT_OPT"]))
    # In a build tree (no console scripts), poot-compile / poot-run are the
    # module they run.
    for name in ("poot-compile", "poot-run"):
        if not (Path(sys.executable).parent / name).exists() and shutil.which(name) is None:
            shim = tools / name
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m poot_mlir.cli '
                            f'{name.removeprefix("poot-")} "$@"\n')
            shim.chmod(0o755)
    env["PATH"] = os.pathsep.join([str(tools), str(Path(sys.executable).parent), env.get("PATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(spec)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    print(output[-20000:])
    assert proc.returncode == 0, f"a README block failed:\n{output[-8000:]}"
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"ran": len(runnable)}
    # What each block printed, by its first line; then the promised samples.
    printed: dict[int, str] = {}
    for chunk in proc.stdout.split("--- README.md:")[1:]:
        head, _, body = chunk.partition("\n")
        printed[int(head.split()[0])] = body
    found = blocks(README.read_text())
    for index, block in enumerate(found):
        if not block.sample:
            continue
        source = next(b for b in reversed(found[:index]) if b.lang in ("python", "bash") and not b.skip)
        missing = missing_sample_lines(block.code, printed.get(source.line, ""))
        assert not missing, (
            f"README.md:{block.line}: the block at line {source.line} did not print {missing}; "
            f"it printed:\n{printed.get(source.line, '')}"
        )
