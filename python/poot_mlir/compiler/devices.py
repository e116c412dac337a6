"""Device descriptions: what the planner needs to know about a target.

A description is plain data (no MLIR): the compiler passes it to the
`poot-plan-attention` pass as options, and the artifact records it. Presets
cover the devices we build for; `Device.custom(...)` describes any other, and
`from_vulkan_properties` reads a real Vulkan device.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping


@dataclasses.dataclass(frozen=True)
class Device:
    """Limits of one device, as the planner uses them."""

    name: str
    #: cpu, spirv, nvvm or rocdl: how kernels are lowered.
    target: str
    #: Workgroup (shared / LDS) memory one workgroup may use, in bytes.
    workgroup_memory: int
    #: Largest workgroup count in X and Y of one launch.
    max_grid_x: int
    max_grid_y: int
    #: Compute units (SMs, CUs, cores) a launch can fill.
    compute_units: int
    #: Largest single buffer (e.g. Vulkan maxStorageBufferRange), in bytes.
    max_buffer_bytes: int
    #: Largest allocation the device can make, in bytes.
    max_alloc_bytes: int
    subgroup_size: int = 32
    #: GPU architecture for NVVM/ROCDL (sm_90, gfx942).
    chip: str = ""

    def pipeline_options(self) -> str:
        """The device description as pass-pipeline options."""
        opts = (
            f"workgroup-memory={self.workgroup_memory} "
            f"max-grid-x={self.max_grid_x} max-grid-y={self.max_grid_y} "
            f"compute-units={self.compute_units} "
            f"max-buffer-bytes={self.max_buffer_bytes} "
            f"max-alloc-bytes={self.max_alloc_bytes}"
        )
        if self.chip:
            opts += f" chip={self.chip}"
        return opts

    def plan_options(self) -> str:
        """Options of the `poot-plan-attention` pass alone."""
        return f"target={self.target} " + self.pipeline_options().split(" chip=")[0]

    def with_limits(self, **changes: Any) -> "Device":
        """A copy with some limits changed (e.g. a small X grid for tests)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def custom(**fields: Any) -> "Device":
        """Any device, described field by field."""
        return Device(**fields)


GiB = 1 << 30

#: The host CPU: lanes run as loops, so workgroup memory is plentiful.
CPU = Device(
    name="cpu",
    target="cpu",
    workgroup_memory=1 << 20,
    max_grid_x=1 << 31,
    max_grid_y=1 << 31,
    compute_units=1,
    max_buffer_bytes=64 * GiB,
    max_alloc_bytes=64 * GiB,
)

#: Mesa lavapipe (llvmpipe), read from the real device in CI: 32 KiB shared
#: memory, 128 MiB storage buffer range.
VULKAN_LAVAPIPE = Device(
    name="vulkan-lavapipe",
    target="spirv",
    workgroup_memory=32 * 1024,
    max_grid_x=65535,
    max_grid_y=65535,
    compute_units=2,
    max_buffer_bytes=128 * 1024 * 1024,
    max_alloc_bytes=4 * GiB,
    subgroup_size=8,
)

#: NVIDIA H200 (sm_90): 132 SMs, grid X up to 2^31 - 1. The generated kernels
#: declare their lane state as *static* shared memory, which ptxas caps at
#: 48 KiB per block (227 KiB needs dynamic shared memory and an opt-in), so
#: that is the planner's workgroup budget.
SM_90 = Device(
    name="sm_90",
    target="nvvm",
    workgroup_memory=48 * 1024,
    max_grid_x=(1 << 31) - 1,
    max_grid_y=65535,
    compute_units=132,
    max_buffer_bytes=140 * GiB,
    max_alloc_bytes=140 * GiB,
    subgroup_size=32,
    chip="sm_90",
)

#: AMD MI300X (gfx942): 304 CUs, 64 KiB LDS.
GFX942 = Device(
    name="gfx942",
    target="rocdl",
    workgroup_memory=64 * 1024,
    max_grid_x=(1 << 31) - 1,
    max_grid_y=65535,
    compute_units=304,
    max_buffer_bytes=192 * GiB,
    max_alloc_bytes=192 * GiB,
    subgroup_size=64,
    chip="gfx942",
)

PRESETS: dict[str, Device] = {
    d.name: d for d in (CPU, VULKAN_LAVAPIPE, SM_90, GFX942)
}


def get(name: str) -> Device:
    """A preset by name (cpu, vulkan-lavapipe, sm_90, gfx942)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown device {name!r}; presets: {sorted(PRESETS)}") from None


def from_vulkan_properties(props: Mapping[str, Any], name: str | None = None) -> Device:
    """The description of a real Vulkan device (runtime.vulkan properties)."""
    grid = props.get("max_workgroup_count", (65535, 65535, 65535))
    return Device(
        name=name or str(props.get("device_name", "vulkan")),
        target="spirv",
        workgroup_memory=int(props["max_workgroup_shared_memory"]),
        max_grid_x=int(grid[0]),
        max_grid_y=int(grid[1]),
        compute_units=int(props.get("compute_units", 1)),
        max_buffer_bytes=int(props["max_storage_buffer_range"]),
        max_alloc_bytes=int(props.get("max_allocation_size", 4 * GiB)),
        subgroup_size=int(props.get("subgroup_size", 32)),
    )
