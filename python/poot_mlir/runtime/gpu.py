"""Run a GPU attention artifact (compiler.gpu) on Vulkan or CUDA.

Imports no MLIR: it reads `manifest.json`, binds the inputs with the shared
binder (refusals before anything dispatches), uploads them, records every
attention's launches in order (partials then combine for split-KV, with the
plan-local scratch), and downloads the results.

    art = GpuArtifact("out/attn", backend="vulkan")     # or "cuda"
    result = art.run({"q": q, "k": k, "v": v})           # binding.Result
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from ..errors import PootError
from . import binding


class Backend(Protocol):
    """What a device runtime provides to execute a launch plan."""

    def upload(self, array: np.ndarray) -> Any: ...
    def alloc(self, nbytes: int) -> Any: ...
    def kernel(self, payload: bytes, entry: str, num_args: int, block: Sequence[int]) -> Any: ...
    def launch(self, launches: list[tuple[Any, list[Any], tuple[int, int, int]]]) -> None: ...
    def download(self, handle: Any, dtype: np.dtype, count: int) -> np.ndarray: ...
    def close(self) -> None: ...


class VulkanBackend:
    """Launches through poot_mlir.runtime.vulkan (lavapipe in CI)."""

    def __init__(self, prefer: str | int = "any") -> None:
        from . import vulkan as vk

        self.device = vk.Device(prefer=prefer)

    def upload(self, array: np.ndarray) -> Any:
        return self.device.buffer_from(np.ascontiguousarray(array).reshape(-1))

    def alloc(self, nbytes: int) -> Any:
        return self.device.empty(max(nbytes, 4))

    def kernel(self, payload: bytes, entry: str, num_args: int, block: Sequence[int]) -> Any:
        return self.device.load_kernel(payload, entry=entry, num_buffers=num_args)

    def launch(self, launches: list[tuple[Any, list[Any], tuple[int, int, int]]]) -> None:
        self.device.run([(k, bufs, grid) for k, bufs, grid in launches])

    def download(self, handle: Any, dtype: np.dtype, count: int) -> np.ndarray:
        return handle.read(dtype, (count,))

    def close(self) -> None:
        self.device.close()


def make_backend(name: str | Backend) -> Backend:
    if not isinstance(name, str):
        return name
    if name in ("vulkan", "lavapipe"):
        return VulkanBackend(prefer="lavapipe" if name == "lavapipe" else "any")
    if name == "cuda":
        from .cuda import CudaBackend

        return CudaBackend()
    raise PootError(f"unknown GPU backend {name!r} (vulkan, lavapipe, cuda)")


class GpuArtifact:
    """A loaded GPU artifact: kernels + launch plan + the step's signature."""

    def __init__(self, path: "str | Path", backend: "str | Backend" = "vulkan") -> None:
        self.path = Path(path)
        if not (self.path / "manifest.json").is_file():
            raise PootError(f"{self.path}: no manifest.json (not an artifact directory)")
        self.manifest = json.loads((self.path / "manifest.json").read_text())
        if self.manifest.get("format") != "poot-artifact/1":
            raise PootError(f"{self.path} is not a poot artifact")
        self.signature = binding.Signature.from_json(self.manifest["function"])
        self.backend = make_backend(backend)
        self._kernels: dict[tuple[str, str], Any] = {}

    def _kernel(self, launch: dict[str, Any]) -> Any:
        key = (launch["kernel"], launch["entry"])
        if key not in self._kernels:
            payload = (self.path / launch["kernel"]).read_bytes()
            self._kernels[key] = self.backend.kernel(
                payload, launch["entry"], len(launch["args"]), launch["block"]
            )
        return self._kernels[key]

    def run(self, inputs: binding.Inputs) -> binding.Result:
        arrays = binding.bind(self.signature, inputs)
        by_name = {port.key: array for port, array in zip(self.signature.args, arrays)}
        produced: dict[str, np.ndarray] = {}
        # One scratch arena serves every attention's split-KV partials in turn
        # (each scratch lives only as long as its attention).
        arena_bytes = self.manifest.get("buffer_plan", {}).get("scratch_arena_bytes", 0)
        arena = self.backend.alloc(arena_bytes) if arena_bytes else None
        for attention in self.manifest["attention"]:
            buffers = {
                operand: self.backend.upload(by_name[arg])
                for operand, arg in attention["operands"].items()
            }
            request = attention["request"]
            out_count = (
                request["batch"] * request["q_heads"] * request["q_len"] * request["value_width"]
            )
            buffers["out"] = self.backend.alloc(out_count * 4)
            if attention["scratch_floats"]:
                buffers["scratch"] = (
                    arena if arena is not None else self.backend.alloc(attention["scratch_floats"] * 4)
                )
            self.backend.launch(
                [
                    (self._kernel(l), [buffers[a] for a in l["args"]], tuple(l["grid"]))
                    for l in attention["launches"]
                ]
            )
            out = self.backend.download(buffers["out"], np.dtype(np.float32), out_count)
            for name in attention["outputs"]:
                produced[name] = out
        outputs = []
        for port in self.signature.results:
            if port.key not in produced:
                raise PootError(f"artifact produces no value for {port.describe()}")
            outputs.append(produced[port.key].reshape(port.shape))
        binding.check_validation(self.signature, outputs)
        return binding.package(self.signature, outputs)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> "GpuArtifact":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
