#!/usr/bin/env python3
"""Mutation fuzzer for poot-opt: no input may crash it.

Seeds are the project's own IR tests (every `.mlir` file under `test/`, split
at `// -----`). Each mutant is a seed with one to a few random textual or
structural edits (an integer, a dimension or an element type changed
everywhere or once, an attribute dropped, a line deleted, duplicated or
borrowed from another seed, an SSA use redirected, a keyword swapped, a byte
flipped), run through a random pipeline built from poot-opt's own registered
poot passes and pipelines (their option names and enum values are read from
`poot-opt --help`, and random or malformed option values are mixed in).

A diagnostic, a failed verification or a failed pass is fine: that is how
bad input must end. A *finding* is a process killed by a signal, a stack dump
("PLEASE submit a bug report"), an exit status other than 0 or 1, or a run
past the time limit. Findings are grouped by signature (the assertion or
fatal-error text, else the top poot frames of the stack dump) and each
group's smallest input is written out with its command line as the first line.

Mutants run in batches through `poot-opt -split-input-file` (one process per
batch, one pipeline per batch); a batch that crashes or hangs is bisected down
to the mutants that do it on their own.

    python tools/poot-fuzz/poot_fuzz.py --poot-opt build/bin/poot-opt \
        --mutants 100000 --jobs 2 --seed 1 --out fuzz-out

Only the standard library is used, so the script runs wherever poot-opt does.
See docs/fuzzing.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence

SPLIT = "// -----"
TEST_DIR = Path(__file__).resolve().parents[2] / "test"

# --- the corpus -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Seed:
    """One seed input; `negative` when its test expects a diagnostic (most
    mutants start from seeds that verify, so they reach the passes)."""

    text: str
    negative: bool = False


def load_corpus(roots: Iterable[Path]) -> list[Seed]:
    """Every `.mlir` file under `roots`, split into its `// -----` chunks,
    with whole-line comments dropped (RUN/CHECK lines only cost bytes)."""
    seeds: list[Seed] = []
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*.mlir"))
        for path in files:
            for chunk in path.read_text().split(SPLIT):
                lines = [ln for ln in chunk.splitlines() if not ln.lstrip().startswith("//")]
                text = "\n".join(lines).strip()
                if text:
                    seeds.append(Seed(text + "\n", "expected-error" in chunk))
    return seeds


def frontend_seeds(folder: Path) -> list[Seed]:
    """The modules the frontend tests print (`test/Frontend/*.py`): the IR
    real traced models produce (multi-layer live decodes, paged maps), which
    hand-written tests do not always cover. Runs each script in-process, so
    poot_mlir must be importable."""
    import contextlib
    import io
    import runpy

    seeds: list[Seed] = []
    for script in sorted(folder.glob("*.py")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(script), run_name="__main__")
        for chunk in re.split(r"(?m)^(?=module \{|func\.func )", out.getvalue()):
            if chunk.strip():
                seeds.append(Seed(chunk.strip() + "\n"))
    return seeds


# --- the registered pipelines ---------------------------------------------------


@dataclasses.dataclass
class PassInfo:
    """One registered pass or pipeline and its options, from `--help`."""

    name: str
    options: dict[str, str]  # option name -> "<long>", "<string>", ... or "enum"
    enums: dict[str, list[str]]  # option name -> its values (enum options)
    anchor: str = "builtin.module"  # the op it runs on (func.func passes nest)


# Upstream passes poot-opt registers only to build its pipelines from them are
# left out: the harness looks for crashes in poot code and in the pipelines
# poot assembles, not in random upstream passes run on poot IR.
_OWN = re.compile(r"^(poot-|convert-poot-)")
_EXTRA = ("canonicalize", "cse")


def registered_passes(poot_opt: str) -> list[PassInfo]:
    """poot's passes and pipelines with their options, as `--help` lists them."""
    text = subprocess.run(
        [poot_opt, "--help"], capture_output=True, text=True, check=True
    ).stdout
    passes: list[PassInfo] = []
    current: PassInfo | None = None
    last_option: str | None = None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        match = re.match(r"^--([\w-]+)(=<(\w+)>)?\s", body + " ")
        if indent <= 6 and match:
            name = match.group(1)
            if _OWN.match(name) or name in _EXTRA:
                current = PassInfo(name, {}, {})
                passes.append(current)
            else:
                current = None
            last_option = None
            continue
        if current is None:
            continue
        if match and indent > 6:
            last_option = match.group(1)
            current.options[last_option] = match.group(3) or "flag"
            continue
        value = re.match(r"^=([\w.-]+)\s", body + " ")
        if value and last_option is not None:
            current.options[last_option] = "enum"
            current.enums.setdefault(last_option, []).append(value.group(1))
    for info in passes:
        info.anchor = _anchor(poot_opt, info.name)
    return passes


