"""Compute kernels: a SPIR-V entry point checked against the device, then a
shader module, descriptor-set layout and compute pipeline."""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

from . import _vkenums as E
from .errors import KernelError
from .spirv import EntryPoint, Module

if TYPE_CHECKING:
    from .device import Device

# SPIR-V capability -> the `Device.properties` flag it needs.
CAPABILITY_NEEDS = {
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


def check_kernel(
    props: dict[str, Any],
    module: Module,
    ep: EntryPoint,
    num_buffers: int | None,
    error: type[Exception] = KernelError,
) -> int:
    """Refuse, with a message naming the rule, what the device cannot run
    (drivers crash or miscompute instead). Returns the buffer count.
    `error` is the class raised (runtime.wgpu, which reuses these checks on
    its adapter's limits, raises its own KernelError)."""
    entry, dev = ep.name, props["device_name"]
    if ep.execution_model != E.GLCOMPUTE:
        raise error(
            f"entry point {entry!r} is not a GLCompute shader (execution model "
            f"{ep.execution_model}); an OpenCL `Kernel` module needs an OpenCL "
            "runtime, not Vulkan"
        )
    if module.version > props["max_spirv_version"]:
        have, most = module.version, props["max_spirv_version"]
        raise error(
            f"kernel {entry!r} is SPIR-V {have[0]}.{have[1]}; Vulkan "
            f"{props['api_version']} takes up to {most[0]}.{most[1]}"
        )
    missing = sorted(
        c
        for c in module.capabilities
        if c in CAPABILITY_NEEDS and not props.get(CAPABILITY_NEEDS[c])
    )
    if missing:
        raise error(
            f"kernel {entry!r} needs SPIR-V capabilities {missing}, which {dev} " "does not support"
        )
    for b in ep.bindings:
        if b.set != 0 or not b.is_storage_buffer:
            raise error(
                f"kernel {entry!r} declares a {b.storage_class} descriptor at (set "
                f"{b.set}, binding {b.binding}); the ABI is storage buffers in set 0"
            )
    if ep.local_size is not None:
        size, limit = ep.local_size, props["max_workgroup_size"]
        most = props["max_workgroup_invocations"]
        if any(s > m for s, m in zip(size, limit)) or math.prod(size) > most:
            raise error(
                f"kernel {entry!r} has workgroup size {size}; {dev} allows {limit} "
                f"and {most} invocations in all"
            )
    if ep.workgroup_memory_bytes > props["max_workgroup_shared_memory"]:
        raise error(
            f"kernel {entry!r} uses {ep.workgroup_memory_bytes} bytes of workgroup "
            f"memory; {dev} has {props['max_workgroup_shared_memory']}"
        )
    used = sorted({b.binding for b in ep.bindings})
    n = num_buffers if num_buffers is not None else (used[-1] + 1 if used else 0)
    if used and used[-1] >= n:
        raise error(
            f"kernel {entry!r} uses binding {used[-1]} but num_buffers={n}: "
            "argument i must be binding i"
        )
    if n > props["max_per_stage_storage_buffers"]:
        raise error(
            f"kernel {entry!r} takes {n} buffers; {dev} binds at most "
            f"{props['max_per_stage_storage_buffers']} storage buffers per stage"
        )
    return n


class Kernel:
    """A loaded compute kernel; owned by its device, freed with it.

    `entry`, `num_buffers`, `local_size` (None when sized by a specialization
    constant) and `workgroup_memory_bytes` come from the SPIR-V itself."""

    def __init__(self, device: Device, spirv: bytes, ep: EntryPoint, num_buffers: int) -> None:
        self.device = device
        self.entry = ep.name
        self.num_buffers = num_buffers
        self.local_size = ep.local_size
        self.workgroup_memory_bytes = ep.workgroup_memory_bytes
        self.spirv_sha256 = hashlib.sha256(spirv).hexdigest()
        vk, d = device._vk, device._device
        self._module = self._set_layout = self._layout = self._pipeline = None
        try:
            self._module = vk.vkCreateShaderModule(
                d, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None
            )
            bindings = [
                vk.VkDescriptorSetLayoutBinding(
                    binding=i,
                    descriptorType=E.STORAGE_BUFFER,
                    descriptorCount=1,
                    stageFlags=E.STAGE_COMPUTE,
                )
                for i in range(num_buffers)
            ]
            self._set_layout = vk.vkCreateDescriptorSetLayout(
                d,
                vk.VkDescriptorSetLayoutCreateInfo(
                    bindingCount=num_buffers, pBindings=bindings or None
                ),
                None,
            )
            self._layout = vk.vkCreatePipelineLayout(
                d,
                vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[self._set_layout]),
                None,
            )
            stage = vk.VkPipelineShaderStageCreateInfo(
                stage=E.STAGE_COMPUTE, module=self._module, pName=self.entry
            )
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self._layout)
            self._pipeline = vk.vkCreateComputePipelines(
                d, device._pipeline_cache, 1, [info], None
            )[0]
        except vk.VkError as e:
            self.destroy()
            raise KernelError(
                f"the driver refused kernel {self.entry!r}: {E.error_name(e)} (check "
                "the module with `spirv-val --target-env vulkan1.1`)"
            ) from e

    def destroy(self) -> None:
        """Free the Vulkan objects (the device does this when it closes)."""
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
        return (
            f"<vulkan.Kernel {self.entry!r} buffers={self.num_buffers} "
            f"local_size={self.local_size}>"
        )
