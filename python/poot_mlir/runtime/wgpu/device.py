"""One wgpu device: storage buffers, SPIR-V kernels checked before naga sees
them, and ordered runs of dispatches and copies.

The shape is runtime.vulkan's (`Device.load_kernel`, `Device.run`, buffers
with `read`/`write`, slices of an arena), so the artifact runtimes drive both
the same way. What differs, and why:

- WebGPU has no push constants and no descriptor-set objects to reuse: every
  kernel argument is a read-write storage buffer in bind group 0, binding i
  (the layout is explicit, not "auto", so an argument a kernel never touches
  still binds).
- WebGPU orders dispatches itself: consecutive dispatches of one compute pass
  see each other's writes (wgpu inserts the barriers), so `run` records one
  pass per group of launches and a copy between passes.
- Buffer sizes, copy sizes and binding sizes must be multiples of 4 bytes; a
  buffer is allocated rounded up (WebGPU zero-fills new buffers).
- Every bind group is made before anything is encoded, so a binding wgpu
  refuses (too small for the shader's struct, misaligned) raises before any
  work is submitted.
"""

from __future__ import annotations

import hashlib
import math
import os
import weakref
from typing import Any, Iterable, Sequence

import numpy as np

from ..vulkan.kernel import check_kernel
from ..vulkan.spirv import SpirvError, reflect
from .errors import DispatchError, KernelError, WgpuError, WgpuUnavailable
from .properties import WANTED_FEATURES, describe

INSTALL_HINT = 'pip install "poot_mlir[wgpu]" (wgpu-py); on Linux without a GPU, Mesa lavapipe'
_LAVAPIPE_NAMES = ("lavapipe", "llvmpipe", "cpu")
_TYPE_RANK = {"discretegpu": 0, "integratedgpu": 1, "virtualgpu": 2, "cpu": 3}
# SPIR-V capabilities naga's SPIR-V reader does not take (WGSL has no 8-bit
# types); the message says how to compile for wgpu instead.
_NAGA_REFUSES = ("Int8", "StorageBuffer8BitAccess", "UniformAndStorageBuffer8BitAccess")

_adapters: list[Any] | None = None


def _wgpu() -> Any:
    try:
        import wgpu
    except ImportError as e:
        raise WgpuUnavailable(f"the wgpu package does not import ({e}); {INSTALL_HINT}") from None
    return wgpu


def _quiet_wayland_probe() -> None:
    """wgpu-native's Vulkan instance asks for the surface extensions, and
    Mesa's Wayland support then prints "error: XDG_RUNTIME_DIR is invalid or
    not set in the environment." when that variable is unset (a container,
    a CI job): four lines of noise for a compute-only process. An empty
    private directory of our own answers the probe (no compositor is found,
    silently); a set variable is left alone."""
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    import tempfile

    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="poot-xdg-runtime-")


def adapters() -> list[Any]:
    """The process's wgpu adapters, enumerated once (it takes 0.2-0.6 s on
    lavapipe: wgpu-native probes every backend). $POOT_WGPU_BACKENDS (e.g.
    "Vulkan") restricts the probe, before wgpu's instance is first made."""
    global _adapters
    if _adapters is None:
        wgpu = _wgpu()
        _quiet_wayland_probe()
        backends = os.environ.get("POOT_WGPU_BACKENDS")
        if backends:
            from wgpu.backends.wgpu_native import extras

            extras.set_instance_extras(backends=backends.split(","))
        _adapters = list(wgpu.gpu.enumerate_adapters_sync())
    return _adapters


