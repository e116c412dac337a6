"""Tensor parallelism on GPU ranks (issue 29, docs/tensor-parallel.md):
`compile_gpu(..., tensor_parallel=(r, n))` and `runtime.program` running
the program's all_reduce commands on a communicator.

The decoder split over 2 (and 4) ranks on Mesa lavapipe, through raw Vulkan
and through wgpu, in spawned processes joined by gloo
(tensor_parallel_ranks.gpu_decoder_rank), against the float64 oracle of the
unsharded step, and the decode example split on wgpu; in-process, a fake communicator (rank 0 of 2) checks what
an all_reduce command hands it (f32, and bf16 carried as i16 by SPIR-V),
a failing collective and a peer's refusal; without a device, the
communicator refusals at load, the manifest record and the checks of the
all_reduce command. The CUDA path (NCCL) does not run here: no GPU.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil

import numpy as np
import pytest

import tensor_parallel_ranks as ranks
from system_deps import require
from test_tensor_parallel import BLOCK, D, _pass_built, mlp_rank_program, mlp_rank_shards
from poot_mlir import errors, oracle
from poot_mlir.compiler import devices
from poot_mlir.compiler.gpu import compile_gpu
from poot_mlir.examples.decoder import DecoderConfig, build_decoder, init_state, init_weights
from poot_mlir.oracle import dtypes
from poot_mlir.runtime import program
from poot_mlir.runtime.distributed import spawn
from poot_mlir.runtime.program import ProgramArtifact
from poot_mlir.runtime.sharding import unshard

pytestmark = [
    pytest.mark.requires("torch"),
    pytest.mark.xfail(not _pass_built(), reason="poot-tensor-parallel not built yet", run=False),
]

#: Runtime backend name -> (the device description compiled for, its runtime name).
BACKENDS = {
    "vulkan": (devices.VULKAN_LAVAPIPE, "lavapipe"),
    "wgpu": (devices.WGPU_LAVAPIPE, "wgpu-lavapipe"),
}
DECODE_STEPS = 3


def _decoder_runs(tmp_path, rng, device, degree: int, configs) -> tuple[list[str], list[dict]]:
    """Each config's traced decoder, every rank's program compiled for
    `device`, and the full weights, initial state and tokens."""
    modules, runs = [], []
    for i, config in enumerate(configs):
        module = str(build_decoder(config).finish())
        paths = [
            str(compile_gpu(module, device, tmp_path / f"{i}-rank{r}", tensor_parallel=(r, degree)))
            for r in range(degree)
        ]
        modules.append(module)
        runs.append({
            "paths": paths,
            "weights": init_weights(config, int(rng.integers(1 << 30))),
            "state": init_state(config),
            "tokens": [int(t) for t in rng.integers(0, config.vocab, DECODE_STEPS)],
        })
    return modules, runs


def _check_against_the_oracle(configs, modules, runs, results, degree: int) -> None:
    """Every rank's logits at every step equal rank 0's and match the float64
    oracle of the unsharded step; the ranks' KV-cache blocks, put back
    together, match the oracle's state."""
    for i, (config, module, run) in enumerate(zip(configs, modules, runs)):
        session = oracle.Session(module, run["state"], reference=True)
        for step, token in enumerate(run["tokens"]):
            inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32)}
            want = session.step({**inputs, **run["weights"]}).named["logits"]
            got = [result["runs"][i]["logits"][step] for result in results]
            for rank in range(1, degree):  # the all_reduce gives every rank the same sum
                np.testing.assert_array_equal(got[rank], got[0])
            np.testing.assert_allclose(got[0], want, rtol=0, atol=1e-4 * float(np.max(np.abs(want))))
        for name, value in session.state.items():
            shards = [result["runs"][i]["shards"][name] for result in results]
            assert shards[0] is not None and shards[0].parts == min(degree, config.kv_heads)
            full = unshard([result["runs"][i]["state"][name] for result in results], shards)
            np.testing.assert_allclose(
                full, value, rtol=0, atol=1e-4 * max(1.0, float(np.max(np.abs(value))))
            )
        # Two all_reduce per layer (attention, MLP) of one [1, 1, d_model]
        # f32 row per step, each handed to the communicator once.
        for result in results:
            assert result["runs"][i]["reduced"] == DECODE_STEPS * 2 * config.layers * config.d_model * 4


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def decoder_world(request, tmp_path_factory):
    """The decoder split over 2 ranks on one backend: (configs, modules,
    runs, every rank's results)."""
    require(request.param)
    device, backend = BACKENDS[request.param]
    # A module-scoped fixture cannot take the function-scoped `rng`: the same
    # seeding (printed; POOT_TEST_SEED reproduces it).
    seed = int(os.environ.get("POOT_TEST_SEED") or int.from_bytes(os.urandom(8), "little"))
    print(f"decoder_world({request.param}): POOT_TEST_SEED={seed}")
    rng = np.random.default_rng(seed)
    configs = [DecoderConfig(layers=2, d_model=64, q_heads=4, kv_heads=2, cap=8)]
    tmp = tmp_path_factory.mktemp(f"tp-{request.param}")
    modules, runs = _decoder_runs(tmp, rng, device, 2, configs)
    return configs, modules, runs, spawn(ranks.gpu_decoder_rank, 2, backend, runs)


