"""A Vulkan compute device: its queue, memory, kernels and runs.

The binding ABI is the one MLIR's SPIR-V lowering produces: kernel argument i
is the storage buffer at (descriptor set 0, binding i), a scalar argument gets
its own small storage buffer, the entry point is the kernel's name and the
workgroup size is baked into the shader. A run records any number of
dispatches into one command buffer, with a memory barrier between consecutive
dispatches, and waits on one fence.

A `Device` serializes its own submissions with a lock, but is not meant to be
driven from several threads at once.
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np

from . import _loader
from . import _vkenums as E
from .buffer import Buffer, BufferSlice
from .errors import DispatchError, KernelError, VulkanError, VulkanUnavailable
from .kernel import Kernel, check_kernel
from .properties import describe, feature_chain
from .spirv import SpirvError, reflect

#: One dispatch: (kernel, its buffers in binding order, workgroup counts).
Step = tuple[Kernel, Sequence[Any], Union[int, Sequence[int]]]
_Norm = list[tuple[Kernel, list[Buffer], tuple[int, int, int]]]

_TYPE_RANK = {"discrete_gpu": 0, "integrated_gpu": 1, "virtual_gpu": 2, "cpu": 3}
_LAVAPIPE_NAMES = ("lavapipe", "llvmpipe", "cpu")


class Recording:
    """Dispatches recorded once and submitted many times (a decode loop: same
    kernels, same buffers, new contents). Made by `Device.record`; each
    `run()` is one submit and one fence wait, with no re-recording."""

    def __init__(self, device: Device, steps: _Norm, profile: bool) -> None:
        self._closed = False
        self.device = device
        self._steps = steps
        self._profile = profile
        vk, d = device._vk, device._device
        self._cmd = self._pool = self._queries = None
        try:
            # Its own descriptor and query pools: the device's are reset and
            # regrown by every run.
            self._pool = device._make_descriptor_pool(
                len(steps), sum(k.num_buffers for k, _, _ in steps)
            )
            if profile:
                self._queries = device._make_query_pool(len(steps) + 1)
            sets = device._write_descriptor_sets(self._pool, steps)
            self._cmd = vk.vkAllocateCommandBuffers(
                d,
                vk.VkCommandBufferAllocateInfo(commandPool=device._cmd_pool, commandBufferCount=1),
            )[0]
            device._record(self._cmd, steps, sets, self._queries, one_time=False)
        except BaseException:
            self.close()
            raise
        device._recordings.add(self)

    def run(self) -> list[float] | None:
        """Submit the recorded dispatches and wait. With `profile`, returns
        each dispatch's device time in seconds."""
        if self._closed:
            raise VulkanError("recording is closed")
        self.device._check_open()
        if any(b.closed for _, bufs, _ in self._steps for b in bufs):
            raise DispatchError("a buffer of this recording was closed after recording")
        timed = len(self._steps) if self._profile else 0
        return self.device._submit(self._cmd, timed, self._queries)

    def close(self) -> None:
        """Free the command buffer and descriptor sets (idempotent)."""
        if self._closed:
            return
        self._closed = True
        dev = self.device
        dev._recordings.discard(self)
        vk, d = dev._vk, dev._device
        if d is not None:  # else the device is gone, and these with it
            if self._cmd is not None:
                vk.vkFreeCommandBuffers(d, dev._cmd_pool, 1, [self._cmd])
            if self._pool is not None:
                vk.vkDestroyDescriptorPool(d, self._pool, None)
            if self._queries is not None:
                vk.vkDestroyQueryPool(d, self._queries, None)
        self._cmd = self._pool = self._queries = None
        self._steps = []

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may be half gone
            pass