class Buffer:
    """A storage buffer (read-write, copy source and destination)."""

    def __init__(self, device: "Device", nbytes: int) -> None:
        if nbytes < 0:
            raise WgpuError(f"buffer size must be >= 0 bytes, got {nbytes}")
        self.device = device
        self.nbytes = int(nbytes)
        self.offset = 0
        # Multiples of 4 (WebGPU's copy and binding rule), at least 16.
        self._size = max(16, -(-self.nbytes // 16) * 16)
        usage = device._wgpu.BufferUsage
        self._handle = device._device.create_buffer(
            size=self._size, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        )
        self._closed = False
        device._buffers.add(self)

    @property
    def buffer(self) -> "Buffer":
        return self

    @property
    def closed(self) -> bool:
        return self._closed or self.device.closed

    def write(self, data: Any, *, offset: int = 0) -> None:
        """Copy `data` (its own dtype's bytes) into the buffer at `offset`."""
        self._check_open()
        view = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if offset < 0 or offset + view.nbytes > self.nbytes:
            raise WgpuError(
                f"write of {view.nbytes} bytes at offset {offset} overruns the "
                f"{self.nbytes}-byte buffer"
            )
        if not view.nbytes:
            return
        start, pad = offset - offset % 4, offset % 4
        end = -(-(offset + view.nbytes) // 4) * 4
        if pad or end != offset + view.nbytes:
            # queue.write_buffer takes whole words: merge the ragged ends
            # with the bytes already there.
            words = self.device._read_bytes(self, start, end - start)
            words[pad : pad + view.nbytes] = view
            view = words
        self.device._device.queue.write_buffer(self._handle, start, view)

    def read(self, dtype: Any, shape: Iterable[int] | int, *, offset: int = 0) -> np.ndarray:
        """A copy of `shape` elements of `dtype` from byte `offset`."""
        self._check_open()
        dt = np.dtype(dtype)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = math.prod(shape) * dt.itemsize
        if offset < 0 or offset + nbytes > self.nbytes:
            raise WgpuError(
                f"read of {shape} {dt} ({nbytes} bytes) at offset {offset} "
                f"overruns the {self.nbytes}-byte buffer"
            )
        start = offset - offset % 4
        raw = self.device._read_bytes(self, start, -(-(offset + nbytes - start) // 4) * 4)
        skip = offset - start
        return raw[skip : skip + nbytes].view(dt).reshape(shape)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.device._buffers.discard(self)
        self._handle.destroy()

    def _check_open(self) -> None:
        if self.closed:
            raise WgpuError("buffer is closed")

    def __repr__(self) -> str:
        return f"<wgpu.Buffer {self.nbytes} B {'closed' if self.closed else 'open'}>"


class BufferSlice:
    """Bytes [offset, offset + nbytes) of a Buffer, bound as a buffer of its
    own (a temporary in a step's arena). `offset` must be a multiple of the
    adapter's min-storage-buffer-offset-alignment."""

    def __init__(self, buffer: Buffer, offset: int, nbytes: int) -> None:
        if offset < 0 or offset + nbytes > buffer.nbytes:
            raise WgpuError(
                f"slice [{offset}, {offset + nbytes}) is outside the buffer's {buffer.nbytes} bytes"
            )
        align = buffer.device.properties["min_storage_buffer_offset_alignment"]
        if offset % align:
            raise WgpuError(f"slice offset {offset} is not a multiple of the adapter's {align}")
        self.buffer = buffer
        self.device = buffer.device
        self.offset = int(offset)
        self.nbytes = int(nbytes)
        # A binding's size is a multiple of 4; the arena's slots are 256-aligned.
        self._size = min(max(16, -(-self.nbytes // 16) * 16), buffer._size - self.offset)
        self._handle = buffer._handle

    @property
    def closed(self) -> bool:
        return self.buffer.closed

    def read(self, dtype: Any, shape: Iterable[int] | int) -> np.ndarray:
        return self.buffer.read(dtype, shape, offset=self.offset)

    def write(self, data: Any) -> None:
        self.buffer.write(data, offset=self.offset)


class Kernel:
    """A compute pipeline for one entry point of a SPIR-V module; its
    arguments are storage buffers 0..num_buffers-1 of bind group 0."""

    def __init__(self, device: "Device", spirv: bytes, entry: str, num_buffers: int,
                 local_size: Any) -> None:
        wgpu = device._wgpu
        self.device = device
        self.entry = entry
        self.num_buffers = num_buffers
        self.local_size = local_size
        try:
            module = device._device.create_shader_module(code=spirv)
        except Exception as e:  # GPUValidationError: naga's reasons, verbatim
            raise KernelError(f"wgpu (naga) refused kernel {entry!r}: {e}") from None
        self.layout = device._device.create_bind_group_layout(
            entries=[
                {
                    "binding": i,
                    "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.storage},
                }
                for i in range(num_buffers)
            ]
        )
        try:
            self.pipeline = device._device.create_compute_pipeline(
                layout=device._device.create_pipeline_layout(bind_group_layouts=[self.layout]),
                compute={"module": module, "entry_point": entry},
            )
        except Exception as e:
            raise KernelError(f"wgpu refused the pipeline of kernel {entry!r}: {e}") from None

    def __repr__(self) -> str:
        return f"<wgpu.Kernel {self.entry!r} buffers={self.num_buffers}>"


Step = tuple  # (kernel, buffers, groups)


class Device:
    """One wgpu device on an adapter chosen by `prefer`: "any" (discrete,
    integrated, virtual, then CPU adapters; Vulkan before other backends),
    "lavapipe" (Mesa's CPU Vulkan device; also "llvmpipe"/"cpu"), an adapter
    index, or a substring of the adapter's name. The device is made with the
    adapter's own limits (WebGPU's defaults are smaller: 16 KiB of workgroup
    storage, 8 storage buffers per stage) and the features in WANTED_FEATURES
    it has."""

    def __init__(self, prefer: "str | int" = "any") -> None:
        self._closed = True
        self._wgpu = _wgpu()
        self.adapter = self._choose(prefer)
        self.properties = describe(self.adapter)
        features = [f for f in WANTED_FEATURES if f in self.adapter.features]
        try:
            self._device = self.adapter.request_device_sync(
                required_features=features, required_limits=dict(self.adapter.limits)
            )
        except Exception as e:
            raise WgpuUnavailable(f"requesting a wgpu device failed: {e}") from None
        self._buffers: weakref.WeakSet[Buffer] = weakref.WeakSet()
        self._kernels: dict[tuple[str, str, int], Kernel] = {}
        self._closed = False

    def _choose(self, prefer: "str | int") -> Any:
        found = adapters()
        if not found:
            raise WgpuUnavailable(f"wgpu reports no adapter; {INSTALL_HINT}")
        infos = [a.info for a in found]
        names = ", ".join(f"[{i}] {a.summary}" for i, a in enumerate(found))

        def rank(i: int) -> tuple[int, int]:
            kind = str(infos[i].get("adapter_type", "")).lower()
            return (_TYPE_RANK.get(kind, 9), 0 if infos[i].get("backend_type") == "Vulkan" else 1)

        if isinstance(prefer, bool) or not isinstance(prefer, (int, str)):
            raise WgpuError(f"prefer must be a str or an int, got {prefer!r}")
        if isinstance(prefer, int):
            pick = [prefer] if 0 <= prefer < len(found) else []
        elif prefer in _LAVAPIPE_NAMES:
            pick = [
                i for i in range(len(found))
                if "llvmpipe" in str(infos[i].get("device", "")).lower()
                and infos[i].get("backend_type") == "Vulkan"
            ]
        elif prefer in ("any", "gpu"):
            pick = sorted(range(len(found)), key=rank)
            if prefer == "gpu":
                pick = [i for i in pick if str(infos[i].get("adapter_type", "")).lower() != "cpu"]
        else:
            pick = [i for i in range(len(found)) if prefer.lower() in found[i].summary.lower()]
        if not pick:
            raise WgpuUnavailable(f"no wgpu adapter matches {prefer!r}; adapters: {names}")
        return found[pick[0]]

    # -- buffers -------------------------------------------------------------

    def empty(self, nbytes: int) -> Buffer:
        """A new buffer of `nbytes` bytes (WebGPU zero-fills it)."""
        self._check_open()
        return Buffer(self, nbytes)

    zeros = empty

    def buffer_from(self, array: Any) -> Buffer:
        arr = np.ascontiguousarray(array)
        buf = self.empty(arr.nbytes)
        buf.write(arr)
        return buf

    def _read_bytes(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        data = self._device.queue.read_buffer(buf._handle, offset, nbytes)
        return np.frombuffer(data, np.uint8).copy()

    # -- kernels -------------------------------------------------------------

    def load_kernel(self, spirv: bytes, entry: "str | None" = None,
                    num_buffers: "int | None" = None) -> Kernel:
        """Load a SPIR-V kernel. The module is reflected first and refused,
        naming the rule, when it asks for more than the adapter allows
        (runtime.vulkan's checks) or for what naga cannot read; then naga
        translates it. The same (module, entry, num_buffers) loads once."""
        self._check_open()
        code = bytes(spirv)
        key = (hashlib.sha256(code).hexdigest(), entry or "", -1 if num_buffers is None else num_buffers)
        if key in self._kernels:
            return self._kernels[key]
        try:
            module = reflect(code)
            if entry is None and len(module.entry_points) != 1:
                raise SpirvError(f"the module has entry points {sorted(module.entry_points)}: pass entry=")
            ep = module.entry(entry or next(iter(module.entry_points)))
        except SpirvError as e:
            raise KernelError(str(e)) from e
        refused = sorted(c for c in module.capabilities if c in _NAGA_REFUSES)
        if refused:
            raise KernelError(
                f"kernel {ep.name!r} needs SPIR-V capabilities {refused}, which naga "
                "(wgpu's shader translator) does not read: compile it for wgpu "
                "(a devices.Device with client='wgpu', e.g. devices.WGPU_LAVAPIPE)"
            )
        n = check_kernel(self.properties, module, ep, num_buffers, error=KernelError)
        kern = Kernel(self, code, ep.name, n, ep.local_size)
        self._kernels[key] = kern
        return kern

    # -- running -------------------------------------------------------------

    def run(self, steps: Iterable[Step]) -> None:
        """Run `(kernel, buffers, groups)` steps in order, each seeing its
        predecessors' writes (the next read waits for them)."""
        self.execute([("launch", *step) for step in steps])

    def dispatch(self, kernel: Kernel, buffers: Sequence[Any], groups: Any = 1) -> None:
        self.run([(kernel, buffers, groups)])

    def copy(self, src: Any, dst: Any, nbytes: int) -> None:
        """Copy `nbytes` from buffer (or slice) `src` to `dst` on the device."""
        self.execute([("copy", src, dst, nbytes)])

    def execute(self, commands: Sequence[tuple]) -> None:
        """("launch", kernel, buffers, groups) and ("copy", src, dst, nbytes)
        commands, in order, in one submission; everything is checked (and
        every bind group made) before anything is encoded."""
        self._check_open()
        checked = [self._check(n, c) for n, c in enumerate(commands)]
        if not checked:
            return
        encoder = self._device.create_command_encoder()
        compute = None
        for command in checked:
            if command[0] == "launch":
                _, kern, group, g = command
                if compute is None:
                    compute = encoder.begin_compute_pass()
                compute.set_pipeline(kern.pipeline)
                compute.set_bind_group(0, group)
                compute.dispatch_workgroups(*g)
                continue
            if compute is not None:
                compute.end()
                compute = None
            _, src, dst, nbytes = command
            encoder.copy_buffer_to_buffer(src._handle, src.offset, dst._handle, dst.offset, nbytes)
        if compute is not None:
            compute.end()
        # No wait: the queue runs submissions, writes and reads in order, and
        # a read (queue.read_buffer) waits for the work before it. (wgpu-py
        # 0.32's on_submitted_work_done_sync is broken: docs/toolchain-notes.md.)
        self._device.queue.submit([encoder.finish()])

    def _check(self, n: int, command: tuple) -> tuple:
        if command[0] == "copy":
            _, src, dst, nbytes = command
            for name, b in (("source", src), ("destination", dst)):
                self._check_buffer(b, f"copy {n}: {name}")
            size = -(-int(nbytes) // 4) * 4  # whole words: the buffers are padded
            if src.offset % 4 or dst.offset % 4 or size > src._size or size > dst._size:
                raise DispatchError(f"copy {n}: {nbytes} bytes do not fit a word-aligned copy")
            return ("copy", src, dst, size)
        _, kern, bufs, groups = command
        if not isinstance(kern, Kernel) or kern.device is not self:
            raise DispatchError(f"step {n}: {kern!r} is not a kernel loaded on this device")
        where = f"step {n} ({kern.entry})"
        g = (int(groups),) if isinstance(groups, (int, np.integer)) else tuple(int(x) for x in groups)
        if not 1 <= len(g) <= 3:
            raise DispatchError(f"{where}: groups needs 1 to 3 counts, got {groups!r}")
        g = g + (1,) * (3 - len(g))
        limit = self.properties["max_workgroup_count"]
        if any(not 0 <= x <= m for x, m in zip(g, limit)):
            raise DispatchError(f"{where}: workgroup count {g} is outside the adapter's limit {limit}")
        bufs = list(bufs)
        if len(bufs) != kern.num_buffers:
            raise DispatchError(f"{where}: the kernel takes {kern.num_buffers} buffers, got {len(bufs)}")
        most = self.properties["max_storage_buffer_range"]
        entries = []
        for j, b in enumerate(bufs):
            self._check_buffer(b, f"{where}: buffer {j}")
            if b._size > most:
                raise DispatchError(
                    f"{where}: buffer {j} has {b._size} bytes; the adapter binds at most "
                    f"max-storage-buffer-binding-size={most} bytes"
                )
            entries.append({"binding": j, "resource": {"buffer": b._handle, "offset": b.offset, "size": b._size}})
        try:
            group = self._device.create_bind_group(layout=kern.layout, entries=entries)
        except Exception as e:
            raise DispatchError(f"{where}: wgpu refused the bindings: {e}") from None
        return ("launch", kern, group, g)

    def _check_buffer(self, b: Any, where: str) -> None:
        if not isinstance(b, (Buffer, BufferSlice)):
            raise DispatchError(f"{where} is a {type(b).__name__}, not a wgpu Buffer")
        if b.device is not self or b.closed:
            raise DispatchError(f"{where} is {'closed' if b.closed else 'made on another device'}")

    # -- lifetime ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise WgpuError("the wgpu device is closed")

    def close(self) -> None:
        """Free every buffer and the device (idempotent)."""
        if self._closed:
            return
        for buf in list(self._buffers):
            buf.close()
        self._kernels.clear()
        self._closed = True
        self._device.destroy()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<wgpu.Device {self.adapter.summary!r}{' closed' if self._closed else ''}>"