def test_the_split_decoder_matches_the_unsharded_oracle(decoder_world) -> None:
    configs, modules, runs, results = decoder_world
    _check_against_the_oracle(configs, modules, runs, results, 2)


def test_a_bind_refused_on_one_rank_stops_every_rank(decoder_world) -> None:
    _, _, _, results = decoder_world
    refusals = [result["refusal"] for result in results]
    assert refusals[1]["refusal"][0] == "ShapeBindError"
    assert refusals[0]["refusal"] == ("RankRefused", (1,))
    for rank, refusal in enumerate(refusals):
        assert refusal["unchanged"], f"rank {rank}'s device state changed on a refused step"
    # Still in step afterwards: the good step's logits are the first run's first.
    for result, refusal in zip(results, refusals):
        np.testing.assert_array_equal(refusal["after"], result["runs"][0]["logits"][0])


def test_four_ranks_replicate_the_kv_heads(tmp_path, rng) -> None:
    """Degree 4 over 2 KV heads (raw Vulkan): pairs of ranks hold the same
    head, each rank its own 2 of the 8 query heads."""
    require("vulkan")
    device, backend = BACKENDS["vulkan"]
    configs = [DecoderConfig(layers=2, d_model=64, q_heads=8, kv_heads=2, cap=8)]
    modules, runs = _decoder_runs(tmp_path, rng, device, 4, configs)
    results = spawn(ranks.gpu_decoder_rank, 4, backend, runs)
    _check_against_the_oracle(configs, modules, runs, results, 4)


def test_the_decode_example_runs_split_on_wgpu(capfd) -> None:
    """`python -m poot_mlir.examples.decode --tensor-parallel 2 --target
    wgpu`: each rank its own device session; rank 0 checks each step
    against the unsharded oracle; 0 only when all match and agree."""
    require("wgpu")
    from poot_mlir.examples import decode

    assert decode.main(["--steps", "2", "--cap", "8", "--tensor-parallel", "2", "--target", "wgpu"]) == 0
    out = capfd.readouterr().out
    assert "decoding on 2 wgpu ranks" in out
    assert out.count("(rank 0 of 2; all ranks agree)") == 2, out


# -- in process: a fake communicator ------------------------------------------


class FakeCommunicator:
    """Rank 0 of 2 in-process: its peer is taken to hold the same partial
    sum, so the sum over ranks is twice this rank's (or it fails, or the
    peer refuses the step). Records each call's dtype code and the values
    it was handed, as float64."""

    def __init__(self, fail: bool = False, peer_refuses: bool = False, rank: int = 0, size: int = 2) -> None:
        self.rank, self.size = rank, size
        self.fail, self.peer_refuses = fail, peer_refuses
        self.calls: list[tuple[int, np.ndarray]] = []

    def all_reduce_(self, pointer: int, count: int, dtype_code: int) -> None:
        held = np.dtype({0: np.float32, 1: np.float16, 2: dtypes.BF16, 3: np.float64}[dtype_code])
        memory = (ctypes.c_byte * (count * held.itemsize)).from_address(pointer)
        values = np.frombuffer(memory, dtype=held)
        self.calls.append((dtype_code, values.astype(np.float64)))
        if self.fail:
            raise RuntimeError("the peer went away")
        values[...] = values * 2  # exact in every float dtype

    def refusals(self, ok: bool) -> tuple[int, ...]:
        return ((0,) if not ok else ()) + ((1,) if self.peer_refuses else ())


