"""CUDA backend for GPU artifacts (compiler.compile_gpu, NVVM target), on cuda-python.

Imports no MLIR and no torch: the driver API comes from `cuda.bindings.driver`
(cuda-python >= 12.6; the older `cuda.cuda` spelling is accepted too). Kernels
are the artifact's PTX (JIT-compiled by the driver at load) or cubin, loaded
with `cuModuleLoadData` and launched with `cuLaunchKernel`; every kernel
argument is a plain device pointer (the bare-pointer ABI), in the program's
`args` order.

Three levels of use:

    # 1. The artifact's runtime (runtime.program: numpy in, numpy out, the
    #    state resident; binds and checks like every other runtime):
    art = GpuArtifact("out/attn", backend="cuda")
    res = art.run({"q": q, "k": k, "v": v})

    # 2. Device-resident arguments, no copies: torch/CuPy CUDA tensors
    #    (through __cuda_array_interface__, DLPack or data_ptr), numpy arrays
    #    are uploaded once; the program's launches are packed once and
    #    re-enqueued:
    step = prepare(art, {"q": q_t, "k": k_t, "v": v_t, "len": len_t})
    step.launch()                     # enqueue on the backend's stream
    out = step.result("out")          # numpy copy of an output
    ms = step.time(iters=100)         # device time per step (CUDA events)

    # 3. CUDA-graph capture and replay of a decode step's launches. The grid
    #    does not depend on len/pos, so one capture stays valid while the
    #    values in the len/pos buffers change between replays:
    graph = step.capture()
    step.write("len", np.array([17], np.int32)); graph.replay()

`CudaBackend` is the device under runtime.program's `_Cuda`; `record()` and
`capture()` add the repeated-sequence and graph paths.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import BindError, PootError, ShapeBindError
from . import binding


class CudaError(PootError, RuntimeError):
    """A CUDA driver call failed (the message names the call and the error)."""


def _driver() -> Any:
    try:
        from cuda.bindings import driver  # cuda-python >= 12.6

        return driver
    except ImportError:
        try:
            from cuda import cuda as driver  # older cuda-python

            return driver
        except ImportError as exc:
            raise CudaError(
                "the CUDA backend needs cuda-python (`pip install cuda-python`, "
                "module cuda.bindings.driver)"
            ) from exc


def available(device: int = 0) -> tuple[bool, str]:
    """(True, device name) when a CUDA device can be used, else (False, why).
    Never raises."""
    try:
        cu = _driver()
    except CudaError as exc:
        return False, str(exc)
    try:
        (err,) = cu.cuInit(0)
        if int(err) != 0:
            return False, f"cuInit failed: {_error_name(cu, err)}"
        err, count = cu.cuDeviceGetCount()
        if int(err) != 0 or count <= device:
            return False, f"no CUDA device {device} (count {count if int(err) == 0 else '?'})"
        err, dev = cu.cuDeviceGet(device)
        err, name = cu.cuDeviceGetName(256, dev)
        return True, name.split(b"\0", 1)[0].decode()
    except Exception as exc:  # no driver library, a broken install, ...
        return False, f"{type(exc).__name__}: {exc}"


def _error_name(cu: Any, err: Any) -> str:
    try:
        e, name = cu.cuGetErrorName(err)
        if int(e) == 0 and name:
            return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        pass
    return str(err)


# --- device memory ---------------------------------------------------------------


class DeviceBuffer:
    """A device pointer and its size. Owned buffers (allocated by the backend)
    are freed by `free()`, the backend's `close()` or garbage collection;
    borrowed ones (a torch/CuPy tensor's memory) keep their owner alive and
    are never freed here."""

    __slots__ = ("ptr", "nbytes", "owned", "keep", "_backend", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, backend: "CudaBackend | None", keep: Any = None):
        self.ptr = int(ptr)
        self.nbytes = int(nbytes)
        self.owned = backend is not None
        self.keep = keep
        self._backend = weakref.ref(backend) if backend is not None else None

    def free(self) -> None:
        if self.owned and self.ptr:
            backend = self._backend() if self._backend else None
            if backend is not None:
                backend._free(self)
            self.ptr = 0

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self) -> str:
        kind = "owned" if self.owned else "borrowed"
        return f"DeviceBuffer(0x{self.ptr:x}, {self.nbytes} bytes, {kind})"


_TYPESTR = {"<f4": np.float32, "<f8": np.float64, "<i4": np.int32, "<f2": np.float16,
            "|b1": np.bool_, "<i8": np.int64, "<u4": np.uint32, "|u1": np.uint8}


@dataclass
class DeviceArray:
    """What `as_device` reads off a CUDA tensor: pointer, shape, dtype."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    owner: Any

    #: The generated kernels read 16-byte vectors (the warp decode's K/V
    #: rows, docs/warp-decode.md); a view that starts mid-vector
    #: would fault on the device (a sticky CUDA error), so it is refused.
    ALIGNMENT = 16

    def __post_init__(self) -> None:
        if self.ptr % self.ALIGNMENT and self.nbytes:
            raise ShapeBindError(
                f"CUDA tensor data at {self.ptr:#x} is not {self.ALIGNMENT}-byte aligned "
                "(a view into a larger tensor?); pass .clone()"
            )

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def as_device(value: Any) -> DeviceArray | None:
    """A CUDA tensor's memory without a copy, or None when `value` is no CUDA
    tensor. Reads `__cuda_array_interface__` (torch, CuPy, Numba), else a
    torch-style `data_ptr()`, else DLPack (through torch.from_dlpack, zero
    copy). Refuses non-contiguous tensors (a copy would be hidden)."""
    if isinstance(value, (np.ndarray, np.generic, DeviceBuffer)):
        return None
    iface = None
    try:
        iface = getattr(value, "__cuda_array_interface__", None)
    except Exception:  # torch raises for tensors that require grad
        iface = None
    if iface is not None and iface["typestr"] not in _TYPESTR and hasattr(value, "data_ptr"):
        iface = None  # torch exports bfloat16 as an opaque '<V2': read its dtype below
    if iface is not None:
        shape = tuple(int(d) for d in iface["shape"])
        typestr = iface["typestr"]
        if typestr not in _TYPESTR:
            raise ShapeBindError(f"unsupported CUDA tensor dtype {typestr}")
        dtype = np.dtype(_TYPESTR[typestr])
        strides = iface.get("strides")
        if strides is not None:
            expected = []
            acc = dtype.itemsize
            for d in reversed(shape):
                expected.append(acc)
                acc *= d
            if tuple(int(s) for s in strides) != tuple(reversed(expected)) and int(
                np.prod(shape, dtype=np.int64)
            ) > 1:
                raise ShapeBindError("CUDA tensor is not C-contiguous; pass .contiguous()")
        return DeviceArray(int(iface["data"][0]), shape, dtype, value)
    if hasattr(value, "data_ptr") and getattr(value, "is_cuda", False):
        if not value.is_contiguous():
            raise ShapeBindError("CUDA tensor is not contiguous; pass .contiguous()")
        name = str(value.dtype).removeprefix("torch.")
        table = {"float32": np.float32, "float64": np.float64, "int32": np.int32,
                 "float16": np.float16, "bool": np.bool_, "int64": np.int64,
                 # torch has no __cuda_array_interface__ for bfloat16; its
                 # bytes are the oracle's bf16 (ml_dtypes.bfloat16).
                 "bfloat16": binding.numpy_dtype("bf16")}
        if name not in table:
            raise ShapeBindError(f"unsupported CUDA tensor dtype {value.dtype}")
        return DeviceArray(int(value.data_ptr()), tuple(value.shape), np.dtype(table[name]), value)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        device_type, _ = value.__dlpack_device__()
        if int(device_type) == 2:  # kDLCUDA
            import torch  # the DLPack consumer at hand on a CUDA machine

            return as_device(torch.from_dlpack(value))
    return None


# --- kernels and launches ----------------------------------------------------------


@dataclass
class CudaKernel:
    """A loaded kernel: the module keeps it alive."""

    module: Any
    function: Any
    entry: str
    num_args: int
    block: tuple[int, int, int]
    attributes: dict[str, int] = field(default_factory=dict)
    #: Compiled with griddepcontrol.wait first (Device.dependent_launch):
    #: launched with programmatic stream serialization, so it may start
    #: while the kernel ahead of it in the stream finishes.
    dependent: bool = False


class LaunchSequence:
    """A fixed list of launches whose argument arrays are packed once, so the
    same sequence can be enqueued many times (and captured into a graph)
    without touching Python objects per argument."""

    def __init__(self, backend: "CudaBackend", launches: Sequence[tuple[CudaKernel, Sequence[Any], Sequence[int]]]):
        self.backend = backend
        self._items = []
        self._keep = []
        for kernel, buffers, grid in launches:
            if len(buffers) != kernel.num_args:
                raise PootError(
                    f"kernel {kernel.entry} takes {kernel.num_args} buffers, got {len(buffers)}"
                )
            values = np.array([_pointer(b) for b in buffers], dtype=np.uint64)
            argv = np.array([values.ctypes.data + 8 * i for i in range(len(buffers))], dtype=np.uint64)
            gx, gy, gz = (list(grid) + [1, 1])[:3]
            self._items.append((kernel, int(gx), int(gy), int(gz), argv.ctypes.data))
            self._keep.append((values, argv, list(buffers)))
        self._configs: dict[tuple[Any, int], Any] = {}

    def _dependent_config(self, index: int, stream: Any) -> Any:
        """The cuLaunchKernelEx configuration of launch `index` on `stream`:
        its grid and block, and programmatic stream serialization allowed
        (built once per stream)."""
        key = (int(stream) if stream is not None else 0, index)
        config = self._configs.get(key)
        if config is None:
            cu = self.backend.cu
            kernel, gx, gy, gz, _ = self._items[index]
            attr = cu.CUlaunchAttribute()
            attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.programmaticStreamSerializationAllowed = 1
            config = cu.CUlaunchConfig()
            config.gridDimX, config.gridDimY, config.gridDimZ = gx, gy, gz
            config.blockDimX, config.blockDimY, config.blockDimZ = kernel.block
            config.sharedMemBytes = 0
            config.hStream = stream
            config.attrs = [attr]
            config.numAttrs = 1
            self._configs[key] = config
        return config

    def enqueue(self, stream: Any = None) -> None:
        """Enqueue every launch, in order, on `stream` (default: the backend's)."""
        cu = self.backend.cu
        s = self.backend.stream if stream is None else stream
        for index, (kernel, gx, gy, gz, argv) in enumerate(self._items):
            if kernel.dependent:
                (err,) = cu.cuLaunchKernelEx(self._dependent_config(index, s), kernel.function, argv, 0)
            else:
                bx, by, bz = kernel.block
                (err,) = cu.cuLaunchKernel(kernel.function, gx, gy, gz, bx, by, bz, 0, s, argv, 0)
            if int(err) != 0:
                raise CudaError(f"cuLaunchKernel({kernel.entry}, grid {gx}x{gy}x{gz}, block {bx}): "
                                f"{_error_name(cu, err)}")

    run = enqueue

    def __len__(self) -> int:
        return len(self._items)

    def parts(self) -> list["LaunchSequence"]:
        """One single-launch sequence per launch (to time them apart)."""
        out = []
        for item, keep in zip(self._items, self._keep):
            part = LaunchSequence.__new__(LaunchSequence)
            part.backend, part._items, part._keep = self.backend, [item], [keep]
            part._configs = {}
            out.append(part)
        return out

    def capture(self, repeat: int = 1) -> "CudaGraph":
        """A CUDA graph of `repeat` copies of this sequence."""
        return self.backend.capture(lambda stream: [self.enqueue(stream) for _ in range(repeat)])

    def time(self, iters: int = 20, warmup: int = 2) -> float:
        """Median device milliseconds of one enqueue (events around each)."""
        return self.backend.time(self.enqueue, iters=iters, warmup=warmup)


class CudaGraph:
    """An instantiated CUDA graph; `replay()` launches it on the backend's stream."""

    def __init__(self, backend: "CudaBackend", graph: Any, exec_: Any, nodes: int):
        self.backend = backend
        self.graph = graph
        self.exec = exec_
        self.nodes = nodes

    def replay(self, stream: Any = None) -> None:
        cu = self.backend.cu
        s = self.backend.stream if stream is None else stream
        self.backend._check("cuGraphLaunch", cu.cuGraphLaunch(self.exec, s))

    def time(self, iters: int = 20, warmup: int = 2) -> float:
        return self.backend.time(self.replay, iters=iters, warmup=warmup)

    def close(self) -> None:
        cu = self.backend.cu
        # After the backend closed, the context (and the graph with it) is
        # gone: destroying it then would touch freed driver state.
        if self.exec is not None and not self.backend.closed:
            cu.cuGraphExecDestroy(self.exec)
            cu.cuGraphDestroy(self.graph)
            self.exec = self.graph = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _pointer(buffer: Any) -> int:
    if isinstance(buffer, DeviceBuffer):
        if not buffer.ptr:
            raise PootError("a freed DeviceBuffer was passed to a launch")
        return buffer.ptr
    if isinstance(buffer, DeviceArray):
        return buffer.ptr
    dev = as_device(buffer)
    if dev is None:
        raise PootError(f"not a device buffer: {type(buffer).__name__}")
    return dev.ptr


class CudaBackend:
    """runtime.gpu's Backend on the CUDA driver API.

    Uses the device's primary context (the one torch and CuPy use, so their
    pointers are valid here). `stream`: None creates a blocking stream (it
    orders after work on the legacy default stream, where torch runs unless
    told otherwise), or pass a stream handle (e.g. torch's
    `torch.cuda.current_stream().cuda_stream`) to share one."""

    def __init__(self, device: int = 0, stream: Any = None) -> None:
        self.cu = cu = _driver()
        self._check("cuInit", cu.cuInit(0))
        self.device = self._check("cuDeviceGet", cu.cuDeviceGet(device))
        self.context = self._check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(self.device))
        self._check("cuCtxSetCurrent", cu.cuCtxSetCurrent(self.context))
        if stream is None:
            self.stream = self._check("cuStreamCreate", cu.cuStreamCreate(0))
            self._own_stream = True
        else:
            self.stream = stream if isinstance(stream, cu.CUstream) else cu.CUstream(int(stream))
            self._own_stream = False
        self._capture_stream = None
        #: Instantiated graphs, destroyed before the context is released.
        self._graphs: "weakref.WeakSet[CudaGraph]" = weakref.WeakSet()
        self._buffers: "weakref.WeakSet[DeviceBuffer]" = weakref.WeakSet()
        self._modules: list[Any] = []
        self.closed = False

    # -- errors ------------------------------------------------------------------

    def _check(self, what: str, result: Any) -> Any:
        if isinstance(result, tuple):
            err, rest = result[0], result[1:]
        else:
            err, rest = result, ()
        if int(err) != 0:
            raise CudaError(f"{what}: {_error_name(self.cu, err)}")
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else rest

    # -- properties ---------------------------------------------------------------

    def attribute(self, name: str) -> int:
        """A device attribute by its CU_DEVICE_ATTRIBUTE_ suffix (e.g. MULTIPROCESSOR_COUNT)."""
        attr = getattr(self.cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
        return int(self._check(name, self.cu.cuDeviceGetAttribute(attr, self.device)))

    def properties(self) -> dict[str, Any]:
        name = self._check("cuDeviceGetName", self.cu.cuDeviceGetName(256, self.device))
        props = {"name": name.split(b"\0", 1)[0].decode()}
        for key in ("MULTIPROCESSOR_COUNT", "COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR",
                    "MAX_SHARED_MEMORY_PER_BLOCK", "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
                    "MAX_GRID_DIM_X", "MAX_GRID_DIM_Y", "L2_CACHE_SIZE", "CLOCK_RATE",
                    "MEMORY_CLOCK_RATE", "GLOBAL_MEMORY_BUS_WIDTH"):
            try:
                props[key.lower()] = self.attribute(key)
            except Exception:
                pass
        free, total = self._check("cuMemGetInfo", self.cu.cuMemGetInfo())
        props["memory_total"] = int(total)
        return props

    def device_description(self, name: str = "cuda"):
        """The planner's description of this device (compiler.devices.Device).
        Imports compiler.devices, which is plain data (no MLIR)."""
        from ..compiler.devices import Device

        major = self.attribute("COMPUTE_CAPABILITY_MAJOR")
        minor = self.attribute("COMPUTE_CAPABILITY_MINOR")
        total = self.properties()["memory_total"]
        return Device(
            name=name, target="nvvm",
            # Static shared memory of one block: PTX `.shared` arrays are
            # limited to 48 KiB without a dynamic-shared opt-in.
            workgroup_memory=self.attribute("MAX_SHARED_MEMORY_PER_BLOCK"),
            max_grid_x=self.attribute("MAX_GRID_DIM_X"), max_grid_y=self.attribute("MAX_GRID_DIM_Y"),
            compute_units=self.attribute("MULTIPROCESSOR_COUNT"),
            max_buffer_bytes=total, max_alloc_bytes=total, subgroup_size=32,
            chip=f"sm_{major}{minor}",
        )

    # -- memory -------------------------------------------------------------------

    def alloc(self, nbytes: int) -> DeviceBuffer:
        nbytes = max(int(nbytes), 4)
        ptr = self._check("cuMemAlloc", self.cu.cuMemAlloc(nbytes))
        buf = DeviceBuffer(int(ptr), nbytes, self)
        self._buffers.add(buf)
        return buf

    def _free(self, buf: DeviceBuffer) -> None:
        if not self.closed and buf.ptr:
            self.cu.cuMemFree(self.cu.CUdeviceptr(buf.ptr))

    def upload(self, array: Any) -> DeviceBuffer:
        """A device buffer holding `array`: a numpy array is copied; a CUDA
        tensor (torch, CuPy, DLPack) is borrowed without a copy."""
        if isinstance(array, DeviceBuffer):
            return array
        dev = as_device(array)
        if dev is not None:
            return DeviceBuffer(dev.ptr, dev.nbytes, None, keep=dev.owner)
        host = np.ascontiguousarray(array)
        buf = self.alloc(host.nbytes)
        self.write(buf, host)
        return buf

    def write(self, buf: Any, array: Any, *, offset: int = 0) -> None:
        """Copy a host array into a device buffer (ordered on the stream)."""
        host = np.ascontiguousarray(array)
        if offset + host.nbytes > _nbytes(buf):
            raise PootError(f"write of {host.nbytes} bytes at {offset} overflows {_nbytes(buf)}")
        if host.nbytes:
            self._check("cuMemcpyHtoDAsync", self.cu.cuMemcpyHtoDAsync(
                self.cu.CUdeviceptr(_pointer(buf) + offset), host.ctypes.data, host.nbytes, self.stream))
            # The host array must live until the copy ran.
            self.synchronize()

    def fill32(self, buf: Any, word: int, count: int | None = None) -> None:
        """Set `count` 32-bit words of `buf` to `word` (e.g. a NaN poison)."""
        n = _nbytes(buf) // 4 if count is None else count
        self._check("cuMemsetD32Async", self.cu.cuMemsetD32Async(
            self.cu.CUdeviceptr(_pointer(buf)), int(word) & 0xFFFFFFFF, n, self.stream))

    def download(self, handle: Any, dtype: np.dtype, count: int) -> np.ndarray:
        out = np.empty(int(count), dtype=dtype)
        if out.nbytes > _nbytes(handle):
            raise PootError(f"download of {out.nbytes} bytes from a {_nbytes(handle)}-byte buffer")
        if out.nbytes:
            self._check("cuMemcpyDtoHAsync", self.cu.cuMemcpyDtoHAsync(
                out.ctypes.data, self.cu.CUdeviceptr(_pointer(handle)), out.nbytes, self.stream))
        self.synchronize()
        return out

    # -- kernels ------------------------------------------------------------------

    def kernel(self, payload: bytes, entry: str, num_args: int, block: Sequence[int],
               dependent: bool = False) -> CudaKernel:
        """Load PTX (JIT by the driver) or a cubin and look up `entry`.
        `dependent`: the kernel waits on griddepcontrol first
        (Device.dependent_launch), so it is launched with programmatic
        stream serialization."""
        data = bytes(payload)
        is_ptx = not data.startswith(b"\x7fELF")
        if is_ptx and not data.endswith(b"\0"):
            data += b"\0"
        image = np.frombuffer(data, dtype=np.uint8).copy()
        err, module = self.cu.cuModuleLoadData(image.ctypes.data)
        if int(err) != 0:
            raise CudaError(f"cuModuleLoadData({entry}, {'PTX' if is_ptx else 'cubin'}): "
                            f"{_error_name(self.cu, err)}")
        self._modules.append(module)
        function = self._check("cuModuleGetFunction", self.cu.cuModuleGetFunction(module, entry.encode()))
        attrs = {}
        FA = self.cu.CUfunction_attribute
        for key in ("NUM_REGS", "SHARED_SIZE_BYTES", "LOCAL_SIZE_BYTES", "MAX_THREADS_PER_BLOCK",
                    "PTX_VERSION", "BINARY_VERSION"):
            try:
                attrs[key.lower()] = int(self._check(key, self.cu.cuFuncGetAttribute(
                    getattr(FA, "CU_FUNC_ATTRIBUTE_" + key), function)))
            except Exception:
                pass
        blk = tuple((list(block) + [1, 1])[:3])
        if attrs.get("max_threads_per_block", 1 << 30) < blk[0] * blk[1] * blk[2]:
            raise CudaError(f"{entry}: block {blk} exceeds the kernel's "
                            f"{attrs['max_threads_per_block']} threads")
        return CudaKernel(module, function, entry, int(num_args), blk, attrs, bool(dependent))

    def record(self, launches: Sequence[tuple[CudaKernel, Sequence[Any], Sequence[int]]]) -> LaunchSequence:
        return LaunchSequence(self, launches)

    def launch(self, launches: list[tuple[Any, list[Any], tuple[int, int, int]]]) -> None:
        """Enqueue the launches in order (asynchronous; download synchronizes)."""
        LaunchSequence(self, launches).enqueue()
        # Report a launch failure here, not at the next unrelated call.
        self.synchronize()

    # -- streams, graphs, timing -------------------------------------------------

    def synchronize(self) -> None:
        self._check("cuStreamSynchronize", self.cu.cuStreamSynchronize(self.stream))

    def capture(self, body: Callable[[Any], Any]) -> CudaGraph:
        """Capture what `body(stream)` enqueues into an instantiated graph."""
        cu = self.cu
        if self._capture_stream is None:
            self._capture_stream = self._check("cuStreamCreate", cu.cuStreamCreate(1))  # non-blocking
        s = self._capture_stream
        mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        self._check("cuStreamBeginCapture", cu.cuStreamBeginCapture(s, mode))
        try:
            body(s)
        except BaseException:
            cu.cuStreamEndCapture(s)
            raise
        graph = self._check("cuStreamEndCapture", cu.cuStreamEndCapture(s))
        exec_ = self._check("cuGraphInstantiate", cu.cuGraphInstantiate(graph, 0))
        try:
            count = int(cu.cuGraphGetNodes(graph, 0)[-1])
        except Exception:
            count = -1
        made = CudaGraph(self, graph, exec_, count)
        self._graphs.add(made)
        return made

    def event(self) -> Any:
        return self._check("cuEventCreate", self.cu.cuEventCreate(0))

    def _destroy_events(self, events: Sequence[Any]) -> None:
        for ev in events:
            self.cu.cuEventDestroy(ev)

    def elapsed_ms(self, start: Any, end: Any) -> float:
        self._check("cuEventSynchronize", self.cu.cuEventSynchronize(end))
        return float(self._check("cuEventElapsedTime", self.cu.cuEventElapsedTime(start, end)))

    def time(self, fn: Callable[[], Any], *, iters: int = 20, warmup: int = 2,
             per_call: bool = True) -> float:
        """Median device milliseconds of `fn()` (which enqueues on the stream).
        per_call=False times all `iters` calls between one pair of events and
        returns the mean (no per-call event gaps)."""
        for _ in range(warmup):
            fn()
        self.synchronize()
        if not per_call:
            a, b = self.event(), self.event()
            try:
                self._check("cuEventRecord", self.cu.cuEventRecord(a, self.stream))
                for _ in range(iters):
                    fn()
                self._check("cuEventRecord", self.cu.cuEventRecord(b, self.stream))
                return self.elapsed_ms(a, b) / iters
            finally:
                self._destroy_events([a, b])
        events = [self.event() for _ in range(iters + 1)]
        try:
            self._check("cuEventRecord", self.cu.cuEventRecord(events[0], self.stream))
            for i in range(iters):
                fn()
                self._check("cuEventRecord", self.cu.cuEventRecord(events[i + 1], self.stream))
            times = [self.elapsed_ms(events[i], events[i + 1]) for i in range(iters)]
        finally:
            self._destroy_events(events)
        return float(np.median(times))

    # -- lifetime -----------------------------------------------------------------

    def close(self) -> None:
        if self.closed:
            return
        cu = self.cu
        try:
            cu.cuCtxSynchronize()
        except Exception:
            pass
        for graph in list(self._graphs):
            graph.close()
        for buf in list(self._buffers):
            if buf.ptr:
                cu.cuMemFree(cu.CUdeviceptr(buf.ptr))
                buf.ptr = 0
        for module in self._modules:
            cu.cuModuleUnload(module)
        if self._capture_stream is not None:
            cu.cuStreamDestroy(self._capture_stream)
        if self._own_stream:
            cu.cuStreamDestroy(self.stream)
        cu.cuDevicePrimaryCtxRelease(self.device)
        self._modules = []
        self.closed = True

    def __enter__(self) -> "CudaBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _nbytes(buf: Any) -> int:
    if isinstance(buf, (DeviceBuffer, DeviceArray)):
        return buf.nbytes
    dev = as_device(buf)
    if dev is None:
        raise PootError(f"not a device buffer: {type(buf).__name__}")
    return dev.nbytes


# --- a program bound to device buffers once ----------------------------------------


class Step:
    """An artifact's program bound to device buffers once (see `prepare`):
    its commands (launches; device-to-device copies) are packed once and
    re-enqueued, captured or timed. Arguments are in `buffers`, the results
    that are not written in place in `outputs`, by name."""

    def __init__(self, artifact: Any, buffers: dict[str, Any], outputs: dict[str, Any],
                 parts: list[Any], ports: dict[str, binding.Port], arena: Any):
        self.artifact = artifact
        self.backend: CudaBackend = artifact.device.backend
        self.buffers = buffers
        self.outputs = outputs
        self.parts = parts
        self.ports = ports
        self.arena = arena
        sequences = [p for p in parts if isinstance(p, LaunchSequence)]
        #: The launches, when the program is launches only (every attention).
        self.sequence: LaunchSequence | None = (
            sequences[0] if len(parts) == 1 and sequences else None
        )

    def launch(self, stream: Any = None) -> None:
        """Enqueue the program's commands in order (asynchronous)."""
        cu = self.backend.cu
        s = self.backend.stream if stream is None else stream
        for part in self.parts:
            if isinstance(part, LaunchSequence):
                part.enqueue(s)
            else:
                src, dst, nbytes = part
                self.backend._check("cuMemcpyDtoDAsync", cu.cuMemcpyDtoDAsync(
                    cu.CUdeviceptr(_pointer(dst)), cu.CUdeviceptr(_pointer(src)), nbytes, s))

    def capture(self, repeat: int = 1) -> CudaGraph:
        """A CUDA graph of `repeat` copies of the program."""
        return self.backend.capture(lambda stream: [self.launch(stream) for _ in range(repeat)])

    def time(self, iters: int = 20, warmup: int = 2) -> float:
        """Median device milliseconds of one enqueue of the program (CUDA
        events around each)."""
        return self.backend.time(self.launch, iters=iters, warmup=warmup)

    def write(self, name: str, value: Any) -> None:
        """New contents for an argument (e.g. len/pos between graph replays),
        checked like a bind (shape, dtype, declared range)."""
        port = self.ports[name]
        array = binding.normalize(port, value)
        if port.range is not None:
            binding.check_range(port, array)
        self.backend.write(self.buffers[name], array)

    def result(self, name: str | None = None) -> np.ndarray:
        """An output as a numpy array (synchronizes)."""
        if name is None:
            (name,) = self.outputs
        port = self.ports[name]
        flat = self.backend.download(self.outputs[name], port.dtype, int(np.prod(port.shape)))
        return flat.reshape(port.shape)

    def poison(self, word: int = 0x7FC00001) -> None:
        """Fill every output with a NaN pattern (to catch unwritten elements)."""
        for name, buf in self.outputs.items():
            self.backend.fill32(buf, word)


def _bind_device(backend: "CudaBackend", port: binding.Port, value: Any, check_ranges: bool) -> Any:
    """A device buffer for one argument: a CUDA tensor or DeviceBuffer is
    borrowed (shape and dtype checked), anything else bound and uploaded."""
    dev = value if isinstance(value, DeviceBuffer) else as_device(value)
    if dev is None:
        array = binding.normalize(port, value)
        if port.range is not None:
            binding.check_range(port, array)
        return backend.upload(array)
    if isinstance(dev, DeviceArray):
        if dev.shape != port.shape:
            raise ShapeBindError(f"{port.describe()}: shape {dev.shape} does not match {port.spec()}")
        if dev.dtype != port.dtype:
            raise ShapeBindError(f"{port.describe()}: dtype {dev.dtype} does not match {port.spec()}")
        buf = DeviceBuffer(dev.ptr, dev.nbytes, None, keep=dev.owner)
    else:
        need = int(np.prod(port.shape, dtype=np.int64)) * port.dtype.itemsize
        if dev.nbytes < need:
            raise ShapeBindError(f"{port.describe()}: buffer of {dev.nbytes} bytes < {need}")
        buf = dev
    if check_ranges and port.range is not None:
        host = backend.download(buf, port.dtype, int(np.prod(port.shape))).reshape(port.shape)
        binding.check_range(port, host)
    return buf


def prepare(artifact: Any, inputs: Mapping[str, Any], outputs: Mapping[str, Any] | None = None,
            *, check_ranges: bool = True) -> Step:
    """Bind an artifact's step program (runtime.program.ProgramArtifact on
    the CUDA backend) to device-resident buffers, once.

    `inputs`: every argument, state included, by name -> a CUDA tensor
    (borrowed, no copy), a DeviceBuffer, or a numpy array / Python value
    (bound like `run`, then uploaded). Device tensors are checked for shape
    and dtype; an argument with a declared range (read maps, len/pos) is
    read back once and range-checked unless check_ranges=False. `outputs`:
    optional name -> CUDA tensor that a result is written into (instead of
    its place in the arena); the others stay in the arena. A state the step
    writes in place is written into its argument's buffer. The step's
    validation prologue is not run here (`Session.step` runs it): a Step
    launches exactly the step's program."""
    backend = getattr(artifact.device, "backend", None)
    if not isinstance(backend, CudaBackend):
        raise PootError("prepare() needs an artifact loaded with the CUDA backend")
    signature: binding.Signature = artifact.signature
    ports = {p.key: p for p in signature.args}
    ports.update({p.key: p for p in signature.results})
    unknown = sorted(set(inputs) - {p.key for p in signature.args})
    if unknown:
        raise BindError(f"unknown inputs {unknown} (arguments: {[p.key for p in signature.args]})")
    buffers: dict[str, Any] = {}
    for port in signature.args:
        if port.key not in inputs:
            raise binding.MissingInputError(f"no value for argument {port.describe()}")
        buffers[port.key] = _bind_device(backend, port, inputs[port.key], check_ranges)

    program = artifact.programs[signature.name]
    descs = program["buffers"]
    # Which buffer holds each result that is not written in place.
    remaining = iter(program["results"])
    result_ids = {p.key: next(remaining) for p in signature.results if p.in_place_of is None}
    given: dict[int, Any] = {}
    for name, tensor in (outputs or {}).items():
        if name not in result_ids:
            raise BindError(f"no result {name!r} to write into (results: {sorted(result_ids)})")
        port, index = ports[name], result_ids[name]
        dev = as_device(tensor)
        need = int(np.prod(port.shape, dtype=np.int64)) * port.dtype.itemsize
        if dev is None or dev.nbytes < need or dev.dtype != port.dtype:
            raise ShapeBindError(f"output {name!r} must be a {port.dtype} CUDA tensor of {need} bytes")
        if descs[index]["kind"] != "temp":
            raise BindError(f"result {name!r} is an argument or constant buffer of the program")
        given[index] = DeviceBuffer(dev.ptr, dev.nbytes, None, keep=dev.owner)
    arena = backend.alloc(program["arena_bytes"]) if program["arena_bytes"] else None
    bufs: list[Any] = []
    for index, desc in enumerate(descs):
        if index in given:
            bufs.append(given[index])
        elif desc["kind"] == "arg":
            bufs.append(buffers[signature.args[desc["index"]].key])
        elif desc["kind"] == "temp":
            bufs.append(DeviceBuffer(int(arena.ptr) + desc["offset"], desc["bytes"], None, keep=arena))
        else:
            buf = backend.alloc(desc["bytes"])
            backend.write(buf, np.frombuffer(bytes.fromhex(desc["hex"]), np.uint8))
            bufs.append(buf)
    parts: list[Any] = []
    launches: list[tuple] = []
    for command in program["commands"]:
        if "launch" in command:
            launch = command["launch"]
            launches.append((artifact.kernel(launch), [bufs[a] for a in launch["args"]],
                             tuple(launch["grid"])))
            continue
        if launches:
            parts.append(backend.record(launches))
            launches = []
        copy = command["copy"]
        parts.append((bufs[copy["from"]], bufs[copy["to"]], copy["bytes"]))
    if launches:
        parts.append(backend.record(launches))
    out_buffers = {name: bufs[index] for name, index in result_ids.items()}
    return Step(artifact, buffers, out_buffers, parts, ports, arena)
