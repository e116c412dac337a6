"""`CausalLM` split over tensor-parallel CPU ranks (issue 29): Hugging Face
models (random-init from small configs, nothing downloaded) built with
`communicator=` in each of 2 gloo ranks (`runtime.distributed.spawn`)
generate, and serve, the same tokens on every rank as the unsharded
CausalLM, its engine and transformers' greedy `generate`, on the CPU and on
lavapipe through wgpu; each rank's cache and pools hold only its KV heads.

The rank functions live here (module level, importable by the spawned
processes); every one returns plain picklable data for the test to check.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from system_deps import require, why_missing

try:
    # torch.export imports torch._dynamo, which loads triton where installed;
    # that must happen at collection (see test_torch_export.py).
    importlib.import_module("torch._dynamo")
except ImportError:
    pass

from poot_mlir import errors

COMMON = dict(
    vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
)  # fmt: skip
# name -> (config class, model class, changes to COMMON).
MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),  # q/k/v carry a bias: split with them
    # Packed projections (qkv_proj, gate_up_proj): a rank takes its block of
    # every segment of the packed weight.
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {"pad_token_id": 0, "eos_token_id": 1}),
    # One KV head for 4 query heads: at degree 4 every rank holds it (replicated).
    "llama_kv1": ("LlamaConfig", "LlamaForCausalLM", {"num_key_value_heads": 1}),
    # 3 heads and an odd MLP width: nothing divides 2, the step stays whole.
    "llama_odd": (
        "LlamaConfig", "LlamaForCausalLM",
        {"hidden_size": 48, "num_attention_heads": 3, "num_key_value_heads": 3,
         "intermediate_size": 99},
    ),  # fmt: skip
}
# A prompt of 5 tokens prefills as chunks of 4 and 1: two compiled shapes,
# the second also the decode step's.
PROMPT, NEW, CAPACITY = 5, 10, 32
ENGINE = dict(max_batch=2, chunk=4, max_seq_len=CAPACITY)


def build(hf, name: str, seed: int = 0):
    torch, transformers = hf
    config_class, model_class, changes = MODELS[name]
    config = getattr(transformers, config_class)(**{**COMMON, **changes})
    torch.manual_seed(seed)
    return getattr(transformers, model_class)(config).eval()


def prompt(hf, rows: int = 2, seed: int = 1) -> np.ndarray:
    torch, _ = hf
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(2, COMMON["vocab_size"], (rows, PROMPT), generator=generator).numpy()


def requests(ids: np.ndarray) -> list:
    """Three requests over a 2-row engine: different lengths, staggered
    arrivals, the third admitted only when a row frees."""
    from poot_mlir.driver import Request

    return [
        Request("a", ids[0].tolist(), 6),
        Request("b", ids[1].tolist()[:3], 8, arrival=1),
        Request("c", ids[0].tolist()[:4] + [5, 6], 5, arrival=2),
    ]


def hf_generate(hf, model, ids: np.ndarray, new: int) -> np.ndarray:
    torch, _ = hf
    with torch.no_grad():
        out = model.generate(
            torch.from_numpy(ids), max_new_tokens=new, do_sample=False, pad_token_id=0,
            eos_token_id=None,
        )  # fmt: skip
    return out.numpy()


# --- what each rank runs -------------------------------------------------------------


def _error(call) -> str:
    """The name of the error `call()` raised ("ok": none)."""
    try:
        call()
    except errors.PootError as error:
        return type(error).__name__
    return "ok"


def rank_generates(rank: int, world: int, cases: dict) -> dict:
    """Each case's model as this rank's CausalLM on the case's target: greedy
    ids and the shapes of its cache; with `requests`, the engine's tokens
    and pools; with `sampling`, seeded draws and the refusal of unseeded
    ones."""
    from poot_mlir.driver import Request
    from poot_mlir.driver.sampling import Sampling
    from poot_mlir.models import CausalLM
    from poot_mlir.runtime.collectives import Communicator

    comm = Communicator()
    out = {}
    for name, case in cases.items():
        got: dict = {}
        target = case.get("target", "cpu")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            with CausalLM.from_hf(case["model"], target, max_seq_len=CAPACITY, communicator=comm) as lm:
                got["ids"] = lm.generate(case["ids"], max_new_tokens=NEW, eos_token_id=None)
                if target == "cpu":
                    got["cache"] = {k: v.shape for k, v in lm._runner._state.items()}
                if case.get("sampling"):
                    got["sampled"] = lm.generate(
                        case["ids"], max_new_tokens=4, do_sample=True, top_k=8, seed=3,
                        eos_token_id=None,
                    )  # fmt: skip
                    got["unseeded"] = _error(
                        lambda: lm.generate(case["ids"], max_new_tokens=2, do_sample=True)
                    )
                if "requests" in case:
                    engine = lm.engine(**ENGINE)
                    for request in case["requests"]:
                        engine.submit(request)
                    unseeded = Request("s", [3, 4], 2, sampling=Sampling(do_sample=True))
                    got["engine_unseeded"] = _error(lambda: engine.submit(unseeded))
                    got["tokens"] = {rid: c.tokens for rid, c in engine.run().items()}
                    got["pools"] = {k: v.shape for k, v in engine.runner.state.items()}
        got["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        out[name] = got
    return out


# --- the tests -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def world2(hf):
    """Llama (generate and serve, on the CPU and, where wgpu runs, on
    lavapipe), Qwen2 and a Llama of one KV head (generate) on 2 ranks, with
    transformers' ids, and the unsharded CausalLM's ids and engine tokens,
    as the reference."""
    from poot_mlir.models import CausalLM
    from poot_mlir.runtime.distributed import spawn

    cases, reference = {}, {}
    for name, model, rows in (("llama", "llama", 2), ("qwen2", "qwen2", 2), ("phi3", "phi3", 1),
                              ("kv1", "llama_kv1", 1)):
        model, ids = build(hf, model), prompt(hf, rows)
        cases[name] = {"model": model, "ids": ids}
        reference[name] = {"hf": hf_generate(hf, model, ids, NEW)}
    cases["llama"].update(requests=requests(cases["llama"]["ids"]), sampling=True)
    if why_missing("wgpu") is None:
        # The same model on a device (lavapipe through wgpu): generate and serve.
        cases["wgpu"] = {**cases["llama"], "target": "wgpu", "sampling": False}
    with CausalLM.from_hf(cases["llama"]["model"], "cpu", max_seq_len=CAPACITY) as lm:
        reference["llama"]["ids"] = lm.generate(cases["llama"]["ids"], max_new_tokens=NEW, eos_token_id=None)
        engine = lm.engine(**ENGINE)
        for request in cases["llama"]["requests"]:
            engine.submit(request)
        reference["llama"]["tokens"] = {rid: c.tokens for rid, c in engine.run().items()}
    return cases, reference, spawn(rank_generates, 2, cases)


@pytest.mark.parametrize("name", ["llama", "qwen2", "phi3"])
def test_greedy_generate_on_2_ranks_matches_transformers(world2, name) -> None:
    _, reference, ranks = world2
    for rank, got in enumerate(ranks):
        np.testing.assert_array_equal(got[name]["ids"], reference[name]["hf"], err_msg=f"rank {rank}")
        assert got[name]["warnings"] == [], f"rank {rank}: {got[name]['warnings']}"
    if "ids" in reference[name]:
        np.testing.assert_array_equal(ranks[0][name]["ids"], reference[name]["ids"])


def test_each_rank_caches_only_its_kv_heads(world2) -> None:
    """[batch, kv heads, capacity, head_dim]: 2 KV heads over 2 ranks, one each."""
    _, _, ranks = world2
    for got in ranks:
        assert got["llama"]["cache"] == {
            f"cache_{kv}{i}": (2, 1, CAPACITY, 16) for i in range(2) for kv in "kv"
        }


def test_serving_on_2_ranks_matches_the_unsharded_engine(world2) -> None:
    _, reference, ranks = world2
    want = reference["llama"]["tokens"]
    assert sorted(want) == ["a", "b", "c"]
    for rank, got in enumerate(ranks):
        assert got["llama"]["tokens"] == want, f"rank {rank}"
        # The pools [slots, kv heads, head_dim] hold this rank's KV head only.
        slots = ENGINE["max_batch"] * CAPACITY
        assert got["llama"]["pools"] == {f"{kv}{i}": (slots, 1, 16) for i in range(2) for kv in "kv"}


def test_seeded_sampling_draws_the_same_tokens_on_every_rank(world2) -> None:
    _, _, (rank0, rank1) = world2
    sampled = rank0["llama"]["sampled"]
    assert sampled.shape == (2, PROMPT + 4)
    np.testing.assert_array_equal(rank1["llama"]["sampled"], sampled)


def test_unseeded_sampling_is_refused_on_ranks(world2) -> None:
    """Every rank would draw its own tokens, and the ranks' caches part."""
    _, _, ranks = world2
    for got in ranks:
        assert got["llama"]["unseeded"] == "CommunicatorError"
        assert got["llama"]["engine_unseeded"] == "CommunicatorError"


