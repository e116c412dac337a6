"""Run a hybrid artifact (compiler.hybrid): CPU host program + GPU attention.

The host step (a CPU artifact) calls the exported `poot_attention_hook` at
each attention with its flat buffers (memref descriptors); this runtime
answers by launching that attention's GPU kernels over those buffers and
writing the result into the host's output buffer. Imports no MLIR.

    art = HybridArtifact("out/decoder", backend="vulkan")
    sess = art.session(state)           # the host's stateful session
    res = sess.step(inputs)
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import PootError
from . import binding
from .cpu import CpuArtifact, Session
from .gpu import Backend, GpuArtifact, make_backend

_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


def _view(descriptor: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The array a 1-D memref descriptor {alloc, aligned, offset, size,
    stride} points at, as `shape` (no copy)."""
    aligned = ctypes.c_void_p.from_address(descriptor + 8).value or 0
    offset = ctypes.c_int64.from_address(descriptor + 16).value
    count = int(np.prod(shape))
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(aligned + offset * dtype.itemsize)
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


class HybridArtifact:
    """A host step on the CPU whose attention runs on a GPU backend."""

    def __init__(self, path: "str | Path", backend: "str | Backend" = "vulkan") -> None:
        self.path = Path(path)
        if not (self.path / "manifest.json").is_file():
            raise PootError(f"{self.path}: no manifest.json (not an artifact directory)")
        self.manifest = json.loads((self.path / "manifest.json").read_text())
        if self.manifest.get("target") != "hybrid":
            raise PootError(f"{self.path} is not a hybrid artifact")
        self.host = CpuArtifact(self.path / self.manifest["host"])
        self.signature = self.host.signature
        self.backend = make_backend(backend)
        self.kernels = [GpuArtifact(self.path / d, backend=self.backend) for d in self.manifest["attention"]]
        self._error: BaseException | None = None
        self._hook = _HOOK(self._dispatch)  # kept alive as long as the artifact
        hook = ctypes.c_void_p.in_dll(self.host._library, self.host.manifest["offload"]["hook"])
        hook.value = ctypes.cast(self._hook, ctypes.c_void_p).value

    def _dispatch(self, index: int, descriptors: Any) -> None:
        try:
            kernel = self.kernels[index]
            ports = kernel.signature.args
            inputs = {
                port.key: _view(descriptors[k], port.dtype, port.shape) for k, port in enumerate(ports)
            }
            out_port = kernel.signature.results[0]
            out = _view(descriptors[len(ports)], out_port.dtype, out_port.shape)
            out[...] = kernel.run(inputs).outputs[0]
        except BaseException as error:  # a ctypes callback cannot raise
            self._error = self._error or error

    def run(self, inputs: binding.Inputs, *, donate: bool = False) -> binding.Result:
        """Bind (refusing bad inputs before anything runs), run, validate."""
        self._error = None
        result = self.host.run(inputs, donate=donate)
        if self._error is not None:
            raise PootError(f"an offloaded attention failed: {self._error}") from self._error
        return result

    def session(self, state: Mapping[str, np.ndarray] | None = None) -> Session:
        return Session(self, state)

    def close(self) -> None:
        self.backend.close()
