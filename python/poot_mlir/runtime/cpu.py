"""Run a CPU artifact in-process: ctypes, numpy, and no MLIR.

An artifact directory (made by `poot_mlir.compiler.cpu.compile_cpu`) holds
`step.so` and `manifest.json`. The shared object exports the C interface of
the step function,

    void _mlir_ciface_<name>(Desc *arg_0, ..., Desc *arg_n-1,
                             Desc *result_0, ..., Desc *result_m-1);

one pointer per argument and then one per result, each to an MLIR strided
memref descriptor `{T *allocated, T *aligned, int64 offset, int64
sizes[rank], int64 strides[rank]}` (rank 0: the first three fields only).
Every buffer is C-contiguous; the results are out-parameters the runtime
allocates (destination passing). A state the step writes in place is the
exception: its result is not a parameter (the manifest marks it
`in_place_of` its argument), the step writes the new rows into the argument's
buffer, and the runtime reads the new state from there. Such a step has a
validation prologue, `_mlir_ciface_<name>_validate(args..., outs...)`, which
the runtime runs first: a false validation output stops the step before it
writes anything.

    art = load("out/step")
    res = art.run({"q": q, "pos": 3, ...})        # Result(outputs, named, state)
    sess = Session(art, state={"k0": k0, ...})    # every state, or MissingStateError
    sess.step({"q": q, "pos": 3})                 # state replaced on success only
    sess.close(); art.close()                     # then a step is a ClosedError

A tensor-parallel rank program (`compile_cpu(..., tensor_parallel=(r, n))`)
runs with a `collectives.Communicator` of its n ranks: the library exports
`poot_all_reduce_hook`, a pointer the runtime sets to a callback

    int32_t hook(void *data, int64_t count, int32_t dtype, int64_t site)

that sums `count` elements at `data` over the ranks in place (dtype 0 f32,
1 f16, 2 bf16, 3 f64; `site` the all_reduce's index in program order). Before
each step every rank binds and validates its inputs and the ranks agree
(`Communicator.refusals`): if any rank refused, every rank raises (that rank
its own error, the others RankRefused) and nothing runs anywhere.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import (
    AllocationError,
    ArtifactError,
    BindError,
    ClosedError,
    CommunicatorError,
)
from . import binding
from .manifest import MANIFEST, listed_file, manifest_field, manifest_signature, read_manifest
from .binding import Inputs, Port, Result, Signature
from .collectives import SiteFailures, check_communicator, everywhere
from .sharding import shard_inputs

ARTIFACT_FORMAT = "poot-artifact/1"

# (ArtifactError lives in poot_mlir.errors, shared with the GPU runtimes; it
# stays importable from here, where it was first defined.)


_DESCRIPTORS: dict[int, type[ctypes.Structure]] = {}


def descriptor_type(rank: int) -> type[ctypes.Structure]:
    """The ctypes struct of a rank-`rank` memref descriptor (LLVM's layout:
    two pointers, the offset, then the sizes and strides arrays)."""
    if rank not in _DESCRIPTORS:
        fields: list[tuple[str, Any]] = [
            ("allocated", ctypes.c_void_p),
            ("aligned", ctypes.c_void_p),
            ("offset", ctypes.c_int64),
        ]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
        _DESCRIPTORS[rank] = type(f"MemRefDescriptor{rank}D", (ctypes.Structure,), {"_fields_": fields})
    return _DESCRIPTORS[rank]


def descriptor(array: np.ndarray) -> ctypes.Structure:
    """A descriptor viewing `array`, which must be C-contiguous (the step's
    memrefs have identity layouts: row-major strides, in elements)."""
    if not array.flags.c_contiguous:
        raise ValueError("memref descriptors are built for C-contiguous arrays only")
    desc = descriptor_type(array.ndim)()
    pointer = array.ctypes.data
    desc.allocated = pointer
    desc.aligned = pointer
    desc.offset = 0
    stride = 1
    for d in reversed(range(array.ndim)):
        desc.sizes[d] = array.shape[d]
        desc.strides[d] = stride
        stride *= array.shape[d]
    return desc


def _load_private_copy(library: Path) -> ctypes.CDLL:
    """dlopen a private copy of `library`. The loader caches libraries by
    path: reloading a recompiled artifact from the same directory would hand
    back the old code. The copy is unlinked once mapped."""
    fd, name = tempfile.mkstemp(prefix="poot-cpu-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as copy:
            copy.write(library.read_bytes())
        return ctypes.CDLL(name)
    finally:
        os.unlink(name)


def _openmp(manifest: Mapping[str, Any]) -> ctypes.CDLL | None:
    """The OpenMP runtime an `omp` artifact links (loaded before it, so a
    missing runtime is a clear error rather than a loader message)."""
    if manifest.get("parallel") != "omp":
        return None
    path = manifest.get("openmp")
    try:
        # Local scope: libomp also exports GNU's GOMP_* entry points, and a
        # global libomp would take over the calls of any other library in the
        # process that uses libgomp (torch). step.so's own NEEDED entry binds
        # to this same instance.
        return ctypes.CDLL(path)
    except OSError as exc:
        raise ArtifactError(
            f"the artifact runs its loops on OpenMP and needs {path}: {exc} "
            "(install libomp: `apt-get install libomp-dev` or `pip install intel-openmp`)"
        ) from None


def _default_threads(manifest: Mapping[str, Any]) -> int | None:
    value = os.environ.get("POOT_CPU_THREADS")
    if value:
        return max(1, int(value))
    device = manifest.get("device")
    cores = device.get("compute_units") if isinstance(device, dict) else None
    return int(cores) if isinstance(cores, int) and cores > 0 else None


# How long a step's OpenMP threads spin before sleeping when they wait (after
# a parallel region, at a barrier), in milliseconds. Spinning is fastest on
# a machine with a core for every thread: a sleeping thread's wake-up costs
# tens of microseconds a region, 2x on an 8-layer decoder step that opens
# hundreds of regions. On a machine whose cores are all busy it collapses:
# a spinning thread takes the time slice its teammate needs to finish the
# region, and a 0.4 ms step took 8-12 ms (issue 27; bench/cpu_loaded.py,
# bench/NOTES.md). So each step picks: SPIN_BLOCKTIME_MS while the runnable
# threads fit the cores, 0 (sleep at once) when they do not.
SPIN_BLOCKTIME_MS = 200  # libomp's own default (KMP_BLOCKTIME)


class _Runnable:
    """The machine's runnable threads right now: /proc/loadavg's fourth
    field (`running/total`), read through a kept descriptor (3 us). None
    where there is no such file."""

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open("/proc/loadavg", os.O_RDONLY)
        except OSError:
            self._fd = None

    def __call__(self) -> int | None:
        if self._fd is None:
            return None
        try:
            return int(os.pread(self._fd, 128, 0).split()[3].split(b"/")[0])
        except (OSError, ValueError, IndexError):
            return None


_runnable = _Runnable()


def _fixed_blocktime() -> int | None:
    value = os.environ.get("POOT_CPU_BLOCKTIME_MS")
    return max(0, int(value)) if value else None


def _nbytes(shape: "tuple[int, ...]", dtype: np.dtype) -> int:
    count = 1
    for d in shape:
        count *= int(d)
    return count * np.dtype(dtype).itemsize


def _out_of_memory(what: str, spec: str, nbytes: int, key: str) -> AllocationError:
    return AllocationError(
        f"cannot allocate {nbytes} bytes ({nbytes / (1 << 30):.2f} GiB) for {what} ({spec}): "
        "out of memory; nothing ran and the state is as it was",
        buffer=key,
        nbytes=nbytes,
    )


def _allocate(port: Port, what: str) -> np.ndarray:
    """An uninitialized buffer for `port` (a result the step writes), or an
    AllocationError naming it: the step's own buffers are allocated here, in
    Python, before anything runs, so running out of memory is an error the
    caller can catch rather than a crash inside the step."""
    try:
        return np.empty(port.shape, dtype=port.dtype)
    except MemoryError:
        raise _out_of_memory(
            f"{what} {port.describe()}", port.spec(), _nbytes(port.shape, port.dtype), port.key
        ) from None


def _private_copy(array: np.ndarray, what: str, key: str) -> np.ndarray:
    """A copy of `array`, or an AllocationError naming it (`what`)."""
    try:
        return array.copy()
    except MemoryError:
        raise _out_of_memory(what, f"{array.dtype}{list(array.shape)}", array.nbytes, key) from None


#: The global a step with poot.all_reduce exports (compiler.cpu.ALL_REDUCE_HOOK).
ALL_REDUCE_HOOK = "poot_all_reduce_hook"
_HookType = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_int64)


class _Collective:
    """The library's `poot_all_reduce_hook`, pointed at a communicator.

    ctypes prints and swallows an exception raised inside a callback, and the
    compiled code ignores the hook's return value, so the first failure of a
    step is kept (collectives.SiteFailures, which also keeps later sites
    calling the communicator) and raised (`raise_failure`) once the step
    returns."""

    def __init__(self, library: ctypes.CDLL, communicator: Any, where: str) -> None:
        self.communicator = communicator
        self.failures = SiteFailures(communicator)
        try:
            self._slot = ctypes.c_void_p.in_dll(library, ALL_REDUCE_HOOK)
        except ValueError:
            raise ArtifactError(
                f"{where} runs poot.all_reduce but does not export {ALL_REDUCE_HOOK}: "
                "recompile it with this poot_mlir (compile_cpu)",
                where,
            ) from None
        # The callback object must outlive every call through the pointer.
        self._callback = _HookType(self._all_reduce)
        self._slot.value = ctypes.cast(self._callback, ctypes.c_void_p).value

    def _all_reduce(self, data: int | None, count: int, dtype: int, site: int) -> int:
        call = lambda: self.communicator.all_reduce_(data or 0, count, dtype)  # noqa: E731
        return 0 if self.failures.run(site, call) else 1

    def raise_failure(self) -> None:
        """Raise (as a CommunicatorError) the step's first collective failure."""
        self.failures.raise_failure()

    def detach(self) -> None:
        self._slot.value = None


