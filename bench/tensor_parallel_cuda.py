"""Tensor parallelism on CUDA (issue 29): the decoder split over 2 ranks that
share ONE GPU, run by the CUDA runtime with the program's all_reduce commands
answered by torch.distributed, against the float64 oracle of the unsharded
step. A correctness check of the CUDA path, not a speed figure: two ranks on
one GPU measure nothing about tensor parallelism (multi-GPU machines are not
lent; docs/tensor-parallel.md). NCCL refuses two ranks on one GPU, so the
group is gloo, which all-reduces CUDA tensors too.

    # here (MLIR): compile every rank's program for sm_90, the oracle's logits
    python bench/tensor_parallel_cuda.py build bench/artifacts/tp_cuda
    # on the GPU machine (no MLIR)
    python bench/tensor_parallel_cuda.py run bench/artifacts/tp_cuda

The run prints one JSON object: per case, the worst relative error of every
rank's logits against float64 and whether the ranks agree bit for bit.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "python"))  # the GPU machine has no build: the runtime is pure Python

DEGREE = 2
STEPS = 6
#: (name, DecoderConfig fields): f32 and bf16, KV heads split and replicated.
CASES = [
    ("f32_kv4", dict(layers=2, d_model=256, q_heads=8, kv_heads=4, ffn=512, cap=64, vocab=512)),
    ("bf16_kv4", dict(layers=2, d_model=256, q_heads=8, kv_heads=4, ffn=512, cap=64, vocab=512,
                      dtype="bf16")),
    ("f32_kv1", dict(layers=2, d_model=256, q_heads=8, kv_heads=1, ffn=512, cap=64, vocab=512)),
]


def build(out: Path) -> None:
    from poot_mlir import oracle
    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.examples.decoder import DecoderConfig, build_decoder, init_state, init_weights

    rng = np.random.default_rng(0)
    cases = []
    for name, fields in CASES:
        config = DecoderConfig(**fields)
        module = str(build_decoder(config).finish())
        paths = [str(compile_gpu(module, devices.SM_90, out / name / f"rank{r}",
                                 tensor_parallel=(r, DEGREE)).relative_to(out))
                 for r in range(DEGREE)]
        weights, state = init_weights(config, 1), init_state(config)
        tokens = [int(t) for t in rng.integers(0, config.vocab, STEPS)]
        session = oracle.Session(module, state, reference=True)
        want = []
        for step, token in enumerate(tokens):
            inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32)}
            want.append(np.asarray(session.step({**inputs, **weights}).named["logits"], np.float64))
        cases.append({"name": name, "paths": paths, "weights": weights, "state": state,
                      "tokens": tokens, "want": want})
        print(f"built {name}", file=sys.stderr)
    (out / "cases.pickle").write_bytes(pickle.dumps(cases))


def rank_main(rank: int, world: int, out: str) -> list[dict]:
    from poot_mlir.runtime.collectives import Communicator
    from poot_mlir.runtime.program import ProgramArtifact

    comm = Communicator()
    results = []
    for case in pickle.loads(Path(out, "cases.pickle").read_bytes()):
        art = ProgramArtifact(Path(out, case["paths"][rank]), backend="cuda", communicator=comm)
        session = art.session(art.shard(case["state"]), constants=art.shard(case["weights"]))
        logits = []
        for step, token in enumerate(case["tokens"]):
            inputs = {"pos": np.int32(step), "token": np.array([[token]], np.int32)}
            logits.append(np.asarray(session.step(inputs).named["logits"], np.float64))
        art.close()
        results.append({"name": case["name"], "logits": logits,
                        "reduced_bytes": int(art.device.traffic.reduced)})
    return results


def run(out: Path) -> None:
    from poot_mlir.runtime.distributed import spawn

    cases = pickle.loads((out / "cases.pickle").read_bytes())
    ranks = spawn(rank_main, DEGREE, str(out), backend="gloo")
    report = []
    for i, case in enumerate(cases):
        worst, agree = 0.0, True
        for step, want in enumerate(case["want"]):
            scale = float(np.max(np.abs(want)))
            for r in range(DEGREE):
                got = ranks[r][i]["logits"][step]
                worst = max(worst, float(np.max(np.abs(got - want))) / scale)
                agree &= bool(np.array_equal(got, ranks[0][i]["logits"][step]))
        report.append({"case": case["name"], "ranks": DEGREE, "steps": len(case["want"]),
                       "max_rel_err_vs_float64": worst, "ranks_agree": agree,
                       "argmax_agree": sum(int(np.argmax(ranks[0][i]["logits"][s]) == np.argmax(w))
                                           for s, w in enumerate(case["want"])),
                       "reduced_bytes_rank0": ranks[0][i]["reduced_bytes"]})
    import torch

    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "cases": report}, indent=1))


if __name__ == "__main__":
    phase, folder = sys.argv[1], Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    build(folder) if phase == "build" else run(folder)