def test_one_kv_head_is_replicated_on_2_ranks(world2) -> None:
    """More ranks than KV heads: each rank attends with its 2 query heads
    over the same (replicated) KV head, and caches all of it."""
    _, reference, ranks = world2
    for rank, got in enumerate(ranks):
        np.testing.assert_array_equal(got["kv1"]["ids"], reference["kv1"]["hf"], err_msg=f"rank {rank}")
        assert got["kv1"]["cache"]["cache_k0"] == (1, 1, CAPACITY, 16)
        assert got["kv1"]["warnings"] == []


class _Peers:
    """A stand-in communicator: rank 0 of `size`, every peer agreeing. A
    step that splits nothing calls no collective, so it runs in-process."""

    def __init__(self, size: int) -> None:
        self.rank, self.size = 0, size

    def refusals(self, ok: bool) -> tuple[int, ...]:
        return () if ok else (0,)

    def agree(self, ok: bool) -> bool:
        return ok

    def all_reduce_(self, pointer: int, count: int, dtype_code: int) -> None:
        raise AssertionError("a step the split left whole calls no collective")


def test_a_model_that_does_not_split_runs_whole_with_a_warning(hf) -> None:
    """3 heads and an MLP of 99 columns over 2 ranks: the pass leaves every
    group whole; each rank runs the replicated step, and is told so."""
    from poot_mlir.models import CausalLM

    model, ids = build(hf, "llama_odd"), prompt(hf, rows=1)
    with pytest.warns(RuntimeWarning, match="left the whole step on every rank"):
        with CausalLM.from_hf(model, "cpu", max_seq_len=CAPACITY, communicator=_Peers(2)) as lm:
            got = lm.generate(ids, max_new_tokens=NEW, eos_token_id=None)
            assert lm._runner._state["cache_k0"].shape == (1, 3, CAPACITY, 16)
    np.testing.assert_array_equal(got, hf_generate(hf, model, ids, NEW))