def _anchor(poot_opt: str, name: str) -> str:
    """The op a pass is restricted to, from the parser's complaint when it is
    added to a module pass manager (`--help` does not say)."""
    proc = subprocess.run(
        [poot_opt, f"--pass-pipeline=builtin.module({name})", "-o", os.devnull, "-"],
        input="", capture_output=True, text=True,
    )
    match = re.search(r"restricted to '([\w.]+)'", proc.stderr)
    return match.group(1) if match else "builtin.module"


# Option values. Most parse (a pipeline that does not parse runs nothing, so
# it would waste its whole batch); the edge values among them must end in
# diagnostics from the passes. A few do not parse, which must be a
# diagnostic from the pipeline parser.
_INTS = ("0", "1", "-1", "2", "3", "7", "64", "128", "1024", "65535", "2147483647",
         "2147483648", "-2147483648", "4611686018427387904", "9223372036854775807")
_BAD_INTS = ("99999999999999999999", "cpu", "", "1.5")
_STRINGS = {
    "chip": ("sm_90", "sm_80", "sm_100a", "gfx942", "gfx90a", "sm_90}", "", "gfx"),
    "entry": ("", "step", "missing", "a b"),
    "libdevice": ("", "/nonexistent/libdevice.10.bc"),
}
_JUNK = ("", "gpu", "{", "}", "a b", "x=y", "sm_90}")


def _option_value(rng: random.Random, name: str, kind: str, enum: Sequence[str]) -> str:
    valid = rng.random() < 0.93
    if kind == "enum":
        return rng.choice(list(enum)) if valid else rng.choice(_JUNK)
    if kind in ("long", "int", "uint", "ulong"):
        return rng.choice(_INTS) if valid else rng.choice(_BAD_INTS)
    if kind in ("flag", "boolean"):
        return rng.choice(("true", "false", "1", "0")) if valid else "maybe"
    return rng.choice(_STRINGS.get(name, _JUNK)) if valid else rng.choice(_JUNK)


def random_pipeline(rng: random.Random, passes: Sequence[PassInfo]) -> str:
    """A `--pass-pipeline` text: one to three passes, some options set. Now
    and then the text itself is malformed (an unbalanced brace, an unknown
    option), which must be a diagnostic too."""
    chosen = [rng.choice(passes) for _ in range(rng.choice((1, 1, 1, 2, 2, 3)))]
    parts = []
    for info in chosen:
        opts = []
        for name, kind in info.options.items():
            if rng.random() < 0.3:
                opts.append(f"{name}={_option_value(rng, name, kind, info.enums.get(name, ()))}")
        if rng.random() < 0.01:
            opts.append(rng.choice(("bogus=1", "}", "{", "=", "target")))
        text = info.name + ("{" + " ".join(opts) + "}" if opts else "")
        # Mostly nested where the pass runs; now and then not (a diagnostic).
        if info.anchor != "builtin.module" and rng.random() < 0.95:
            text = f"{info.anchor}({text})"
        parts.append(text)
    text = ",".join(parts)
    if rng.random() < 0.01:
        cut = rng.randrange(len(text) + 1)
        text = text[:cut] + rng.choice("{}(),= ") + text[cut:]
    return f"builtin.module({text})"


