"""Which device a target name means: the description the planner compiles
for and the runtime backend that runs it (one place for the CLI examples
and `models`)."""

from __future__ import annotations

from ..compiler import devices

__all__ = ["GPU_TARGETS", "describe"]

#: Target names that compile the whole step as GPU kernels.
GPU_TARGETS = ("vulkan", "wgpu", "cuda")


def describe(target: str) -> "devices.Device":
    """The device description of the first device of runtime `target`
    (vulkan / wgpu: Mesa lavapipe when there is no GPU; cuda)."""
    if target == "vulkan":
        from ..runtime.vulkan import Device

        with Device() as probe:
            return devices.from_vulkan_properties(probe.properties)
    if target == "wgpu":
        from ..runtime import wgpu

        with wgpu.Device() as probe:
            props = probe.properties
            return devices.from_wgpu_limits(
                props["limits"],
                name=f"wgpu {props['device_name']}",
                compute_units=props["compute_units"] or 1,
                subgroup_size=props["subgroup_size"],
            )
    if target == "cuda":
        from ..runtime.cuda import CudaBackend

        with CudaBackend() as probe:
            return probe.device_description()
    raise ValueError(f"unknown GPU target {target!r} (one of {GPU_TARGETS})")


def backend_of(device: "devices.Device") -> str:
    """The runtime backend that runs code compiled for `device`: NVVM on
    CUDA, SPIR-V on its client (a Vulkan driver or wgpu)."""
    if device.target == "nvvm":
        return "cuda"
    if device.target == "spirv":
        return device.client
    raise ValueError(
        f"device {device.name!r} (target {device.target}) has no runtime backend here "
        "(ROCDL compiles, but runs on no backend of this package)"
    )
