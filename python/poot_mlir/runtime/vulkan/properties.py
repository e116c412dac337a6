"""What a physical device offers, as a plain dict, and the features to enable.

The planner reads these numbers (workgroup memory for the lane count, the
grid limit, the single-buffer limit, compute units for split-K), so every key
is documented in docs/vulkan-lavapipe.md with what lavapipe reports.
"""

from __future__ import annotations

import os
from typing import Any

from . import _vkenums as E

SUBGROUP_OPS = (
    "basic",
    "vote",
    "arithmetic",
    "ballot",
    "shuffle",
    "shuffle_relative",
    "clustered",
    "quad",
)

# Features a kernel of ours may use; enabled at device creation when present.
# (Enabling everything a device lists would also turn on robustBufferAccess &
# co., which cost speed on real GPUs.)
_CORE_FEATURES = ("shaderFloat64", "shaderInt64", "shaderInt16")
_16BIT_FEATURES = ("storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess")
_VARP_FEATURES = ("variablePointersStorageBuffer", "variablePointers")
_V12_FEATURES = (
    "shaderFloat16",
    "shaderInt8",
    "storageBuffer8BitAccess",
    "uniformAndStorageBuffer8BitAccess",
    "shaderBufferInt64Atomics",
)


def _spirv_for(api: tuple[int, int]) -> tuple[int, int]:
    """The newest SPIR-V a Vulkan version must accept."""
    if api < (1, 1):
        return (1, 0)
    if api < (1, 2):
        return (1, 3)
    if api < (1, 3):
        return (1, 5)
    return (1, 6)


def describe(vk: Any, pd: Any) -> dict[str, Any]:
    """Properties and supported features of physical device `pd`.

    Keys starting with `_` are for the runtime itself (`_api`: the Vulkan
    version as a tuple; `_features`: what `feature_chain` enables)."""
    p = vk.vkGetPhysicalDeviceProperties(pd)
    api = E.version(p.apiVersion)
    lim = p.limits
    # Gotcha: the package returns a one-shot generator here.
    exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    info: dict[str, Any] = {
        "device_name": p.deviceName,
        "device_type": E.DEVICE_TYPES.get(p.deviceType, "other"),
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
        "max_spirv_version": _spirv_for(api[:2]),
        "extensions": tuple(sorted(exts)),
    }
    if api[:2] < (1, 1):
        return info  # refused by the device chooser anyway

    # pNext chains: every struct must stay referenced (a local here) until
    # the call returns, because the package keeps only weak links to them.
    subgroup = vk.VkPhysicalDeviceSubgroupProperties(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
    )
    maint3 = vk.VkPhysicalDeviceMaintenance3Properties(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
        pNext=subgroup,
    )
    head = maint3
    driver = sm = amd = None
    if api[:2] >= (1, 2):
        driver = vk.VkPhysicalDeviceDriverProperties(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, pNext=head
        )
        head = driver
    if "VK_NV_shader_sm_builtins" in exts:
        sm = vk.VkPhysicalDeviceShaderSMBuiltinsPropertiesNV(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV,
            pNext=head,
        )
        head = sm
    if "VK_AMD_shader_core_properties" in exts:
        amd = vk.VkPhysicalDeviceShaderCorePropertiesAMD(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD,
            pNext=head,
        )
        head = amd
    props2 = vk.VkPhysicalDeviceProperties2(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=head
    )
    vk.vkGetPhysicalDeviceProperties2(pd, props2)

    in_compute = bool(subgroup.supportedStages & E.STAGE_COMPUTE)
    ops = tuple(
        name
        for bit, name in enumerate(SUBGROUP_OPS)
        if in_compute and subgroup.supportedOperations & (1 << bit)
    )
    info["subgroup_size"] = subgroup.subgroupSize
    info["subgroup_operations"] = ops
    for name in SUBGROUP_OPS:
        info[f"subgroup_{name}"] = name in ops
    info["max_memory_allocation_size"] = maint3.maxMemoryAllocationSize
    if driver is not None:
        info["driver_id"] = driver.driverID
        info["driver_name"] = vk.ffi.string(driver.driverName).decode()
        info["driver_info"] = vk.ffi.string(driver.driverInfo).decode()
    # Vulkan has no portable "number of SMs/CUs"; the planner's split-K wants it.
    if sm is not None:
        units = sm.shaderSMCount
    elif amd is not None:
        units = (
            amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray
        )
    elif info["device_type"] == "cpu":
        # llvmpipe runs workgroups on LP_NUM_THREADS threads (default: cores).
        units = int(os.environ.get("LP_NUM_THREADS") or os.cpu_count() or 1)
    else:
        units = None
    info["compute_units"] = units

    f16 = vk.VkPhysicalDevice16BitStorageFeatures(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES
    )
    varp = vk.VkPhysicalDeviceVariablePointersFeatures(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES,
        pNext=f16,
    )
    head = varp
    v12 = None
    if api[:2] >= (1, 2):
        v12 = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, pNext=head
        )
        head = v12
    feats2 = vk.VkPhysicalDeviceFeatures2(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=head
    )
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

    def on(struct: Any, names: tuple[str, ...]) -> dict[str, int]:
        return {n: 1 for n in names if getattr(struct, n)}

    info["_features"] = {
        "core": on(core, _CORE_FEATURES),
        "16bit": on(f16, _16BIT_FEATURES),
        "varp": on(varp, _VARP_FEATURES),
        "v12": None if v12 is None else on(v12, _V12_FEATURES),
    }
    return info


def feature_chain(vk: Any, features: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """(pEnabledFeatures, pNext head, structs to keep alive) for
    vkCreateDevice, enabling the features `describe` found."""
    core = vk.VkPhysicalDeviceFeatures(**features["core"])
    f16 = vk.VkPhysicalDevice16BitStorageFeatures(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        **features["16bit"],
    )
    varp = vk.VkPhysicalDeviceVariablePointersFeatures(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES,
        pNext=f16,
        **features["varp"],
    )
    keep = [core, f16, varp]
    head = varp
    if features["v12"] is not None:
        head = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
            pNext=varp,
            **features["v12"],
        )
        keep.append(head)
    return core, head, keep
