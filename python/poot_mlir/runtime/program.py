"""Run a GPU artifact (compiler.compile_gpu) with its state resident
on the device. Imports no MLIR.

The artifact's program lists the step's buffers and its commands; a session
allocates every buffer once (arguments, one arena for all temporaries,
constants uploaded once), keeps the state on the device between steps, and
per step writes the bound inputs, runs the validation prologue (if any),
then the step's launches, and reads back the outputs (or those asked for:
`step(fetch=...)`). A state written in place never leaves the device;
`Session.state` reads it back when asked.

    art = ProgramArtifact("out/step", backend="vulkan")   # or "cuda", "wgpu"
    sess = art.session({"k0": k0, "v0": v0})
    res = sess.step({"x": x, "pos": 3})                    # binding.Result
    k0_now = sess.state["k0"]                              # read back
    art.close()                    # then a step of any of its sessions: ClosedError

A session needs the initial value of every state (else MissingStateError,
before anything is allocated).

A tensor-parallel rank program (`compile_gpu(..., tensor_parallel=(r, n))`)
loads with a `collectives.Communicator` of its n ranks
(`ProgramArtifact(path, backend, communicator=comm)`; without one, or with
one of another size or rank: CommunicatorError). Its program has
`{"all_reduce": {"buffer", "count", "dtype", "site"}}` commands: the buffer
summed over the ranks in place, after every earlier command finished and
before any later one starts (`_Vulkan.all_reduce`, `_Cuda.all_reduce`).
Before each step the ranks agree (`collectives.everywhere`), so a step runs
on every rank or on none. docs/tensor-parallel.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Mapping

import numpy as np

from ..errors import (
    ArtifactError,
    BindError,
    ClosedError,
    CommunicatorError,
    MissingStateError,
    PootError,
    UnknownDeviceError,
)
from . import binding
from .collectives import DTYPE_BYTES, DTYPE_CODES, SiteFailures, check_communicator, everywhere
from .manifest import MANIFEST, listed_file, manifest_field, manifest_signature, read_manifest
from .sharding import shard_inputs


@dataclass
class Traffic:
    """Bytes a device's host side moved: written to it (inputs, state,
    constants) and read back from it (outputs, validation flags, state
    reads, and both ways the host copy of each buffer a tensor-parallel
    step sums over the ranks). Device-to-device copies are not counted:
    they never cross. `reduced`: the bytes handed to the communicator (each
    all_reduce's buffer, once)."""

    written: int = 0
    read: int = 0
    reduced: int = 0


class _Vulkan:
    """The program's device operations on runtime.vulkan."""

    #: The SPIR-V client whose kernels it runs (check_client).
    client = "vulkan"

    def __init__(self, prefer: str) -> None:
        from . import vulkan as vk

        self.vk = vk
        self.device = vk.Device(prefer=prefer)
        self.traffic = Traffic()

    def alloc(self, nbytes: int) -> Any:
        return self.device.zeros(max(int(nbytes), 16))

    def slice(self, buf: Any, offset: int, nbytes: int) -> Any:
        return self.vk.buffer.BufferSlice(buf, offset, nbytes)

    def write(self, buf: Any, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        self.traffic.written += array.nbytes
        buf.write(array.reshape(-1))

    def read(self, buf: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod(shape)) if shape else 1
        self.traffic.read += count * np.dtype(dtype).itemsize
        return buf.read(dtype, (count,)).reshape(shape)

    def kernel(self, payload: bytes, entry: str, num_args: int, block: list[int],
               dependent: bool = False) -> Any:
        # SPIR-V kernels have no dependent launch (an NVIDIA-only option).
        return self.device.load_kernel(payload, entry=entry, num_buffers=num_args)

    def launch(self, launches: list[tuple]) -> None:
        self.device.run(launches)

    def copy(self, src: Any, dst: Any, nbytes: int) -> None:
        self.device._copy(_base(src), _base(dst), _offset(src), _offset(dst), nbytes)

    def execute(self, commands: list[tuple]) -> None:
        _execute(self, commands)

    def all_reduce(self, buf: Any, count: int, dtype_code: int, communicator: Any) -> None:
        """Sum `count` elements of `buf` over the ranks, in place, through a
        host copy: the communicator (gloo) reads host memory only. Called
        when the commands before it were submitted; the read waits for them.

        The copy is raw bytes, summed as the dtype code says: a bf16 buffer
        holds bf16 bit patterns even where SPIR-V carries them as i16."""
        nbytes = count * DTYPE_BYTES[dtype_code]
        host = np.require(self.read(buf, np.uint8, (nbytes,)), requirements=["C", "W"])
        communicator.all_reduce_(host.ctypes.data, count, dtype_code)
        self.write(buf, host)
        self.traffic.reduced += nbytes

    @property
    def closed(self) -> bool:
        return bool(getattr(self.device, "closed", False))

    def close(self) -> None:
        self.device.close()


class _Wgpu(_Vulkan):
    """The program's device operations on runtime.wgpu (wgpu-py). Its
    device takes the command list itself: launches and copies in order in
    one submission (WebGPU orders them; no batching by hand)."""

    client = "wgpu"

    def __init__(self, prefer: str) -> None:
        from . import wgpu as wg

        self.vk = wg
        self.device = wg.Device(prefer=prefer)
        self.traffic = Traffic()

    def slice(self, buf: Any, offset: int, nbytes: int) -> Any:
        return self.vk.BufferSlice(buf, offset, nbytes)

    def copy(self, src: Any, dst: Any, nbytes: int) -> None:
        self.device.copy(src, dst, nbytes)

    def execute(self, commands: list[tuple]) -> None:
        self.device.execute(commands)


class _Cuda:
    """The program's device operations on runtime.cuda (cuda-python)."""

    client = "cuda"

    def __init__(self, ordinal: int = 0) -> None:
        from .cuda import CudaBackend, DeviceBuffer

        self.ordinal = ordinal  # the device CudaBackend opens ("cuda:N")
        self.backend = CudaBackend(self.ordinal)
        self._buffer = DeviceBuffer
        self.traffic = Traffic()

    def alloc(self, nbytes: int) -> Any:
        buf = self.backend.alloc(max(int(nbytes), 16))
        self.backend.fill32(buf, 0)
        return buf

    def slice(self, buf: Any, offset: int, nbytes: int) -> Any:
        return self._buffer(int(buf.ptr) + offset, nbytes, None, keep=buf)

    def write(self, buf: Any, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        self.traffic.written += array.nbytes
        self.backend.write(buf, array)

    def read(self, buf: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod(shape)) if shape else 1
        self.traffic.read += count * np.dtype(dtype).itemsize
        return self.backend.download(buf, dtype, count).reshape(shape)

    def kernel(self, payload: bytes, entry: str, num_args: int, block: list[int],
               dependent: bool = False) -> Any:
        return self.backend.kernel(payload, entry, num_args, block, dependent=dependent)

    def launch(self, launches: list[tuple]) -> None:
        self.backend.launch(launches)

    def copy(self, src: Any, dst: Any, nbytes: int) -> None:
        self.enqueue([("copy", src, dst, nbytes)])
        self.backend.synchronize()

    def enqueue(self, commands: list[tuple], stream: Any = None) -> None:
        """The commands in order on `stream` (default: the backend's), not
        waiting: launches and device-to-device copies, both capturable."""
        from .cuda import LaunchSequence

        backend = self.backend
        s = backend.stream if stream is None else stream
        launches: list[tuple] = []
        for command in commands + [("end",)]:
            if command[0] == "launch":
                _, kernel, bufs, grid = command
                launches.append((kernel, bufs, grid))
                continue
            if launches:
                LaunchSequence(backend, launches).enqueue(s)
                launches = []
            if command[0] == "copy":
                _, src, dst, nbytes = command
                backend._check("cuMemcpyDtoDAsync", backend.cu.cuMemcpyDtoDAsync(
                    backend.cu.CUdeviceptr(int(dst.ptr)), backend.cu.CUdeviceptr(int(src.ptr)),
                    nbytes, s))

    def execute(self, commands: list[tuple]) -> None:
        self.enqueue(commands)
        self.backend.synchronize()

    def all_reduce(self, buf: Any, count: int, dtype_code: int, communicator: Any) -> None:
        """Sum `count` elements of `buf` over the ranks in place, in device
        memory: a torch tensor over the buffer, summed by the communicator
        (NCCL for CUDA tensors) with the backend's stream current, so the
        sum is ordered after the launches before it and before the ones
        after it. f16/bf16 are widened to f32 and rounded once (`sum_`).
        Not run yet: no CUDA machine with several GPUs was at hand
        (docs/tensor-parallel.md)."""
        import torch

        from .device_tensor import DeviceTensor

        nbytes = count * DTYPE_BYTES[dtype_code]
        raw = DeviceTensor(int(buf.ptr), (nbytes,), np.dtype(np.uint8), self.ordinal, buf, None)
        device = torch.device("cuda", self.ordinal)
        tensor = torch.as_tensor(raw, device=device).view(getattr(torch, DTYPE_CODES[dtype_code]))
        with torch.cuda.stream(torch.cuda.ExternalStream(int(self.backend.stream), device=device)):
            communicator.sum_(tensor)
        self.traffic.reduced += nbytes

    def capture(self, commands: list[tuple]) -> Any:
        """The commands as one instantiated CUDA graph (runtime.cuda.CudaGraph)."""
        return self.backend.capture(lambda stream: self.enqueue(commands, stream))

    def replay(self, graph: Any) -> None:
        graph.replay()
        self.backend.synchronize()

    def device_input(self, value: Any) -> Any:
        """A CUDA tensor's memory (runtime.cuda.DeviceArray) or None."""
        from .cuda import as_device

        return as_device(value)

    def borrow(self, array: Any) -> Any:
        return self._buffer(array.ptr, array.nbytes, None, keep=array.owner)

    def device_output(self, buf: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
        from .device_tensor import DeviceTensor

        return DeviceTensor(int(buf.ptr), shape, dtype, self.ordinal, buf,
                            lambda d, s: self.read(buf, d, s))

    @property
    def closed(self) -> bool:
        return bool(getattr(self.backend, "closed", False))

    def close(self) -> None:
        self.backend.close()


def _execute(device: Any, commands: list[tuple]) -> None:
    """Run a program's commands in order on `device` (_Vulkan or _Cuda):
    consecutive launches go to the device as one batch; a copy ends it."""
    launches: list[tuple] = []
    for command in commands:
        if command[0] == "launch":
            _, kernel, bufs, grid = command
            launches.append((kernel, bufs, grid))
            continue
        if launches:
            device.launch(launches)
            launches = []
        _, src, dst, nbytes = command
        device.copy(src, dst, nbytes)
    if launches:
        device.launch(launches)


def _run_commands(device: Any, commands: list[tuple], reduce: Any) -> None:
    """Run `commands` on `device`, each `("all_reduce", ...)` by `reduce`
    between the device's batches: the commands before it are executed (and
    the host copy waits for them), the ones after it only afterwards."""
    start = 0
    for i, command in enumerate(commands):
        if command[0] != "all_reduce":
            continue
        if i > start:
            device.execute(commands[start:i])
        reduce(command)
        start = i + 1
    if start < len(commands):
        device.execute(commands[start:])


def _base(buf: Any) -> Any:
    return getattr(buf, "buffer", buf)


def _offset(buf: Any) -> int:
    return int(getattr(buf, "offset", 0))


#: Backend names: raw Vulkan, CUDA, and wgpu (any adapter, or lavapipe's).
#: "cuda:N" opens CUDA device N (a tensor-parallel rank's own GPU).
BACKENDS = ("vulkan", "lavapipe", "cuda", "wgpu", "wgpu-lavapipe")


def make_device(backend: str) -> Any:
    """The device operations of a backend by name (see BACKENDS). One device
    can serve several artifacts: `ProgramArtifact(path, device)` shares it
    (and leaves closing it to the caller); its `.backend` is the CUDA
    backend (runtime.cuda.CudaBackend) on "cuda"."""
    return _device(backend)


def _device(backend: str) -> Any:
    if backend in ("vulkan", "lavapipe"):
        return _Vulkan("lavapipe" if backend == "lavapipe" else "any")
    if backend in ("wgpu", "wgpu-lavapipe"):
        return _Wgpu("lavapipe" if backend == "wgpu-lavapipe" else "any")
    if backend == "cuda":
        return _Cuda()
    if isinstance(backend, str) and backend.startswith("cuda:") and backend[5:].isdigit():
        return _Cuda(int(backend[5:]))
    raise UnknownDeviceError(
        f"unknown GPU backend {backend!r}; the known backend names are {', '.join(BACKENDS)} "
        "(ProgramArtifact(path, backend) / make_device(backend))",
        name=str(backend),
        known=BACKENDS,
    )


def check_client(manifest: dict[str, Any], on_wgpu: bool, path: Path) -> None:
    """Refuse an artifact whose SPIR-V was compiled for raw Vulkan on a wgpu
    backend (naga reads no 8-bit types nor non-finite literals): the message
    says how to compile it for wgpu. Kernels compiled for wgpu run on raw
    Vulkan too."""
    if not on_wgpu:
        return
    device = manifest.get("device", {})
    if manifest.get("target") == "spirv" and device.get("client", "vulkan") != "wgpu":
        raise PootError(
            f"{path} was compiled for {device.get('name', 'a Vulkan device')} (client "
            f"{device.get('client', 'vulkan')!r}); the wgpu backend runs SPIR-V compiled for "
            "wgpu: compile it with devices.WGPU_LAVAPIPE or a Device with client='wgpu'"
        )


#: What a session reads from each program and each kind of its commands.
_PROGRAM_FIELDS = {"buffers": list, "commands": list, "results": list, "arena_bytes": int}
_COMMAND_FIELDS = {
    "launch": {"kernel": str, "entry": str, "args": list, "grid": list, "block": list},
    "copy": {"from": int, "to": int, "bytes": int},
    "all_reduce": {"buffer": int, "count": int, "dtype": int, "site": int},
}


def _check_command(command: Any, i: int, where: str, program: dict[str, Any], manifest_path: Path) -> None:
    """Command `i` of a program is one of the kinds a session runs, with
    their fields; an all_reduce names one of the program's buffers and a
    dtype code the communicator knows."""
    kind = next(iter(command), None) if isinstance(command, dict) and len(command) == 1 else None
    if kind not in _COMMAND_FIELDS:
        raise ArtifactError(
            f"{manifest_path}: command {i} of {where} is {command!r}, not one of "
            f"{sorted(_COMMAND_FIELDS)}: recompile the artifact with this poot_mlir (compile_gpu)",
            str(manifest_path),
        )
    body = command[kind]
    for key, kind_of in _COMMAND_FIELDS[kind].items():
        if not isinstance(body.get(key) if isinstance(body, dict) else None, kind_of):
            raise ArtifactError(
                f"{manifest_path}: {kind} {i} of {where} has no {key!r} {kind_of.__name__}",
                str(manifest_path),
            )
    if kind == "all_reduce" and (
        not 0 <= body["buffer"] < len(program["buffers"]) or body["dtype"] not in DTYPE_BYTES
    ):
        raise ArtifactError(
            f"{manifest_path}: all_reduce {i} of {where} sums buffer {body['buffer']} of "
            f"{len(program['buffers'])} as dtype code {body['dtype']} (known: "
            f"{sorted(DTYPE_CODES.items())})",
            str(manifest_path),
        )


def _check_programs(programs: dict[str, Any], directory: Path, manifest_path: Path) -> None:
    """Every program has the fields a session reads and every kernel file it
    launches is there: an ArtifactError at load, not a KeyError or a
    FileNotFoundError at the first step."""
    if not programs:
        raise ArtifactError(f"{manifest_path}: the manifest lists no programs", str(manifest_path))
    for name, program in programs.items():
        where = f"program {name!r}"
        if not isinstance(program, dict):
            raise ArtifactError(f"{manifest_path}: {where} is not an object", str(manifest_path))
        for key, kind in _PROGRAM_FIELDS.items():
            if not isinstance(program.get(key), kind):
                raise ArtifactError(
                    f"{manifest_path}: {where} has no {key!r} {kind.__name__}", str(manifest_path)
                )
        for i, command in enumerate(program["commands"]):
            _check_command(command, i, where, program, manifest_path)
            if "launch" in command:
                listed_file(directory, command["launch"]["kernel"],
                            f"the kernel of launch {i} of {where}", manifest_path)


class ProgramArtifact:
    """A loaded whole-step GPU artifact."""

    def __init__(
        self, path: "str | Path", backend: "str | Any" = "vulkan", communicator: Any = None
    ) -> None:
        """`backend`: a name from BACKENDS (the artifact opens and closes its
        own device) or a device from `make_device` (shared, not closed here).
        `communicator` (a `collectives.Communicator`) runs a tensor-parallel
        rank program's all_reduce commands; such an artifact refuses to load
        without one of its degree and rank (CommunicatorError), before a
        device is opened."""
        self.path = Path(path)
        manifest_path = self.path / MANIFEST
        self.manifest = read_manifest(self.path, "a whole-step GPU artifact (compile_gpu)")
        if self.manifest.get("format") != "poot-artifact/1" or self.manifest.get("kind") != "program":
            raise ArtifactError(f"{manifest_path} is not a whole-step GPU artifact", str(manifest_path))
        named = isinstance(backend, str)
        on_wgpu = backend.startswith("wgpu") if named else backend.client == "wgpu"
        check_client(self.manifest, on_wgpu, self.path)
        self.signature = manifest_signature(self.manifest, manifest_path)
        self.programs = manifest_field(self.manifest, "programs", dict, manifest_path)
        _check_programs(self.programs, self.path, manifest_path)
        check_communicator(self.signature, communicator, str(self.path))
        self.communicator = communicator
        self.device = _device(backend) if named else backend
        self._owns_device = named
        self._kernels: dict[tuple[str, str], Any] = {}
        self._closed = False
        #: Its kernels wait on griddepcontrol first (Device.dependent_launch):
        #: the CUDA backend launches them with programmatic stream
        #: serialization; other backends have no such launch.
        #: `POOT_CUDA_DEPENDENT_LAUNCH=0` launches them plainly (the wait
        #: then returns at once): a knob to rule it out or to compare.
        self.dependent_launch = bool(
            self.manifest.get("device", {}).get("dependent_launch", False)
        ) and os.environ.get("POOT_CUDA_DEPENDENT_LAUNCH", "1") != "0"

    @property
    def closed(self) -> bool:
        """Closed by `close()`, or its device closed by whoever owns it."""
        return self._closed or bool(getattr(self.device, "closed", False))

    def check_open(self) -> None:
        """ClosedError when the artifact (or the device it runs on) is closed."""
        if self._closed:
            raise ClosedError(
                f"the GPU artifact {self.path} is closed (and every session of it): load it "
                "again (ProgramArtifact(path, backend)) and start a new session"
            )
        if getattr(self.device, "closed", False):
            raise ClosedError(
                f"the device the GPU artifact {self.path} runs on is closed: make a new one "
                "(make_device(backend), or ProgramArtifact(path, backend) opens its own)"
            )

    @property
    def arena_bytes(self) -> int:
        return max(int(p["arena_bytes"]) for p in self.programs.values())

    def reduces(self, name: str) -> bool:
        """Whether program `name` sums buffers over the ranks: it has
        all_reduce commands and a communicator to run them (without one, in a
        world of one rank, each all_reduce is the identity and is skipped)."""
        return self.communicator is not None and any(
            "all_reduce" in c for c in self.programs[name]["commands"]
        )

    def shard(self, full: Mapping[str, Any]) -> dict[str, Any]:
        """This rank's inputs, constants or initial state from unsharded
        ones: each sharded argument's block (runtime.sharding.shard_inputs)."""
        return shard_inputs(self.signature, full)

    def kernel(self, launch: dict[str, Any]) -> Any:
        self.check_open()
        key = (launch["kernel"], launch["entry"])
        if key not in self._kernels:
            payload = (self.path / launch["kernel"]).read_bytes()
            self._kernels[key] = self.device.kernel(
                payload, launch["entry"], len(launch["args"]), launch["block"],
                dependent=self.dependent_launch,
            )
        return self._kernels[key]

    def session(
        self,
        state: Mapping[str, np.ndarray] | None = None,
        constants: Mapping[str, Any] | None = None,
        *,
        graph: bool | None = None,
        share: "Session | None" = None,
    ) -> "Session":
        """A device-resident session from `state`; `constants` (inputs that do
        not change between steps, such as weights) are bound and uploaded once
        (CUDA tensors: borrowed, not copied) and are not given to `step`.
        `graph` (CUDA; default on): replay each step as one CUDA graph.
        `state` gives the initial value of every state (a missing one is a
        MissingStateError naming it).

        `share`: a session of another artifact on the same device whose
        device buffers this one uses for every state and constant of the
        same name and type -- one KV cache and one copy of the weights for
        the several step shapes of a model (a prefill chunk and the decode
        step): a step of either reads what the other wrote, nothing moves."""
        return Session(self, state, constants, graph=graph, share=share)

    def run(self, inputs: Mapping[str, Any]) -> binding.Result:
        """One step from the given state (inputs by name, state included);
        the result carries the new state, read back."""
        self.check_open()
        states = {p.state for p in self.signature.args if p.state is not None}
        given = {k: v for k, v in inputs.items() if k in states}
        try:
            with_state = self.session(given)
        except MissingStateError as error:
            names = ", ".join(repr(n) for n in error.missing)
            raise MissingStateError(
                f"no value for state {names}: run() takes every state among its inputs, "
                "by state name (or carry it in artifact.session(state))",
                error.missing,
            ) from None
        result = with_state.step({k: v for k, v in inputs.items() if k not in states})
        result.state = with_state.state
        return result

    def close(self) -> None:
        """Close the artifact (idempotent) and the device it opened (a shared
        one stays open); a step of any of its sessions is then a ClosedError."""
        if self._closed:
            return
        self._closed = True
        self._kernels.clear()
        if self._owns_device:
            self.device.close()

    def __enter__(self) -> "ProgramArtifact":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Address sets of borrowed inputs a session keeps a graph (or command list) for.
_MAX_BUILT = 8


class Session:
    """A device-resident session: the state stays on the device; a step
    binds its inputs before anything runs, runs the validation prologue,
    then the step. A refused bind or a failed validation leaves the device
    state exactly as it was (nothing of the step has run).

    On the CUDA backend:
    - a step's commands (every launch and device copy of the program, the
      copies of state not written in place included) are captured once as a
      CUDA graph and replayed (`graph=False` launches them one by one). A
      tensor-parallel rank program's all_reduce is not captured: its
      commands are launched one by one (docs/tensor-parallel.md). The
      inputs are written into the session's buffers before each replay, so
      pos/len and the other inputs may change between replays; the graph
      reads them there.
    - inputs and constants may be CUDA tensors (torch, CuPy, anything with
      `__cuda_array_interface__` or DLPack): the kernels read their memory
      directly, no copy (checked for shape and dtype; an input with a declared
      range or a write map is read back once to check it). A new tensor
      address means a new graph, captured once and kept (one per distinct set
      of addresses: reuse input tensors to stay on one graph).
    - `step(..., device_outputs=True)` returns the outputs as `DeviceTensor`s
      over the session's result buffers (DLPack / `__cuda_array_interface__`,
      no copy), valid until the next step; with `fetch=` the named ones are
      read back, the rest stay DeviceTensors.

    It is created from the initial value of every state (a missing one is a
    MissingStateError naming each, before anything is allocated). After
    `close()` (its own, its artifact's or its device's), a step, a state read
    or write is a ClosedError.
    """

    def __init__(
        self,
        artifact: ProgramArtifact,
        state: Mapping[str, np.ndarray] | None,
        constants: Mapping[str, Any] | None = None,
        *,
        graph: bool | None = None,
        share: "Session | None" = None,
    ) -> None:
        self.artifact = artifact
        self._closed = False
        artifact.check_open()
        signature = artifact.signature
        dev = artifact.device
        state = dict(state or {})
        shared = self._shared(share) if share is not None else {}
        specs = {p.state: p.spec() for p in signature.args if p.state is not None}
        unshared = tuple(n for n in signature.state_names if ("state", n) not in shared)
        binding.check_session_state(unshared, state, {n: specs[n] for n in unshared})
        self._constant: set[str] = set()
        # A tensor-parallel step's all_reduce runs on torch.distributed
        # between the device's batches, which a CUDA graph does not capture
        # here (capturing NCCL calls is future work): such a step launches.
        reduces = any(artifact.reduces(name) for name in artifact.programs)
        self._graph = hasattr(dev, "capture") and not reduces if graph is None else bool(graph)
        if self._graph and not hasattr(dev, "capture"):
            raise PootError(f"the {type(dev).__name__.strip('_').lower()} backend has no graph capture")
        if self._graph and reduces:
            raise PootError(
                "graph=True: this tensor-parallel step sums buffers over the ranks between its "
                "launches (torch.distributed), which is not captured in a CUDA graph yet: "
                "pass graph=False or leave graph unset"
            )
        self._failures = SiteFailures(artifact.communicator)
        self._built: dict[tuple, Any] = {}
        #: Arguments bound to memory the caller owns (CUDA tensors): index -> buffer.
        self._borrowed: dict[int, Any] = {}
        constants = dict(constants or {})
        # Constants the shared session holds and this call does not give.
        reused = {
            p.key: shared[("constant", p.key)]
            for p in signature.args
            if p.state is None and ("constant", p.key) in shared and p.key not in constants
        }
        host, device = self._bind(constants, only=set(constants))
        self._args = []
        for i, p in enumerate(signature.args):
            buf = None
            if p.state is not None:
                buf = shared.get(("state", p.state))
            elif p.key in reused:
                buf = reused[p.key]
            if buf is None and i not in device:
                buf = dev.alloc(int(np.prod(p.shape)) * p.dtype.itemsize)
            self._args.append(buf)
        self._arena = dev.alloc(artifact.arena_bytes) if artifact.arena_bytes else None
        for i, port in enumerate(signature.args):
            if port.state is not None and port.state in state and ("state", port.state) not in shared:
                dev.write(self._args[i], binding.normalize(port, state[port.state]))
        self._constants_buffers = {name: self._constant_buffers(p) for name, p in artifact.programs.items()}
        for i, array in host:
            dev.write(self._args[i], array)
        self._fixed = dict(device)  # constants given as device tensors stay borrowed
        self._constant = set(constants) | set(reused)

    def _shared(self, share: "Session") -> dict[tuple[str, str], Any]:
        """The buffers `share` lends this session: ("state", name) and
        ("constant", key) -> buffer, for each state and constant of the same
        name, shape and dtype in both signatures (a same-named one of
        another type is a BindError: the two steps disagree on it)."""
        share._check_open()
        if share.artifact.device is not self.artifact.device:
            raise BindError(
                "share: the shared session runs on another device object (open the artifacts on "
                "one device: ProgramArtifact(path, make_device(backend)))"
            )
        theirs = {}
        for i, port in enumerate(share.artifact.signature.args):
            buf = share._fixed.get(i, share._args[i])
            if port.state is not None:
                theirs[("state", port.state)] = (port, buf)
            elif port.key in share._constant:
                theirs[("constant", port.key)] = (port, buf)
        lent = {}
        for port in self.artifact.signature.args:
            key = ("state", port.state) if port.state is not None else ("constant", port.key)
            if key not in theirs:
                continue
            other, buf = theirs[key]
            if (other.shape, other.dtype) != (port.shape, port.dtype):
                raise BindError(
                    f"share: {key[0]} {key[1]!r} is {other.spec()} in the shared session but "
                    f"{port.spec()} here"
                )
            lent[key] = buf
        return lent

    @property
    def closed(self) -> bool:
        return self._closed or self.artifact.closed

    def close(self) -> None:
        """Release the session's device buffers (idempotent); a step, a state
        read or write afterwards is a ClosedError."""
        if self._closed:
            return
        self._closed = True
        self._built.clear()
        self._args = []
        self._arena = None
        self._constants_buffers = {}
        self._fixed = {}
        self._borrowed = {}

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(
                "this session is closed (its device buffers were released): start a new one "
                "with artifact.session(state)"
            )
        self.artifact.check_open()

    def _constant_buffers(self, program: dict[str, Any]) -> dict[int, Any]:
        """The program's constant buffers (uploaded once), by buffer slot."""
        dev = self.artifact.device
        out = {}
        for slot, desc in enumerate(program["buffers"]):
            if desc["kind"] == "constant":
                buf = dev.alloc(desc["bytes"])
                dev.write(buf, np.frombuffer(bytes.fromhex(desc["hex"]), np.uint8))
                out[slot] = buf
        return out

    def _program_buffers(self, name: str, args: list[Any]) -> list[Any]:
        dev = self.artifact.device
        constants = self._constants_buffers[name]
        out = []
        for slot, desc in enumerate(self.artifact.programs[name]["buffers"]):
            if desc["kind"] == "arg":
                out.append(args[desc["index"]])
            elif desc["kind"] == "temp":
                out.append(dev.slice(self._arena, desc["offset"], desc["bytes"]))
            else:
                out.append(constants[slot])
        return out

    def _commands(self, name: str, bufs: list[Any], args: list[Any]) -> list[tuple]:
        """The program's commands over `bufs`; the step's own program ends
        with the copies of state results not written in place into their
        argument buffers (the next step reads them there)."""
        program = self.artifact.programs[name]
        commands = []
        for command in program["commands"]:
            if "launch" in command:
                launch = command["launch"]
                commands.append(
                    ("launch", self.artifact.kernel(launch), [bufs[a] for a in launch["args"]],
                     tuple(launch["grid"]))
                )
            elif "copy" in command:
                copy = command["copy"]
                commands.append(("copy", bufs[copy["from"]], bufs[copy["to"]], copy["bytes"]))
            elif self.artifact.communicator is not None:  # else the identity: one rank
                r = command["all_reduce"]
                commands.append(("all_reduce", bufs[r["buffer"]], r["count"], r["dtype"], r["site"]))
        signature = self.artifact.signature
        if name == signature.name:
            slots = iter(program["results"])
            for port in signature.results:
                if port.in_place_of is not None:
                    continue
                slot = next(slots)
                if port.state is not None:
                    arg = next(i for i, a in enumerate(signature.args) if a.state == port.state)
                    nbytes = int(np.prod(port.shape)) * port.dtype.itemsize
                    commands.append(("copy", bufs[slot], args[arg], nbytes))
        return commands

    def _run(self, name: str, borrowed: dict[int, Any]) -> list[Any]:
        """Run program `name` with `borrowed` argument buffers; its buffers.
        The buffers and commands (or graph) of each distinct set of borrowed
        addresses are built once and kept."""
        dev = self.artifact.device
        key = (name, tuple(sorted((i, int(b.ptr)) for i, b in borrowed.items())))
        built = self._built.get(key)
        if built is None:
            args = [borrowed.get(i, self._fixed.get(i, buf)) for i, buf in enumerate(self._args)]
            bufs = self._program_buffers(name, args)
            commands = self._commands(name, bufs, args)
            runnable = dev.capture(commands) if self._graph else commands
            if len(self._built) >= _MAX_BUILT:
                del self._built[next(iter(self._built))]  # the oldest address set
            # The borrowed buffers stay referenced by what was built from them.
            built = self._built[key] = (bufs, runnable, dict(borrowed))
        bufs, runnable, _ = built
        if self._graph:
            dev.replay(runnable)
        else:
            _run_commands(dev, runnable, self._all_reduce)
            self._failures.raise_failure()
        return bufs

    def _all_reduce(self, command: tuple) -> None:
        """One all_reduce command on the artifact's communicator. A failure
        is kept and raised after the program (`_run`): the later commands
        and collectives still run, so the other ranks are not left waiting."""
        _, buf, count, dtype_code, site = command
        dev, communicator = self.artifact.device, self.artifact.communicator
        self._failures.run(site, lambda: dev.all_reduce(buf, count, dtype_code, communicator))

    def _bind(
        self, inputs: Mapping[str, Any], only: "set[str] | None" = None
    ) -> tuple[list[tuple[int, np.ndarray]], dict[int, Any]]:
        """Check every non-state, non-constant input (or the ports named in
        `only`) before anything runs (the shared binder's rules; state and
        constants are on the device already). Host values come back as
        (argument index, array) to write; CUDA tensors as borrowed buffers
        by argument index."""
        if not isinstance(inputs, Mapping):
            raise BindError(f"step inputs must be a mapping of names to values, got {type(inputs).__name__}")
        signature = self.artifact.signature
        dev = self.artifact.device
        ports = [
            p
            for p in signature.args
            if p.state is None and (p.key in only if only is not None else p.key not in self._constant)
        ]
        for port in signature.args:
            if port.state is not None and (port.key in inputs or port.state in inputs):
                raise BindError(f"state argument {port.describe()} comes from the session, not the inputs")
            if only is None and port.key in self._constant and port.key in inputs:
                raise BindError(f"input {port.describe()} is a constant of this session")
        index = {id(p): i for i, p in enumerate(signature.args)}
        device: dict[int, Any] = {}
        host_ports = []
        for port in ports:
            tensor = dev.device_input(inputs[port.key]) if port.key in inputs and hasattr(dev, "device_input") else None
            if tensor is None:
                host_ports.append(port)
                continue
            _check_device_tensor(port, tensor, dev)
            device[index[id(port)]] = dev.borrow(tensor)
        on_device = {signature.args[i].key for i in device}
        host_inputs = {k: v for k, v in inputs.items() if k not in on_device}
        sub = binding.Signature(signature.name, tuple(host_ports), signature.results)
        arrays = binding.bind(sub, host_inputs)
        return [(index[id(p)], a) for p, a in zip(host_ports, arrays)], device

    def step(
        self,
        inputs: Mapping[str, Any],
        *,
        device_outputs: bool = False,
        fetch: "Collection[str] | None" = None,
    ) -> binding.Result:
        """One step. `fetch`: the names of the outputs to read back (default:
        every one); the others stay on the device, absent from the result --
        a greedy decode reads back its `[rows]` tokens, not the logits they
        came from. `device_outputs=True` (CUDA): the outputs not fetched come
        as DeviceTensors over the session's buffers, not read back (alone:
        none is read back). Validation witnesses are always read: they
        decide whether the step failed.

        A tensor-parallel step runs on every rank or on none: each rank
        binds, uploads and validates, then the ranks agree
        (`collectives.everywhere`); a refusal anywhere raises on every rank
        (RankRefused on the others) before any command ran. A collective
        that fails mid-step is a CommunicatorError, and a session with state
        closes: its state may hold part of the step."""
        communicator = self.artifact.communicator
        signature = self.artifact.signature
        fetch, borrowed = everywhere(
            communicator, lambda: self._prepare(inputs, device_outputs, fetch)
        )
        if signature.validate is not None and self.artifact.reduces(signature.validate[0]):
            # A prologue that sums over the ranks runs on every rank, after
            # they agreed; then they agree on its flags.
            flags = self._run_or_close(signature.validate[0], borrowed)
            everywhere(communicator, lambda: self._check_prologue(flags))
        bufs = self._run_or_close(signature.name, borrowed)
        outputs = self._outputs(bufs, fetch, device_outputs)
        late = signature.validate is None and any(p.slot == "validation" for p in signature.results)
        if late:  # computed by the step itself: every rank raises, or none
            everywhere(communicator, lambda: binding.check_validation(signature, outputs))
        else:
            binding.check_validation(signature, outputs)
        named = {p.key: v for p, v in zip(signature.results, outputs) if p.name is not None and v is not None}
        return binding.Result(outputs, named, {})

    def _prepare(
        self, inputs: Mapping[str, Any], device_outputs: bool, fetch: "Collection[str] | None"
    ) -> tuple["set[str] | None", dict[int, Any]]:
        """Everything that may refuse a step before it runs: the arguments,
        the bind, the uploads of the inputs and the validation prologue
        (unless it sums over the ranks). (The names to fetch, the borrowed
        buffers.) Nothing here changes the state."""
        self._check_open()
        signature = self.artifact.signature
        dev = self.artifact.device
        if device_outputs and not hasattr(dev, "device_output"):
            raise PootError("device_outputs=True needs the CUDA backend")
        if fetch is not None:
            fetch = set(fetch)
            known = {p.key for p in signature.results if p.state is None and p.slot != "validation"}
            if not fetch <= known:
                raise BindError(
                    f"fetch: no output named {sorted(fetch - known)} (the outputs: {sorted(known)})"
                )
        elif device_outputs:
            fetch = set()
        host, borrowed = self._bind(inputs)
        for i, array in host:
            dev.write(self._args[i], array)
        if signature.validate is not None and not self.artifact.reduces(signature.validate[0]):
            self._check_prologue(self._run(signature.validate[0], borrowed))
        return fetch, borrowed

    def _check_prologue(self, bufs: list[Any]) -> None:
        """Read the validation prologue's flags from its buffers `bufs`;
        ValidationFailure when one is false."""
        signature = self.artifact.signature
        name, indices = signature.validate  # type: ignore[misc]
        flags: list[Any] = [None] * len(signature.results)
        for slot, i in zip(self.artifact.programs[name]["results"], indices):
            port = signature.results[i]
            flags[i] = self.artifact.device.read(bufs[slot], port.dtype, port.shape)
        binding.check_validation(signature, flags)

    def _run_or_close(self, name: str, borrowed: dict[int, Any]) -> list[Any]:
        """`_run`; a failed collective closes a session that carries state
        (the program ran on, so its state holds a step summed wrong)."""
        try:
            return self._run(name, borrowed)
        except CommunicatorError:
            if self.artifact.signature.state_names:
                self.close()
            raise

    def _outputs(self, bufs: list[Any], fetch: "set[str] | None", device_outputs: bool) -> list[Any]:
        """The step's outputs from its program's buffers: read back when
        fetched (validation flags always), DeviceTensors when asked, None
        for state (on the device) and what stays there."""
        signature = self.artifact.signature
        dev = self.artifact.device
        remaining = iter(self.artifact.programs[signature.name]["results"])
        outputs: list[Any] = []
        for port in signature.results:
            if port.in_place_of is not None:
                outputs.append(None)
                continue
            buf = bufs[next(remaining)]
            if port.state is not None:
                outputs.append(None)  # copied into its argument buffer by the program
            elif port.slot == "validation" or fetch is None or port.key in fetch:
                outputs.append(dev.read(buf, port.dtype, port.shape))
            elif device_outputs:
                outputs.append(dev.device_output(buf, port.dtype, port.shape))
            else:
                outputs.append(None)  # left on the device: not fetched
        return outputs

    def write_state(self, name: str, value: Any) -> None:
        """Replace one state on the device (bound like the initial state):
        for a driver that edits state between steps (the serving engine's
        copy-on-write block copies)."""
        self._check_open()
        for port, buf in zip(self.artifact.signature.args, self._args):
            if port.state == name:
                self.artifact.device.write(buf, binding.normalize(port, value))
                return
        raise BindError(f"unknown state {name!r} (the function's state: {list(self.artifact.signature.state_names)})")

    def copy_state_rows(self, name: str, src: int, dst: int, count: int) -> None:
        """Copy rows `[src, src + count)` of state `name` (its leading axis:
        a pool's slots) onto rows `[dst, dst + count)`, on the device: the
        serving engine's copy-on-write of a shared block, nothing read back."""
        self._check_open()
        for port, buf in zip(self.artifact.signature.args, self._args):
            if port.state != name:
                continue
            rows = port.shape[0] if port.shape else 0
            if min(src, dst, count) < 0 or max(src, dst) + count > rows:
                raise BindError(
                    f"copy_state_rows: rows [{src}, {src + count}) -> [{dst}, {dst + count}) "
                    f"outside state {name!r} ({rows} rows)"
                )
            row = int(np.prod(port.shape[1:])) * port.dtype.itemsize
            dev, nbytes = self.artifact.device, count * row
            if not count or src == dst:
                return
            source, target = dev.slice(buf, src * row, nbytes), dev.slice(buf, dst * row, nbytes)
            if dev.client == "wgpu" or abs(src - dst) < count:
                # WebGPU copies between two buffers only; overlapping rows
                # must be read whole before any is written: via a scratch.
                scratch = dev.alloc(nbytes)
                dev.copy(source, dev.slice(scratch, 0, nbytes), nbytes)
                source = dev.slice(scratch, 0, nbytes)
            dev.copy(source, target, nbytes)
            return
        raise BindError(f"unknown state {name!r} (the function's state: {list(self.artifact.signature.state_names)})")

    def check(self, inputs: Mapping[str, Any]) -> None:
        """Bind `inputs` as `step` would (every refusal `step` raises for
        them), without writing or running anything."""
        self._check_open()
        self._bind(inputs)

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The device state, read back (a copy)."""
        self._check_open()
        dev = self.artifact.device
        return {
            port.state: dev.read(buf, port.dtype, port.shape)
            for port, buf in zip(self.artifact.signature.args, self._args)
            if port.state is not None
        }


def _check_device_tensor(port: binding.Port, tensor: Any, dev: Any) -> None:
    """A CUDA tensor bound to `port`: the binder's shape and dtype rules;
    its range or write-map rule on a copy read back (a sync, small inputs)."""
    from ..errors import ShapeBindError

    if tuple(tensor.shape) != port.shape:
        raise ShapeBindError(f"{port.describe()}: shape {tuple(tensor.shape)} does not match {port.spec()}")
    if np.dtype(tensor.dtype) != port.dtype:
        # A device tensor is read in place: no silent conversion (a host
        # int64 array is converted to i32; device memory is not copied).
        hint = (
            "; a CUDA tensor is read in place, not converted: pass .to(torch.int32)"
            if np.dtype(tensor.dtype) == np.int64 and port.dtype == np.int32
            else ""
        )
        raise ShapeBindError(
            f"{port.describe()}: dtype {np.dtype(tensor.dtype)} does not match {port.spec()} "
            f"(expected {port.dtype}){hint}"
        )
    if port.range is None and port.slot != "write_map":
        return
    host = dev.read(dev.borrow(tensor), port.dtype, port.shape)
    if port.slot == "write_map":
        binding.check_write_map(port, host)
    if port.range is not None:
        binding.check_range(port, host)
