"""Dump every generated attention artifact the tests and benches make, so a
refactor can prove it changes nothing (issue 24: byte-identical PTX / SPIR-V).

    . /work/venv/bin/activate; cd <repo>
    PYTHONPATH=build/python_packages POOT_OPT=build/bin/poot-opt \
        python tools/kernel-golden/dump.py /tmp/golden-before
    ... change the code, rebuild ...
    python tools/kernel-golden/dump.py /tmp/golden-after
    python tools/kernel-golden/dump.py --compare /tmp/golden-before /tmp/golden-after

What it writes (all deterministic; nothing depends on the host but the
pinned toolchain):
  lit/<test>.<n>.out|.err  every `poot-opt` RUN line of test/**/*.mlir, run
                           without FileCheck: plans (poot-plan-attention),
                           generated kernels, loops, NVVM (PTX inside
                           gpu.binary), SPIR-V, ROCDL, records, refusals.
  py/<device>/<form>/      compiler.gpu.compile_gpu of the shared test forms
                           (test/python/attention_cases.py, selection_cases.py)
                           for sm_90, sm_80, sm_90 without tensor cores,
                           sm_90 with the FFMA wide head, Vulkan (lavapipe),
                           wgpu, gfx942: .ptx / .spv / .rocdl.mlir + .ll +
                           manifest.json (plans, launches, programs).
  cpu/<device>/<form>.ll   the CPU step as LLVM IR (cpu_tiled and the GPU
                           schedules as loops).
  bench/...                the bench builders' artifacts (build_artifacts.py
                           for nvvm and spirv, mma_h200, tcwide_h200,
                           bf16_h200, sparse_build) and one decoder step.
  SHA256SUMS               sha256 of every file above.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _poot_opt() -> str:
    return os.path.abspath(os.environ.get("POOT_OPT", str(ROOT / "build/bin/poot-opt")))


def dump_lit(out: Path) -> None:
    """Every poot-opt RUN line, its FileCheck stripped."""
    tool = _poot_opt()
    for test in sorted((ROOT / "test").rglob("*.mlir")):
        if "Inputs" in test.parts:
            continue
        rel = test.relative_to(ROOT / "test")
        runs = [m.group(1) for m in re.finditer(r"//\s*RUN:\s*(.*)", test.read_text())]
        for n, run in enumerate(runs):
            cmd = run.split("|")[0].strip()
            words = shlex.split(cmd)
            if words and words[0] == "not":
                words = words[1:]
            if not words or words[0] != "poot-opt":
                continue
            words = [tool] + [str(test) if w == "%s" else w for w in words[1:]]
            proc = subprocess.run(words, capture_output=True, cwd=test.parent)
            dest = out / "lit" / f"{rel}.{n}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            Path(f"{dest}.out").write_bytes(proc.stdout)
            Path(f"{dest}.err").write_bytes(proc.stderr + f"\nrc={proc.returncode}\n".encode())


def _compile_gpu(text: str, device, dest: Path) -> None:
    from poot_mlir.compiler import gpu

    try:
        gpu.compile_gpu(text, device, dest)
    except Exception as exc:  # a refusal is a result too
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "error.txt").write_text(f"{type(exc).__name__}: {exc}\n")


def _gpu_devices():
    """(device, the element types compiled for it): every type where the
    schedules differ by type (sm_90, Vulkan), the two-byte types where the
    tensor-core knobs matter, f32 elsewhere."""
    from poot_mlir.compiler import devices

    every, two_byte, f32 = ("f32", "bf16", "f16"), ("bf16",), ("f32",)
    return {
        "sm_90": (devices.SM_90, every),
        "sm_80": (devices.SM_90.with_limits(name="sm_80", chip="sm_80"), two_byte),
        "sm_90_nomma": (devices.SM_90.with_limits(tensor_cores=False), two_byte),
        "sm_90_ffma_wide": (devices.SM_90.with_limits(wide_head_mma=False), two_byte),
        "sm_90_small": (devices.SM_90.with_limits(workgroup_memory=16 * 1024, max_splits=4), f32 + two_byte),
        "lavapipe": (devices.VULKAN_LAVAPIPE, every),
        "wgpu": (devices.WGPU_LAVAPIPE, f32 + two_byte),
        "gfx942": (devices.GFX942, f32),
    }


def _cpu_devices():
    from poot_mlir.compiler import devices

    return {
        # Fixed, not detected: the dump must not depend on the host.
        "cpu_tiled": devices.CPU.with_limits(vector_width=16, compute_units=2, workgroup_memory=49152),
        "cpu_seed": devices.CPU_SEED,
    }


def _test_forms():
    """(name, MLIR text) of the shared test forms, in f32 and the two-byte types,
    plus wide-head and prefill shapes the small forms do not reach."""
    sys.path.insert(0, str(ROOT / "test" / "python"))
    import numpy as np

    import attention_cases as ac
    import selection_cases as sc

    forms = list(ac.FORMS) + [
        ac.Form("wide_mqa", batch=2, q_heads=32, kv_heads=1, key_len=500, key_width=64, value_width=64),
        ac.Form("wide_mla", batch=1, q_heads=16, kv_heads=1, key_len=900, key_width=64, shared_width=32,
                value_width=64, live=True),
        ac.Form("wide_causal", batch=1, q_heads=16, kv_heads=1, q_len=3, key_len=90, key_width=48,
                shared_width=16, value_width=32, causal=True),
        ac.Form("prefill_tiled", batch=1, q_heads=4, kv_heads=2, q_len=100, key_len=300, key_width=64,
                value_width=64, causal=True),
        ac.Form("prefill_alibi", batch=2, q_heads=4, kv_heads=1, q_len=70, key_len=200, key_width=128,
                value_width=128, mask="per_head", softcap=20.0),
        ac.Form("decode_long", batch=1, q_heads=32, kv_heads=8, key_len=4096, key_width=128, value_width=128),
        ac.Form("decode_paged_live", batch=3, q_heads=8, kv_heads=2, key_len=1024, key_width=128,
                value_width=128, pool=1500, live=True),
    ]
    out = []
    for form in forms:
        for dtype in ("f32", "bf16", "f16"):
            text, _ = ac.build(form, np.random.default_rng(0), dtype=dtype)
            out.append((f"{form.name}_{dtype}", dtype, text))
    for form in sc.SPARSE_FORMS:
        text, _ = sc.build(form, np.random.default_rng(0))
        out.append((f"sel_{form.name}", "f32", text))
    return out


def dump_python(out: Path) -> None:
    from poot_mlir.compiler import cpu

    forms = _test_forms()
    for dev_name, (device, dtypes) in _gpu_devices().items():
        for name, dtype, text in forms:
            if dtype in dtypes:
                _compile_gpu(text, device, out / "py" / dev_name / name)
    for dev_name, device in _cpu_devices().items():
        for name, _, text in forms:
            dest = out / "cpu" / dev_name / f"{name}.ll"
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                ir, _ = cpu.lower_to_llvm_ir(text, device=device)
            except Exception as exc:
                ir = f"{type(exc).__name__}: {exc}\n"
            dest.write_text(ir)


def dump_bench(out: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import bf16_h200
    import build_artifacts
    import mma_h200
    import tcwide_h200

    # ptxas's resource report is not the artifact (and byte-identical PTX
    # assembles the same): skip it, it is most of the bench builders' time.
    build_artifacts.PTXAS = "/nonexistent/ptxas"
    root = out / "bench"
    with contextlib.redirect_stdout(io.StringIO()):
        for target in ("nvvm", "spirv"):
            for only in ("verify", "bench"):  # not "proto": nvcc's, not ours
                argv = sys.argv
                sys.argv = ["build_artifacts.py", "--target", target, "--only", only,
                            "--out", str(root / f"artifacts-{target}")]
                try:
                    build_artifacts.main()
                finally:
                    sys.argv = argv
        mma_h200.build(root)
        tcwide_h200.build(root)
        bf16_h200.build(root)
    try:
        import sparse_build

        argv = sys.argv
        sys.argv = ["sparse_build.py", "--out", str(root / "sparse")]
        with contextlib.redirect_stdout(io.StringIO()):
            sparse_build.main()
    except SystemExit:
        pass
    finally:
        sys.argv = argv
    # Whole decoder steps (decode_step_h200's verify configs): only the
    # compile (its build() also writes an oracle reference, whose .npz
    # carries a timestamp).
    import decode_step_h200
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.examples.decoder import DecoderConfig, build_decoder

    for name in ("verify_bf16", "verify_f32"):
        tracer = build_decoder(DecoderConfig(**decode_step_h200.VERIFY[name]))
        compile_gpu(tracer.finish(), decode_step_h200._device(), root / "step" / name)


def normalize(out: Path) -> None:
    """What varies between two runs of the same build, made constant: the
    NVVM serializer's timing property in gpu.binary, the order in which
    `poot-opt --help` lists LLVM's options (it changes run to run), and the
    dump's own folder in messages that name a file."""
    timing = re.compile(rb"LLVMIRToISATimeInMs = \d+")
    for path in out.rglob("*"):
        if not path.is_file() or path.name == "SHA256SUMS":
            continue
        data = path.read_bytes()
        new = timing.sub(b"LLVMIRToISATimeInMs = <ms>", data).replace(str(out).encode(), b"<OUT>")
        if path.name.endswith(".out") and b"USAGE: poot-opt" in new:
            new = b"".join(sorted(new.splitlines(keepends=True)))
        if new != data:
            path.write_bytes(new)


def sums(out: Path) -> list[str]:
    lines = []
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != "SHA256SUMS"):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(out)}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--only", choices=["lit", "python", "bench"], action="append")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--renormalize", action="store_true",
                    help="only normalize OUT (a dump of an older version of this script) and rewrite its sums")
    args = ap.parse_args()
    if args.compare:
        a, b = (dict(reversed(l.split("  ", 1)) for l in Path(d, "SHA256SUMS").read_text().splitlines())
                for d in args.compare)
        diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        for k in diff:
            print(f"differs: {k}")
        print(f"{len(a)} files before, {len(b)} after, {len(diff)} differ")
        sys.exit(1 if diff else 0)
    out = Path(args.out)
    if args.renormalize:
        normalize(out)
        lines = sums(out)
        (out / "SHA256SUMS").write_text("\n".join(lines) + "\n")
        print(f"{len(lines)} files in {out}")
        return
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    only = args.only or ["lit", "python", "bench"]
    if "lit" in only:
        dump_lit(out)
    if "python" in only:
        dump_python(out)
    if "bench" in only:
        dump_bench(out)
    normalize(out)
    lines = sums(out)
    (out / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} files in {out}")


if __name__ == "__main__":
    main()
