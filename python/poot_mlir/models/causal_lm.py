"""`CausalLM`: a Hugging Face causal LM compiled by poot_mlir, generating
with its KV cache as the compiled step's state.

    lm = CausalLM.from_hf(model, target="cpu", max_seq_len=256)
    ids = lm.generate(input_ids, max_new_tokens=32)          # [B, L + new]

The model is never rewritten by hand: each step shape is the model's own
forward, exported with a StaticCache (`hf_export.export_step`), imported
(`frontend.torch_export`: the cache writes become state, the position the
step's `pos`, RoPE and masks computed in the graph from it), fused and
compiled for the target. Step shapes are `[B, n]` with n a power of two: a
prompt of L tokens is prefilled in the chunks of L's binary expansion (37 =
32 + 4 + 1: no padding token, every chunk ends where the next begins), and
each new token is one `[B, 1]` step. Shapes are compiled on first use and
kept (the compile cache, $POOT_CACHE, also keeps them across processes).

Serving many requests at once -- continuous batching over paged KV pools,
prefix caching, preemption -- is `lm.engine(...)`: a `driver.Engine` over
the model's paged step (`models.paged`, `models.serving`).

Tensor parallel (docs/tensor-parallel.md): in each rank's process, with
the same model and the same calls,

    lm = CausalLM.from_hf(model, "cpu", communicator=Communicator())   # or a GPU target

compiles every step as this rank's program (attention split by heads, the
MLP by columns and rows), binds this rank's blocks of the weights and of
the cache, and returns the same ids on every rank.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BindError, CommunicatorError
from .hf_export import add_next_token, export_step
from .runners import make_runner
from ..driver.sampling import Sampling

__all__ = ["CausalLM"]

_DTYPE_NAMES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


class _FromConfig:
    """The default of `eos_token_id` / `pad_token_id`: the model's generation
    config (an explicit None means none, as in transformers)."""

    def __repr__(self) -> str:
        return "<from the generation config>"


FROM_CONFIG: Any = _FromConfig()


def _torch_dtype(dtype: Any) -> Any:
    import torch

    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    name = _DTYPE_NAMES.get(str(dtype), str(dtype))
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r} (f32, bf16, f16 or a torch.dtype)")
    return value


def _token_ids(input_ids: Any, vocab: int) -> np.ndarray:
    """`input_ids` (torch or numpy, int64 or int32, `[B, L]` or `[L]`) as an
    int64 `[B, L]` array, each id checked against the vocabulary."""
    if hasattr(input_ids, "detach"):
        input_ids = input_ids.detach().cpu().numpy()
    ids = np.asarray(input_ids)
    if ids.ndim == 1:
        ids = ids[None, :]
    if ids.ndim != 2 or ids.shape[1] < 1 or ids.shape[0] < 1:
        raise BindError(f"input_ids must be [batch, length] with length >= 1, got {list(ids.shape)}")
    if not np.issubdtype(ids.dtype, np.integer):
        raise BindError(f"input_ids must hold integers, got {ids.dtype}")
    bad = (ids < 0) | (ids >= vocab)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise BindError(f"input_ids{list(at)} = {int(ids[at])} is outside the vocabulary [0, {vocab})")
    return ids.astype(np.int64)


class _Padding:
    """A left-padded batch's step inputs: the `[B, capacity]` padding mask
    (the prompt's mask, then 1 for every generated slot) and each row's
    positions, as transformers computes them (`cumsum(mask) - 1`, 1 at a
    padding token)."""

    def __init__(self, mask: np.ndarray, capacity: int) -> None:
        batch, length = mask.shape
        self.mask = np.ones((batch, capacity), np.int32)
        self.mask[:, :length] = mask
        positions = np.cumsum(mask, axis=1) - 1
        self.positions = np.where(mask == 0, 1, positions).astype(np.int32)
        self.last = positions[:, -1].astype(np.int32)

    @classmethod
    def of(cls, attention_mask: Any, ids: np.ndarray, capacity: int) -> "_Padding | None":
        """None when there is no padding (every row full length)."""
        if attention_mask is None:
            return None
        if hasattr(attention_mask, "detach"):
            attention_mask = attention_mask.detach().cpu().numpy()
        mask = np.asarray(attention_mask)
        if mask.ndim == 1:
            mask = mask[None, :]
        if mask.shape != ids.shape:
            raise BindError(f"attention_mask is {list(mask.shape)}; input_ids are {list(ids.shape)}")
        if not np.isin(mask, (0, 1)).all():
            raise BindError("attention_mask holds values other than 0 and 1")
        if not mask[:, -1].all():
            raise BindError(
                "attention_mask: every row's last token must be real (pad on the left, as "
                "generation needs: tokenizer.padding_side = 'left')"
            )
        if mask.all():
            return None
        return cls(mask.astype(np.int32), capacity)

    def chunk(self, pos: int, n: int) -> dict[str, np.ndarray]:
        return {"attention_mask": self.mask, "position_ids": self.positions[:, pos : pos + n]}

    def next(self, step: int) -> dict[str, np.ndarray]:
        """The inputs of the decode step feeding the `step`-th new token."""
        return {"attention_mask": self.mask, "position_ids": (self.last + 1 + step)[:, None]}


def _chunks(length: int) -> list[int]:
    """`length` as descending powers of two (its binary expansion)."""
    return [1 << bit for bit in range(length.bit_length() - 1, -1, -1) if length >> bit & 1]


class CausalLM:
    """A compiled causal LM with a fixed-capacity KV cache (see the module
    docstring). Build it with `from_hf`."""

    def __init__(self, model: Any, runner: Any, capacity: int, workdir: Path, owns: bool) -> None:
        self.model = model
        self.capacity = capacity
        self._runner = runner
        self._workdir = workdir
        self._owns_workdir = owns
        config = model.config.get_text_config(decoder=True)
        self.vocab_size = int(config.vocab_size)
        self._generation = getattr(model, "generation_config", None)
        self._batch: int | None = None  # the rows the current cache holds
        self._engines: list = []  # closed before the runner (they may share its device)

    # --- construction -------------------------------------------------------------------

    @classmethod
    def from_hf(
        cls,
        model: Any,
        target: Any = "cpu",
        *,
        max_seq_len: int | None = None,
        dtype: Any = None,
        workdir: "str | Path | None" = None,
        communicator: Any = None,
    ) -> "CausalLM":
        """Compile-on-demand generation for a transformers causal LM.

        `target`: "cpu", "vulkan", "wgpu", "cuda" (the first such device)
        or a `compiler.devices.Device`. `max_seq_len`: the KV cache's
        capacity (prompt + new tokens; default the model's
        max_position_embeddings, at most 2048). `dtype`: compute in this
        dtype (f32, bf16, f16 or a torch dtype; the model is copied first,
        never changed); default the model's. `workdir`: where the compiled
        steps go (default a temporary directory, removed by `close`).

        `communicator` (a `runtime.collectives.Communicator`): this process
        is one rank of a tensor-parallel model; every rank builds it from
        the same model and makes the same calls (`generate`, `engine`), and
        gets the same ids. On CUDA, rank r runs on GPU r (spawn the ranks
        with backend "cpu:gloo,cuda:nccl"). A degree the model's heads or
        MLP width do not divide runs whole on every rank, with a warning.
        """
        torch_dtype = _torch_dtype(dtype)
        model = model.eval()
        current = next(model.parameters()).dtype
        if torch_dtype is not None and torch_dtype != current:
            model = copy.deepcopy(model).to(torch_dtype)
        config = model.config.get_text_config(decoder=True)
        limit = getattr(config, "max_position_embeddings", None) or 2048
        capacity = int(max_seq_len) if max_seq_len is not None else min(int(limit), 2048)
        if capacity < 1:
            raise ValueError(f"max_seq_len must be >= 1, got {max_seq_len!r}")
        owns = workdir is None
        root = Path(tempfile.mkdtemp(prefix="poot-causal-lm-")) if owns else Path(workdir)
        if communicator is not None and not owns:
            # Each rank compiles its own program: never into a peer's folder.
            root = root / f"rank{communicator.rank}"
        root.mkdir(parents=True, exist_ok=True)
        runner = make_runner(target, root, communicator)
        return cls(model, runner, capacity, root, owns)

    @property
    def communicator(self) -> Any:
        """This rank's communicator (None: not tensor-parallel)."""
        return getattr(self._runner, "communicator", None)

    def close(self) -> None:
        """Release the runtime, the engines' runners and the compiled steps
        (when the workdir is ours)."""
        for engine in self._engines:
            engine.close()
        self._engines.clear()
        self._runner.close()
        if self._owns_workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> "CausalLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- serving --------------------------------------------------------------------------

    def engine(
        self,
        *,
        max_batch: int = 8,
        num_blocks: int | None = None,
        chunk: int = 16,
        max_seq_len: int | None = None,
        preempt: bool = False,
        keep_logits: bool = True,
    ) -> Any:
        """A `driver.Engine` serving this model on its target: submit
        `driver.Request`s (token ids, `max_new_tokens`, optional sampling and
        seed), then `run()` (or `step()`); each `Completion` holds the
        generated tokens, greedy by default, equal to transformers' `generate`
        of the request alone.

        Each step runs up to `max_batch` sequences, a prefilling one
        contributing a chunk of up to `chunk` prompt tokens, a decoding one
        its last token. Keys and values live in one pool of `num_blocks`
        blocks of 16 tokens (default: `max_batch` sequences of `max_seq_len`
        tokens), allocated on demand; full blocks are shared by later
        requests with the same prefix. `max_seq_len`: a sequence's tokens,
        prompt and generated (default this model's `max_seq_len`).
        `preempt=True`: admit a request when its prompt fits, and when the
        pool runs out recompute the youngest request later (vLLM's
        preemption by recompute) instead of reserving every request's final
        blocks at admission. `keep_logits=False`: completions carry no
        logits rows (tokens only), and a step whose rows are all greedy
        reads back only its tokens, chosen in the step (on a GPU: `rows x
        4` bytes, not the `[rows, vocab]` logits). Compiles two step shapes
        (`[max_batch, chunk]` and `[max_batch, 1]`) on the first call;
        `close()` releases it (and `CausalLM.close` every engine it made)."""
        from ..driver import BLOCK_SIZE
        from .serving import EngineShape, build_engine

        length = self.capacity if max_seq_len is None else max_seq_len
        if num_blocks is None and isinstance(length, int) and isinstance(max_batch, int):
            num_blocks = max_batch * -(-length // BLOCK_SIZE)
        shape = EngineShape(max_batch, chunk, length, num_blocks)  # type: ignore[arg-type]
        engine = build_engine(self, shape, preempt=preempt, keep_logits=keep_logits)
        self._engines.append(engine)
        return engine

    # --- steps --------------------------------------------------------------------------

    def _step(self, batch: int, tokens: int, padded: bool = False):
        """The compiled `[batch, tokens]` step (exported, imported, compiled
        on first use); `padded`: the form with a padding mask and per-row
        positions (left-padded prompts)."""
        key = (batch, tokens, padded)
        if not self._runner.has(key):
            from ..frontend.torch_export import exported_weights, import_exported

            ep = export_step(self.model, batch, tokens, self.capacity, padded=padded)
            tracer = import_exported(
                ep, name=f"step_b{batch}_t{tokens}", output_names=["logits"],
                pos="pos", max_pos=self.capacity - tokens, pack_weights=True,
            )  # fmt: skip
            add_next_token(tracer)  # greedy decoding reads back [batch] tokens, not logits
            self._runner.add(key, tracer.finish(), lambda: exported_weights(ep, pack_weights=True))
        return key

    def _reset(self, batch: int, key: Any) -> None:
        """A cache for `batch` rows. A new prompt reuses the last one's cache
        as it is: every slot a query can see (up to its position) is written
        first, and the mask hides the rest, whose old finite values weigh 0
        -- so nothing is cleared or uploaded between prompts. A new batch
        size allocates a zeroed cache, at the shapes the compiled step `key`
        (of `batch` rows) carries: a rank's cache holds only its heads."""
        if self._batch == batch:
            return
        self._runner.reset(self._runner.zero_state(key))
        self._batch = batch

    def logits(self, input_ids: Any, attention_mask: Any = None) -> np.ndarray:
        """The last position's logits `[B, vocab]` (float32) of a fresh prompt."""
        ids = _token_ids(input_ids, self.vocab_size)
        return self._prefill(ids, _Padding.of(attention_mask, ids, self.capacity))

    def _prefill(self, ids: np.ndarray, padding: "_Padding | None", greedy: bool = False) -> np.ndarray:
        """Prefill the prompt; the last chunk's logits `[B, vocab]`, or with
        `greedy` its tokens `[B]` (chosen in the step: on a GPU the logits
        are never read back). The inner chunks read nothing back."""
        batch, length = ids.shape
        if length > self.capacity:
            raise BindError(f"the prompt has {length} tokens; the cache holds {self.capacity} (max_seq_len)")
        chunks, pos = _chunks(length), 0
        self._reset(batch, self._step(batch, chunks[0], padding is not None))
        for i, n in enumerate(chunks):
            key = self._step(batch, n, padding is not None)
            extra = padding.chunk(pos, n) if padding is not None else None
            chunk = ids[:, pos : pos + n]
            if i < len(chunks) - 1:
                self._runner.advance(key, chunk, pos, extra)
            elif greedy:
                return self._runner.next_token(key, chunk, pos, extra)
            else:
                return self._runner.logits(key, chunk, pos, extra)
            pos += n
        raise AssertionError("a prompt has at least one chunk")

    # --- generation ---------------------------------------------------------------------

    def _default(self, name: str, value: Any) -> Any:
        if value is not FROM_CONFIG:
            return value
        return getattr(self._generation, name, None) if self._generation is not None else None

    def generate(
        self,
        input_ids: Any,
        max_new_tokens: int = 20,
        *,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int | None = None,
        eos_token_id: "int | list[int] | None" = FROM_CONFIG,
        pad_token_id: "int | None" = FROM_CONFIG,
        attention_mask: Any = None,
    ) -> np.ndarray:
        """The prompt and its continuation, `[B, L + new]` int64, as
        transformers' `generate`: greedy by default; with `do_sample`,
        temperature / top_k / top_p sampling drawn from `seed`. A row that
        produced an `eos_token_id` (default: the model's generation config)
        is continued with `pad_token_id` (default: the generation config's,
        else the first eos); generation stops when every row has, or after
        `max_new_tokens`. An explicit None turns either off. Every row starts at
        the same position; prompts of different lengths come left-padded
        with their `attention_mask` (`[B, L]`, 0 at a padding token), as a
        tokenizer gives them: each row then has its own positions and never
        attends to its padding, as in transformers."""
        sampling = Sampling(do_sample, temperature, top_k, top_p)
        if sampling.do_sample and seed is None and self.communicator is not None:
            raise CommunicatorError(
                "do_sample on tensor-parallel ranks needs seed=: every rank draws its own "
                "tokens, and only the same seed makes them draw the same ones"
            )
        if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        ids = _token_ids(input_ids, self.vocab_size)
        batch, length = ids.shape
        if length + max_new_tokens > self.capacity + 1:
            raise BindError(
                f"{length} prompt tokens + {max_new_tokens} new need a cache of "
                f"{length + max_new_tokens - 1}; it holds {self.capacity} (max_seq_len)"
            )
        eos = self._default("eos_token_id", eos_token_id)
        eos_ids = np.array([] if eos is None else np.atleast_1d(eos), dtype=np.int64)
        pad = self._default("pad_token_id", pad_token_id)
        pad = int(eos_ids[0]) if pad is None and eos_ids.size else pad
        rng = np.random.default_rng(seed)
        out = [ids]
        if max_new_tokens == 0:
            return ids
        padding = _Padding.of(attention_mask, ids, self.capacity)
        # Greedy: each step chooses its tokens itself (its `next_token`, the
        # first maximum as torch's argmax), so only they come back; sampling
        # draws from the logits on the host.
        greedy = not sampling.do_sample
        produced = self._prefill(ids, padding, greedy)
        done = np.zeros(batch, dtype=bool)
        for step in range(max_new_tokens):
            token = produced if greedy else sampling.next_tokens(produced, rng)
            if eos_ids.size:
                token = np.where(done, pad if pad is not None else token, token)
                done |= np.isin(token, eos_ids)
            out.append(token[:, None])
            if done.all() or step == max_new_tokens - 1:
                break
            key = self._step(batch, 1, padding is not None)
            extra = padding.next(step) if padding is not None else None
            run = self._runner.next_token if greedy else self._runner.logits
            produced = run(key, token[:, None], length + step, extra)
        return np.concatenate(out, axis=1)