def test_generate_and_serve_on_2_gpu_ranks(world2) -> None:
    """Each rank's whole step as kernels on its device (wgpu on lavapipe),
    its all_reduce commands summed through the communicator."""
    require("wgpu")
    _, reference, ranks = world2
    for rank, got in enumerate(ranks):
        np.testing.assert_array_equal(got["wgpu"]["ids"], reference["llama"]["hf"], err_msg=f"rank {rank}")
        assert got["wgpu"]["tokens"] == reference["llama"]["tokens"], f"rank {rank}"
        assert got["wgpu"]["pools"] == got["llama"]["pools"]
        assert got["wgpu"]["warnings"] == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tensor-parallel", "2"], "add --hf"),
        (["--hf", "llama", "--tensor-parallel", "-1"], "N >= 1"),
    ],
)
def test_the_serve_example_refuses_what_ranks_cannot_serve(capsys, argv, message) -> None:
    from poot_mlir.examples import serve

    with pytest.raises(SystemExit) as exit:
        serve.main(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_the_serving_path_imports_no_compiler() -> None:
    """A GPU machine runs artifacts compiled elsewhere and has no MLIR: the
    runners, the paged serving engine and the communicator must import no
    MLIR binding and no compiler module (bench/causal_lm_serving.py's run
    phase failed on exactly that once)."""
    child = (
        "import json, sys\n"
        "import poot_mlir.models.serving, poot_mlir.models.runners\n"
        "import poot_mlir.runtime.collectives, poot_mlir.runtime.distributed, poot_mlir.runtime.program\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'mlir' or '_mlir_libs' in m\n"
        "             or m.startswith(('poot_mlir.ir', 'poot_mlir.dialects', 'poot_mlir.compiler')))\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
