"""Generate tokens with a small decoder compiled by poot_mlir (the main job).

    python -m poot_mlir.examples.decode [--steps 16] [--layers 2] [--cap 64]
    python -m poot_mlir.examples.decode --tensor-parallel 2   # the step split over 2 CPU ranks
    python -m poot_mlir.examples.decode --tensor-parallel 2 --target vulkan   # ... over 2 GPU ranks

1. traces a decoder stack (RMSNorm, RoPE, GQA attention over a fixed-capacity
   KV cache, SiLU MLP) with `poot_mlir.frontend` (examples/decoder.py);
2. compiles the whole step for the CPU (`compiler.compile_cpu`, which first
   fuses every layer's attention chain into one `poot.attention` and
   records how many in the artifact's manifest; the attention
   runs the generated kernel's schedule as loops, the primitives as linalg,
   one shared object run in-process) — or, with `--target vulkan` / `wgpu` /
   `cuda`,
   the whole step as GPU kernels (`compiler.compile_gpu`: every
   primitive and the attention; Mesa lavapipe when there is no GPU), run by
   `runtime.program` with the KV caches resident on the device, written in
   place, and the weights uploaded once;
3. decodes greedily: the KV cache is the compiled step's state, carried by a
   session; every step's logits are checked against the numpy
   oracle running the unfused module in float64 from the same state, and the
   time per step is printed.

With `--tensor-parallel N` the step runs split over N ranks
(docs/tensor-parallel.md): N processes joined by torch.distributed (gloo;
on CUDA, NCCL for the sums), each compiling its own rank program
(`compile_cpu` / `compile_gpu(..., tensor_parallel=(r, N))`: attention by
heads, the MLP by columns and rows, an all-reduce after each), taking its
blocks of the same weights and empty KV cache, and decoding together; with a
GPU `--target` each rank runs its own device session (on lavapipe every
rank uses the CPU's Vulkan device; on CUDA rank r uses GPU r). Rank 0 checks
every step's logits against the float64 oracle of the *unsharded* step,
carrying the oracle's own state; every rank must pick the same token.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import oracle
from ..compiler import compile_cpu
from ..models import targets
from ..runtime.cpu import CpuArtifact
from .decoder import DecoderConfig, build_decoder, init_state, init_weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16, help="tokens to generate")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--cap", type=int, default=64, help="KV cache capacity")
    parser.add_argument("--seed", type=int, default=0, help="weight seed")
    parser.add_argument(
        "--target", default="cpu", choices=["cpu", "vulkan", "wgpu", "cuda"],
        help="cpu: everything in-process; vulkan/wgpu/cuda: the whole step on the device",
    )
    parser.add_argument("--rtol", type=float, default=1e-4, help="logits tolerance vs the oracle")
    parser.add_argument(
        "--tensor-parallel", type=int, default=1, metavar="N",
        help="split the step over N ranks (torch.distributed: gloo, and NCCL on cuda)",
    )
    args = parser.parse_args(argv)
    if args.steps > args.cap:
        parser.error("--steps cannot exceed --cap")
    if args.tensor_parallel < 1:
        parser.error("--tensor-parallel takes a number of ranks, at least 1")

    config = DecoderConfig(layers=args.layers, cap=args.cap)
    if args.tensor_parallel > 1:
        return _tensor_parallel(args, config)
    tracer = build_decoder(config)
    module = tracer.finish()

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="poot-decode-") as out:
        if args.target in ("vulkan", "wgpu", "cuda"):
            # The whole step on the device: every primitive and the attention
            # as kernels, the KV caches resident there and written in place.
            from ..compiler.gpu import compile_gpu
            from ..runtime.program import ProgramArtifact

            device = targets.describe(args.target)  # plan for the device we run on
            path = compile_gpu(module, device, out)
            artifact = ProgramArtifact(path, backend=args.target)
            where = f"{device.name} (the whole step as kernels, state on the device)"
        else:
            path = compile_cpu(module, out)
            artifact = CpuArtifact(path)
            where = "the CPU"
        seconds = time.perf_counter() - t0
        manifest = json.loads((path / "manifest.json").read_text())
        print(f"traced {config.layers} layers; fused {manifest['fusion']['attention']} attention ops")
        cached = " (a compile-cache hit: $POOT_CACHE=0 compiles afresh)" if manifest.get("from_cache") else ""
        print(f"compiled for {where} in {seconds:.2f} s{cached}")

        weights = init_weights(config, args.seed)
        on_device = args.target != "cpu"
        # On a device the weights are uploaded once, with the session.
        session = (
            artifact.session(init_state(config), constants=weights)
            if on_device
            else artifact.session(init_state(config))
        )
        token, tokens, worst = 1, [], 0.0
        for step in range(args.steps):
            inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32)}
            if not on_device:
                inputs.update(weights)
            # The float64 oracle runs the traced (unfused) step from the same
            # state: compiling never changes `module`.
            want = oracle.run(
                module, {**inputs, **weights, **session.state}, reference=True
            ).named["logits"]
            start = time.perf_counter()
            logits = session.step(inputs).named["logits"]
            elapsed = time.perf_counter() - start
            err = float(np.max(np.abs(logits - want)) / max(float(np.max(np.abs(want))), 1e-30))
            worst = max(worst, err)
            if not np.allclose(logits, want, rtol=args.rtol, atol=args.rtol * np.max(np.abs(want))):
                print(f"step {step}: logits differ from the oracle (relative error {err:.2e})")
                return 1
            token = int(np.argmax(logits))
            tokens.append(token)
            # A device's first step also loads its kernels (the driver
            # compiles them) and, on CUDA, captures the graph.
            first = "  (first step: loads the kernels)" if on_device and step == 0 else ""
            print(f"step {step:3d}  token {token:3d}  {elapsed * 1e3:7.3f} ms/step  "
                  f"max rel err vs oracle {err:.1e}{first}")
    print(f"generated {tokens}; every step matched the float64 oracle (worst {worst:.1e})")
    return 0


def _tensor_parallel(args: argparse.Namespace, config: DecoderConfig) -> int:
    """Launch `args.tensor_parallel` ranks running `_decode_rank`."""
    from ..runtime.distributed import spawn
    from . import decode  # the rank function by its module's name, not __main__'s

    degree = args.tensor_parallel
    # NCCL sums CUDA tensors; the ranks' agreement before each step is a
    # host tensor, which the same group sums with gloo.
    backend = "cpu:gloo,cuda:nccl" if args.target == "cuda" else "gloo"
    where = "CPU ranks" if args.target == "cpu" else f"{args.target} ranks"
    print(f"decoding on {degree} {where} (torch.distributed, {backend})", flush=True)
    with tempfile.TemporaryDirectory(prefix="poot-decode-tp-") as out:
        codes = spawn(decode._decode_rank, degree, config, vars(args), out, backend=backend)
    return max(codes)


def _rank_artifact(rank: int, degree: int, module: Any, target: str, out: Path, comm: Any) -> Any:
    """This rank's program compiled and loaded for `target`: in-process on
    the CPU, or a device session's artifact (rank r on CUDA device r)."""
    if target == "cpu":
        return CpuArtifact(compile_cpu(module, out, tensor_parallel=(rank, degree)), communicator=comm)
    from ..compiler.gpu import compile_gpu
    from ..runtime.program import ProgramArtifact

    backend = target
    if target == "cuda":
        import torch

        torch.cuda.set_device(rank)  # NCCL's device for this rank
        backend = f"cuda:{rank}"
    path = compile_gpu(module, targets.describe(target), out, tensor_parallel=(rank, degree))
    return ProgramArtifact(path, backend=backend, communicator=comm)


