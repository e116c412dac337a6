"""The serving loop: continuous batching over one paged KV cache.

`Engine` admits requests as they arrive (and as rows and blocks allow),
packs every running request into one fixed-shape step -- a prefilling
request contributes a chunk of up to `tokens` prompt tokens, a decoding one
its last generated token -- runs the step, and chooses each row's next
token: greedily (the first maximum, as torch's argmax) or drawn by the
request's own sampling. Requests finish at different steps; their blocks
go back to the pool (full blocks stay cached for later prefixes until
evicted).

The step function it drives (any runner with `.step(inputs)` returning a
result whose `.named[logits]` is `[rows, tokens, vocab]` -- or `[rows, 1,
vocab]`, each row's last real token's: a step that computes the head for
those only, as `models.paged` does -- and `.state` holding the pools by
state name) takes, besides its weights:

    tokens  [rows, tokens] i32     the row's new token ids (padding: 0)
    pos     [rows] i32             position of the row's first new token
    count   [rows] i32 in [1, T]   how many of the row's tokens are real
    read    [rows, cap] i32        logical position -> pool slot (past the
                                   row's length: slot 0, never attended)
    write   [rows * tokens] i32    pool slot of each new token, -1: padding
    adapter [rows] i32             the row's adapter slot (with adapters)

A step may also return each row's greedy token, `next_token [rows] i32`,
the argmax of the row's last logits computed in the step (as the Hugging
Face paged steps of `models.serving` do; name it with
`Engine(next_token=...)`): then, when no row needs its
logits -- every row that gets a token this step is greedy and the engine
keeps no logits (`keep_logits=False`) -- the engine asks the runner for
that output alone (`runner.step(inputs, fetch=(next_token,))`, or `()`
when no row gets a token): a device runner reads back `rows x 4` bytes,
not `[rows, vocab]` logits, and the host computes no argmax. A step with a
sampled row reads the logits, as without `next_token`.

An unused row is a dummy: pos 0, count 1, every write -1. The runtime's
binder checks every word of these maps and positions against their declared
ranges and the write map as a forward slot map before anything runs; a
refused step restores the cache's tables (`PagedKVCache.snapshot`) and
leaves the pools as they were.

A request is checked against the model when it is submitted (`submit`): its
token ids against the step's vocabulary, its length against what a sequence
may hold and the pool's blocks, its adapter against those loaded. A request
that passed could still never run (a step refused for a reason nobody
checked); `cancel` takes it out, queued or running, and frees its blocks.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

from ..errors import KVCacheError, PoolExhausted, RangeBindError, SequenceFull, ShapeBindError
from .adapters import AdapterTable
from .blocks import BLOCK_SIZE
from .cache import Copy, PagedKVCache, apply_copies
from .prefix import WeightsIdentity
from .sampling import Sampling


@dataclass(frozen=True)
class StepShape:
    """The compiled step's static shape: `rows` sequences of `tokens` new
    tokens each, attending over a read map of `cap` positions. A row's `pos`
    is declared in `[0, cap - tokens]`, so a sequence holds at most
    `cap - tokens + 1` tokens."""

    rows: int
    tokens: int
    cap: int

    @property
    def max_tokens(self) -> int:
        return self.cap - self.tokens + 1


@dataclass
class Request:
    rid: Hashable
    prompt: Sequence[int]
    max_new_tokens: int
    adapter: str | None = None
    arrival: int = 0  # the step at which it arrives
    #: How its tokens are chosen (None: greedy) and the seed of its draws: a
    #: request's tokens depend on its own seed only, not on its batch.
    sampling: Sampling | None = None
    seed: int | None = None
    #: Token ids that end the request once generated (included in its
    #: tokens, as transformers' `generate` does): an int, a sequence of them,
    #: or None (it runs to `max_new_tokens`).
    eos_token_id: int | Sequence[int] | None = None


@dataclass
class Completion:
    rid: Hashable
    prompt: list[int]
    adapter: str | None
    identity: WeightsIdentity
    tokens: list[int]  # generated (greedy, or drawn by the request's sampling)
    logits: list[np.ndarray]  # one [vocab] row per generated token (none: keep_logits=False)
    reused: int  # prompt tokens taken from the prefix cache
    admitted: int
    finished: int
    #: "eos" (it generated one of its `eos_token_id`) or "length" (it
    #: reached `max_new_tokens`).
    finish_reason: str = "length"


@dataclass
class RowPlan:
    rid: Hashable
    kind: str  # "prefill" | "decode"
    pos: int
    count: int


@dataclass
class StepReport:
    step: int
    rows: list[RowPlan]
    admitted: list[tuple[Hashable, int]]  # (rid, prompt tokens reused)
    finished: list[Hashable]
    blocks_in_use: int
    cached_blocks: int
    seconds: float  # wall time of the dispatch
    cpu_seconds: float  # CPU time of the dispatching thread (robust on a shared machine)


@dataclass
class _Live:
    request: Request
    slot: int
    identity: WeightsIdentity
    reused: int
    admitted: int
    fed: int  # prompt tokens whose K/V are in the cache
    generated: list[int] = field(default_factory=list)
    logits: list[np.ndarray] = field(default_factory=list)
    rng: np.random.Generator | None = None
    #: The request as submitted: `request` differs from it after a
    #: preemption (its prompt then carries the tokens generated before).
    original: Request | None = None

    @property
    def submitted(self) -> Request:
        return self.original or self.request

    @property
    def greedy(self) -> bool:
        sampling = self.request.sampling
        return sampling is None or not sampling.do_sample

    def choose(self, logits: np.ndarray) -> int:
        sampling = self.request.sampling
        if sampling is None:
            return int(np.argmax(logits))
        if self.rng is None:
            self.rng = np.random.default_rng(self.request.seed)
        return int(sampling.next_tokens(logits[None, :], self.rng)[0])

    @property
    def final_blocks(self) -> int:
        """Blocks the request holds when done (its last token is never written)."""
        r = self.request
        return -(-(len(r.prompt) + r.max_new_tokens - 1) // BLOCK_SIZE)


@dataclass
class StepPlan:
    """One planned step: its inputs, rows and copies, and how to undo it."""

    step: int
    inputs: dict[str, np.ndarray]
    rows: list[tuple[_Live, RowPlan]]
    admitted: list[_Live]
    copies: list[Copy]
    snapshot: Any
    #: Running requests taken out to free blocks for this step (recomputed
    #: later); they leave the running set when the step is committed.
    preempted: list[_Live] = field(default_factory=list)


#: The widest token id a step's `tokens [rows, T] i32` can carry.
_I32_MAX = (1 << 31) - 1


def _port(signature: Any, role: str, key: str) -> Any:
    """The signature's argument or result port named `key`, or None."""
    ports = getattr(signature, "args" if role == "arg" else "results", ())
    return next((port for port in ports if getattr(port, "key", None) == key), None)


