"""`models.CausalLM`: Hugging Face causal LMs (random-init from small configs,
nothing downloaded) compiled with their KV cache as state, generating the
same tokens as transformers' `generate` on the same weights; on the CPU for
every listed architecture, on lavapipe through Vulkan and wgpu for Llama."""

from __future__ import annotations

import numpy as np
import pytest

from system_deps import require

try:
    # torch.export imports torch._dynamo, which loads triton where installed;
    # that must happen at collection, before the GPU runtimes load their LLVM
    # (see test_torch_export.py).
    import torch._dynamo  # noqa: F401
except ImportError:
    pass

from poot_mlir import errors

COMMON = dict(
    vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
)  # fmt: skip

# name -> (config class, model class, extra config): each architecture's own
# features at small size: Mistral's sliding window and Gemma-2's alternating
# sliding/global layers with softcaps (window 6 < the 19 tokens generated, so
# the window hides keys), Qwen2's qkv bias, Phi-3's fused qkv and gate_up.
ARCHITECTURES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 6}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 16, "sliding_window": 6}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {"pad_token_id": 0, "eos_token_id": 1}),
    # Beyond the list: each its own attention, norm, position scheme.
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {"num_key_value_heads": None}),
    "falcon": ("FalconConfig", "FalconForCausalLM", {"num_key_value_heads": None}),
    "bloom": ("BloomConfig", "BloomForCausalLM", {"n_layer": 2, "n_head": 4}),  # ALiBi
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 16}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"head_dim": 16, "sliding_window": 6}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),  # q/k norms
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {}),
    "phi": ("PhiConfig", "PhiForCausalLM", {}),  # partial rotary, parallel block
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM", {}),
    "granite": ("GraniteConfig", "GraniteForCausalLM", {}),  # embedding/residual/logit multipliers
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", {}),
}
# Configs that name their sizes differently drop COMMON's names they reject.
_OWN_NAMES = {"gpt2": {"vocab_size"}, "bloom": {"vocab_size", "hidden_size"}}
PROMPT, NEW = 7, 12


def build(hf, name: str, seed: int = 0):
    torch, transformers = hf
    config_class, model_class, extra = ARCHITECTURES[name]
    keep = _OWN_NAMES.get(name)
    common = {k: v for k, v in COMMON.items() if keep is None or k in keep}
    common.update(extra)
    config = getattr(transformers, config_class)(**{k: v for k, v in common.items() if v is not None})
    if name == "gemma2":
        config._attn_implementation = "eager"  # softcapping needs eager attention
    torch.manual_seed(seed)
    return getattr(transformers, model_class)(config).eval()


def hf_generate(hf, model, ids, new=NEW, **kwargs):
    torch, _ = hf
    kwargs.setdefault("eos_token_id", None)
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new, do_sample=False, pad_token_id=0, **kwargs).numpy()


def prompt(hf, rows=2, length=PROMPT, seed=1):
    torch, _ = hf
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(2, COMMON["vocab_size"], (rows, length), generator=generator)


@pytest.fixture(scope="module")
def llama(hf):
    from poot_mlir.models import CausalLM

    model = build(hf, "llama")
    with CausalLM.from_hf(model, "cpu", max_seq_len=32) as lm:
        yield model, lm


@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_greedy_generate_matches_transformers(hf, name) -> None:
    from poot_mlir.models import CausalLM

    model = build(hf, name)
    ids = prompt(hf)
    want = hf_generate(hf, model, ids)
    with CausalLM.from_hf(model, "cpu", max_seq_len=32) as lm:
        got = lm.generate(ids, max_new_tokens=NEW, eos_token_id=None)
    assert got.dtype == np.int64 and got.shape == (2, PROMPT + NEW)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", ["vulkan", "wgpu"])
def test_llama_generates_on_lavapipe(hf, backend) -> None:
    """The whole step as kernels, the cache resident on the device."""
    require(backend)
    from poot_mlir.models import CausalLM

    model = build(hf, "llama")
    ids = prompt(hf)
    with CausalLM.from_hf(model, backend, max_seq_len=32) as lm:
        got = lm.generate(ids, max_new_tokens=NEW, eos_token_id=None)
        np.testing.assert_array_equal(got, hf_generate(hf, model, ids))
        # A second prompt: the prefill chunks (4 + 2 + 1) and the decode step
        # share one cache and one copy of the weights on the device, and the
        # cache is reused as it is (the mask hides what the last prompt left),
        # so the host writes only each step's ids and position. Greedy: each
        # step chooses its tokens itself (`next_token`), so the host reads
        # back rows x 4 bytes of tokens from the last chunk and each decode
        # step, never the logits, and nothing from the inner chunks.
        traffic = lm._runner._backend.traffic
        written, read = traffic.written, traffic.read
        np.testing.assert_array_equal(lm.generate(ids, max_new_tokens=NEW, eos_token_id=None), got)
        rows = 2
        steps = [4, 2, 1] + [1] * (NEW - 1)
        step_inputs = sum(rows * n * 4 + 4 for n in steps)  # i32 ids and pos
        assert traffic.written - written == step_inputs
        assert traffic.read - read == NEW * rows * 4
        # Sampling draws on the host: the same steps read back their f32
        # logits instead (and only them).
        read = traffic.read
        lm.generate(ids, max_new_tokens=NEW, do_sample=True, seed=0, eos_token_id=None)
        assert traffic.read - read == NEW * rows * COMMON["vocab_size"] * 4


