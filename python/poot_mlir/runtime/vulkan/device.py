"""A Vulkan compute device: buffers, kernels (compute pipelines) and runs.

The binding ABI is the one MLIR's SPIR-V lowering produces: kernel argument i
is the storage buffer at (descriptor set 0, binding i), a scalar argument gets
its own small storage buffer, the entry point is the kernel's name and the
workgroup size is baked into the shader. A run records any number of
dispatches into one command buffer, with a memory barrier between consecutive
dispatches, and waits on one fence.

Not thread-safe beyond a lock around each submission: share a `Device` between
threads only if you serialize its use.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np

from . import _loader
from .errors import DispatchError, KernelError, VulkanError, VulkanUnavailable
from .spirv import SpirvError, reflect

_U64_MAX = 0xFFFF_FFFF_FFFF_FFFF  # the package's VK_WHOLE_SIZE is -1: unusable
_FENCE_TIMEOUT_NS = _U64_MAX

# Vulkan enum values used below (stable across headers; spelled here so that
# this module can be read without the `vulkan` package's 20k names).
_COMPUTE_BIT = 0x2
_STORAGE_BUFFER = 7  # VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
_STAGE_COMPUTE = 0x20  # VK_SHADER_STAGE_COMPUTE_BIT
_BIND_COMPUTE = 1  # VK_PIPELINE_BIND_POINT_COMPUTE
_USAGE = 0x1 | 0x2 | 0x20  # TRANSFER_SRC | TRANSFER_DST | STORAGE_BUFFER
_MEM_DEVICE_LOCAL, _MEM_HOST_VISIBLE, _MEM_HOST_COHERENT, _MEM_HOST_CACHED = 1, 2, 4, 8
_PS_TOP, _PS_TRANSFER, _PS_COMPUTE, _PS_HOST = 0x1, 0x1000, 0x800, 0x4000
_PS_BOTTOM = 0x2000
_A_SHADER_READ, _A_SHADER_WRITE = 0x20, 0x40
_A_TRANSFER_READ, _A_TRANSFER_WRITE = 0x800, 0x1000
_A_HOST_READ, _A_HOST_WRITE = 0x2000, 0x4000
_QUERY_TIMESTAMP = 2
_QUERY_RESULT_64_WAIT = 0x1 | 0x2

_DEVICE_TYPES = {0: "other", 1: "integrated_gpu", 2: "discrete_gpu", 3: "virtual_gpu", 4: "cpu"}
_TYPE_RANK = {2: 0, 1: 1, 3: 2, 4: 3, 0: 4}  # "any": discrete first, CPU last
_SUBGROUP_OPS = ("basic", "vote", "arithmetic", "ballot", "shuffle",
                 "shuffle_relative", "clustered", "quad")

# SPIR-V capability -> the `properties` flag a device needs for it.
_CAPABILITY_NEEDS = {
    "Float16": "supports_float16",
    "Float64": "supports_float64",
    "Int64": "supports_int64",
    "Int16": "supports_int16",
    "Int8": "supports_int8",
    "StorageBuffer16BitAccess": "supports_storage_buffer_16bit",
    "UniformAndStorageBuffer16BitAccess": "supports_storage_buffer_16bit",
    "StorageBuffer8BitAccess": "supports_storage_buffer_8bit",
    "UniformAndStorageBuffer8BitAccess": "supports_storage_buffer_8bit",
    "VariablePointersStorageBuffer": "supports_variable_pointers",
    "VariablePointers": "supports_variable_pointers",
    "Int64Atomics": "supports_int64_atomics",
    "GroupNonUniform": "subgroup_basic",
    "GroupNonUniformVote": "subgroup_vote",
    "GroupNonUniformArithmetic": "subgroup_arithmetic",
    "GroupNonUniformBallot": "subgroup_ballot",
    "GroupNonUniformShuffle": "subgroup_shuffle",
    "GroupNonUniformShuffleRelative": "subgroup_shuffle_relative",
    "GroupNonUniformClustered": "subgroup_clustered",
    "GroupNonUniformQuad": "subgroup_quad",
}


def _version(v: int) -> tuple[int, int, int]:
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


def _make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


def _vk_name(e: BaseException) -> str:
    return type(e).__name__


Step = tuple["Kernel", Sequence[Any], Union[int, Sequence[int]]]


class Buffer:
    """A storage buffer on a device.

    `read`/`write` copy between host and device (directly through the mapped
    memory when the device memory is host-visible, through a staging buffer
    otherwise). `dtype`/`shape` are remembered from `Device.buffer_from` and
    used as `read`'s defaults.
    """

    def __init__(self, device: Device, nbytes: int, dtype: Any = None,
                 shape: tuple[int, ...] | None = None) -> None:
        if nbytes < 0:
            raise VulkanError(f"buffer size must be >= 0 bytes, got {nbytes}")
        self.device = device
        self.nbytes = int(nbytes)
        self.dtype = np.dtype(dtype) if dtype is not None else None
        self.shape = tuple(shape) if shape is not None else None
        # Vulkan forbids size 0, and storage buffers are read in 4-byte words.
        self._size = max(16, -(-self.nbytes // 16) * 16)
        self._handle, self._memory, self._host = device._allocate(self._size)
        self._closed = False
        device._buffers.add(self)

    # -- host access ---------------------------------------------------------

    def write(self, data: Any, *, offset: int = 0) -> None:
        """Copy `data` (anything numpy can view as contiguous bytes) into the
        buffer at byte `offset`."""
        self._check_open()
        raw = np.ascontiguousarray(data)
        view = raw.reshape(-1).view(np.uint8)
        if offset < 0 or offset + view.nbytes > self.nbytes:
            raise VulkanError(
                f"write of {view.nbytes} bytes at offset {offset} overruns the "
                f"{self.nbytes}-byte buffer"
            )
        if self._host is not None:
            self._host[offset : offset + view.nbytes] = view
        else:
            self.device._staged_write(self, view, offset)

    def read(self, dtype: Any = None, shape: Iterable[int] | int | None = None,
             *, offset: int = 0) -> np.ndarray:
        """A copy of the buffer's contents as a numpy array.

        `dtype` defaults to the dtype the buffer was made from; `shape`
        defaults to that shape (same dtype) or else to all whole elements."""
        self._check_open()
        if dtype is None:
            if self.dtype is None:
                raise VulkanError(
                    "this buffer was made with `empty(nbytes)`: read(dtype, shape) "
                    "needs a dtype"
                )
            dtype = self.dtype
        dt = np.dtype(dtype)
        if shape is None:
            if self.shape is not None and dt == self.dtype and offset == 0:
                shape = self.shape
            else:
                shape = ((self.nbytes - offset) // dt.itemsize,)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = int(math.prod(shape)) * dt.itemsize
        if offset < 0 or offset + nbytes > self.nbytes:
            raise VulkanError(
                f"read of {shape} {dt} ({nbytes} bytes) at offset {offset} overruns "
                f"the {self.nbytes}-byte buffer"
            )
        if self._host is not None:
            raw = self._host[offset : offset + nbytes].copy()
        else:
            raw = self.device._staged_read(self, nbytes, offset)
        return raw.view(dt).reshape(shape)

    def fill(self, byte: int = 0) -> None:
        """Set every byte of the buffer to `byte`."""
        self.write(np.full(self.nbytes, byte, np.uint8))

    # -- lifetime ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free the buffer now (idempotent). Using it afterwards raises."""
        if self._closed:
            return
        self._closed = True
        self.device._buffers.discard(self)
        self._host = None
        self.device._free(self._handle, self._memory)

    def _check_open(self) -> None:
        if self._closed:
            raise VulkanError("buffer is closed")

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the module may be half gone
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        meta = f" {self.dtype}{list(self.shape)}" if self.shape is not None else ""
        return f"<vulkan.Buffer {self.nbytes} B{meta} {state}>"