def _ends(live: "_Live") -> bool:
    """Whether `live`'s last generated token is one of its eos ids."""
    eos = live.submitted.eos_token_id
    return bool(eos) and bool(live.generated) and live.generated[-1] in eos


def _is_int(value: Any) -> bool:
    # A bool is an int to Python, but True is not a token id.
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


class Engine:
    """Continuous batching of `Request`s through `runner` over `cache`.

    `vocab` bounds the token ids a request may carry (`[0, vocab)`); by
    default it is the declared range of the step's `tokens` argument, read
    from the runner's artifact signature, and a given `vocab` narrows it.
    `next_token`: the name of the step's `[rows]` i32 result holding each
    row's greedy token (see the module docstring); None: greedy tokens are
    the host's argmax of the logits."""

    def __init__(
        self,
        runner: Any,
        cache: PagedKVCache,
        shape: StepShape,
        *,
        weights: Mapping[str, np.ndarray] | None = None,
        pools: Sequence[str],
        base: WeightsIdentity | None = None,
        adapters: AdapterTable | None = None,
        logits: str = "logits",
        bind: Callable[[Mapping[str, Any]], Any] | None = None,
        vocab: int | None = None,
        preempt: bool = False,
        keep_logits: bool = True,
        next_token: str | None = None,
    ) -> None:
        if adapters is None and base is None:
            raise KVCacheError("Engine: give the base weights identity (base=) or an AdapterTable")
        if cache.max_tokens is None or cache.max_tokens > shape.max_tokens:
            raise KVCacheError(
                f"Engine: the cache must bound sequences to the step's {shape.max_tokens} tokens "
                f"(PagedKVCache(max_tokens=...)), got {cache.max_tokens}"
            )
        self.runner, self.cache, self.shape = runner, cache, shape
        # A runner that holds the weights itself (driver.runners: bound once,
        # on the device as session constants) takes none per step.
        self.weights = dict(weights or {})
        if weights is None and not hasattr(runner, "constants"):
            raise KVCacheError("Engine: give weights= (or a runner that holds them: driver.runners)")
        self.pools = list(pools)
        self.base = adapters.base if adapters is not None else base
        self.adapters = adapters
        self.logits = logits
        # Checks a step's inputs without running it (the runtime's binder):
        # needed only to refuse a step before copy-on-write touches a pool.
        self.bind = (
            bind if bind is not None else getattr(getattr(runner, "artifact", None), "bind", None)
        )
        self.token_range, self._token_source = self._token_bounds(vocab)
        self.step_index = 0
        # The plan handed out by `plan` and not yet dispatched or aborted:
        # its cache tables are not committed, so `cancel` waits for it.
        self._planned: StepPlan | None = None
        self._waiting: deque[Request] = deque()
        self._running: list[_Live] = []
        self.completions: dict[Hashable, Completion] = {}
        self._rids: set[Hashable] = set()
        # Admission: reserve each request's final blocks (never preempt), or
        # (`preempt=True`) admit when its prompt fits and, when the pool runs
        # out, preempt the youngest running request by recompute.
        self.preempt = preempt
        self.preemptions = 0
        # Each completion's logits rows ([vocab] per generated token): a
        # server that only wants tokens keeps none (64 requests x 128 tokens
        # of a 128k vocabulary are 2 GB of bf16).
        self.keep_logits = keep_logits
        self.next_token = self._greedy_output(next_token)
        self._resumed: dict[Hashable, _Live] = {}  # preempted, waiting to resume

    def _signature(self) -> Any:
        runner = self.runner
        return getattr(getattr(runner, "artifact", None), "signature", None) or getattr(
            runner, "signature", None
        )

    def _token_bounds(self, vocab: int | None) -> tuple[tuple[int, int], str]:
        """The token ids a request may carry (inclusive), and where that
        bound comes from (for the refusal's message). A step refuses a token
        outside its `tokens` argument's declared range every time it is
        planned, so such a request must never be queued: it would stall
        every request behind it."""
        lo, hi, source = 0, _I32_MAX, "the step's i32 tokens"
        signature = self._signature()
        port = _port(signature, "arg", "tokens")
        if port is not None and port.range is not None:
            lo, hi = max(lo, port.range[0]), min(hi, port.range[1])
            source = f"the step's 'tokens' argument (#poot.range<{port.range[0]}, {port.range[1]}>)"
        if vocab is not None:
            if not _is_int(vocab) or vocab < 1:
                raise KVCacheError(f"Engine: vocab must be a positive int, got {vocab!r}")
            if vocab - 1 < hi:
                hi, source = int(vocab) - 1, f"the engine's vocab={vocab}"
        logits = _port(signature, "result", self.logits)
        if logits is not None and logits.shape and logits.shape[-1] - 1 > hi:
            # Greedy sampling picks any column of the logits: a generated
            # token the step cannot take back would stall the engine too.
            raise KVCacheError(
                f"Engine: the step's {self.logits!r} has {logits.shape[-1]} columns, but "
                f"{source} takes token ids up to {hi} only: a generated token could be refused"
            )
        return (lo, hi), source

    def _greedy_output(self, name: str | None) -> str | None:
        """`name`, once the step's signature has it as a `[rows]` i32 result
        (its tokens replace the host's argmax, so a wrong one must not run)."""
        if name is None:
            return None
        port = _port(self._signature(), "result", name)
        if port is None:
            raise KVCacheError(f"Engine: next_token={name!r}, but the step has no result of that name")
        if tuple(port.shape) != (self.shape.rows,) or np.dtype(port.dtype) != np.int32:
            raise KVCacheError(
                f"Engine: the step's {name!r} is {port.spec()}; greedy tokens are "
                f"tensor<{self.shape.rows}xi32> (one per row)"
            )
        return name

    # --- requests ----------------------------------------------------------------

    def _checked(self, request: Request) -> Request:
        """`request` with its prompt as a list of ints, once every token id is
        an integer the step accepts (a typed refusal otherwise)."""
        rid = request.rid
        try:
            prompt = list(request.prompt)
        except TypeError:
            raise ShapeBindError(
                f"request {rid!r}: the prompt must be a sequence of token ids, got "
                f"{type(request.prompt).__name__}"
            ) from None
        lo, hi = self.token_range
        for i, token in enumerate(prompt):
            if not _is_int(token):
                raise ShapeBindError(
                    f"request {rid!r}: prompt token {i} is {token!r} "
                    f"({type(token).__name__}), not an integer token id"
                )
            if not lo <= token <= hi:
                raise RangeBindError(
                    f"request {rid!r}: prompt token {i} is {int(token)}, outside the token ids "
                    f"[{lo}, {hi}] of {self._token_source}"
                )
        if not _is_int(request.max_new_tokens) or request.max_new_tokens < 1 or not prompt:
            raise KVCacheError(
                f"request {rid!r}: needs a prompt and an int max_new_tokens >= 1, got "
                f"{len(prompt)} prompt tokens and max_new_tokens={request.max_new_tokens!r}"
            )
        eos = request.eos_token_id
        if eos is None or _is_int(eos):
            eos_ids = [] if eos is None else [eos]
        else:
            try:
                eos_ids = list(eos)  # a sequence of ids
            except TypeError:
                eos_ids = [eos]  # neither: refused below
        if not all(_is_int(t) for t in eos_ids):
            raise ShapeBindError(
                f"request {rid!r}: eos_token_id must be an int token id, a sequence of them or "
                f"None, got {eos!r}"
            )
        # A private copy: the caller editing its list later cannot bypass the check.
        return dataclasses.replace(
            request, prompt=[int(t) for t in prompt], max_new_tokens=int(request.max_new_tokens),
            eos_token_id=tuple(int(t) for t in eos_ids) or None,
        )  # fmt: skip

    def submit(self, request: Request) -> None:
        """Queue a request (admitted at or after `request.arrival`), once it
        is checked against the model; a refusal queues nothing:

        - a prompt token that is not an integer: `ShapeBindError`; one outside
          the step's vocabulary (`token_range`): `RangeBindError`;
        - an empty prompt, `max_new_tokens` < 1, a request id already
          submitted: `KVCacheError`;
        - prompt + generated tokens past what a sequence may hold:
          `SequenceFull`; more blocks than the pool has: `PoolExhausted`;
        - an adapter that is not loaded (or any adapter without an
          `AdapterTable`): `KVCacheError`.
        """
        if request.rid in self._rids:
            raise KVCacheError(f"request {request.rid!r} was already submitted")
        request = self._checked(request)
        total = len(request.prompt) + request.max_new_tokens - 1
        if total > self.shape.max_tokens:
            raise SequenceFull(
                f"request {request.rid!r} would hold {total} tokens; the step attends over at "
                f"most {self.shape.max_tokens}"
            )
        if -(-total // BLOCK_SIZE) > self.cache.allocator.num_blocks:
            raise PoolExhausted(
                f"request {request.rid!r} needs {-(-total // BLOCK_SIZE)} blocks; the pool has "
                f"{self.cache.allocator.num_blocks}"
            )
        if self.adapters is not None:
            self.adapters.resolve(request.adapter)  # a typed error now, not mid-run
        elif request.adapter is not None:
            raise KVCacheError(
                f"request {request.rid!r} names adapter {request.adapter!r}, but the engine has none"
            )
        self._rids.add(request.rid)
        waiting = list(self._waiting) + [request]
        waiting.sort(key=lambda r: r.arrival)  # stable: FIFO within an arrival step
        self._waiting = deque(waiting)

    def cancel(self, rid: Hashable) -> None:
        """Take request `rid` out, queued or running: its blocks go back to
        the pool (full ones whose K/V a completed step wrote stay cached for
        later prefixes), its adapter slot is released, and it never
        completes. Its id may be submitted again. An unknown or completed
        request is a `KVCacheError`, as is a cancel between `plan` and
        `dispatch` (that step's rows are laid out: dispatch or abort it)."""
        if self._planned is not None:
            raise KVCacheError(
                f"cannot cancel {rid!r} while step {self._planned.step} is planned but not "
                "dispatched: dispatch or abort it first"
            )
        if rid in self.completions:
            raise KVCacheError(f"request {rid!r} has already completed")
        for request in self._waiting:
            if request.rid == rid:
                # Not admitted yet: it holds no block and no adapter slot.
                self._waiting = deque(r for r in self._waiting if r is not request)
                self._rids.discard(rid)
                self._resumed.pop(rid, None)  # a preempted one drops what it generated
                return
        for live in self._running:
            if live.request.rid == rid:
                self.cache.free(rid)
                if self.adapters is not None:
                    self.adapters.release(live.slot)
                self._running.remove(live)
                self._rids.discard(rid)
                return
        raise KVCacheError(f"no request {rid!r} is queued or running")

    def reset_prefix_cache(self) -> int:
        """`PagedKVCache.reset_prefix_cache`: later requests find no cached
        prefix (running ones keep their blocks). Not between `plan` and
        `dispatch`."""
        if self._planned is not None:
            raise KVCacheError(
                f"cannot reset the prefix cache while step {self._planned.step} is planned"
            )
        return self.cache.reset_prefix_cache()

    @property
    def idle(self) -> bool:
        return not self._waiting and not self._running

    # --- one step ------------------------------------------------------------------

    def _reserved(self, lives: Sequence[_Live]) -> int:
        return sum(
            max(0, live.final_blocks - len(self.cache.table(live.request.rid).blocks))
            for live in lives
        )

    def _step_blocks(self, live: _Live) -> int:
        """New blocks `live`'s next chunk needs (its prefill chunk or one token)."""
        prompt = live.request.prompt
        chunk = min(self.shape.tokens, len(prompt) - live.fed) if live.fed < len(prompt) else 1
        table = self.cache.table(live.request.rid)
        return max(0, -(-(len(table) + chunk) // BLOCK_SIZE) - len(table.blocks))

    def _admit(self, rows: list[_Live]) -> list[_Live]:
        admitted: list[_Live] = []
        while self._waiting and len(rows) < self.shape.rows:
            request = self._waiting[0]
            if request.arrival > self.step_index:
                break
            slot, identity = (
                self.adapters.resolve(request.adapter)
                if self.adapters is not None
                else (0, self.base)
            )
            matched = self.cache.match(request.prompt, identity)
            pinned_cached = sum(1 for b in matched if self.cache.allocator.is_cached(b))
            if self.preempt:
                # The prompt's blocks, beside what the running rows need now.
                need = -(-len(request.prompt) // BLOCK_SIZE)
                held = sum(self._step_blocks(live) for live in rows)
            else:
                need = -(-(len(request.prompt) + request.max_new_tokens - 1) // BLOCK_SIZE)
                held = self._reserved(rows)
            free = self.cache.allocator.available - pinned_cached - held
            if need - len(matched) > free:
                break  # waits for blocks (FIFO: nobody overtakes it)
            reused = self.cache.admit(request.rid, request.prompt, identity)
            if self.adapters is not None:
                self.adapters.hold(slot)
            live = _Live(request, slot, identity, reused, self.step_index, fed=reused)
            resumed = self._resumed.pop(request.rid, None)
            if resumed is not None:  # recomputing a preempted request
                live.generated, live.logits = resumed.generated, resumed.logits
                live.rng, live.original = resumed.rng, resumed.submitted
                live.admitted = resumed.admitted
            self._waiting.popleft()
            admitted.append(live)
            rows.append(live)
        return admitted

    def plan(self) -> StepPlan | None:
        """Admit what fits and lay out the next step (cache tables updated,
        undone by `abort`); None when nothing is ready to run."""
        snapshot = self.cache.snapshot()
        waiting = deque(self._waiting)
        rows = list(self._running)
        preempted: list[_Live] = []
        try:
            admitted = self._admit(rows)
            if not rows:
                return None
            inputs, layout = self._layout_preempting(rows, admitted, preempted)
        except BaseException:
            # The requests admitted so far (preempted ones never left `_running`).
            self._undo(snapshot, waiting, [live for live in rows if live not in self._running])
            raise
        self._planned = StepPlan(
            self.step_index, inputs, layout, admitted, self.cache.take_copies(), (snapshot, waiting),
            preempted,
        )
        return self._planned

    def _layout_preempting(
        self, rows: list[_Live], admitted: list[_Live], preempted: list[_Live]
    ) -> tuple[dict[str, np.ndarray], list[tuple[_Live, RowPlan]]]:
        """`_layout(rows)`; with `preempt`, when the pool runs out, the
        youngest running request (not one admitted this step) gives its
        blocks back (full ones stay cached: its recompute reuses them) and
        leaves the step, until the rest fit."""
        if not self.preempt:  # an exhausted pool is the caller's to undo
            return self._layout(rows)
        while True:
            inner = self.cache.snapshot()
            try:
                return self._layout(rows)
            except PoolExhausted:
                victims = [live for live in rows if live not in admitted]
                if len(victims) < 1 or len(rows) < 2:
                    raise
                self.cache.restore(inner)
                victim = max(victims, key=lambda live: (live.admitted, rows.index(live)))
                rows.remove(victim)
                self.cache.free(victim.request.rid)
                preempted.append(victim)

    def _layout(
        self, rows: list[_Live]
    ) -> tuple[dict[str, np.ndarray], list[tuple[_Live, RowPlan]]]:
        s = self.shape
        # A step where every row decodes runs the runner's 1-token bucket
        # when it has one: no padding tokens.
        decoding = all(live.fed >= len(live.request.prompt) for live in rows)
        width = 1 if decoding and 1 in getattr(self.runner, "buckets", ()) else s.tokens
        tokens = np.zeros((s.rows, width), np.int32)
        pos = np.zeros(s.rows, np.int32)
        count = np.ones(s.rows, np.int32)
        read = np.zeros((s.rows, s.cap), np.int32)
        write = np.full(s.rows * width, -1, np.int32)
        adapter = np.zeros(s.rows, np.int32)
        layout = []
        chunks, slots = [], []
        for live in rows:
            rid, prompt = live.request.rid, live.request.prompt
            if live.fed < len(prompt):
                chunk, kind = list(prompt[live.fed : live.fed + s.tokens]), "prefill"
            else:
                chunk, kind = [live.generated[-1]], "decode"
            start = len(self.cache.table(rid))
            slots.append(self.cache.append(rid, chunk))
            chunks.append(chunk)
            layout.append((live, RowPlan(rid, kind, start, len(chunk))))
        n = len(rows)
        pos[:n] = [row.pos for _, row in layout]
        count[:n] = [len(chunk) for chunk in chunks]
        adapter[:n] = [live.slot for live in rows]
        if width == 1:  # one token a row: the columns at once
            tokens[:n, 0] = [chunk[0] for chunk in chunks]
            write[:n] = [row[0] for row in slots]
        else:
            for r, (chunk, row) in enumerate(zip(chunks, slots)):
                tokens[r, : len(chunk)] = chunk
                write[r * width : r * width + len(chunk)] = row
        read[: len(rows)] = self.cache.read_rows([live.request.rid for live in rows], s.cap)
        inputs = {"tokens": tokens, "pos": pos, "count": count, "read": read, "write": write}
        if self.adapters is not None:
            inputs["adapter"] = adapter
        return inputs, layout

    def _requeue(self, live: _Live) -> None:
        """A preempted request back at the head of the queue, to be
        recomputed: its prompt then carries the tokens it generated (the
        last one not yet fed), its sampling state and results are kept."""
        if self.adapters is not None:
            self.adapters.release(live.slot)
        self._running.remove(live)
        r = live.request
        remaining = live.submitted.max_new_tokens - len(live.generated)
        prompt = list(live.submitted.prompt) + live.generated
        self._waiting.appendleft(dataclasses.replace(
            r, prompt=prompt, max_new_tokens=remaining, arrival=self.step_index))  # fmt: skip
        self._resumed[r.rid] = live
        self.preemptions += 1

    def abort(self, plan: StepPlan) -> None:
        """Undo a planned step that did not run."""
        snapshot, waiting = plan.snapshot
        self._undo(snapshot, waiting, plan.admitted)
        self._planned = None

    def _undo(self, snapshot: Any, waiting: deque[Request], admitted: Sequence[_Live]) -> None:
        self.cache.restore(snapshot)
        self._waiting = waiting
        if self.adapters is not None:
            for live in admitted:
                self.adapters.release(live.slot)

    def dispatch(self, plan: StepPlan) -> StepReport:
        """Run a planned step and take its results; a refused or failed step
        is undone (`abort`) and its error re-raised."""
        inputs = {
            **self.weights,
            **(self.adapters.tables() if self.adapters else {}),
            **plan.inputs,
        }
        try:
            if plan.copies:
                # Refuse before a copy touches a pool: the runner's own check
                # needs no pool (a device runner reads nothing back).
                if hasattr(self.runner, "check"):
                    self.runner.check(inputs)
                elif self.bind is not None:
                    self.bind({**inputs, **self.runner.state})
                self._apply_copies(plan.copies)
            fetch = self._fetch(plan)
            start, cpu = time.perf_counter(), time.thread_time()
            if fetch is None:
                result = self.runner.step(inputs)
            else:
                result = self.runner.step(inputs, fetch=fetch)
            seconds, cpu = time.perf_counter() - start, time.thread_time() - cpu
        except BaseException:
            self.abort(plan)
            raise
        tokens = result.named[self.next_token] if fetch else None
        logits = None if fetch is not None else result.named[self.logits]
        return self._finish_step(plan, logits, tokens, seconds, cpu)

    @staticmethod
    def _chooses(live: _Live, row: RowPlan) -> bool:
        """Whether `row` gets a token this step: a decode row, or the chunk
        that ends its prompt."""
        return row.kind == "decode" or live.fed + row.count >= len(live.request.prompt)

    def _fetch(self, plan: StepPlan) -> tuple[str, ...] | None:
        """The outputs the step's tokens need: None (all of them: the logits
        are read) unless the step chooses greedy tokens itself and no row
        needs its logits -- then `(next_token,)`, or `()` when no row gets
        a token this step (a step of inner prefill chunks reads nothing)."""
        if self.next_token is None or self.keep_logits:
            return None
        choosing = [live for live, row in plan.rows if self._chooses(live, row)]
        if not all(live.greedy for live in choosing):
            return None  # a sampled row draws from its logits on the host
        return (self.next_token,) if choosing else ()

    def _apply_copies(self, copies: Sequence[Copy]) -> None:
        if hasattr(self.runner, "copy_rows"):  # in place, where the pools live
            self.runner.copy_rows(self.pools, copies)
            return
        # The runner's own arrays (its `state` is read-only views).
        writable = getattr(self.runner, "writable_state", None)
        state = writable() if writable is not None else self.runner.state
        apply_copies(state, self.pools, copies)

    def _finish_step(
        self,
        plan: StepPlan,
        logits: np.ndarray | None,
        tokens: np.ndarray | None,
        seconds: float,
        cpu_seconds: float,
    ) -> StepReport:
        """Commit `plan` and take each row's token: from `tokens` (the
        step's greedy ones) when given, else chosen from `logits`."""
        self.cache.commit()
        self._planned = None
        for live in plan.preempted:
            self._requeue(live)
        self._running.extend(plan.admitted)
        finished = []
        for r, (live, row) in enumerate(plan.rows):
            if row.kind == "prefill":
                live.fed += row.count
                if live.fed < len(live.request.prompt):
                    continue
            if tokens is not None:  # chosen in the step: no logits came back
                live.generated.append(int(tokens[r]))
            else:
                # One logits column: the step kept each row's last real token's.
                column = row.count - 1 if logits.shape[1] > 1 else 0
                out = logits[r, column]
                if self.keep_logits:
                    out = np.array(out, copy=True)
                    live.logits.append(out)
                live.generated.append(live.choose(out))
            if len(live.generated) == live.submitted.max_new_tokens or _ends(live):
                finished.append(live)
        for live in finished:
            self._complete(live, plan.step)
        report = StepReport(
            plan.step,
            [row for _, row in plan.rows],
            [(live.request.rid, live.reused) for live in plan.admitted],
            [live.request.rid for live in finished],
            self.cache.blocks_in_use,
            self.cache.allocator.cached_blocks,
            seconds,
            cpu_seconds,
        )
        self.step_index += 1
        return report

    def _complete(self, live: _Live, step: int) -> None:
        r = live.submitted
        self.cache.free(r.rid)
        if self.adapters is not None:
            self.adapters.release(live.slot)
        self._running.remove(live)
        self.completions[r.rid] = Completion(
            r.rid,
            list(r.prompt),
            r.adapter,
            live.identity,
            live.generated,
            live.logits,
            live.reused,
            live.admitted,
            step,
            "eos" if _ends(live) else "length",
        )

    def step(self) -> StepReport | None:
        """Plan and run one step; None (and the clock advances) when no
        request is ready yet."""
        plan = self.plan()
        if plan is None:
            if self._waiting and self._waiting[0].arrival <= self.step_index and not self._running:
                raise PoolExhausted(
                    f"request {self._waiting[0].rid!r} cannot be admitted into an idle pool"
                )
            self.step_index += 1
            return None
        return self.dispatch(plan)

    def close(self) -> None:
        """Release the runner (its compiled steps and, on a device, the
        pools and weights there)."""
        close = getattr(self.runner, "close", None)
        if close is not None:
            close()

    def run(
        self, on_step: Callable[[StepReport], None] | None = None
    ) -> dict[Hashable, Completion]:
        """Step until every submitted request has completed."""
        while not self.idle:
            report = self.step()
            if report is not None and on_step is not None:
                on_step(report)
        return self.completions
