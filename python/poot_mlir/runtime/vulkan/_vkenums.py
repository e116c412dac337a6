"""Vulkan enum values the runtime uses, and small version helpers.

Spelled here (they are fixed by the Vulkan ABI) so the runtime reads without
the `vulkan` package's 20,000 names, and so `spirv`/`kernel` checks need no
Vulkan at all.
"""

from __future__ import annotations

U64_MAX = 0xFFFF_FFFF_FFFF_FFFF  # the package's VK_WHOLE_SIZE is -1: unusable

COMPUTE_QUEUE = 0x2  # VK_QUEUE_COMPUTE_BIT
STORAGE_BUFFER = 7  # VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
STAGE_COMPUTE = 0x20  # VK_SHADER_STAGE_COMPUTE_BIT
BIND_COMPUTE = 1  # VK_PIPELINE_BIND_POINT_COMPUTE
BUFFER_USAGE = 0x1 | 0x2 | 0x20  # TRANSFER_SRC | TRANSFER_DST | STORAGE_BUFFER
CMD_POOL_RESET_BUFFER = 0x2  # VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
CMD_ONE_TIME_SUBMIT = 0x1  # VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
INSTANCE_ENUMERATE_PORTABILITY = 0x1

MEM_DEVICE_LOCAL = 0x1
MEM_HOST_VISIBLE = 0x2
MEM_HOST_COHERENT = 0x4
MEM_HOST_CACHED = 0x8

# Pipeline stages and access masks.
PS_TOP = 0x1
PS_COMPUTE = 0x800
PS_TRANSFER = 0x1000
PS_BOTTOM = 0x2000
PS_HOST = 0x4000
A_SHADER_READ = 0x20
A_SHADER_WRITE = 0x40
A_TRANSFER_READ = 0x800
A_TRANSFER_WRITE = 0x1000
A_HOST_READ = 0x2000
A_HOST_WRITE = 0x4000

QUERY_TIMESTAMP = 2
QUERY_RESULT_64_WAIT = 0x1 | 0x2

DEVICE_TYPES = {0: "other", 1: "integrated_gpu", 2: "discrete_gpu", 3: "virtual_gpu", 4: "cpu"}
DRIVER_ID_MESA_LLVMPIPE = 13
GLCOMPUTE = 5  # SPIR-V execution model


def version(v: int) -> tuple[int, int, int]:
    """Decode a packed Vulkan version."""
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


def make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


def error_name(e: BaseException) -> str:
    """`VkErrorOutOfDeviceMemory` etc.: the package's exception class names the result."""
    return type(e).__name__
