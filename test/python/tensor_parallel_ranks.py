"""What each rank runs in test_tensor_parallel.py (spawned processes).

Kept apart from the test module so a rank imports only numpy, torch and the
runtime (no MLIR, no pytest): the ranks load artifacts the test compiled, as
a serving rank would. Every function returns plain picklable data for the
parent to check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from poot_mlir.errors import PootError
from poot_mlir.oracle import dtypes
from poot_mlir.runtime import cpu
from poot_mlir.runtime.collectives import Communicator


def _outcome(call) -> tuple[str, Any]:
    """("ok", value) or (error type name, its `ranks` when it has them)."""
    try:
        return "ok", call()
    except PootError as error:
        return type(error).__name__, getattr(error, "ranks", None)


def _snapshot(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.array(value) for name, value in state.items()}


def bf16_operands(seed: int, world: int, count: int = 64) -> list[np.ndarray]:
    """Every rank's bf16 operand for the communicator check: values whose
    float32 sum over <= 4 ranks is exact in any order (|v| in [2^-8, 4) or
    0, 8 significant bits), so only the final rounding can differ."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(world):
        v = rng.uniform(-4, 4, count)
        v[np.abs(v) < 2.0**-8] = 0.0
        out.append(dtypes.round_float64(v, dtypes.BF16))
    return out


def mlp_rank(rank: int, world: int, case: dict[str, Any]) -> dict[str, Any]:
    """Step the hand-written MLP rank programs (one per dtype), then the
    refusals: a bind that fails on rank 1 only, artifacts of another rank or
    degree, and the communicator's bf16 sum."""
    comm = Communicator()
    out: dict[str, Any] = {}
    for dtype, run in case["runs"].items():
        art = cpu.load(run["paths"][rank], threads=1, communicator=comm)
        weights = art.shard(run["weights"])
        session = art.session(art.shard(run["state"]))
        ys = [np.array(session.step({"x": x, **weights}).named["y"]) for x in run["xs"]]
        out[dtype] = {"ys": ys, "state": _snapshot(session.state)}

    # Rank 1's input has the wrong shape: every rank must refuse, none steps.
    run = case["runs"]["f32"]
    art = cpu.load(run["paths"][rank], threads=1, communicator=comm)
    weights = art.shard(run["weights"])
    session = art.session(art.shard(run["state"]))
    x = run["xs"][0]
    before = _snapshot(session.state)
    bad = x[..., :4] if rank == 1 else x
    out["refusal"] = _outcome(lambda: session.step({"x": bad, **weights}))
    out["unchanged"] = all(
        np.array_equal(before[k], v) for k, v in session.state.items()
    )
    # The ranks are still in step: the same session runs the good input.
    out["after"] = np.array(session.step({"x": x, **weights}).named["y"])

    out["other_rank"] = _outcome(
        lambda: cpu.load(run["paths"][(rank + 1) % world], threads=1, communicator=comm)
    )[0]
    out["other_degree"] = _outcome(
        lambda: cpu.load(case["other_degree"], threads=1, communicator=comm)
    )[0]

    operands = bf16_operands(case["seed"], world)
    mine = operands[rank].copy()
    comm.all_reduce_(mine.ctypes.data, mine.size, 2)
    out["bf16_sum"] = mine
    return out


def decoder_rank(rank: int, world: int, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Decode `tokens` with each run's rank program from the sharded weights
    and initial state; every step's logits and the final state blocks."""
    comm = Communicator()
    results = []
    for run in runs:
        art = cpu.load(run["paths"][rank], threads=1, communicator=comm)
        weights = art.shard(run["weights"])
        session = art.session(art.shard(run["state"]))
        logits = []
        for step, token in enumerate(run["tokens"]):
            inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32), **weights}
            logits.append(np.array(session.step(inputs).named["logits"]))
        shards = {p.state: p.shard for p in art.signature.args if p.state is not None}
        results.append({"logits": logits, "state": _snapshot(session.state), "shards": shards})
    return results



def gpu_decoder_rank(rank: int, world: int, backend: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """decoder_rank on a GPU backend (runtime.program): the weights are the
    session's constants (uploaded once), the KV cache stays on the device
    between steps and is read back once at the end. Then, on the first
    run's program, a step whose input fails to bind on rank 1 only."""
    from poot_mlir.runtime.program import ProgramArtifact

    comm = Communicator()
    results = []
    for run in runs:
        art = ProgramArtifact(run["paths"][rank], backend=backend, communicator=comm)
        session = art.session(art.shard(run["state"]), constants=art.shard(run["weights"]))
        logits = []
        for step, token in enumerate(run["tokens"]):
            inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32)}
            logits.append(np.array(session.step(inputs).named["logits"]))
        shards = {p.state: p.shard for p in art.signature.args if p.state is not None}
        results.append({
            "logits": logits, "state": _snapshot(session.state), "shards": shards,
            "reduced": art.device.traffic.reduced,
        })
        art.close()
    return {"runs": results, "refusal": _gpu_refusal(rank, backend, comm, runs[0])}


def _gpu_refusal(rank: int, backend: str, comm: Communicator, run: dict[str, Any]) -> dict[str, Any]:
    """Rank 1's token has the wrong shape: every rank must refuse the step,
    no state changes, and the ranks still step together afterwards."""
    from poot_mlir.runtime.program import ProgramArtifact

    art = ProgramArtifact(run["paths"][rank], backend=backend, communicator=comm)
    session = art.session(art.shard(run["state"]), constants=art.shard(run["weights"]))
    before = _snapshot(session.state)
    good = {"pos": np.int32(0), "token": np.array([[run["tokens"][0]]], np.int32)}
    bad = dict(good, token=np.array([[1, 2]], np.int32)) if rank == 1 else good
    out: dict[str, Any] = {"refusal": _outcome(lambda: session.step(bad))}
    out["unchanged"] = all(np.array_equal(before[k], v) for k, v in session.state.items())
    out["after"] = np.array(session.step(good).named["logits"])
    art.close()
    return out