class Kernel:
    """A loaded compute kernel (shader module + pipeline); owned by its device
    and freed with it."""

    def __init__(self, device: Device, spirv: bytes, entry: str, num_buffers: int,
                 local_size: tuple[int, int, int] | None,
                 workgroup_memory_bytes: int) -> None:
        self.device = device
        self.entry = entry
        self.num_buffers = num_buffers
        self.local_size = local_size
        self.workgroup_memory_bytes = workgroup_memory_bytes
        self.spirv_sha256 = hashlib.sha256(spirv).hexdigest()
        vk = device._vk
        d = device._device
        self._module = self._set_layout = self._layout = self._pipeline = None
        try:
            self._module = vk.vkCreateShaderModule(
                d, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None
            )
            bindings = [
                vk.VkDescriptorSetLayoutBinding(
                    binding=i, descriptorType=_STORAGE_BUFFER, descriptorCount=1,
                    stageFlags=_STAGE_COMPUTE,
                )
                for i in range(num_buffers)
            ]
            self._set_layout = vk.vkCreateDescriptorSetLayout(
                d, vk.VkDescriptorSetLayoutCreateInfo(
                    bindingCount=num_buffers, pBindings=bindings or None), None,
            )
            self._layout = vk.vkCreatePipelineLayout(
                d, vk.VkPipelineLayoutCreateInfo(
                    setLayoutCount=1, pSetLayouts=[self._set_layout]), None,
            )
            stage = vk.VkPipelineShaderStageCreateInfo(
                stage=_STAGE_COMPUTE, module=self._module, pName=entry
            )
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self._layout)
            self._pipeline = vk.vkCreateComputePipelines(
                d, device._pipeline_cache, 1, [info], None
            )[0]
        except vk.VkError as e:
            self._destroy()
            raise KernelError(
                f"the driver refused kernel {entry!r}: {_vk_name(e)} "
                "(run `spirv-val --target-env vulkan1.1` on the module)"
            ) from e

    def _destroy(self) -> None:
        vk, d = self.device._vk, self.device._device
        if self._pipeline is not None:
            vk.vkDestroyPipeline(d, self._pipeline, None)
        if self._layout is not None:
            vk.vkDestroyPipelineLayout(d, self._layout, None)
        if self._set_layout is not None:
            vk.vkDestroyDescriptorSetLayout(d, self._set_layout, None)
        if self._module is not None:
            vk.vkDestroyShaderModule(d, self._module, None)
        self._module = self._set_layout = self._layout = self._pipeline = None

    def __repr__(self) -> str:
        return (f"<vulkan.Kernel {self.entry!r} buffers={self.num_buffers} "
                f"local_size={self.local_size}>")