# --- mutations ------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.%#^@])-?\d+(?![\w.])")
_DIMS = re.compile(r"tensor<((?:\d+x)+)")
_ELEMENTS = ("f32", "f16", "bf16", "f64", "i32", "i1", "i64", "i8", "index")
_ELEMENT = re.compile(r"\b(f32|f16|bf16|f64|i32|i1)\b")
_SSA_USE = re.compile(r"(?<=[\s(,\[])%[\w]+(?:#\d+)?")
_ATTR_ENTRY = re.compile(r"(?:,\s*)?\b[\w.]+ = (?:#[\w.]+<[^<>]*>|[^,{}]+?)(?=[,}])")
_WORDS = ("max", "min", "sum", "lt", "le", "gt", "ge", "eq", "ne", "keepdim", "state",
          "pos", "slot_map", "write_map", "validation", "axis", "dim", "perm", "k",
          "block_size", "min", "max", "scale", "softcap")
_NUMBERS = (0, 1, -1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 63, 64, 65, 127, 128, 4096,
            65535, 65536, 2**31 - 1, 2**31, -(2**31), 2**32, 2**63 - 1, -(2**63))


def _new_number(rng: random.Random, old: int) -> int:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(_NUMBERS)
    if roll < 0.8:
        return old + rng.choice((-2, -1, 1, 2))
    return rng.randint(-100, 100)


