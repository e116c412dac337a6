"""`poot-compile` and `poot-run`: artifacts from the command line.

    poot-compile step.mlir --target cpu -o art           # compile_cpu
    poot-compile step.mlir --target vulkan -o art_vk     # compile_gpu(VULKAN_LAVAPIPE)
    poot-run art --input q=q.npy --input pos=0 --state k0=k0.npy -o out.npz

`poot-compile` writes exactly what `compile_cpu` / `compile_gpu` write (the
attention rewrite first, unless `--no-fuse`), prints what the compiler did
(fused ops, the plan of each, its notes and declined chains) and exits 0;
a refused plan prints `error: <Reason>: ...` and exits 2, any other compile
error exits 1. `poot-run` binds the inputs by name (`.npy` files or numbers),
runs the step `--steps` times carrying the state (a session), and writes the
last step's named outputs and the final state (as `state.<name>`) to an
`.npz`; a bad input is refused before anything runs (exit 2).

Also `python -m poot_mlir.cli compile|run ...`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import __version__, errors

#: --target names that are not device preset names.
TARGET_ALIASES = {"vulkan": "vulkan-lavapipe", "wgpu": "wgpu-lavapipe"}

#: Device limits settable from the command line (Device fields, all ints).
LIMITS = (
    "workgroup_memory", "max_grid_x", "max_grid_y", "compute_units", "max_buffer_bytes",
    "max_alloc_bytes", "max_splits", "vector_width",
)

#: The runtime a GPU artifact's target runs on by default.
DEFAULT_BACKEND = {"spirv": "vulkan", "nvvm": "cuda"}

EXIT_REFUSED = 2


def _device(target: str, limits: dict[str, int]) -> Any:
    from .compiler import devices

    device = devices.get(TARGET_ALIASES.get(target, target))
    return device.with_limits(**limits) if limits else device


def _print_summary(path: Path) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    fusion = manifest.get("fusion", {})
    print(f"{path}: {manifest.get('target')} artifact of @{manifest['function']['name']}")
    print(f"  fused: {fusion.get('attention', 0)} attention, {fusion.get('block_topk', 0)} block_topk, "
          f"{fusion.get('selected_attention', 0)} selected_attention")
    for reason in fusion.get("declined", []):
        print(f"  declined: {reason}")
    split = manifest["function"].get("tensor_parallel")
    if split:
        sharded = sum(1 for port in manifest["function"].get("inputs", []) if port.get("shard"))
        print(f"  tensor parallel: rank {split['rank']} of {split['degree']}, {sharded} arguments "
              f"sharded, {manifest['function'].get('all_reduce_sites', 0)} all_reduce(s)")
    for record in manifest.get("attention", []):
        request = record.get("request", {})
        print(f"  planned {record.get('op', 'attention')} at {record.get('location', '?')}: "
              f"schedule {request.get('schedule', '?')}, grid {request.get('grid_x', '?')}x"
              f"{request.get('grid_y', '?')}, splits {request.get('splits', 1)}")
    for note in manifest.get("notes", []):
        print(f"  note: {note}")


def _rank_of(spec: str) -> tuple[int, int]:
    """`--tensor-parallel 1/4` -> (rank 1, degree 4)."""
    try:
        rank, degree = (int(part) for part in spec.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{spec!r}: expected RANK/DEGREE, e.g. 0/2") from None
    if not 0 <= rank < degree:
        raise argparse.ArgumentTypeError(f"{spec!r}: needs 0 <= RANK < DEGREE")
    return rank, degree


def compile_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="poot-compile", description="Compile a step (.mlir) into an artifact directory."
    )
    parser.add_argument("file", type=Path, help="the module (.mlir), poot ops or the tracer's output")
    parser.add_argument("-o", "--output", type=Path, required=True, help="artifact directory to write")
    parser.add_argument("--target", default="cpu",
                        help="cpu (default), vulkan, wgpu, sm_90, gfx942, or a device preset name")
    parser.add_argument("--func", help="the step function (default: the only public one)")
    parser.add_argument("--no-fuse", action="store_true", help="skip the attention rewrite")
    parser.add_argument("--parallel", choices=("serial", "omp"), help="CPU: how parallel loops run")
    parser.add_argument("--tensor-parallel", type=_rank_of, metavar="RANK/DEGREE",
                        help="write rank RANK's program of the step split over DEGREE ranks "
                             "(docs/tensor-parallel.md)")
    for name in LIMITS:
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, dest=name, metavar="N",
                            help=f"device limit {name}")
    parser.add_argument("--version", action="version", version=f"poot_mlir {__version__}")
    args = parser.parse_args(argv)

    limits = {name: getattr(args, name) for name in LIMITS if getattr(args, name) is not None}
    try:
        text = args.file.read_text()
    except OSError as exc:
        print(f"error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        device = _device(args.target, limits)
        if device.target == "cpu":
            from .compiler import compile_cpu

            extra = {"parallel": args.parallel} if args.parallel else {}
            path = compile_cpu(text, args.output, func=args.func, device=device,
                               fuse=not args.no_fuse, tensor_parallel=args.tensor_parallel, **extra)
        else:
            from .compiler.gpu import compile_gpu

            path = compile_gpu(text, device, args.output, func=args.func, fuse=not args.no_fuse,
                               tensor_parallel=args.tensor_parallel)
    except errors.PlanRefusal as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except (errors.PootError, TypeError) as exc:  # TypeError: a limit the device has not
        print(f"error: {exc}", file=sys.stderr)
        return 1
    _print_summary(path)
    return 0


def _value(spec: str, what: str) -> tuple[str, Any]:
    """NAME=FILE.npy or NAME=number."""
    name, sep, value = spec.partition("=")
    if not sep or not name:
        raise errors.BindError(f"{what} {spec!r}: expected NAME=FILE.npy or NAME=NUMBER")
    if value.endswith(".npy"):
        try:
            return name, np.load(value, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise errors.BindError(f"{what} {name!r}: cannot read {value}: {exc}") from None
    try:
        return name, int(value)
    except ValueError:
        pass
    try:
        return name, float(value)
    except ValueError:
        raise errors.BindError(f"{what} {name!r}: {value!r} is neither a .npy file nor a number") from None


def _load(path: Path, backend: str | None) -> Any:
    from .runtime.manifest import read_manifest

    target = read_manifest(path, "an artifact (poot-compile)").get("target")
    if target == "cpu":
        from .runtime.cpu import CpuArtifact

        return CpuArtifact(path)
    from .runtime.program import ProgramArtifact

    return ProgramArtifact(path, backend or DEFAULT_BACKEND.get(str(target), "vulkan"))


def run_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="poot-run", description="Run an artifact directory on inputs from .npy files."
    )
    parser.add_argument("artifact", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True, help=".npz to write")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy|NUMBER")
    parser.add_argument("--state", action="append", default=[], metavar="NAME=FILE.npy",
                        help="the initial value of a state the step carries (every one)")
    parser.add_argument("--steps", type=int, default=1, help="steps to run, state carried")
    parser.add_argument("--advance", action="append", default=[], metavar="NAME",
                        help="add 1 to this scalar input after every step (e.g. pos)")
    parser.add_argument("--backend", help="GPU runtime: vulkan, wgpu, cuda (default: the target's)")
    parser.add_argument("--version", action="version", version=f"poot_mlir {__version__}")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")

    try:
        inputs = dict(_value(spec, "--input") for spec in args.input)
        state = dict(_value(spec, "--state") for spec in args.state)
        for name in args.advance:
            if name not in inputs or not isinstance(inputs[name], int):
                raise errors.BindError(f"--advance {name}: give it as a number with --input {name}=N")
        art = _load(args.artifact, args.backend)
    except errors.PootError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_REFUSED if isinstance(exc, errors.BindError) else 1
    try:
        carried = bool(art.signature.state_names)
        session = art.session(state) if carried else None
        if not carried and state:
            raise errors.BindError(f"--state given, but @{art.signature.name} carries no state")
        for _ in range(args.steps):
            result = session.step(inputs) if session is not None else art.run(inputs)
            for name in args.advance:
                inputs[name] += 1
        arrays = {name: np.asarray(value) for name, value in result.named.items()}
        if session is not None:
            arrays.update({f"state.{name}": np.asarray(v) for name, v in session.state.items()})
        np.savez(args.output, **arrays)
    except errors.BindError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except errors.PootError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        art.close()
    print(f"{args.output}: {', '.join(sorted(arrays))} after {args.steps} step(s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"compile": compile_main, "run": run_main}
    if not argv or argv[0] not in commands:
        print("usage: python -m poot_mlir.cli compile|run ...", file=sys.stderr)
        return 1
    return commands[argv[0]](argv[1:])


def poot_compile() -> None:
    sys.exit(compile_main())


def poot_run() -> None:
    sys.exit(run_main())


if __name__ == "__main__":
    sys.exit(main())