def _rank0(tmp_path, rng, dtype: str) -> tuple:
    """Rank 0's MLP program (of 2) compiled for lavapipe, and full-size
    inputs of its dtype."""
    held = dtypes.dtype_of_element(dtype)
    hidden = 2 * BLOCK

    def draw(*shape: int, scale: float = 1.0) -> np.ndarray:
        return dtypes.round_float64(scale * rng.standard_normal(shape), held)

    path = compile_gpu(mlp_rank_program(0, 2, dtype), devices.VULKAN_LAVAPIPE, tmp_path / f"r0-{dtype}")
    full = {
        "x": draw(1, 1, D), "w1": draw(D, hidden, scale=D**-0.5),
        "w2": draw(hidden, D, scale=hidden**-0.5),
        "acc": np.zeros((1, 1, D), held), "gate": np.zeros((1, 1, hidden), held),
    }
    return path, full


def _partial(mine: dict) -> np.ndarray:
    """This rank's partial product silu(x @ W1) @ W2 of its blocks, in float64."""
    x, w1, w2 = (mine[k].astype(np.float64) for k in ("x", "w1", "w2"))
    g = x @ w1
    return (g / (1 + np.exp(-g))) @ w2


@pytest.fixture
def lavapipe():
    require("vulkan")
    device = program.make_device("lavapipe")
    yield device
    device.close()


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_an_all_reduce_command_sums_its_buffer_on_the_communicator(tmp_path, rng, lavapipe, dtype) -> None:
    """The communicator is handed the partial product as values of the
    program's dtype (bf16: SPIR-V carries i16 bit patterns, summed as bf16),
    and what it writes back is what the rest of the program reads."""
    path, full = _rank0(tmp_path, rng, dtype)
    comm = FakeCommunicator()
    art = ProgramArtifact(path, lavapipe, communicator=comm)
    mine = art.shard(full)
    partial = _partial(mine)
    y = art.run(mine).named["y"].astype(np.float64)
    tol = 1e-5 if dtype == "f32" else 2.0**-5
    [(code, handed)] = comm.calls
    assert code == {"f32": 0, "bf16": 2}[dtype]
    np.testing.assert_allclose(handed, partial.reshape(-1), rtol=0, atol=tol * np.max(np.abs(partial)))
    want = mine["x"].astype(np.float64) + 2 * partial
    np.testing.assert_allclose(y, want, rtol=0, atol=tol * np.max(np.abs(want)))
    assert lavapipe.traffic.reduced == D * {"f32": 4, "bf16": 2}[dtype]


def test_a_failing_collective_raises_and_closes_the_session(tmp_path, rng, lavapipe) -> None:
    path, full = _rank0(tmp_path, rng, "f32")
    art = ProgramArtifact(path, lavapipe, communicator=FakeCommunicator(fail=True))
    mine = art.shard(full)
    session = art.session({k: mine.pop(k) for k in ("acc", "gate")})
    with pytest.raises(errors.CommunicatorError, match="all_reduce #0 failed on rank 0") as info:
        session.step(mine)
    assert isinstance(info.value.__cause__, RuntimeError)
    # The program ran on past the failed sum: its state is not a step's.
    assert session.closed
    with pytest.raises(errors.ClosedError):
        session.step(mine)


def test_a_peer_refusal_stops_this_rank(tmp_path, rng, lavapipe) -> None:
    path, full = _rank0(tmp_path, rng, "f32")
    comm = FakeCommunicator(peer_refuses=True)
    art = ProgramArtifact(path, lavapipe, communicator=comm)
    mine = art.shard(full)
    session = art.session({k: mine.pop(k) for k in ("acc", "gate")})
    before = session.state
    with pytest.raises(errors.RankRefused, match=r"rank\(s\) \[1\]") as info:
        session.step(mine)
    assert info.value.ranks == (1,)
    assert comm.calls == []  # no command ran
    for name, value in session.state.items():
        np.testing.assert_array_equal(value, before[name])


def test_a_world_of_one_needs_no_communicator(tmp_path, rng, lavapipe) -> None:
    """tensor_parallel=(0, 1): each all_reduce is the identity."""
    path = compile_gpu(mlp_rank_program(0, 1, "f32"), devices.VULKAN_LAVAPIPE, tmp_path / "one")
    full = {
        "x": rng.standard_normal((1, 1, D)).astype(np.float32),
        "w1": rng.standard_normal((D, BLOCK)).astype(np.float32),
        "w2": rng.standard_normal((BLOCK, D)).astype(np.float32),
        "acc": np.zeros((1, 1, D), np.float32), "gate": np.zeros((1, 1, BLOCK), np.float32),
    }
    y = ProgramArtifact(path, lavapipe).run(full).named["y"]
    x, g = full["x"].astype(np.float64), full["x"].astype(np.float64) @ full["w1"]
    want = x + (g / (1 + np.exp(-g))) @ full["w2"]
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-5 * np.max(np.abs(want)))
    assert lavapipe.traffic.reduced == 0