class Device:
    """One Vulkan device, its compute queue, and everything made on it.

    `prefer`: "any" (discrete GPU, then integrated, virtual, CPU), "gpu" (any
    but a CPU device), "lavapipe" (Mesa's CPU device; also "llvmpipe"/"cpu"),
    a device index, or a substring of the device name.
    `memory`: "auto" (map device memory when it is host-visible, else stage
    through a host buffer) or "staged" (always stage: what a discrete GPU
    without resizable BAR does; lets the CPU device test that path).
    `validation`: enable VK_LAYER_KHRONOS_validation (Debian package
    vulkan-validationlayers); defaults to $POOT_VULKAN_VALIDATION == "1".
    `timeout_s`: how long a run may take before the device is declared hung
    (a kernel that never ends, e.g. a loop bound read from a wrong buffer);
    None waits forever.
    """

    def __init__(
        self,
        prefer: str | int = "any",
        *,
        memory: str = "auto",
        validation: bool | None = None,
        timeout_s: float | None = 600.0,
    ) -> None:
        if memory not in ("auto", "staged"):
            raise VulkanError(f"memory must be 'auto' or 'staged', got {memory!r}")
        self._closed = True  # until built: close() must not run on half a device
        self._lock = threading.RLock()
        self._buffers: weakref.WeakSet[Buffer] = weakref.WeakSet()
        self._recordings: weakref.WeakSet[Recording] = weakref.WeakSet()
        self._kernels: dict[tuple[str, str, int], Kernel] = {}
        self._instance = self._device = None
        self._broken: str | None = None
        self._timeout_ns = E.U64_MAX if timeout_s is None else int(timeout_s * 1e9)
        self._vk = vk = _loader.load()
        if validation is None:
            validation = os.environ.get("POOT_VULKAN_VALIDATION") == "1"
        try:
            self._instance = self._create_instance(validation)
            self._physical, info = self._choose(prefer)
            self._build(info, memory)
        except vk.VkError as e:
            self._teardown()
            raise VulkanError(f"creating the Vulkan device failed: {E.error_name(e)}") from e
        except BaseException:
            self._teardown()
            raise
        self._closed = False

    # -- construction --------------------------------------------------------

    def _create_instance(self, validation: bool) -> Any:
        vk = self._vk
        try:
            loader = vk.vkEnumerateInstanceVersion()
        except Exception:  # a 1.0 loader lacks the function
            loader = E.make_version(1, 0)
        if E.version(loader)[:2] < (1, 1):
            raise VulkanUnavailable(
                f"the Vulkan loader is version {E.version(loader)}; 1.1 or newer "
                f"is needed; {_loader.INSTALL_HINT}"
            )
        exts = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
        enabled, flags = [], 0
        if "VK_KHR_portability_enumeration" in exts:  # MoltenVK is listed only so
            enabled.append("VK_KHR_portability_enumeration")
            flags |= E.INSTANCE_ENUMERATE_PORTABILITY
        layers = []
        if validation:
            have = {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}
            if "VK_LAYER_KHRONOS_validation" not in have:
                raise VulkanUnavailable(
                    "validation was asked for but VK_LAYER_KHRONOS_validation is "
                    "not installed (Debian/Ubuntu: apt-get install "
                    "vulkan-validationlayers)"
                )
            layers.append("VK_LAYER_KHRONOS_validation")
        app = vk.VkApplicationInfo(
            pApplicationName="poot_mlir",
            applicationVersion=1,
            pEngineName="poot_mlir.runtime.vulkan",
            engineVersion=1,
            apiVersion=min(loader, E.make_version(1, 3)),
        )
        try:
            return vk.vkCreateInstance(
                vk.VkInstanceCreateInfo(
                    flags=flags,
                    pApplicationInfo=app,
                    enabledExtensionCount=len(enabled),
                    ppEnabledExtensionNames=enabled or None,
                    enabledLayerCount=len(layers),
                    ppEnabledLayerNames=layers or None,
                ),
                None,
            )
        except (vk.VkErrorIncompatibleDriver, vk.VkErrorInitializationFailed) as e:
            raise VulkanUnavailable(
                f"no Vulkan driver could be loaded ({E.error_name(e)} from "
                f"vkCreateInstance; VK_ICD_FILENAMES="
                f"{os.environ.get('VK_ICD_FILENAMES')!r}); {_loader.INSTALL_HINT}"
            ) from e

    def _choose(self, prefer: str | int) -> tuple[Any, dict[str, Any]]:
        vk = self._vk
        try:
            pds = list(vk.vkEnumeratePhysicalDevices(self._instance))
        except vk.VkError:
            pds = []
        if not pds:
            raise VulkanUnavailable(
                "Vulkan is installed but reports no device (VK_ICD_FILENAMES="
                f"{os.environ.get('VK_ICD_FILENAMES')!r}); {_loader.INSTALL_HINT}"
            )
        infos = [describe(vk, pd) for pd in pds]
        names = ", ".join(
            f"[{i}] {x['device_name']} ({x['device_type']}, Vulkan {x['api_version']})"
            for i, x in enumerate(infos)
        )
        usable = [i for i, x in enumerate(infos) if x["_api"] >= (1, 1)]

        def is_lavapipe(x: dict[str, Any]) -> bool:
            return (
                "llvmpipe" in x["device_name"].lower()
                or x.get("driver_id") == E.DRIVER_ID_MESA_LLVMPIPE
            )

        if isinstance(prefer, bool) or not isinstance(prefer, (int, str)):
            raise VulkanError(f"prefer must be a str or an int, got {prefer!r}")
        if isinstance(prefer, int):
            if not 0 <= prefer < len(infos):
                raise VulkanUnavailable(f"no Vulkan device #{prefer}; devices: {names}")
            pick = [prefer]
        elif prefer in _LAVAPIPE_NAMES:
            pick = [i for i in usable if is_lavapipe(infos[i])]
            if not pick:
                icds = _loader.lavapipe_icds()
                why = (
                    f"its ICD is installed ({icds[0]}) but was not loaded: check "
                    "VK_ICD_FILENAMES / VK_DRIVER_FILES"
                    if icds
                    else "no lavapipe ICD is installed (apt-get install mesa-vulkan-drivers)"
                )
                raise VulkanUnavailable(f"no lavapipe device: {why}; devices: {names}")
        elif prefer in ("any", "gpu"):
            pick = sorted(usable, key=lambda i: _TYPE_RANK.get(infos[i]["device_type"], 9))
            if prefer == "gpu":
                pick = [i for i in pick if infos[i]["device_type"] != "cpu"]
            if not pick:
                raise VulkanUnavailable(f"no Vulkan 1.1+ {prefer} device; devices: {names}")
        else:
            pick = [i for i in usable if prefer.lower() in infos[i]["device_name"].lower()]
            if not pick:
                raise VulkanUnavailable(
                    f"no Vulkan 1.1+ device named like {prefer!r}; devices: {names}"
                )
        i = pick[0]
        if infos[i]["_api"] < (1, 1):
            raise VulkanUnavailable(
                f"device {infos[i]['device_name']} is Vulkan {infos[i]['api_version']};"
                " 1.1 or newer is needed"
            )
        return pds[i], infos[i]

    def _build(self, info: dict[str, Any], memory: str) -> None:
        vk, pd = self._vk, self._physical
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
        compute = [i for i, q in enumerate(families) if q.queueFlags & E.COMPUTE_QUEUE]
        if not compute:
            raise VulkanUnavailable(f"device {info['device_name']} has no compute queue")
        self._family = compute[0]
        self._timestamp_bits = families[self._family].timestampValidBits

        core, head, _keep = feature_chain(vk, info.pop("_features"))
        info.pop("_api")
        queue = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self._family, queueCount=1, pQueuePriorities=[1.0]
        )
        # A portability (MoltenVK) device must have this enabled if it lists it.
        dev_exts = [e for e in ("VK_KHR_portability_subset",) if e in info["extensions"]]
        self._device = vk.vkCreateDevice(
            pd,
            vk.VkDeviceCreateInfo(
                pNext=head,
                queueCreateInfoCount=1,
                pQueueCreateInfos=[queue],
                enabledExtensionCount=len(dev_exts),
                ppEnabledExtensionNames=dev_exts or None,
                pEnabledFeatures=core,
            ),
            None,
        )
        d = self._device
        self._queue = vk.vkGetDeviceQueue(d, self._family, 0)
        self._cmd_pool = vk.vkCreateCommandPool(
            d,
            vk.VkCommandPoolCreateInfo(
                flags=E.CMD_POOL_RESET_BUFFER, queueFamilyIndex=self._family
            ),
            None,
        )
        self._cmd = vk.vkAllocateCommandBuffers(
            d, vk.VkCommandBufferAllocateInfo(commandPool=self._cmd_pool, commandBufferCount=1)
        )[0]
        self._fence = vk.vkCreateFence(d, vk.VkFenceCreateInfo(), None)
        self._pipeline_cache = vk.vkCreatePipelineCache(d, vk.VkPipelineCacheCreateInfo(), None)
        self._desc_pool = None
        self._desc_capacity = (0, 0)
        self._query_pool = None
        self._query_capacity = 0
        self._staging: Buffer | None = None

        # Memory: device-local, mapped when it is also host-visible in a big
        # heap (lavapipe, integrated GPUs, resizable BAR); staged otherwise.
        mp = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        self._mem_types = [
            (mp.memoryTypes[i].propertyFlags, mp.memoryTypes[i].heapIndex)
            for i in range(mp.memoryTypeCount)
        ]
        heaps = [mp.memoryHeaps[i].size for i in range(mp.memoryHeapCount)]
        local = max([heaps[h] for f, h in self._mem_types if f & E.MEM_DEVICE_LOCAL] or [0])
        want = E.MEM_DEVICE_LOCAL | E.MEM_HOST_VISIBLE | E.MEM_HOST_COHERENT
        self._mapped = memory == "auto" and any(
            f & want == want and heaps[h] >= local // 2 for f, h in self._mem_types
        )
        info["device_memory_bytes"] = local
        info["memory"] = "mapped" if self._mapped else "staged"
        info["supports_timestamps"] = self._timestamp_bits > 0
        info["is_lavapipe"] = "llvmpipe" in info["device_name"].lower()
        #: Limits and capabilities, as plain Python (see docs/vulkan-lavapipe.md).
        self.properties: dict[str, Any] = info

    # -- memory --------------------------------------------------------------

    def _allocate(self, size: int, *, host: bool | None = None) -> tuple[Any, Any, Any]:
        """A buffer with its own memory: (buffer, memory, mapped uint8 view or
        None). `host=True` asks for host-visible memory whatever the mode."""
        self._check_open()
        vk, d = self._vk, self._device
        mapped = self._mapped if host is None else host
        hv = E.MEM_HOST_VISIBLE | E.MEM_HOST_COHERENT
        if mapped:
            prefs = [
                hv | E.MEM_DEVICE_LOCAL | E.MEM_HOST_CACHED,
                hv | E.MEM_DEVICE_LOCAL,
                hv | E.MEM_HOST_CACHED,
                hv,
            ]
        else:
            prefs = [E.MEM_DEVICE_LOCAL, 0]
        buf = vk.vkCreateBuffer(d, vk.VkBufferCreateInfo(size=size, usage=E.BUFFER_USAGE), None)
        mem = None
        try:
            req = vk.vkGetBufferMemoryRequirements(d, buf)
            kind = self._memory_type(req.memoryTypeBits, prefs)
            mem = vk.vkAllocateMemory(
                d, vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=kind), None
            )
            vk.vkBindBufferMemory(d, buf, mem, 0)
            view = None
            if mapped:
                # Mapped for the buffer's life; the package hands back a cffi
                # buffer over the mapping, which numpy wraps without a copy.
                view = np.frombuffer(vk.vkMapMemory(d, mem, 0, size, 0), np.uint8)
            return buf, mem, view
        except vk.VkError as e:
            if mem is not None:
                vk.vkFreeMemory(d, mem, None)
            vk.vkDestroyBuffer(d, buf, None)
            raise VulkanError(f"allocating a {size}-byte buffer failed: {E.error_name(e)}") from e

    def _memory_type(self, bits: int, prefs: Sequence[int]) -> int:
        for flags in prefs:
            for i, (f, _) in enumerate(self._mem_types):
                if bits & (1 << i) and f & flags == flags:
                    return i
        raise VulkanError(f"no memory type of {self._mem_types} fits bits 0x{bits:x}")

    def _free(self, handle: Any, memory: Any) -> None:
        if self._device is not None:
            self._vk.vkDestroyBuffer(self._device, handle, None)
            self._vk.vkFreeMemory(self._device, memory, None)  # also unmaps

    def _staging_for(self, nbytes: int) -> Buffer:
        if self._staging is None or self._staging.nbytes < nbytes:
            if self._staging is not None:
                self._staging.close()
            self._staging = Buffer(self, max(1 << 16, 1 << (nbytes - 1).bit_length()), host=True)
        return self._staging

    def _copy(self, src: Buffer, dst: Buffer, src_offset: int, dst_offset: int, n: int) -> None:
        vk, cmd = self._vk, self._cmd
        with self._lock:
            vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(flags=E.CMD_ONE_TIME_SUBMIT))
            self._barrier(
                cmd,
                E.PS_COMPUTE | E.PS_TRANSFER | E.PS_HOST,
                E.PS_TRANSFER,
                E.A_SHADER_WRITE | E.A_TRANSFER_WRITE | E.A_HOST_WRITE,
                E.A_TRANSFER_READ | E.A_TRANSFER_WRITE,
            )
            region = vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=n)
            vk.vkCmdCopyBuffer(cmd, src._handle, dst._handle, 1, [region])
            self._barrier(
                cmd,
                E.PS_TRANSFER,
                E.PS_HOST | E.PS_COMPUTE,
                E.A_TRANSFER_WRITE,
                E.A_HOST_READ | E.A_SHADER_READ | E.A_SHADER_WRITE,
            )
            vk.vkEndCommandBuffer(cmd)
            self._submit(cmd)

    def _staged_write(self, buf: Buffer, view: np.ndarray, offset: int) -> None:
        with self._lock:
            st = self._staging_for(view.nbytes)
            st._host[: view.nbytes] = view
            self._copy(st, buf, 0, offset, view.nbytes)

    def _staged_read(self, buf: Buffer, nbytes: int, offset: int) -> np.ndarray:
        if nbytes == 0:
            return np.empty(0, np.uint8)
        with self._lock:
            st = self._staging_for(nbytes)
            self._copy(buf, st, offset, 0, nbytes)
            return st._host[:nbytes].copy()

    # -- public: buffers -----------------------------------------------------

    def buffer_from(self, array: Any) -> Buffer:
        """A new buffer holding a copy of `array`; its dtype and shape become
        the buffer's `read()` defaults."""
        arr = np.ascontiguousarray(array)
        buf = Buffer(self, arr.nbytes, arr.dtype, arr.shape)
        buf.write(arr)
        return buf

    def empty(self, nbytes: int) -> Buffer:
        """A new buffer of `nbytes` bytes with undefined contents."""
        return Buffer(self, int(nbytes))

    def zeros(self, nbytes: int) -> Buffer:
        """A new buffer of `nbytes` zero bytes."""
        buf = Buffer(self, int(nbytes))
        buf.fill(0)
        return buf

    def scalar(self, value: Any, dtype: Any = np.int32) -> Buffer:
        """A one-element buffer: how the ABI passes a scalar argument."""
        return self.buffer_from(np.asarray(value, dtype=dtype).reshape(1))

    # -- public: kernels -----------------------------------------------------

    def load_kernel(
        self,
        spirv: bytes | bytearray | memoryview | np.ndarray | str | os.PathLike,
        entry: str | None = None,
        num_buffers: int | None = None,
    ) -> Kernel:
        """Load a SPIR-V compute kernel (a binary, or a .spv file's path).

        `entry` defaults to the module's only entry point, `num_buffers` to
        one past the highest binding it uses. Loading the same (module, entry,
        num_buffers) again returns the cached kernel (and its pipeline)."""
        self._check_open()
        if isinstance(spirv, (str, os.PathLike)):
            with open(spirv, "rb") as f:
                code = f.read()
        elif isinstance(spirv, np.ndarray):
            code = np.ascontiguousarray(spirv).tobytes()
        else:
            code = bytes(spirv)
        key = (
            hashlib.sha256(code).hexdigest(),
            entry or "",
            -1 if num_buffers is None else num_buffers,
        )
        if key in self._kernels:
            return self._kernels[key]
        try:
            module = reflect(code)
            if entry is None and len(module.entry_points) != 1:
                raise SpirvError(
                    f"the module has entry points {sorted(module.entry_points)}: pass entry="
                )
            ep = module.entry(entry or next(iter(module.entry_points)))
        except SpirvError as e:
            raise KernelError(str(e)) from e
        n = check_kernel(self.properties, module, ep, num_buffers)
        resolved = (key[0], ep.name, n)
        if resolved not in self._kernels:
            with self._lock:
                self._kernels[resolved] = Kernel(self, code, ep, n)
        self._kernels[key] = kern = self._kernels[resolved]
        return kern

    # -- public: running -----------------------------------------------------

    def dispatch(
        self,
        kernel: Kernel,
        buffers: Sequence[Any],
        groups: int | Sequence[int] = 1,
        *,
        profile: bool = False,
    ) -> list[float] | None:
        """Run one kernel over `groups` workgroups and wait for it."""
        return self.run([(kernel, buffers, groups)], profile=profile)

    def run(self, steps: Iterable[Step], *, profile: bool = False) -> list[float] | None:
        """Record `(kernel, buffers, groups)` steps in order into one command
        buffer (a memory barrier between consecutive steps, so each sees its
        predecessors' writes), submit it and wait on one fence.

        A buffer entry may be a Python or numpy scalar: it is passed in a
        transient one-element buffer (int -> i32, float -> f32). With
        `profile`, returns each step's device time in seconds."""
        self._check_open()
        transient: list[Buffer] = []
        try:
            norm = self._normalize(steps, transient)
            if not norm:
                return [] if profile else None
            with self._lock:
                pool = self._transient_descriptor_pool(
                    len(norm), sum(k.num_buffers for k, _, _ in norm)
                )
                queries = self._transient_query_pool(len(norm) + 1) if profile else None
                try:
                    sets = self._write_descriptor_sets(pool, norm)
                    self._record(self._cmd, norm, sets, queries, one_time=True)
                    return self._submit(self._cmd, len(norm) if profile else 0, queries)
                finally:
                    self._vk.vkResetDescriptorPool(self._device, pool, 0)
        finally:
            for b in transient:
                b.close()

    def record(self, steps: Iterable[Step], *, profile: bool = False) -> Recording:
        """Record steps once for repeated `Recording.run()` (see `run`)."""
        self._check_open()
        transient: list[Buffer] = []
        norm = self._normalize(steps, transient)
        if transient:
            for b in transient:
                b.close()
            raise DispatchError(
                "a recording cannot take plain scalars (their buffer would be "
                "frozen): pass a `Device.scalar(...)` buffer and write() it between runs"
            )
        with self._lock:
            return Recording(self, norm, profile)

    def _normalize(self, steps: Iterable[Step], transient: list[Buffer]) -> _Norm:
        props = self.properties
        limit = props["max_workgroup_count"]
        out: _Norm = []
        for n, step in enumerate(steps):
            try:
                kern, bufs, groups = step
            except (TypeError, ValueError):
                raise DispatchError(
                    f"step {n} must be (kernel, buffers, groups), got {step!r}"
                ) from None
            if not isinstance(kern, Kernel) or kern.device is not self:
                raise DispatchError(f"step {n}: {kern!r} is not a kernel loaded on this device")
            where = f"step {n} ({kern.entry})"
            if isinstance(groups, (int, np.integer)):
                g = (int(groups),)
            else:
                g = tuple(int(x) for x in groups)
            if not 1 <= len(g) <= 3:
                raise DispatchError(f"{where}: groups needs 1 to 3 counts, got {groups!r}")
            g = g + (1,) * (3 - len(g))
            if any(not 0 <= x <= m for x, m in zip(g, limit)):
                raise DispatchError(
                    f"{where}: workgroup count {g} is outside the device's limit {limit}"
                )
            bufs = list(bufs)
            if len(bufs) != kern.num_buffers:
                raise DispatchError(
                    f"{where}: the kernel takes {kern.num_buffers} buffers, got {len(bufs)}"
                )
            for j, b in enumerate(bufs):
                if isinstance(b, (Buffer, BufferSlice)):
                    if b.device is not self or b.closed:
                        why = "closed" if b.closed else "made on another device"
                        raise DispatchError(f"{where}: buffer {j} is {why}")
                    if b._size > props["max_storage_buffer_range"]:
                        raise DispatchError(
                            f"{where}: buffer {j} has {b._size} bytes; the device binds "
                            "at most max_storage_buffer_range="
                            f"{props['max_storage_buffer_range']} bytes"
                        )
                elif isinstance(b, (bool, int, float, np.generic)) or (
                    isinstance(b, np.ndarray) and b.ndim == 0
                ):
                    bufs[j] = self._scalar_buffer(b, where)
                    transient.append(bufs[j])
                else:
                    raise DispatchError(
                        f"{where}: argument {j} is a {type(b).__name__}, not a Buffer "
                        "or a scalar"
                    )
            out.append((kern, bufs, g))
        return out

    def _scalar_buffer(self, value: Any, where: str) -> Buffer:
        if isinstance(value, (np.generic, np.ndarray)):
            return self.scalar(value, value.dtype)
        if isinstance(value, float):
            return self.scalar(value, np.float32)
        if not -(2**31) <= int(value) < 2**31:
            raise DispatchError(
                f"{where}: scalar {value} does not fit an i32; pass a numpy scalar "
                "of the kernel's type"
            )
        return self.scalar(int(value), np.int32)

    # -- recording and submission ------------------------------------------

    def _make_descriptor_pool(self, sets: int, descriptors: int) -> Any:
        vk = self._vk
        size = vk.VkDescriptorPoolSize(type=E.STORAGE_BUFFER, descriptorCount=max(1, descriptors))
        return vk.vkCreateDescriptorPool(
            self._device,
            vk.VkDescriptorPoolCreateInfo(maxSets=max(1, sets), poolSizeCount=1, pPoolSizes=[size]),
            None,
        )

    def _transient_descriptor_pool(self, sets: int, descriptors: int) -> Any:
        """The device's run-scoped pool (reset after each run), grown to fit."""
        have_sets, have_desc = self._desc_capacity
        if self._desc_pool is None or sets > have_sets or descriptors > have_desc:
            if self._desc_pool is not None:
                self._vk.vkDestroyDescriptorPool(self._device, self._desc_pool, None)
                self._desc_pool = None
            cap = (
                max(64, 1 << (sets - 1).bit_length()),
                max(512, 1 << (descriptors - 1).bit_length()),
            )
            self._desc_pool = self._make_descriptor_pool(*cap)
            self._desc_capacity = cap
        return self._desc_pool

    def _write_descriptor_sets(self, pool: Any, steps: _Norm) -> list[Any]:
        """A descriptor set per distinct (kernel, buffers) of `steps`, all
        written by one vkUpdateDescriptorSets; returns each step's set."""
        vk = self._vk
        index: dict[tuple, int] = {}
        distinct: list[tuple[Kernel, list[Buffer]]] = []
        slot = []
        for kern, bufs, _ in steps:
            key = (id(kern), *(id(b) for b in bufs))
            if key not in index:
                index[key] = len(distinct)
                distinct.append((kern, bufs))
            slot.append(index[key])
        allocated = vk.vkAllocateDescriptorSets(
            self._device,
            vk.VkDescriptorSetAllocateInfo(
                descriptorPool=pool,
                descriptorSetCount=len(distinct),
                pSetLayouts=[k._set_layout for k, _ in distinct],
            ),
        )
        sets = [allocated[i] for i in range(len(distinct))]
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=s,
                dstBinding=j,
                descriptorCount=1,
                descriptorType=E.STORAGE_BUFFER,
                pBufferInfo=[
                    vk.VkDescriptorBufferInfo(
                        buffer=b._handle, offset=getattr(b, "offset", 0), range=b._size
                    )
                ],
            )
            for s, (_, bufs) in zip(sets, distinct)
            for j, b in enumerate(bufs)
        ]
        if writes:
            vk.vkUpdateDescriptorSets(self._device, len(writes), writes, 0, None)
        return [sets[i] for i in slot]

    def _barrier(self, cmd: Any, src_stage: int, dst_stage: int, src: int, dst: int) -> None:
        vk = self._vk
        barrier = vk.VkMemoryBarrier(srcAccessMask=src, dstAccessMask=dst)
        vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, [barrier], 0, None, 0, None)

    def _record(
        self, cmd: Any, steps: _Norm, sets: list[Any], queries: Any, *, one_time: bool
    ) -> None:
        """Record `steps` into `cmd`; with a query pool `queries`, a timestamp
        before the first step and after each."""
        vk = self._vk
        flags = E.CMD_ONE_TIME_SUBMIT if one_time else 0
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(flags=flags))
        # Host writes and earlier submissions' writes -> these shaders.
        self._barrier(
            cmd,
            E.PS_HOST | E.PS_TRANSFER | E.PS_COMPUTE,
            E.PS_COMPUTE,
            E.A_HOST_WRITE | E.A_TRANSFER_WRITE | E.A_SHADER_WRITE,
            E.A_SHADER_READ | E.A_SHADER_WRITE,
        )
        if queries is not None:
            vk.vkCmdResetQueryPool(cmd, queries, 0, len(steps) + 1)
            vk.vkCmdWriteTimestamp(cmd, E.PS_TOP, queries, 0)
        bound = None
        for n, ((kern, _, g), s) in enumerate(zip(steps, sets)):
            if n:
                # Read-after-write and write-after-write between dispatches.
                self._barrier(
                    cmd,
                    E.PS_COMPUTE,
                    E.PS_COMPUTE,
                    E.A_SHADER_WRITE,
                    E.A_SHADER_READ | E.A_SHADER_WRITE,
                )
            if kern is not bound:
                vk.vkCmdBindPipeline(cmd, E.BIND_COMPUTE, kern._pipeline)
                bound = kern
            vk.vkCmdBindDescriptorSets(cmd, E.BIND_COMPUTE, kern._layout, 0, 1, [s], 0, None)
            if all(g):
                vk.vkCmdDispatch(cmd, *g)
            if queries is not None:
                vk.vkCmdWriteTimestamp(cmd, E.PS_BOTTOM, queries, n + 1)
        # The shaders' writes -> the host (mapped reads) and transfers (staged reads).
        self._barrier(
            cmd,
            E.PS_COMPUTE,
            E.PS_HOST | E.PS_TRANSFER,
            E.A_SHADER_WRITE,
            E.A_HOST_READ | E.A_TRANSFER_READ,
        )
        vk.vkEndCommandBuffer(cmd)

    def _make_query_pool(self, count: int) -> Any:
        if not self.properties["supports_timestamps"]:
            raise DispatchError(
                f"{self.properties['device_name']} has no timestamps on its compute "
                "queue: profile=True is unavailable"
            )
        vk = self._vk
        return vk.vkCreateQueryPool(
            self._device,
            vk.VkQueryPoolCreateInfo(queryType=E.QUERY_TIMESTAMP, queryCount=count),
            None,
        )

    def _transient_query_pool(self, count: int) -> Any:
        """The device's run-scoped timestamp pool, grown to fit."""
        if self._query_pool is None or self._query_capacity < count:
            if self._query_pool is not None:
                self._vk.vkDestroyQueryPool(self._device, self._query_pool, None)
                self._query_pool = None
            capacity = max(64, 1 << (count - 1).bit_length())
            self._query_pool = self._make_query_pool(capacity)
            self._query_capacity = capacity
        return self._query_pool

    def _submit(self, cmd: Any, timed_steps: int = 0, queries: Any = None) -> list[float] | None:
        vk, d = self._vk, self._device
        name = self.properties["device_name"]
        with self._lock:
            try:
                submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cmd])
                vk.vkQueueSubmit(self._queue, 1, [submit], self._fence)
                vk.vkWaitForFences(d, 1, [self._fence], vk.VK_TRUE, self._timeout_ns)
                vk.vkResetFences(d, 1, [self._fence])
            except vk.VkTimeout:
                # Gotcha: the package raises VkTimeout (not a VkError) instead
                # of returning VK_TIMEOUT. The work is still in flight, so
                # nothing may be reused or freed: the device is done for.
                self._broken = f"a run on {name} did not finish within the timeout"
                raise VulkanError(f"{self._broken}; the device is unusable now") from None
            except vk.VkError as e:
                if isinstance(e, vk.VkErrorDeviceLost):
                    self._broken = f"{name} was lost"
                raise VulkanError(f"running on {name} failed: {E.error_name(e)}") from e
            if not timed_steps:
                return None
            count = timed_steps + 1
            data = vk.ffi.new("uint64_t[]", count)
            vk.vkGetQueryPoolResults(
                d, queries, 0, count, 8 * count, data, 8, E.QUERY_RESULT_64_WAIT
            )
        bits = self._timestamp_bits
        mask = E.U64_MAX if bits >= 64 else (1 << bits) - 1
        period = self.properties["timestamp_period_ns"] * 1e-9
        ts = [int(data[i]) for i in range(count)]
        return [((b - a) & mask) * period for a, b in zip(ts, ts[1:])]

    # -- lifetime ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise VulkanError("device is closed")
        if self._broken:
            raise VulkanError(f"device is unusable: {self._broken}")

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Wait for the device, then free every buffer, recording and kernel
        made on it, and the device itself (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._teardown()

    def _teardown(self) -> None:
        vk, d = self._vk, self._device
        if d is not None and self._broken:
            # Work may still run: freeing its memory could crash the driver.
            # Leak the device on purpose; the process ends it.
            self._device = self._instance = None
            return
        if d is not None:
            vk.vkDeviceWaitIdle(d)
            for r in list(self._recordings):
                r.close()
            for b in list(self._buffers):
                b.close()
            self._staging = None
            for k in set(self._kernels.values()):
                k.destroy()
            self._kernels.clear()
            for name, destroy in (
                ("_query_pool", vk.vkDestroyQueryPool),
                ("_desc_pool", vk.vkDestroyDescriptorPool),
                ("_pipeline_cache", vk.vkDestroyPipelineCache),
                ("_fence", vk.vkDestroyFence),
                ("_cmd_pool", vk.vkDestroyCommandPool),  # frees its command buffers
            ):
                handle = getattr(self, name, None)
                if handle is not None:
                    destroy(d, handle, None)
                    setattr(self, name, None)
            vk.vkDestroyDevice(d, None)
            self._device = None
        if self._instance is not None:
            vk.vkDestroyInstance(self._instance, None)
            self._instance = None

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may be half gone
            pass

    def __repr__(self) -> str:
        name = getattr(self, "properties", {}).get("device_name", "?")
        return f"<vulkan.Device {name!r}{' closed' if self._closed else ''}>"