class CpuArtifact:
    """A loaded CPU artifact: its signature and the callable step.

    `threads` is how many threads an OpenMP artifact's parallel loops use
    (default: `$POOT_CPU_THREADS`, else the cores it was compiled for);
    a serial artifact ignores it. `blocktime_ms` is how long those threads
    spin before sleeping when they wait: None (the default, unless
    `$POOT_CPU_BLOCKTIME_MS` fixes it) picks per step, spinning while the
    machine's runnable threads fit its cores and sleeping at once when they
    do not, so a step on a busy machine slows with its share of the cores
    instead of collapsing. After `close()` (or a `with` block) it
    runs nothing: a run is a ClosedError.

    `communicator` (a `collectives.Communicator`) runs a tensor-parallel
    rank program's all_reduce; such an artifact refuses to load without one
    of its degree and rank (CommunicatorError)."""

    def __init__(
        self, path: "str | Path", threads: int | None = None, communicator: Any = None
    ) -> None:
        self.path = Path(path)
        self._closed = False
        manifest_path = self.path / MANIFEST
        self.manifest = read_manifest(self.path, "a CPU artifact (compile_cpu)")
        if self.manifest.get("format") != ARTIFACT_FORMAT:
            raise ArtifactError(
                f"{manifest_path}: format {self.manifest.get('format')!r}, expected {ARTIFACT_FORMAT!r}",
                str(manifest_path),
            )
        if self.manifest.get("target") != "cpu":
            raise ArtifactError(
                f"{manifest_path}: target {self.manifest.get('target')!r} is not 'cpu'",
                str(manifest_path),
            )
        self.signature: Signature = manifest_signature(self.manifest, manifest_path)
        library = listed_file(
            self.path, manifest_field(self.manifest, "library", str, manifest_path),
            "the step's shared object", manifest_path,
        )
        entry = manifest_field(self.manifest, "entry", str, manifest_path)
        self._openmp = _openmp(self.manifest)
        self.threads = threads if threads is not None else _default_threads(self.manifest)
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads={self.threads}: expected at least 1")
        self.blocktime_ms: int | None = _fixed_blocktime()
        # LLVM's and Intel's runtimes have it; another OpenMP keeps its own policy.
        self._set_blocktime = getattr(self._openmp, "kmp_set_blocktime", None) if self._openmp else None
        self._spinning = False  # whether the last step left its threads spinning
        try:
            self._library = _load_private_copy(library)
        except OSError as exc:  # a truncated or foreign file: the loader's words
            raise ArtifactError(f"{library}: cannot load the step's library: {exc}", str(library)) from None
        self._entry = self._function(entry, len(self._own_results), self.signature.arena_bytes)
        self._validate = None
        if self.signature.validate is not None:
            name, outputs = self.signature.validate
            self._validate = self._function(
                f"_mlir_ciface_{name}", len(outputs), self.signature.validate_arena_bytes
            )
        # Each calling thread's arena of temporaries (kept between steps: a
        # step reuses it, so its temporaries cost no allocation).
        self._arenas = threading.local()
        check_communicator(self.signature, communicator, str(self.path))
        self.communicator = communicator
        self._collective: _Collective | None = None
        if communicator is not None and self.signature.all_reduce_sites:
            self._collective = _Collective(self._library, communicator, str(library))
        # Validation outputs computed by the step itself (no prologue) are
        # only known after it ran: the ranks agree on them once more.
        self._late_validation = self.signature.validate is None and any(
            p.slot == "validation" for p in self.signature.results
        )

    @property
    def _own_results(self) -> list[int]:
        """Results that are out-parameters (not a donated argument's buffer)."""
        return [i for i, p in enumerate(self.signature.results) if p.in_place_of is None]

    def _function(self, symbol: str, results: int, arena_bytes: int) -> Any:
        try:
            function = getattr(self._library, symbol)
        except AttributeError:
            library = self.path / self.manifest["library"]
            raise ArtifactError(
                f"{library} does not export {symbol}, which its manifest names", str(library)
            ) from None
        function.argtypes = [ctypes.c_void_p] * (
            len(self.signature.args) + results + (arena_bytes > 0)
        )
        function.restype = None
        function.poot_arena_bytes = arena_bytes
        return function

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the step (idempotent); running it afterwards is a ClosedError."""
        self._closed = True
        self._entry = self._validate = None
        if self._collective is not None:
            self._collective.detach()
            self._collective = None

    def __enter__(self) -> "CpuArtifact":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(
                f"the CPU artifact {self.path} is closed: load it again "
                f"(runtime.cpu.load({str(self.path)!r})) to run it"
            )

    def bind(self, inputs: Inputs) -> list[np.ndarray]:
        """Check `inputs` without running (the BindError a run would raise)."""
        return binding.bind(self.signature, inputs)

    def shard(self, full: Mapping[str, Any]) -> dict[str, Any]:
        """This rank's inputs (or initial state) from unsharded ones: each
        sharded argument's block (runtime.sharding.shard_inputs)."""
        return shard_inputs(self.signature, full)

    def _arena(self, nbytes: int) -> np.ndarray:
        """This thread's arena of at least `nbytes` bytes, 64-byte aligned
        (the step's temporaries: poot-cpu-plan-arena), allocated here, before
        the step runs: out of memory is an AllocationError and nothing ran."""
        arena = getattr(self._arenas, "buffer", None)
        if arena is None or arena.size < nbytes:
            self._arenas.buffer = None  # the old arena goes first
            try:
                raw = np.empty(nbytes + 64, dtype=np.uint8)
            except MemoryError:
                raise _out_of_memory(
                    f"the temporaries of @{self.signature.name}", f"arena[{nbytes}]", nbytes, "arena"
                ) from None
            start = -raw.ctypes.data % 64
            arena = self._arenas.buffer = raw[start : start + nbytes]
        return arena[:nbytes]

    def _invoke(self, function: Any, arrays: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        descriptors = [descriptor(a) for a in arrays] + [descriptor(o) for o in outputs]
        if function.poot_arena_bytes:
            descriptors.append(descriptor(self._arena(function.poot_arena_bytes)))
        if self._openmp is not None and self.threads is not None:
            # The calling thread's team size for the step's parallel loops.
            self._openmp.omp_set_num_threads(self.threads)
        if self._set_blocktime is not None:
            # Per calling thread too (libomp keeps it with the thread's team).
            self._set_blocktime(self._blocktime())
        function(*[ctypes.addressof(d) for d in descriptors])
        if self._collective is not None:
            self._collective.raise_failure()

    def _blocktime(self) -> int:
        """This step's blocktime: the fixed one, else spin unless the
        threads already runnable (less this call's own, and its team's when
        the last step left them spinning) plus the team exceed the cores."""
        if self.blocktime_ms is not None:
            return int(self.blocktime_ms)
        running = _runnable()
        if running is None:
            return SPIN_BLOCKTIME_MS
        team = self.threads or os.cpu_count() or 1
        others = running - 1 - (team - 1 if self._spinning else 0)
        self._spinning = others + team <= (os.cpu_count() or 1)
        return SPIN_BLOCKTIME_MS if self._spinning else 0

    def validate(self, arrays: list[np.ndarray]) -> None:
        """Run the validation prologue (if the step has one) on bound
        arguments; raise ValidationFailure before the step writes anything."""
        self._check_open()
        if self._validate is None:
            return
        _, indices = self.signature.validate  # type: ignore[misc]
        ports = [self.signature.results[i] for i in indices]
        flags = [_allocate(p, "validation output") for p in ports]
        self._invoke(self._validate, arrays, flags)
        full: list[Any] = [None] * len(self.signature.results)
        for i, flag in zip(indices, flags):
            full[i] = flag
        binding.check_validation(self.signature, full)

    def call(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Run the step on already bound argument arrays. A donated state
        argument is written in place and is its result; the other results
        are fresh arrays, all allocated before the step runs (one that cannot
        be is an AllocationError, and nothing ran). No validation: `run` adds
        it.

        The step's temporaries live in one arena (poot-cpu-plan-arena) that
        this thread allocates before its first step and keeps: out of memory
        there is an AllocationError too, before anything ran."""
        self._check_open()
        outputs, own = self._results(arrays)
        self._invoke(self._entry, arrays, own)
        return outputs

    def _results(self, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """(every result's buffer, the fresh ones the step writes), and this
        thread's arena: everything the step needs allocated, so that running
        out of memory refuses the step before it runs (on every rank)."""
        outputs: list[np.ndarray] = []
        own: list[np.ndarray] = []
        for port in self.signature.results:
            if port.in_place_of is not None:
                outputs.append(arrays[port.in_place_of])
            else:
                own.append(_allocate(port, "result"))
                outputs.append(own[-1])
        if self._entry.poot_arena_bytes:
            self._arena(self._entry.poot_arena_bytes)  # kept for _invoke
        return outputs, own

    def run(self, inputs: Inputs, *, donate: bool = False) -> Result:
        """Bind (refusing bad inputs before anything runs), validate, run.

        A state the step writes in place is written into a private copy of
        the caller's array, unless `donate` hands the caller's arrays over
        (a Session does: the arrays are its own)."""
        self._check_open()
        return self._run_everywhere(lambda: self._prepare(inputs, donate))

    def _prepare(self, inputs: Inputs, donate: bool) -> list[np.ndarray]:
        """Everything that may refuse a step before it runs: bind, the private
        copies of donated state, the validation prologue."""
        arrays = self.bind(inputs)
        if not donate:
            args = self.signature.args
            arrays = [
                _private_copy(a, f"the private copy of {args[i].describe()}", args[i].key)
                if i in self.signature.donated
                else a
                for i, a in enumerate(arrays)
            ]
        self.validate(arrays)
        return arrays

    def _run_everywhere(self, prepare: Any) -> Result:
        """Run the step on the arrays `prepare()` binds: on every rank or on
        none (the one place a tensor-parallel step's ranks agree). What may
        still refuse the step -- binding, validation, allocating its results
        -- happens before the ranks agree; after it, each rank runs."""

        def bound() -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
            arrays = prepare()
            self._check_open()
            return (arrays, *self._results(arrays))

        arrays, outputs, own = self._agreed(bound)
        self._invoke(self._entry, arrays, own)
        if self._late_validation:
            self._agreed(lambda: binding.check_validation(self.signature, outputs))
        else:
            binding.check_validation(self.signature, outputs)
        return binding.package(self.signature, outputs)

    def _agreed(self, attempt: Any) -> Any:
        """`attempt()` on every rank or on none (collectives.everywhere)."""
        return everywhere(self.communicator, attempt)

    def session(self, state: Mapping[str, np.ndarray] | None = None) -> "Session":
        """A Session from `state`: the initial value of every state (this
        rank's blocks of a sharded one: `shard` them first)."""
        return Session(self, state)


def load(path: "str | Path", threads: int | None = None, communicator: Any = None) -> CpuArtifact:
    """Load the artifact directory `path` (see CpuArtifact)."""
    return CpuArtifact(path, threads, communicator)


class Session:
    """Step an artifact repeatedly over the state it carries.

    The session owns its state arrays (private copies, keyed by state name).
    A step binds the caller's other inputs beside them and runs. A state the
    step writes in place is updated in the session's own array (only the
    rows the step writes are touched; the validation prologue runs first);
    any other state is replaced by the step's fresh result. Either way a
    refused bind, a failed validation or a result that cannot be allocated
    leaves the state exactly as it was.

    What it hands out stays as it was handed out: `state` and a step's
    results are read-only views, and the session never writes under a view
    someone still holds. Before a step writes a state in place (or a driver
    asks for `writable_state`), a carried array that is still referenced
    outside the session -- a view keeps its base alive, so its reference
    count says so -- is replaced by a private copy, which the step then
    writes; the views keep the old values. When nobody kept one (a serving
    loop that reads the logits and drops the result), nothing is copied and
    the state is written in place as before.

    It is created from the initial value of every state (a missing one is a
    MissingStateError naming it, before anything runs); after `close()` (or
    its artifact's) a step is a ClosedError.
    """

    def __init__(
        self, artifact: "CpuArtifact | str | Path", state: Mapping[str, np.ndarray] | None = None
    ) -> None:
        # Any loaded artifact with a signature and run() steps.
        self.artifact = artifact if hasattr(artifact, "run") else load(artifact)
        self._closed = False
        self._check_open()
        signature = self.artifact.signature
        state = dict(state or {})
        specs = {p.state: p.spec() for p in signature.args if p.state is not None}
        binding.check_session_state(signature.state_names, state, specs)
        self._state = {
            name: _private_copy(np.asarray(binding.host_value(value)), f"state {name!r}", name)
            for name, value in state.items()
        }
        # The states the step writes into the session's own arrays.
        self._in_place = tuple(
            signature.args[i].state for i in sorted(signature.donated) if signature.args[i].state
        )

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the carried state (idempotent); a step afterwards is a ClosedError."""
        self._closed = True
        self._state = {}

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(
                "this session is closed (its state was released): start a new one with "
                "artifact.session(state)"
            )
        if getattr(self.artifact, "closed", False):
            path = getattr(self.artifact, "path", "")
            raise ClosedError(
                f"the artifact {path} this session steps is closed: load it again and start "
                "a new session (runtime.cpu.load(path).session(state))"
            )

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The current state, by state name: read-only views of the arrays
        the session carries. They keep showing this state after later steps
        (see the class docstring: a step copies a state someone still views
        before writing it)."""
        if self._closed:
            self._check_open()
        return {name: _read_only(array) for name, array in self._state.items()}

    def writable_state(self) -> dict[str, np.ndarray]:
        """The arrays the session carries, writable: for a driver that edits
        the state between steps in place (the KV-cache driver's
        copy-on-write of a shared block). Everyone else reads `state`.
        Fetch them again after each step: a step may replace an array
        (a fresh result, or a copy made because a view of it was kept)."""
        if self._closed:
            self._check_open()
        self._unshare(self._state)
        return self._state

    def _unshare(self, names: Any) -> None:
        """Give each named state an array nobody outside the session
        references, copying the ones that are referenced (views handed out
        and kept, or an array the caller held on to): what is written next
        must not change what a caller already has."""
        for name in names:
            array = self._state[name]
            # References: the session's dict, `array`, getrefcount's argument.
            # A carried array always owns its memory (the session made it, or
            # the step allocated it), so every view of it counts here.
            if array.base is not None or sys.getrefcount(array) > 3:
                self._state[name] = _private_copy(array, f"state {name!r}", name)

    def _bound(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The step's inputs with the carried state beside them."""
        bound = binding.step_inputs(inputs)
        for port in self.artifact.signature.args:
            if port.state is None:
                continue
            if port.key in bound or port.state in bound:
                raise BindError(f"state argument {port.describe()} comes from the session, not the inputs")
        # Before `bound` takes references of its own: the states this step
        # writes in place, copied first if a caller still holds a view.
        self._unshare(self._in_place)
        for port in self.artifact.signature.args:
            if port.state is not None and port.state in self._state:
                bound[port.key] = self._state[port.state]
        return bound

    def _run(self, inputs: Mapping[str, Any]) -> Result:
        """Bind and run one step; a CpuArtifact binds inside its agreement
        of ranks, so a refusal of the session's own rules on one rank stops
        every rank too."""
        everywhere = getattr(self.artifact, "_run_everywhere", None)
        if everywhere is None:  # another artifact that steps with run()
            return self.artifact.run(self._bound(inputs), donate=True)
        return everywhere(lambda: self.artifact._prepare(self._bound(inputs), donate=True))

    def step(self, inputs: Mapping[str, Any]) -> Result:
        """Run one step; `inputs` maps the non-state arguments' names to values.

        A tensor-parallel step whose collective fails mid-step
        (CommunicatorError) may have written part of a state in place: the
        session then closes (its state is not a step's state any more)."""
        self._check_open()
        try:
            result = self._run(inputs)
        except CommunicatorError:
            if self._in_place:
                self.close()
            raise
        published = dict(self._state)
        published.update(result.state)  # the session's own (in place) or fresh arrays
        self._state = published
        # The caller sees the carried state (in `state`, and where a state is
        # also an output or named), never a handle to change it.
        views = {id(array): _read_only(array) for array in published.values()}
        result.outputs = [views.get(id(a), a) for a in result.outputs]
        result.named = {key: views.get(id(a), a) for key, a in result.named.items()}
        result.state = {name: views[id(a)] for name, a in result.state.items()}
        return result


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of `array` (which the session then leaves alone:
    `Session._unshare`)."""
    view = array.view()
    view.flags.writeable = False
    return view