class Recording:
    """A sequence of dispatches recorded once and submitted many times (the
    decode loop: same kernels, same buffers, new contents). Made by
    `Device.record`; `run()` costs one submit and one fence wait."""

    def __init__(self, device: Device, steps: list[tuple[Kernel, list[Buffer], tuple[int, int, int]]],
                 profile: bool) -> None:
        self.device = device
        self._steps = steps
        self._profile = profile
        vk, d = device._vk, device._device
        self._pool = device._make_descriptor_pool(len(steps), sum(k.num_buffers for k, _, _ in steps))
        self._cmd = None
        try:
            sets = device._write_descriptor_sets(self._pool, steps)
            self._cmd = vk.vkAllocateCommandBuffers(d, vk.VkCommandBufferAllocateInfo(
                commandPool=device._cmd_pool, level=0, commandBufferCount=1))[0]
            device._record(self._cmd, steps, sets, profile, one_time=False)
        except BaseException:
            self.close()
            raise
        self._closed = False
        device._recordings.add(self)

    def run(self) -> list[float] | None:
        """Submit the recorded dispatches and wait. With `profile`, returns
        each dispatch's device time in seconds."""
        if getattr(self, "_closed", True):
            raise VulkanError("recording is closed")
        for _, bufs, _ in self._steps:
            for b in bufs:
                if b.closed:
                    raise DispatchError("a buffer of this recording was closed since recording")
        return self.device._submit(self._cmd, len(self._steps) if self._profile else 0)

    def close(self) -> None:
        if getattr(self, "_closed", False):
            return
        self._closed = True
        dev = self.device
        dev._recordings.discard(self)
        if self._cmd is not None:
            dev._vk.vkFreeCommandBuffers(dev._device, dev._cmd_pool, 1, [self._cmd])
            self._cmd = None
        if self._pool is not None:
            dev._vk.vkDestroyDescriptorPool(dev._device, self._pool, None)
            self._pool = None
        self._steps = []

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Device:
    """One Vulkan device, its compute queue, and everything made on it.

    `prefer`: "any" (discrete GPU, then integrated, virtual, CPU), "gpu" (any
    but a CPU device), "lavapipe" (Mesa's CPU device; also "llvmpipe"/"cpu"),
    a device index, or a substring of the device name.
    `memory`: "auto" (map device memory when it is host-visible, else stage),
    or "staged" (always copy through a staging buffer: what a discrete GPU
    without resizable BAR does; lets the CPU device test that path).
    `validation`: enable VK_LAYER_KHRONOS_validation (package
    vulkan-validationlayers); default from $POOT_VULKAN_VALIDATION=1.
    """

    def __init__(self, prefer: str | int = "any", *, memory: str = "auto",
                 validation: bool | None = None) -> None:
        if memory not in ("auto", "staged"):
            raise VulkanError(f"memory must be 'auto' or 'staged', got {memory!r}")
        self._closed = True  # until fully built: close() must not run on a half device
        self._lock = threading.RLock()
        self._buffers: weakref.WeakSet[Buffer] = weakref.WeakSet()
        self._recordings: weakref.WeakSet[Recording] = weakref.WeakSet()
        self._kernels: dict[tuple[str, str, int], Kernel] = {}
        self._instance = self._device = None
        self._vk = vk = _loader.load()
        if validation is None:
            validation = os.environ.get("POOT_VULKAN_VALIDATION") == "1"
        try:
            self._instance = self._create_instance(validation)
            self._physical, info = self._choose(prefer)
            self._build(info, memory)
        except vk.VkError as e:
            self._teardown()
            raise VulkanError(f"creating the Vulkan device failed: {_vk_name(e)}") from e
        except BaseException:
            self._teardown()
            raise
        self._closed = False

    # -- construction --------------------------------------------------------

    def _create_instance(self, validation: bool) -> Any:
        vk = self._vk
        try:
            loader_version = vk.vkEnumerateInstanceVersion()
        except Exception:  # a 1.0 loader has no vkEnumerateInstanceVersion
            loader_version = _make_version(1, 0)
        if _version(loader_version)[:2] < (1, 1):
            raise VulkanUnavailable(
                f"the Vulkan loader is {_version(loader_version)}; 1.1 or newer is "
                f"needed; {_loader.INSTALL_HINT}"
            )
        api = min(loader_version, _make_version(1, 3))
        exts = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
        enabled, flags = [], 0
        if "VK_KHR_portability_enumeration" in exts:  # MoltenVK lists only so
            enabled.append("VK_KHR_portability_enumeration")
            flags |= 0x1  # VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
        layers = []
        if validation:
            have = {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}
            if "VK_LAYER_KHRONOS_validation" not in have:
                raise VulkanUnavailable(
                    "validation was asked for but VK_LAYER_KHRONOS_validation is not "
                    "installed (Debian/Ubuntu: apt-get install vulkan-validationlayers)"
                )
            layers.append("VK_LAYER_KHRONOS_validation")
        app = vk.VkApplicationInfo(
            pApplicationName="poot_mlir", applicationVersion=1,
            pEngineName="poot_mlir.runtime.vulkan", engineVersion=1, apiVersion=api,
        )
        try:
            return vk.vkCreateInstance(vk.VkInstanceCreateInfo(
                flags=flags, pApplicationInfo=app,
                enabledExtensionCount=len(enabled), ppEnabledExtensionNames=enabled or None,
                enabledLayerCount=len(layers), ppEnabledLayerNames=layers or None,
            ), None)
        except (vk.VkErrorIncompatibleDriver, vk.VkErrorInitializationFailed) as e:
            raise VulkanUnavailable(
                f"no Vulkan driver could be loaded ({_vk_name(e)} from vkCreateInstance; "
                f"VK_ICD_FILENAMES={os.environ.get('VK_ICD_FILENAMES')!r}); "
                f"{_loader.INSTALL_HINT}"
            ) from e

    def _describe(self, pd: Any) -> dict[str, Any]:
        """Properties and features of a physical device, as plain Python."""
        vk = self._vk
        p = vk.vkGetPhysicalDeviceProperties(pd)
        api = _version(p.apiVersion)
        lim = p.limits
        exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
        info: dict[str, Any] = {
            "device_name": p.deviceName,
            "device_type": _DEVICE_TYPES.get(p.deviceType, "other"),
            "vendor_id": p.vendorID,
            "device_id": p.deviceID,
            "api_version": "%d.%d.%d" % api,
            "_api": api[:2],
            "max_workgroup_shared_memory": lim.maxComputeSharedMemorySize,
            "max_workgroup_count": tuple(lim.maxComputeWorkGroupCount[0:3]),
            "max_workgroup_size": tuple(lim.maxComputeWorkGroupSize[0:3]),
            "max_workgroup_invocations": lim.maxComputeWorkGroupInvocations,
            "max_storage_buffer_range": lim.maxStorageBufferRange,
            "max_per_stage_storage_buffers": lim.maxPerStageDescriptorStorageBuffers,
            "max_push_constants_size": lim.maxPushConstantsSize,
            "min_storage_buffer_offset_alignment": lim.minStorageBufferOffsetAlignment,
            "timestamp_period_ns": lim.timestampPeriod,
            "max_spirv_version": (1, 0) if api[:2] < (1, 1) else
                                 (1, 3) if api[:2] < (1, 2) else
                                 (1, 5) if api[:2] < (1, 3) else (1, 6),
            "extensions": frozenset(exts),
        }
        if api[:2] < (1, 1):
            return info

        # Properties through the pNext chain (each struct must stay referenced
        # until the call returns: the package keeps only weak links).
        subgroup = vk.VkPhysicalDeviceSubgroupProperties(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES)
        maint3 = vk.VkPhysicalDeviceMaintenance3Properties(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES, pNext=subgroup)
        head = maint3
        driver = None
        if api[:2] >= (1, 2):
            driver = vk.VkPhysicalDeviceDriverProperties(
                sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, pNext=head)
            head = driver
        sm = amd = None
        if "VK_NV_shader_sm_builtins" in exts:
            sm = vk.VkPhysicalDeviceShaderSMBuiltinsPropertiesNV(
                sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV,
                pNext=head)
            head = sm
        if "VK_AMD_shader_core_properties" in exts:
            amd = vk.VkPhysicalDeviceShaderCorePropertiesAMD(
                sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD,
                pNext=head)
            head = amd
        props2 = vk.VkPhysicalDeviceProperties2(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=head)
        vk.vkGetPhysicalDeviceProperties2(pd, props2)
        ops = subgroup.supportedOperations
        compute = bool(subgroup.supportedStages & _STAGE_COMPUTE)
        info["subgroup_size"] = subgroup.subgroupSize
        info["subgroup_operations"] = tuple(
            n for i, n in enumerate(_SUBGROUP_OPS) if compute and ops & (1 << i))
        for n in _SUBGROUP_OPS:
            info[f"subgroup_{n}"] = n in info["subgroup_operations"]
        info["max_memory_allocation_size"] = maint3.maxMemoryAllocationSize
        if driver is not None:
            info["driver_name"] = vk.ffi.string(driver.driverName).decode()
            info["driver_info"] = vk.ffi.string(driver.driverInfo).decode()
            info["driver_id"] = driver.driverID
        compute_units = None
        if sm is not None:
            compute_units = sm.shaderSMCount
        elif amd is not None:
            compute_units = (amd.shaderEngineCount * amd.shaderArraysPerEngineCount
                             * amd.computeUnitsPerShaderArray)
        elif info["device_type"] == "cpu":
            # llvmpipe runs workgroups on LP_NUM_THREADS threads (default: cores).
            compute_units = int(os.environ.get("LP_NUM_THREADS") or os.cpu_count() or 1)
        info["compute_units"] = compute_units

        # Features.
        f16 = vk.VkPhysicalDevice16BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES)
        varp = vk.VkPhysicalDeviceVariablePointersFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES, pNext=f16)
        head = varp
        v12 = None
        if api[:2] >= (1, 2):
            v12 = vk.VkPhysicalDeviceVulkan12Features(
                sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, pNext=head)
            head = v12
        feats2 = vk.VkPhysicalDeviceFeatures2(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=head)
        vk.vkGetPhysicalDeviceFeatures2(pd, feats2)
        core = feats2.features
        info.update(
            supports_float64=bool(core.shaderFloat64),
            supports_int64=bool(core.shaderInt64),
            supports_int16=bool(core.shaderInt16),
            supports_storage_buffer_16bit=bool(f16.storageBuffer16BitAccess),
            supports_variable_pointers=bool(varp.variablePointersStorageBuffer),
            supports_float16=bool(v12 and v12.shaderFloat16),
            supports_int8=bool(v12 and v12.shaderInt8),
            supports_storage_buffer_8bit=bool(v12 and v12.storageBuffer8BitAccess),
            supports_int64_atomics=bool(v12 and v12.shaderBufferInt64Atomics),
        )
        # What _build enables: exactly the features a kernel of ours may use.
        info["_enable"] = {
            "core": {k: getattr(core, k) for k in ("shaderFloat64", "shaderInt64", "shaderInt16")},
            "16bit": {k: getattr(f16, k) for k in ("storageBuffer16BitAccess",
                                                   "uniformAndStorageBuffer16BitAccess")},
            "varp": {k: getattr(varp, k) for k in ("variablePointersStorageBuffer",
                                                   "variablePointers")},
            "v12": {} if v12 is None else {k: getattr(v12, k) for k in (
                "shaderFloat16", "shaderInt8", "storageBuffer8BitAccess",
                "uniformAndStorageBuffer8BitAccess", "shaderBufferInt64Atomics")},
        }
        return info

    def _choose(self, prefer: str | int) -> tuple[Any, dict[str, Any]]:
        vk = self._vk
        try:
            pds = list(vk.vkEnumeratePhysicalDevices(self._instance))
        except vk.VkError:
            pds = []
        if not pds:
            raise VulkanUnavailable(
                "Vulkan is installed but reports no device "
                f"(VK_ICD_FILENAMES={os.environ.get('VK_ICD_FILENAMES')!r}); "
                f"{_loader.INSTALL_HINT}"
            )
        infos = [self._describe(pd) for pd in pds]
        names = ", ".join(f"[{i}] {x['device_name']} ({x['device_type']}, Vulkan "
                          f"{x['api_version']})" for i, x in enumerate(infos))
        usable = [i for i, x in enumerate(infos) if x["_api"] >= (1, 1)]

        def is_lavapipe(x: dict[str, Any]) -> bool:
            return "llvmpipe" in x["device_name"].lower() or x.get("driver_id") == 13

        if isinstance(prefer, int):
            if not 0 <= prefer < len(infos):
                raise VulkanUnavailable(f"no Vulkan device #{prefer}; devices: {names}")
            pick = [prefer]
        elif prefer in ("lavapipe", "llvmpipe", "cpu"):
            pick = [i for i in usable if is_lavapipe(infos[i])]
            if not pick:
                icds = _loader.lavapipe_icds()
                why = (f"its ICD is installed ({icds[0]}) but not loaded: check "
                       "VK_ICD_FILENAMES / VK_DRIVER_FILES" if icds else
                       "no lavapipe ICD is installed (apt-get install mesa-vulkan-drivers)")
                raise VulkanUnavailable(f"no lavapipe device: {why}; devices: {names}")
        elif prefer in ("any", "gpu"):
            pick = sorted(usable, key=lambda i: _TYPE_RANK.get(_type_code(infos[i]), 9))
            if prefer == "gpu":
                pick = [i for i in pick if infos[i]["device_type"] != "cpu"]
            if not pick:
                raise VulkanUnavailable(f"no Vulkan 1.1+ {prefer} device; devices: {names}")
        elif isinstance(prefer, str):
            pick = [i for i in usable if prefer.lower() in infos[i]["device_name"].lower()]
            if not pick:
                raise VulkanUnavailable(f"no Vulkan device named like {prefer!r}; devices: {names}")
        else:
            raise VulkanError(f"prefer must be a str or an int, got {prefer!r}")
        i = pick[0]
        if infos[i]["_api"] < (1, 1):
            raise VulkanUnavailable(f"device {infos[i]['device_name']} is Vulkan "
                                    f"{infos[i]['api_version']}; 1.1 or newer is needed")
        return pds[i], infos[i]

    def _build(self, info: dict[str, Any], memory: str) -> None:
        vk = self._vk
        pd = self._physical
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
        compute = [i for i, q in enumerate(families) if q.queueFlags & _COMPUTE_BIT]
        if not compute:
            raise VulkanUnavailable(f"device {info['device_name']} has no compute queue")
        self._family = compute[0]
        self._timestamp_bits = families[self._family].timestampValidBits
        info["supports_timestamps"] = self._timestamp_bits > 0

        en = info.pop("_enable")
        info.pop("_api")
        core = vk.VkPhysicalDeviceFeatures(**{k: v for k, v in en["core"].items() if v})
        f16 = vk.VkPhysicalDevice16BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
            **{k: v for k, v in en["16bit"].items() if v})
        varp = vk.VkPhysicalDeviceVariablePointersFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES, pNext=f16,
            **{k: v for k, v in en["varp"].items() if v})
        head = varp
        if en["v12"]:
            head = vk.VkPhysicalDeviceVulkan12Features(
                sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, pNext=varp,
                **{k: v for k, v in en["v12"].items() if v})
        queue = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self._family, queueCount=1,
                                           pQueuePriorities=[1.0])
        dev_exts = []
        if "VK_KHR_portability_subset" in info["extensions"]:  # required if listed
            dev_exts.append("VK_KHR_portability_subset")
        self._device = vk.vkCreateDevice(pd, vk.VkDeviceCreateInfo(
            pNext=head, queueCreateInfoCount=1, pQueueCreateInfos=[queue],
            enabledExtensionCount=len(dev_exts), ppEnabledExtensionNames=dev_exts or None,
            pEnabledFeatures=core), None)
        d = self._device
        self._queue = vk.vkGetDeviceQueue(d, self._family, 0)
        self._cmd_pool = vk.vkCreateCommandPool(d, vk.VkCommandPoolCreateInfo(
            flags=0x2, queueFamilyIndex=self._family), None)  # RESET_COMMAND_BUFFER
        self._cmd = vk.vkAllocateCommandBuffers(d, vk.VkCommandBufferAllocateInfo(
            commandPool=self._cmd_pool, level=0, commandBufferCount=1))[0]
        self._fence = vk.vkCreateFence(d, vk.VkFenceCreateInfo(), None)
        self._pipeline_cache = vk.vkCreatePipelineCache(d, vk.VkPipelineCacheCreateInfo(), None)
        self._desc_pool = None
        self._desc_capacity = (0, 0)
        self._query_pool = None
        self._query_capacity = 0
        self._staging: Buffer | None = None

        # Memory types: device memory, mapped if it is host-visible (lavapipe,
        # integrated GPUs, resizable BAR), else staged.
        mp = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        self._mem_types = [(mp.memoryTypes[i].propertyFlags, mp.memoryTypes[i].heapIndex)
                           for i in range(mp.memoryTypeCount)]
        heaps = [mp.memoryHeaps[i].size for i in range(mp.memoryHeapCount)]
        info["device_memory_bytes"] = max(
            [heaps[h] for f, h in self._mem_types if f & _MEM_DEVICE_LOCAL] or [0])
        host = _MEM_HOST_VISIBLE | _MEM_HOST_COHERENT
        big = info["device_memory_bytes"] // 2
        self._mapped = memory == "auto" and any(
            f & (host | _MEM_DEVICE_LOCAL) == host | _MEM_DEVICE_LOCAL and heaps[h] >= big
            for f, h in self._mem_types)
        info["memory"] = "mapped" if self._mapped else "staged"
        info["is_lavapipe"] = "llvmpipe" in info["device_name"].lower()
        info["extensions"] = tuple(sorted(info["extensions"]))
        self.properties: dict[str, Any] = info

    # -- memory --------------------------------------------------------------

    def _memory_type(self, bits: int, want: Sequence[int]) -> int:
        for flags in want:
            for i, (f, _) in enumerate(self._mem_types):
                if bits & (1 << i) and f & flags == flags:
                    return i
        raise VulkanError(f"no memory type among {self._mem_types} fits bits 0x{bits:x}")

    def _allocate(self, size: int, *, host: bool | None = None) -> tuple[Any, Any, np.ndarray | None]:
        """A buffer + its own memory; `host` forces a host-visible (staging)
        allocation. Returns (buffer, memory, mapped uint8 view or None)."""
        self._check_open()
        vk, d = self._vk, self._device
        mapped = self._mapped if host is None else host
        hv = _MEM_HOST_VISIBLE | _MEM_HOST_COHERENT
        if mapped:
            want = [hv | _MEM_DEVICE_LOCAL | _MEM_HOST_CACHED, hv | _MEM_DEVICE_LOCAL,
                    hv | _MEM_HOST_CACHED, hv]
        else:
            want = [_MEM_DEVICE_LOCAL, 0]
        buf = vk.vkCreateBuffer(d, vk.VkBufferCreateInfo(size=size, usage=_USAGE, sharingMode=0), None)
        mem = None
        try:
            req = vk.vkGetBufferMemoryRequirements(d, buf)
            mem = vk.vkAllocateMemory(d, vk.VkMemoryAllocateInfo(
                allocationSize=req.size,
                memoryTypeIndex=self._memory_type(req.memoryTypeBits, want)), None)
            vk.vkBindBufferMemory(d, buf, mem, 0)
            view = None
            if mapped:
                # Mapped for the buffer's life: the package returns a cffi
                # buffer over the mapping, which numpy wraps without a copy.
                view = np.frombuffer(vk.vkMapMemory(d, mem, 0, size, 0), np.uint8)
            return buf, mem, view
        except vk.VkError as e:
            if mem is not None:
                vk.vkFreeMemory(d, mem, None)
            vk.vkDestroyBuffer(d, buf, None)
            raise VulkanError(f"allocating a {size}-byte buffer failed: {_vk_name(e)}") from e

    def _free(self, handle: Any, memory: Any) -> None:
        if self._device is None:
            return
        self._vk.vkDestroyBuffer(self._device, handle, None)
        self._vk.vkFreeMemory(self._device, memory, None)  # also unmaps

    def _staging_for(self, nbytes: int) -> Buffer:
        if self._staging is None or self._staging._size < nbytes:
            if self._staging is not None:
                self._staging.close()
            staging = Buffer.__new__(Buffer)
            staging.device, staging.nbytes, staging.dtype, staging.shape = self, nbytes, None, None
            staging._size = max(1 << 16, 1 << (nbytes - 1).bit_length())
            staging._handle, staging._memory, staging._host = self._allocate(staging._size, host=True)
            staging._closed = False
            self._staging = staging
        return self._staging

    def _copy(self, src: Buffer, dst: Buffer, src_offset: int, dst_offset: int, nbytes: int) -> None:
        vk, cmd = self._vk, self._cmd
        with self._lock:
            vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(flags=0x1))
            self._barrier(cmd, _PS_COMPUTE | _PS_TRANSFER | _PS_HOST, _PS_TRANSFER,
                          _A_SHADER_WRITE | _A_TRANSFER_WRITE | _A_HOST_WRITE,
                          _A_TRANSFER_READ | _A_TRANSFER_WRITE)
            vk.vkCmdCopyBuffer(cmd, src._handle, dst._handle, 1, [vk.VkBufferCopy(
                srcOffset=src_offset, dstOffset=dst_offset, size=nbytes)])
            self._barrier(cmd, _PS_TRANSFER, _PS_HOST | _PS_COMPUTE, _A_TRANSFER_WRITE,
                          _A_HOST_READ | _A_SHADER_READ | _A_SHADER_WRITE)
            vk.vkEndCommandBuffer(cmd)
            self._submit(cmd, 0)

    def _staged_write(self, buf: Buffer, view: np.ndarray, offset: int) -> None:
        if view.nbytes == 0:
            return
        st = self._staging_for(view.nbytes)
        st._host[: view.nbytes] = view
        self._copy(st, buf, 0, offset, view.nbytes)

    def _staged_read(self, buf: Buffer, nbytes: int, offset: int) -> np.ndarray:
        if nbytes == 0:
            return np.empty(0, np.uint8)
        st = self._staging_for(nbytes)
        self._copy(buf, st, offset, 0, nbytes)
        return st._host[:nbytes].copy()

    # -- public: buffers -----------------------------------------------------

    def buffer_from(self, array: Any) -> Buffer:
        """A new buffer holding a copy of `array` (its dtype and shape are
        remembered as `read()`'s defaults)."""
        arr = np.ascontiguousarray(array)
        buf = Buffer(self, arr.nbytes, arr.dtype, arr.shape)
        if arr.nbytes:
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
        """A one-element buffer: how our ABI passes a scalar argument."""
        return self.buffer_from(np.asarray(value, dtype=dtype).reshape(1))

    # -- public: kernels -----------------------------------------------------

    def load_kernel(self, spirv: bytes | bytearray | memoryview | np.ndarray | str | os.PathLike,
                    entry: str | None = None, num_buffers: int | None = None) -> Kernel:
        """Load a SPIR-V compute kernel (a binary, or the path of a .spv file).

        `entry` defaults to the module's only entry point; `num_buffers` to one
        past the highest binding the entry point uses. Loading the same
        (module, entry, num_buffers) again returns the cached kernel."""
        self._check_open()
        if isinstance(spirv, (str, os.PathLike)):
            with open(spirv, "rb") as f:
                code = f.read()
        elif isinstance(spirv, np.ndarray):
            code = np.ascontiguousarray(spirv).tobytes()
        else:
            code = bytes(spirv)
        try:
            module = reflect(code)
        except SpirvError as e:
            raise KernelError(str(e)) from e
        if entry is None:
            if len(module.entry_points) != 1:
                raise KernelError("the module has entry points "
                                  f"{sorted(module.entry_points)}: pass entry=")
            entry = next(iter(module.entry_points))
        key = (hashlib.sha256(code).hexdigest(), entry, -1 if num_buffers is None else num_buffers)
        if key in self._kernels:
            return self._kernels[key]
        try:
            ep = module.entry(entry)
        except SpirvError as e:
            raise KernelError(str(e)) from e
        self._check_kernel(module, ep, entry)
        used = sorted({b.binding for b in ep.bindings})
        n = num_buffers if num_buffers is not None else (used[-1] + 1 if used else 0)
        if used and used[-1] >= n:
            raise KernelError(f"kernel {entry!r} uses binding {used[-1]} but num_buffers={n}: "
                              "argument i must be binding i")
        if n > self.properties["max_per_stage_storage_buffers"]:
            raise KernelError(f"kernel {entry!r} takes {n} buffers; the device binds at most "
                              f"{self.properties['max_per_stage_storage_buffers']} per stage")
        with self._lock:
            kern = Kernel(self, code, entry, n, ep.local_size, ep.workgroup_memory_bytes)
        self._kernels[key] = kern
        return kern

    def _check_kernel(self, module: Any, ep: Any, entry: str) -> None:
        props = self.properties
        if ep.execution_model != 5:
            raise KernelError(f"entry point {entry!r} is not a GLCompute shader (execution "
                              f"model {ep.execution_model}; OpenCL `Kernel` modules need an "
                              "OpenCL runtime, not Vulkan)")
        if module.version > props["max_spirv_version"]:
            raise KernelError(f"kernel {entry!r} is SPIR-V {module.version[0]}.{module.version[1]}; "
                              f"Vulkan {props['api_version']} takes up to "
                              f"{props['max_spirv_version'][0]}.{props['max_spirv_version'][1]}")
        missing = sorted(c for c in module.capabilities
                         if c in _CAPABILITY_NEEDS and not props.get(_CAPABILITY_NEEDS[c]))
        if missing:
            raise KernelError(f"kernel {entry!r} needs SPIR-V capabilities {missing} that "
                              f"{props['device_name']} does not support")
        for b in ep.bindings:
            if b.set != 0 or not b.is_storage_buffer:
                raise KernelError(f"kernel {entry!r} declares a {b.storage_class} descriptor at "
                                  f"(set {b.set}, binding {b.binding}); the ABI is storage "
                                  "buffers in set 0")
        if ep.local_size is not None:
            size, limit = ep.local_size, props["max_workgroup_size"]
            if any(s > m for s, m in zip(size, limit)) or math.prod(size) > props["max_workgroup_invocations"]:
                raise KernelError(f"kernel {entry!r} has workgroup size {size}; the device allows "
                                  f"{limit} and {props['max_workgroup_invocations']} invocations")
        if ep.workgroup_memory_bytes > props["max_workgroup_shared_memory"]:
            raise KernelError(f"kernel {entry!r} uses {ep.workgroup_memory_bytes} bytes of "
                              f"workgroup memory; {props['device_name']} has "
                              f"{props['max_workgroup_shared_memory']}")

    # -- public: running -----------------------------------------------------

    def dispatch(self, kernel: Kernel, buffers: Sequence[Any],
                 groups: int | Sequence[int] = 1, *, profile: bool = False) -> list[float] | None:
        """Run one kernel over `groups` workgroups and wait for it."""
        return self.run([(kernel, buffers, groups)], profile=profile)

    def run(self, steps: Iterable[Step], *, profile: bool = False) -> list[float] | None:
        """Record `(kernel, buffers, groups)` steps in order into one command
        buffer (a memory barrier between consecutive steps, so a step sees its
        predecessors' writes), submit it and wait on one fence.

        A buffer entry may be a Python/numpy scalar: it is passed in a
        transient one-element buffer (int -> i32, float -> f32).
        With `profile`, returns each step's device time in seconds."""
        self._check_open()
        transient: list[Buffer] = []
        try:
            norm = self._normalize(steps, transient)
            if not norm:
                return [] if profile else None
            with self._lock:
                pool = self._transient_descriptor_pool(len(norm), sum(k.num_buffers for k, _, _ in norm))
                try:
                    sets = self._write_descriptor_sets(pool, norm)
                    self._record(self._cmd, norm, sets, profile, one_time=True)
                    return self._submit(self._cmd, len(norm) if profile else 0)
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
            raise DispatchError("a recording cannot take scalars (their buffer would be fixed); "
                                "pass a `Device.scalar(...)` buffer and write to it between runs")
        with self._lock:
            return Recording(self, norm, profile)

    def _normalize(self, steps: Iterable[Step], transient: list[Buffer]
                   ) -> list[tuple[Kernel, list[Buffer], tuple[int, int, int]]]:
        props = self.properties
        out = []
        for n, step in enumerate(steps):
            try:
                kern, bufs, groups = step
            except (TypeError, ValueError):
                raise DispatchError(f"step {n} must be (kernel, buffers, groups), got {step!r}") from None
            if not isinstance(kern, Kernel) or kern.device is not self:
                raise DispatchError(f"step {n}: {kern!r} is not a kernel loaded on this device")
            g = (int(groups),) if isinstance(groups, (int, np.integer)) else tuple(int(x) for x in groups)
            if not 1 <= len(g) <= 3:
                raise DispatchError(f"step {n} ({kern.entry}): groups must have 1 to 3 entries, got {groups!r}")
            g = g + (1,) * (3 - len(g))
            limit = props["max_workgroup_count"]
            if any(x < 0 for x in g) or any(x > m for x, m in zip(g, limit)):
                raise DispatchError(f"step {n} ({kern.entry}): workgroup count {g} is outside the "
                                    f"device's limit {limit}")
            bufs = list(bufs)
            if len(bufs) != kern.num_buffers:
                raise DispatchError(f"step {n} ({kern.entry}): the kernel takes {kern.num_buffers} "
                                    f"buffers, got {len(bufs)}")
            for j, b in enumerate(bufs):
                if isinstance(b, Buffer):
                    if b.device is not self or b.closed:
                        why = "closed" if b.closed else "made on another device"
                        raise DispatchError(f"step {n} ({kern.entry}): buffer {j} is {why}")
                    if b._size > props["max_storage_buffer_range"]:
                        raise DispatchError(
                            f"step {n} ({kern.entry}): buffer {j} has {b._size} bytes; the device "
                            f"binds at most max_storage_buffer_range="
                            f"{props['max_storage_buffer_range']} bytes")
                elif isinstance(b, (bool, int, float, np.generic)) or (
                        isinstance(b, np.ndarray) and b.ndim == 0):
                    bufs[j] = self._scalar_buffer(b)
                    transient.append(bufs[j])
                else:
                    raise DispatchError(f"step {n} ({kern.entry}): argument {j} is a "
                                        f"{type(b).__name__}, not a Buffer or a scalar")
            out.append((kern, bufs, g))
        return out

    def _scalar_buffer(self, value: Any) -> Buffer:
        if isinstance(value, (np.generic, np.ndarray)):
            return self.scalar(value, value.dtype)
        if isinstance(value, float):
            return self.scalar(value, np.float32)
        if not -(2**31) <= int(value) < 2**31:
            raise DispatchError(f"scalar {value} does not fit an i32; pass a numpy scalar of "
                                "the kernel's type")
        return self.scalar(int(value), np.int32)

    # -- recording and submission ------------------------------------------

    def _make_descriptor_pool(self, sets: int, descriptors: int) -> Any:
        vk = self._vk
        return vk.vkCreateDescriptorPool(self._device, vk.VkDescriptorPoolCreateInfo(
            maxSets=max(1, sets), poolSizeCount=1, pPoolSizes=[vk.VkDescriptorPoolSize(
                type=_STORAGE_BUFFER, descriptorCount=max(1, descriptors))]), None)

    def _transient_descriptor_pool(self, sets: int, descriptors: int) -> Any:
        have_sets, have_desc = self._desc_capacity
        if self._desc_pool is None or sets > have_sets or descriptors > have_desc:
            if self._desc_pool is not None:
                self._vk.vkDestroyDescriptorPool(self._device, self._desc_pool, None)
                self._desc_pool = None
            cap = (max(64, 1 << (sets - 1).bit_length()), max(512, 1 << (descriptors - 1).bit_length()))
            self._desc_pool = self._make_descriptor_pool(*cap)
            self._desc_capacity = cap
        return self._desc_pool

    def _write_descriptor_sets(self, pool: Any, steps: list) -> list[Any]:
        """One descriptor set per distinct (kernel, buffers), all written in
        one vkUpdateDescriptorSets call."""
        vk = self._vk
        index: dict[tuple, int] = {}
        layouts, step_slot, distinct = [], [], []
        for kern, bufs, _ in steps:
            key = (id(kern), tuple(id(b) for b in bufs))
            if key not in index:
                index[key] = len(layouts)
                layouts.append(kern._set_layout)
                distinct.append((kern, bufs))
            step_slot.append(index[key])
        allocated = vk.vkAllocateDescriptorSets(self._device, vk.VkDescriptorSetAllocateInfo(
            descriptorPool=pool, descriptorSetCount=len(layouts), pSetLayouts=layouts))
        sets = [allocated[i] for i in range(len(layouts))]
        writes = []
        for s, (kern, bufs) in zip(sets, distinct):
            for j, b in enumerate(bufs):
                writes.append(vk.VkWriteDescriptorSet(
                    dstSet=s, dstBinding=j, descriptorCount=1, descriptorType=_STORAGE_BUFFER,
                    pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=b._handle, offset=0, range=b._size)]))
        if writes:
            vk.vkUpdateDescriptorSets(self._device, len(writes), writes, 0, None)
        return [sets[i] for i in step_slot]

    def _barrier(self, cmd: Any, src_stage: int, dst_stage: int, src: int, dst: int) -> None:
        vk = self._vk
        vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, [vk.VkMemoryBarrier(
            srcAccessMask=src, dstAccessMask=dst)], 0, None, 0, None)

    def _record(self, cmd: Any, steps: list, sets: list, profile: bool, *, one_time: bool) -> None:
        vk = self._vk
        queries = 0
        if profile:
            if not self.properties["supports_timestamps"]:
                raise DispatchError(f"{self.properties['device_name']} has no timestamps on its "
                                    "compute queue: profile=True is unavailable")
            queries = len(steps) + 1
            if self._query_pool is None or self._query_capacity < queries:
                if self._query_pool is not None:
                    vk.vkDestroyQueryPool(self._device, self._query_pool, None)
                self._query_capacity = max(64, 1 << (queries - 1).bit_length())
                self._query_pool = vk.vkCreateQueryPool(self._device, vk.VkQueryPoolCreateInfo(
                    queryType=_QUERY_TIMESTAMP, queryCount=self._query_capacity), None)
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(flags=0x1 if one_time else 0))
        # Make host writes and earlier submissions' writes visible to the shaders.
        self._barrier(cmd, _PS_HOST | _PS_TRANSFER | _PS_COMPUTE, _PS_COMPUTE,
                      _A_HOST_WRITE | _A_TRANSFER_WRITE | _A_SHADER_WRITE,
                      _A_SHADER_READ | _A_SHADER_WRITE)
        if queries:
            vk.vkCmdResetQueryPool(cmd, self._query_pool, 0, queries)
            vk.vkCmdWriteTimestamp(cmd, _PS_TOP, self._query_pool, 0)
        bound = None
        for n, ((kern, _, g), s) in enumerate(zip(steps, sets)):
            if n:
                # Read-after-write and write-after-write between dispatches.
                self._barrier(cmd, _PS_COMPUTE, _PS_COMPUTE, _A_SHADER_WRITE,
                              _A_SHADER_READ | _A_SHADER_WRITE)
            if kern is not bound:
                vk.vkCmdBindPipeline(cmd, _BIND_COMPUTE, kern._pipeline)
                bound = kern
            vk.vkCmdBindDescriptorSets(cmd, _BIND_COMPUTE, kern._layout, 0, 1, [s], 0, None)
            if all(g):
                vk.vkCmdDispatch(cmd, *g)
            if queries:
                vk.vkCmdWriteTimestamp(cmd, _PS_BOTTOM, self._query_pool, n + 1)
        # Make the shaders' writes visible to the host (read through the
        # mapping) and to transfers (read through staging).
        self._barrier(cmd, _PS_COMPUTE, _PS_HOST | _PS_TRANSFER, _A_SHADER_WRITE,
                      _A_HOST_READ | _A_TRANSFER_READ)
        vk.vkEndCommandBuffer(cmd)

    def _submit(self, cmd: Any, timed_steps: int) -> list[float] | None:
        vk, d = self._vk, self._device
        with self._lock:
            try:
                vk.vkQueueSubmit(self._queue, 1, [vk.VkSubmitInfo(
                    commandBufferCount=1, pCommandBuffers=[cmd])], self._fence)
                vk.vkWaitForFences(d, 1, [self._fence], vk.VK_TRUE, _FENCE_TIMEOUT_NS)
                vk.vkResetFences(d, 1, [self._fence])
            except vk.VkError as e:
                raise VulkanError(f"submitting to {self.properties['device_name']} failed: "
                                  f"{_vk_name(e)}") from e
            if not timed_steps:
                return None
            data = vk.ffi.new("uint64_t[]", timed_steps + 1)
            vk.vkGetQueryPoolResults(d, self._query_pool, 0, timed_steps + 1, 8 * (timed_steps + 1),
                                     data, 8, _QUERY_RESULT_64_WAIT)
        mask = _U64_MAX if self._timestamp_bits >= 64 else (1 << self._timestamp_bits) - 1
        period = self.properties["timestamp_period_ns"] * 1e-9
        ts = [int(data[i]) for i in range(timed_steps + 1)]
        return [((b - a) & mask) * period for a, b in zip(ts, ts[1:])]

    # -- lifetime ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise VulkanError("device is closed")

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
        vk = self._vk
        d = self._device
        if d is not None:
            vk.vkDeviceWaitIdle(d)
            for r in list(self._recordings):
                r.close()
            for b in list(self._buffers):
                b.close()
            if getattr(self, "_staging", None) is not None:
                self._staging.close()
                self._staging = None
            for k in self._kernels.values():
                k._destroy()
            self._kernels.clear()
            for name, destroy in (("_query_pool", vk.vkDestroyQueryPool),
                                  ("_desc_pool", vk.vkDestroyDescriptorPool),
                                  ("_pipeline_cache", vk.vkDestroyPipelineCache),
                                  ("_fence", vk.vkDestroyFence),
                                  ("_cmd_pool", vk.vkDestroyCommandPool)):
                h = getattr(self, name, None)
                if h is not None:
                    destroy(d, h, None)
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
        except Exception:
            pass

    def __repr__(self) -> str:
        name = getattr(self, "properties", {}).get("device_name", "?")
        return f"<vulkan.Device {name!r}{' closed' if self._closed else ''}>"


def _type_code(info: dict[str, Any]) -> int:
    return {v: k for k, v in _DEVICE_TYPES.items()}[info["device_type"]]