def test_prompt_lengths_and_int_types(hf, llama) -> None:
    """Prompts of every chunking (1, 2+1, 4+2+1, 16, 16+4+1 tokens) and ids as
    int64 torch, int64 and int32 numpy give transformers' tokens."""
    model, lm = llama
    for length in (1, 3, 7, 16, 21):
        ids = prompt(hf, rows=1, length=length, seed=length)
        want = hf_generate(hf, model, ids, new=6)
        np.testing.assert_array_equal(lm.generate(ids, max_new_tokens=6, eos_token_id=None), want)
        np.testing.assert_array_equal(
            lm.generate(ids.numpy().astype(np.int32), max_new_tokens=6, eos_token_id=None), want
        )


def test_a_reused_cache_gives_fresh_results(hf, llama) -> None:
    """Prompts one after another reuse one cache uncleared: a short prompt
    after a long generation sees none of what the long one left."""
    model, lm = llama
    long_ids, short_ids = prompt(hf, length=9, seed=4), prompt(hf, length=2, seed=5)
    lm.generate(long_ids, max_new_tokens=20, eos_token_id=None)
    np.testing.assert_array_equal(
        lm.generate(short_ids, max_new_tokens=8, eos_token_id=None), hf_generate(hf, model, short_ids, new=8)
    )


def test_eos_stops_rows_and_pads(hf, llama) -> None:
    """A row that produced eos continues with pad; generation stops when
    every row has (transformers' rule)."""
    model, lm = llama
    ids = prompt(hf)
    free = hf_generate(hf, model, ids)
    eos = int(free[0, PROMPT + 2])  # row 0's third new token
    want = hf_generate(hf, model, ids, eos_token_id=eos)
    got = lm.generate(ids, max_new_tokens=NEW, eos_token_id=eos, pad_token_id=0)
    np.testing.assert_array_equal(got, want)


def test_sampling_is_seeded(hf, llama) -> None:
    _, lm = llama
    ids = prompt(hf)
    args = dict(max_new_tokens=10, do_sample=True, temperature=0.8, top_k=20, top_p=0.9)
    first = lm.generate(ids, seed=7, **args)
    assert np.array_equal(first, lm.generate(ids, seed=7, **args))
    draws = {lm.generate(ids, seed=s, **args)[:, PROMPT:].tobytes() for s in range(6)}
    assert len(draws) > 1  # the seed matters
    # top_k=1 leaves only the argmax: sampling then is greedy.
    greedy = lm.generate(ids, max_new_tokens=10, eos_token_id=None)
    np.testing.assert_array_equal(lm.generate(ids, max_new_tokens=10, do_sample=True, top_k=1, seed=3,
                                              eos_token_id=None), greedy)  # fmt: skip


def test_sampling_filters() -> None:
    """top_k / top_p keep exactly the tokens transformers' processors keep."""
    from poot_mlir.driver.sampling import Sampling

    rng = np.random.default_rng(0)
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]]))
    seen = {int(Sampling(True, top_p=0.7).next_tokens(logits, rng)[0]) for _ in range(200)}
    assert seen == {0, 1}  # 0.5 < 0.7 <= 0.5 + 0.3
    seen = {int(Sampling(True, top_k=3).next_tokens(logits, rng)[0]) for _ in range(400)}
    assert seen == {0, 1, 2}
    with pytest.raises(ValueError, match="temperature"):
        Sampling(True, temperature=0.0)
    with pytest.raises(ValueError, match="top_p"):
        Sampling(True, top_p=1.5)


def test_bad_requests_are_refused(hf, llama) -> None:
    _, lm = llama
    with pytest.raises(errors.BindError, match="it holds 32"):
        lm.generate(prompt(hf, rows=1, length=30), max_new_tokens=8)
    with pytest.raises(errors.BindError, match="outside the vocabulary"):
        lm.generate(np.array([[1, 2, 97]]), max_new_tokens=2)
    with pytest.raises(errors.BindError, match="length >= 1"):
        lm.generate(np.zeros((1, 0), np.int64), max_new_tokens=2)


def test_bf16_logits_follow_the_sixteen_bit_contract(hf, llama) -> None:
    """dtype="bf16": the model's bf16 copy compiled; its logits against the
    same bf16 weights run in float64 (f32 accumulation, rounding per op:
    docs/sixteen-bit-contract.md), the user's model left in f32."""
    torch, _ = hf
    from poot_mlir.models import CausalLM

    model, _ = llama
    ids = prompt(hf, rows=1, length=5)
    with CausalLM.from_hf(model, "cpu", max_seq_len=16, dtype="bf16") as lm:
        got = lm.logits(ids)
    assert next(model.parameters()).dtype == torch.float32
    import copy

    reference = copy.deepcopy(model).to(torch.bfloat16).double()
    with torch.no_grad():
        want = reference(ids).logits[:, -1, :].numpy()
    error = np.abs(got - want).max() / np.abs(want).max()
    assert error < 2e-2, error


@pytest.mark.parametrize("name", ["llama", "gemma2"])
def test_left_padded_prompts_match_transformers(hf, name) -> None:
    """Prompts of different lengths, left-padded with their attention mask as
    a tokenizer gives them: each row its own positions, its padding never
    attended (Gemma-2: with its alternating sliding windows)."""
    torch, _ = hf
    from poot_mlir.models import CausalLM

    model = build(hf, name)
    ids = prompt(hf, rows=3, length=7, seed=9)
    mask = torch.ones_like(ids)
    for row, pads in ((0, 3), (1, 0), (2, 5)):
        ids[row, :pads], mask[row, :pads] = 0, 0
    want = hf_generate(hf, model, ids, attention_mask=mask)
    with CausalLM.from_hf(model, "cpu", max_seq_len=32) as lm:
        got = lm.generate(ids, max_new_tokens=NEW, eos_token_id=None, pad_token_id=0, attention_mask=mask)
        np.testing.assert_array_equal(got, want)
        with pytest.raises(errors.BindError, match="pad on the left"):
            lm.generate(ids, max_new_tokens=2, attention_mask=mask.flip(1))