def _decode_rank(rank: int, degree: int, config: DecoderConfig, opts: dict, out: str) -> int:
    """One rank: compile its program, take its blocks, decode; 0 when every
    step matched the oracle (checked on rank 0) and all ranks agreed."""
    import torch.distributed as dist

    from ..runtime.collectives import Communicator

    comm = Communicator()
    module = build_decoder(config).finish()  # every rank traces the same step
    t0 = time.perf_counter()
    # Ranks compile concurrently, each into its own directory.
    artifact = _rank_artifact(rank, degree, module, opts["target"], Path(out) / f"rank{rank}", comm)
    seconds = time.perf_counter() - t0
    full_weights = init_weights(config, opts["seed"])
    weights = artifact.shard(full_weights)
    on_device = opts["target"] != "cpu"
    state = artifact.shard(init_state(config))
    # On a device the weights are uploaded once, with the session.
    session = artifact.session(state, constants=weights) if on_device else artifact.session(state)
    step_weights = {} if on_device else weights
    # The reference: the unsharded module's float64 oracle with its own state.
    reference = oracle.Session(module, init_state(config), reference=True) if rank == 0 else None
    if rank == 0:
        manifest = artifact.manifest
        print(f"traced {config.layers} layers; rank 0 fused {manifest['fusion']['attention']} "
              f"attention ops and compiled for {opts['target']} in {seconds:.2f} s", flush=True)

    token, tokens, worst = 1, [], 0.0
    for step in range(opts["steps"]):
        inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32)}
        start = time.perf_counter()
        logits = session.step({**inputs, **step_weights}).named["logits"]
        elapsed = time.perf_counter() - start
        ok, err = True, 0.0
        if reference is not None:
            want = reference.step({**inputs, **full_weights}).named["logits"]
            err = float(np.max(np.abs(logits - want)) / max(float(np.max(np.abs(want))), 1e-30))
            worst = max(worst, err)
            ok = bool(np.allclose(logits, want, rtol=opts["rtol"],
                                  atol=opts["rtol"] * np.max(np.abs(want))))
        token = int(np.argmax(logits))
        chosen: list = [None] * degree
        dist.all_gather_object(chosen, (ok, token))
        if not all(good for good, _ in chosen):
            if rank == 0:
                print(f"step {step}: logits differ from the oracle (relative error {err:.2e})")
            return 1
        if len({t for _, t in chosen}) != 1:
            if rank == 0:
                print(f"step {step}: the ranks chose different tokens {[t for _, t in chosen]}")
            return 1
        tokens.append(token)
        if rank == 0:
            print(f"step {step:3d}  token {token:3d}  {elapsed * 1e3:7.3f} ms/step  "
                  f"max rel err vs oracle {err:.1e}  (rank 0 of {degree}; all ranks agree)",
                  flush=True)
    if rank == 0:
        print(f"generated {tokens} on {degree} ranks; every step matched the float64 oracle "
              f"of the unsharded step (worst {worst:.1e})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