# -- without a device -----------------------------------------------------------


@pytest.fixture(scope="module")
def rank1_of_2(tmp_path_factory):
    """Rank 1's MLP program of 2, compiled for lavapipe (nothing runs it)."""
    out = tmp_path_factory.mktemp("gpu-rank1") / "r1"
    return compile_gpu(mlp_rank_program(1, 2, "f32"), devices.VULKAN_LAVAPIPE, out)


def test_the_manifest_records_the_split_and_the_commands(rank1_of_2) -> None:
    manifest = json.loads((rank1_of_2 / "manifest.json").read_text())
    function = manifest["function"]
    assert function["tensor_parallel"] == {"rank": 1, "degree": 2}
    assert function["all_reduce_sites"] == 1
    assert [e.get("shard") for e in function["inputs"]] == mlp_rank_shards(1, 2)
    step = manifest["programs"]["mlp"]
    [reduce] = [c["all_reduce"] for c in step["commands"] if "all_reduce" in c]
    assert reduce == {"buffer": reduce["buffer"], "count": D, "dtype": 0, "site": 0}
    assert step["buffers"][reduce["buffer"]]["kind"] == "temp"


def test_loading_a_rank_program_needs_a_communicator_of_its_rank_and_degree(rank1_of_2) -> None:
    # Refused before a device is opened: no Vulkan needed.
    with pytest.raises(errors.CommunicatorError, match="communicator="):
        ProgramArtifact(rank1_of_2, "lavapipe")
    with pytest.raises(errors.CommunicatorError, match="the communicator has 3"):
        ProgramArtifact(rank1_of_2, "lavapipe", communicator=FakeCommunicator(rank=1, size=3))
    with pytest.raises(errors.CommunicatorError, match="communicator's rank is 0"):
        ProgramArtifact(rank1_of_2, "lavapipe", communicator=FakeCommunicator(rank=0))


@pytest.mark.parametrize("bad", [(2, 2), (0, 0), "0,2", (True, 2)])
def test_compile_gpu_refuses_a_bad_tensor_parallel(tmp_path, bad) -> None:
    with pytest.raises(errors.CompileError, match="tensor_parallel="):
        compile_gpu(mlp_rank_program(0, 2, "f32"), devices.VULKAN_LAVAPIPE, tmp_path / "x",
                    tensor_parallel=bad)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda c: c.update(buffer=999), "sums buffer 999"),
        (lambda c: c.update(dtype=7), "dtype code 7"),
        (lambda c: c.pop("count"), "no 'count' int"),
    ],
)
def test_a_damaged_all_reduce_command_is_refused_at_load(tmp_path, rank1_of_2, edit, match) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(rank1_of_2, damaged)
    manifest = json.loads((damaged / "manifest.json").read_text())
    [command] = [c["all_reduce"] for c in manifest["programs"]["mlp"]["commands"] if "all_reduce" in c]
    edit(command)
    (damaged / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(errors.ArtifactError, match=match):
        ProgramArtifact(damaged, "lavapipe", communicator=FakeCommunicator(rank=1))


def test_an_unknown_command_is_refused_at_load(tmp_path, rank1_of_2) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(rank1_of_2, damaged)
    manifest = json.loads((damaged / "manifest.json").read_text())
    manifest["programs"]["mlp"]["commands"].append({"all_gather": {"buffer": 0}})
    (damaged / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(errors.ArtifactError, match="command 5 .* not one of .*recompile"):
        ProgramArtifact(damaged, "lavapipe", communicator=FakeCommunicator(rank=1))


def test_each_all_reduce_runs_between_the_device_batches() -> None:
    """The commands before an all_reduce are executed before it, the ones
    after it only afterwards (every backend's order, CUDA's included)."""
    log: list = []

    class Device:
        def execute(self, commands: list) -> None:
            log.append([c[0] for c in commands])

    commands = [("launch", 1), ("copy", 2), ("all_reduce", 3), ("all_reduce", 4), ("launch", 5)]
    program._run_commands(Device(), commands, lambda c: log.append(c))
    assert log == [["launch", "copy"], ("all_reduce", 3), ("all_reduce", 4), ["launch"]]