def mutate_number(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    spots = list(_NUMBER.finditer(text))
    if not spots:
        return text
    m = rng.choice(spots)
    return text[: m.start()] + str(_new_number(rng, int(m.group()))) + text[m.end() :]


def mutate_dim(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    """Change one dimension of one tensor type, or of every occurrence of that
    type (which keeps the program consistent more often, so it reaches the
    passes)."""
    spots = list(_DIMS.finditer(text))
    if not spots:
        return text
    m = rng.choice(spots)
    dims = m.group(1)[:-1].split("x")
    i = rng.randrange(len(dims))
    dims[i] = str(rng.choice((0, 1, 2, 3, 5, 8, 16, 17, 64, 129, int(dims[i]) * 2)))
    new = "tensor<" + "x".join(dims) + "x"
    if rng.random() < 0.6:
        return text.replace(m.group(0), new)
    return text[: m.start()] + new + text[m.end() :]


def rescale_dim(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    """Replace one dimension size by another in every tensor type of the
    seed (`8` -> `0` everywhere): the types stay consistent with each other,
    so such a mutant often verifies and runs deep into the pipelines."""
    sizes = sorted({d for m in _DIMS.finditer(text) for d in m.group(1)[:-1].split("x")})
    if not sizes:
        return text
    old = rng.choice(sizes)
    new = str(rng.choice((0, 1, 2, 3, 5, 7, 8, 16, 33, 64, 128, 4096, int(old) + 1)))

    def retype(m: re.Match) -> str:
        dims = [new if d == old else d for d in m.group(1)[:-1].split("x")]
        return "tensor<" + "x".join(dims) + "x"

    return _DIMS.sub(retype, text)


_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d*(?:[eE][-+]?\d+)?")
_FLOATS = ("0.0", "-0.0", "1.0", "-1.0", "1.0e-45", "3.4e+38", "1.0e+300", "-1.0e+300",
           "0x7F800000", "0xFF800000", "0x7FC00000", "1.0e-300")


def mutate_float(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    """A float literal (a scale, a softcap, a constant) becomes an edge value:
    zero, tiny, huge, inf, nan. The types stay valid."""
    spots = list(_FLOAT.finditer(text))
    if not spots:
        return text
    m = rng.choice(spots)
    return text[: m.start()] + rng.choice(_FLOATS) + text[m.end() :]


_RANGE_ATTR = re.compile(r"#poot\.range<\s*(-?\d+)\s*,\s*(-?\d+)\s*>")


def mutate_range(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    """A declared `#poot.range` gets other bounds (empty, negative, past i32,
    off by one)."""
    spots = list(_RANGE_ATTR.finditer(text))
    if not spots:
        return text
    m = rng.choice(spots)
    lo, hi = int(m.group(1)), int(m.group(2))
    lo, hi = rng.choice([
        (lo, hi + 1), (lo - 1, hi), (lo + 1, hi - 1), (hi, lo), (-1, hi), (0, 0),
        (lo, 2**31 - 1), (-(2**31), hi), (lo, 2**31), (0, 2**40),
    ])
    return text[: m.start()] + f"#poot.range<{lo}, {hi}>" + text[m.end() :]


def mutate_element(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    spots = list(_ELEMENT.finditer(text))
    if not spots:
        return text
    m = rng.choice(spots)
    new = rng.choice(_ELEMENTS)
    if rng.random() < 0.5:
        return re.sub(rf"\b{m.group()}\b(?=>)", new, text)
    return text[: m.start()] + new + text[m.end() :]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def delete_line(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    lines = _lines(text)
    if len(lines) < 2:
        return text
    del lines[rng.randrange(len(lines))]
    return "".join(lines)


def duplicate_line(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "".join(lines)


def swap_lines(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    lines = _lines(text)
    if len(lines) < 2:
        return text
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def borrow_line(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    """Insert an op line from another seed (its SSA names may or may not
    resolve here)."""
    donor = [ln for ln in _lines(rng.choice(corpus)) if " = poot." in ln]
    if not donor:
        return text
    lines = _lines(text)
    lines.insert(rng.randrange(1, len(lines) + 1) if len(lines) > 1 else 0, rng.choice(donor))
    return "".join(lines)


def redirect_use(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    """Make one operand use name another SSA value of the same function."""
    uses = list(_SSA_USE.finditer(text))
    names = sorted({u.group() for u in uses})
    if len(names) < 2:
        return text
    m = rng.choice(uses)
    return text[: m.start()] + rng.choice(names) + text[m.end() :]


def drop_attribute(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    spots = [m for m in _ATTR_ENTRY.finditer(text) if "{" not in m.group()]
    if not spots:
        return text
    m = rng.choice(spots)
    return text[: m.start()] + text[m.end() :]


def swap_word(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    spots = [m for m in re.finditer(r"\b\w+\b", text) if m.group() in _WORDS]
    if not spots:
        return text
    m = rng.choice(spots)
    return text[: m.start()] + rng.choice(_WORDS) + text[m.end() :]


def flip_byte(rng: random.Random, text: str, corpus: Sequence[str]) -> str:
    if not text:
        return text
    i = rng.randrange(len(text))
    roll = rng.random()
    if roll < 0.4:
        return text[:i] + text[i + 1 :]
    if roll < 0.8:
        return text[:i] + rng.choice("<>()[]{},:=%#x0123456789-\"") + text[i:]
    return text[: i + 1] + text[i:]


MUTATIONS = (
    (rescale_dim, 6),
    (mutate_number, 4),
    (mutate_float, 3),
    (mutate_element, 3),
    (mutate_range, 2),
    (mutate_dim, 2),
    (redirect_use, 2),
    (swap_word, 2),
    (drop_attribute, 1),
    (delete_line, 1),
    (duplicate_line, 1),
    (swap_lines, 1),
    (borrow_line, 1),
    (flip_byte, 1),
)


def mutate(rng: random.Random, seed: str, corpus: Sequence[str]) -> str:
    """`seed` with one to three mutations applied."""
    functions = [f for f, _ in MUTATIONS]
    weights = [w for _, w in MUTATIONS]
    text = seed
    for _ in range(rng.choice((1, 1, 1, 1, 1, 2, 2, 3))):
        text = rng.choices(functions, weights)[0](rng, text, corpus)
    return text.replace(SPLIT, "//")


# --- running --------------------------------------------------------------------


@dataclasses.dataclass
class Finding:
    """A mutant that crashed or hung poot-opt on its own."""

    kind: str  # "signal", "stack dump", "exit status", "timeout"
    signature: str
    pipeline: str
    text: str
    detail: str


_CRASH_MARKS = ("PLEASE submit a bug report", "Stack dump:", "LLVM ERROR:", "UNREACHABLE executed")


def _limit_memory(limit: int) -> None:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_poot_opt(
    poot_opt: str, pipeline: str, text: str, timeout: float, memory: int
) -> tuple[str | None, str]:
    """(kind of finding or None, stderr) for one poot-opt run on `text`."""
    argv = [poot_opt, "--mlir-disable-threading", "-split-input-file",
            f"--pass-pipeline={pipeline}", "-o", os.devnull, "-"]
    try:
        proc = subprocess.run(
            argv, input=text, capture_output=True, text=True, timeout=timeout,
            preexec_fn=_limit_memory(memory), errors="replace",
        )
    except subprocess.TimeoutExpired:
        return "timeout", ""
    err = proc.stderr
    if proc.returncode < 0:
        return "signal", err
    if any(mark in err for mark in _CRASH_MARKS):
        return "stack dump", err
    if proc.returncode not in (0, 1):
        return "exit status", err
    return None, err


REPO = Path(__file__).resolve().parents[2]
_OWN_FILES = {p.name for d in ("dialect", "lib") for p in (REPO / d).rglob("*.cpp")}
_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ (.+)$", re.M)


def _frame_name(frame: str) -> str:
    """`ns::f(args) (module+0x..)` or `f(args) File.cpp:0:0` -> `ns::f`."""
    depth, out = 0, []
    for ch in frame:
        if ch in "(<":
            if depth == 0 and ch == "(" and out:
                break
            depth += 1
        elif ch in ")>":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split()  # drop a return type ("void ...")
    return words[-1] if words else frame[:60]


def _own(frame: str) -> bool:
    """A frame in poot code: a poot name, or a source file of this tree."""
    location = frame.rsplit(" ", 1)[-1]
    return "poot::" in _frame_name(frame) or location.split(":")[0] in _OWN_FILES


def signature_of(kind: str, stderr: str, pipeline: str) -> str:
    """What groups findings: the assertion or fatal-error text plus the first
    poot frame of the stack dump (else the top frames); numbers are
    normalized away. A finding with no stack dump (a timeout, a bare signal)
    is named by its pipeline's passes."""
    head = ""
    assertion = re.search(r"Assertion `(.*)' failed", stderr)
    fatal = re.search(r"LLVM ERROR: (.*)", stderr)
    if assertion:
        head = f"Assertion `{assertion.group(1)}'"
    elif fatal:
        head = f"LLVM ERROR: {fatal.group(1)}"
    elif "UNREACHABLE" in stderr:
        head = re.search(r".*UNREACHABLE.*", stderr).group(0)
    frames = [f for f in _FRAME.findall(stderr)
              if not re.search(r"llvm::sys::|SignalHandler|^\(/|pthread_kill|raise |abort |"
                               r"_nl_load_domain|__libc|_start", f)]
    own = [_frame_name(f) for f in frames if _own(f)]
    where = own[:1] if head else own[:2]
    if not where:
        where = [_frame_name(f) for f in frames[:1 if head else 3]]
    body = " @ ".join(x for x in [head, " <- ".join(where)] if x)
    if not body:
        bare = re.sub(r"\{[^{}]*\}", "", pipeline.replace("builtin.module(", "", 1))
        body = ",".join(sorted(set(re.findall(r"[\w.-]+", bare))))
    return f"{kind}: " + re.sub(r"0x[0-9a-f]+|\b\d+\b", "N", body)


@dataclasses.dataclass
class Batch:
    pipeline: str
    mutants: list[str]


def _batch_limit(timeout: float, allowance: float, n: int) -> float:
    """Seconds a batch of `n` mutants may take: a single mutant's limit plus
    a typical run's time for each (a hang then costs one limit, not n)."""
    return timeout + allowance * n


def _bisect(poot_opt: str, batch: Batch, timeout: float, allowance: float,
            memory: int) -> list[Finding]:
    """Mutants of a failing batch that fail on their own."""
    if len(batch.mutants) == 1:
        text = batch.mutants[0]
        kind, err = run_poot_opt(poot_opt, batch.pipeline, text, timeout, memory)
        if kind is None:
            return []
        return [Finding(kind, signature_of(kind, err, batch.pipeline), batch.pipeline, text,
                        err[:8000])]
    found: list[Finding] = []
    half = len(batch.mutants) // 2
    for part in (batch.mutants[:half], batch.mutants[half:]):
        joined = f"\n{SPLIT}\n".join(part)
        limit = _batch_limit(timeout, allowance, len(part))
        kind, _ = run_poot_opt(poot_opt, batch.pipeline, joined, limit, memory)
        if kind is not None:
            found += _bisect(poot_opt, Batch(batch.pipeline, part), timeout, allowance, memory)
    return found


def run_batch(poot_opt: str, batch: Batch, timeout: float, memory: int,
              allowance: float = 2.0) -> list[Finding]:
    """The findings of one batch: one poot-opt run, bisected if it fails.
    `timeout` is a single mutant's limit (past it: a hang)."""
    joined = f"\n{SPLIT}\n".join(batch.mutants)
    limit = _batch_limit(timeout, allowance, len(batch.mutants))
    kind, _ = run_poot_opt(poot_opt, batch.pipeline, joined, limit, memory)
    if kind is None:
        return []
    return _bisect(poot_opt, batch, timeout, allowance, memory)


@dataclasses.dataclass
class Report:
    mutants: int
    batches: int
    seconds: float
    findings: dict[str, list[Finding]]

    def summary(self) -> str:
        lines = [f"{self.mutants} mutants in {self.batches} batches, {self.seconds:.1f} s, "
                 f"{len(self.findings)} signatures"]
        for sig, group in sorted(self.findings.items()):
            small = min(group, key=lambda f: len(f.text))
            lines.append(f"  {len(group)} x {sig}\n    pipeline: {small.pipeline}")
        return "\n".join(lines)


def make_batches(
    rng: random.Random, corpus: Sequence[Seed], passes: Sequence[PassInfo], mutants: int,
    batch_size: int,
) -> Iterable[Batch]:
    """Batches of mutants, each with one random pipeline; a mutant starts
    from a seed that verifies 85% of the time (else from a negative test)."""
    texts = [seed.text for seed in corpus]
    positive = [seed.text for seed in corpus if not seed.negative] or texts
    negative = [seed.text for seed in corpus if seed.negative] or texts
    made = 0
    while made < mutants:
        n = min(batch_size, mutants - made)
        pipeline = random_pipeline(rng, passes)
        seeds = [rng.choice(positive if rng.random() < 0.85 else negative) for _ in range(n)]
        yield Batch(pipeline, [mutate(rng, seed, texts) for seed in seeds])
        made += n


def campaign(
    poot_opt: str,
    *,
    seed: int,
    mutants: int,
    jobs: int = 2,
    batch_size: int = 25,
    timeout: float = 20.0,
    memory: int = 4 << 30,
    corpus_roots: Sequence[Path] = (TEST_DIR,),
    frontend: Path | None = None,
    out: Path | None = None,
    progress: bool = False,
) -> Report:
    """Run `mutants` mutants (seeded: the same seed gives the same mutants and
    pipelines) on `jobs` processes; findings grouped by signature. `timeout`
    is a single mutant's limit: a mutant past it has hung."""
    rng = random.Random(seed)
    corpus = load_corpus(corpus_roots) + (frontend_seeds(frontend) if frontend else [])
    passes = registered_passes(poot_opt)
    if not corpus or not passes:
        raise RuntimeError(f"empty corpus ({len(corpus)} seeds) or pass list ({len(passes)})")
    start = time.monotonic()
    findings: dict[str, list[Finding]] = {}
    done = batches = 0
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        pending: set[concurrent.futures.Future] = set()
        sizes: dict[concurrent.futures.Future, int] = {}
        for batch in make_batches(rng, corpus, passes, mutants, batch_size):
            future = pool.submit(run_batch, poot_opt, batch, timeout, memory)
            sizes[future] = len(batch.mutants)
            pending.add(future)
            if len(pending) >= jobs * 4:
                finished, pending = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED)
                done, batches = _collect(finished, sizes, findings, out, done, batches)
                if progress:
                    _progress(done, mutants, start, findings)
        finished, _ = concurrent.futures.wait(pending)
        done, batches = _collect(finished, sizes, findings, out, done, batches)
    if progress:
        _progress(done, mutants, start, findings)
    return Report(done, batches, time.monotonic() - start, findings)


def _collect(finished, sizes, findings, out, done, batches):
    for future in finished:
        for finding in future.result():
            group = findings.setdefault(finding.signature, [])
            group.append(finding)
            if out is not None:
                _write_finding(out, finding, len(group))
        done += sizes.pop(future)
        batches += 1
    return done, batches


def _progress(done: int, total: int, start: float, findings: dict) -> None:
    rate = done / max(time.monotonic() - start, 1e-9)
    print(f"[poot-fuzz] {done}/{total} mutants, {rate:.0f}/s, {len(findings)} signatures",
          file=sys.stderr, flush=True)


def _write_finding(out: Path, finding: Finding, count: int) -> None:
    """Keep the smallest input per signature (and the first few others)."""
    out.mkdir(parents=True, exist_ok=True)
    key = re.sub(r"[^\w]+", "-", finding.signature)[:80].strip("-")
    path = out / f"{key}.mlir"
    if path.exists() and len(path.read_text()) <= len(finding.text) + 200:
        return
    pipeline = finding.pipeline
    path.write_text(f"// poot-opt %s --pass-pipeline='{pipeline}'    ({finding.signature})\n"
                    + finding.text)
    (out / f"{key}.stderr").write_text(finding.detail)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--poot-opt", default=os.environ.get("POOT_OPT") or "poot-opt")
    parser.add_argument("--mutants", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=25)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per mutant")
    parser.add_argument("--memory-gb", type=float, default=4.0)
    parser.add_argument("--corpus", type=Path, action="append",
                        help="seed files or folders (default: the repository's test/)")
    parser.add_argument("--frontend", type=Path, nargs="?", const=TEST_DIR / "Frontend",
                        help="also seed with the IR test/Frontend/*.py print (needs poot_mlir)")
    parser.add_argument("--out", type=Path, default=Path("fuzz-out"))
    parser.add_argument("--json", type=Path, help="write the summary here as JSON")
    args = parser.parse_args(argv)
    report = campaign(
        args.poot_opt, seed=args.seed, mutants=args.mutants, jobs=args.jobs,
        batch_size=args.batch_size, timeout=args.timeout,
        memory=int(args.memory_gb * (1 << 30)), corpus_roots=args.corpus or (TEST_DIR,),
        frontend=args.frontend, out=args.out, progress=True,
    )
    print(report.summary())
    if args.json:
        args.json.write_text(json.dumps({
            "mutants": report.mutants, "seconds": report.seconds, "seed": args.seed,
            "signatures": {s: len(g) for s, g in report.findings.items()},
        }, indent=2))
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
