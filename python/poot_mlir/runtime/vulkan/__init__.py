"""Vulkan compute runtime for the SPIR-V kernels poot_mlir produces.

Imports no MLIR (an artifact runs where no compiler is installed): only numpy
and, lazily on `Device(...)`, the PyPI `vulkan` cffi bindings. In CI it runs
on Mesa lavapipe, a CPU Vulkan device; see docs/vulkan-lavapipe.md.

    from poot_mlir.runtime import vulkan as vk
    with vk.Device(prefer="lavapipe") as dev:
        kern = dev.load_kernel(spirv, entry="add", num_buffers=3)
        a, b = dev.buffer_from(x), dev.buffer_from(y)
        c = dev.empty(x.nbytes)
        dev.dispatch(kern, [a, b, c], groups=(n // 64, 1, 1))
        out = c.read(np.float32, x.shape)
"""

from .buffer import Buffer
from .device import Device, Recording, Step
from .kernel import Kernel
from .errors import DispatchError, KernelError, VulkanError, VulkanUnavailable
from .spirv import reflect

__all__ = [
    "Buffer",
    "Device",
    "DispatchError",
    "Kernel",
    "KernelError",
    "Recording",
    "Step",
    "VulkanError",
    "VulkanUnavailable",
    "available",
    "reflect",
]


def available(prefer: str | int = "any") -> tuple[bool, str]:
    """(True, device name) if a `Device(prefer)` can be made, else (False, why)."""
    try:
        with Device(prefer) as dev:
            return True, dev.properties["device_name"]
    except VulkanUnavailable as e:
        return False, str(e)
