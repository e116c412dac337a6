"""wgpu compute runtime for the SPIR-V kernels poot_mlir produces (wgpu-py,
the PyPI `wgpu` package: WebGPU on Vulkan, Metal or D3D12 through
wgpu-native; naga translates each kernel).

Imports no MLIR; `wgpu` itself is imported on `Device(...)`. In CI it runs on
Mesa lavapipe through wgpu's Vulkan backend. Kernels must be compiled for
wgpu (`devices.WGPU_LAVAPIPE`, or any `Device` with `client="wgpu"`): naga
reads no 8-bit types and no non-finite float literals (docs/wgpu.md).

    from poot_mlir.runtime import wgpu as wg
    with wg.Device(prefer="lavapipe") as dev:
        kern = dev.load_kernel(spirv, entry="add", num_buffers=3)
        a, b, c = dev.buffer_from(x), dev.buffer_from(y), dev.empty(x.nbytes)
        dev.dispatch(kern, [a, b, c], groups=(n // 64, 1, 1))
        out = c.read(np.float32, x.shape)
"""

from .device import Buffer, BufferSlice, Device, Kernel, adapters
from .errors import DispatchError, KernelError, WgpuError, WgpuUnavailable

__all__ = [
    "Buffer",
    "BufferSlice",
    "Device",
    "DispatchError",
    "Kernel",
    "KernelError",
    "WgpuError",
    "WgpuUnavailable",
    "adapters",
    "available",
]


def available(prefer: "str | int" = "any") -> tuple[bool, str]:
    """(True, adapter name) if a `Device(prefer)` can be made, else (False, why)."""
    try:
        with Device(prefer) as dev:
            return True, dev.properties["device_name"]
    except WgpuUnavailable as e:
        return False, str(e)
