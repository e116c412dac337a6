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
allocates (destination passing), and the step never writes an argument.

    art = load("out/step")
    res = art.run({"q": q, "pos": 3, ...})        # Result(outputs, named, state)
    sess = Session(art, state={"k0": k0, ...})
    sess.step({"q": q, "pos": 3})                 # state replaced on success only
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import BindError, PootError
from . import binding
from .binding import Inputs, Result, Signature

ARTIFACT_FORMAT = "poot-artifact/1"


class ArtifactError(PootError):
    """The artifact directory is missing a file or is not a CPU artifact."""


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
    cores = manifest.get("device", {}).get("compute_units")
    return int(cores) if cores else None


class CpuArtifact:
    """A loaded CPU artifact: its signature and the callable step.

    `threads` is how many threads an OpenMP artifact's parallel loops use
    (default: `$POOT_CPU_THREADS`, else the cores it was compiled for);
    a serial artifact ignores it."""

    def __init__(self, path: "str | Path", threads: int | None = None) -> None:
        self.path = Path(path)
        manifest_path = self.path / "manifest.json"
        if not manifest_path.is_file():
            raise ArtifactError(f"{self.path}: no manifest.json (not an artifact directory)")
        self.manifest = json.loads(manifest_path.read_text())
        if self.manifest.get("format") != ARTIFACT_FORMAT:
            raise ArtifactError(
                f"{manifest_path}: format {self.manifest.get('format')!r}, expected {ARTIFACT_FORMAT!r}"
            )
        if self.manifest.get("target") != "cpu":
            raise ArtifactError(f"{manifest_path}: target {self.manifest.get('target')!r} is not 'cpu'")
        self.signature = Signature.from_json(self.manifest["function"])
        library = self.path / self.manifest["library"]
        if not library.is_file():
            raise ArtifactError(f"{self.path}: {self.manifest['library']} is missing")
        self._openmp = _openmp(self.manifest)
        self.threads = threads if threads is not None else _default_threads(self.manifest)
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads={self.threads}: expected at least 1")
        self._library = _load_private_copy(library)
        self._entry = getattr(self._library, self.manifest["entry"])
        count = len(self.signature.args) + len(self.signature.results)
        self._entry.argtypes = [ctypes.c_void_p] * count
        self._entry.restype = None

    @property
    def name(self) -> str:
        return self.signature.name

    def bind(self, inputs: Inputs) -> list[np.ndarray]:
        """Check `inputs` without running (the BindError a run would raise)."""
        return binding.bind(self.signature, inputs)

    def call(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Run the step on already bound argument arrays; fresh output arrays.
        No validation: `run` adds it."""
        outputs = [np.empty(p.shape, dtype=p.dtype) for p in self.signature.results]
        descriptors = [descriptor(a) for a in arrays] + [descriptor(o) for o in outputs]
        if self._openmp is not None and self.threads is not None:
            # The calling thread's team size for the step's parallel loops.
            self._openmp.omp_set_num_threads(self.threads)
        self._entry(*[ctypes.addressof(d) for d in descriptors])
        return outputs

    def run(self, inputs: Inputs) -> Result:
        """Bind (refusing bad inputs before anything runs), run, validate."""
        outputs = self.call(self.bind(inputs))
        binding.check_validation(self.signature, outputs)
        return binding.package(self.signature, outputs)

    def session(self, state: Mapping[str, np.ndarray] | None = None) -> "Session":
        return Session(self, state)


def load(path: "str | Path", threads: int | None = None) -> CpuArtifact:
    """Load the artifact directory `path`."""
    return CpuArtifact(path, threads)


class Session:
    """Step an artifact repeatedly over the state it carries.

    The session owns its state arrays (private copies, keyed by state name).
    A step binds the caller's other inputs beside them, runs, and replaces the
    state only when the whole step succeeded: a refused bind or a failed
    validation leaves it exactly as it was.
    """

    def __init__(
        self, artifact: "CpuArtifact | str | Path", state: Mapping[str, np.ndarray] | None = None
    ) -> None:
        # Any loaded artifact with a signature and run() (CPU, hybrid) steps.
        self.artifact = artifact if hasattr(artifact, "run") else load(artifact)
        signature = self.artifact.signature
        self._state = {name: np.array(value, copy=True) for name, value in (state or {}).items()}
        unknown = sorted(set(self._state) - set(signature.state_names))
        if unknown:
            raise BindError(f"unknown state {unknown} (the function's state: {list(signature.state_names)})")

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The current state arrays, by state name."""
        return self._state

    def step(self, inputs: Mapping[str, Any]) -> Result:
        """Run one step; `inputs` holds the non-state arguments."""
        bound: dict[str, Any] = dict(inputs)
        for port in self.artifact.signature.args:
            if port.state is None:
                continue
            if port.key in bound or port.state in bound:
                raise BindError(f"state argument {port.describe()} comes from the session, not the inputs")
            if port.state in self._state:
                bound[port.key] = self._state[port.state]
        result = self.artifact.run(bound)
        published = dict(self._state)
        published.update(result.state)  # fresh arrays the runtime allocated
        self._state = published
        return result
