"""Errors of the Vulkan runtime (all are `poot_mlir.errors.PootError`s)."""

from __future__ import annotations

from poot_mlir.errors import PootError


class VulkanError(PootError, RuntimeError):
    """A Vulkan call failed, or the runtime refused a request; the message
    names the rule or the failing call."""


class VulkanUnavailable(VulkanError):
    """No usable Vulkan: the `vulkan` Python package, the loader
    (libvulkan.so.1) or a driver (ICD) is missing, or no device matches the
    preference. The message says which, and how to install it."""


class KernelError(VulkanError, ValueError):
    """A SPIR-V kernel was refused at load time (not SPIR-V, no such entry
    point, asks for more than the device has, binding ABI mismatch)."""


class DispatchError(VulkanError, ValueError):
    """A dispatch was refused before anything was recorded (wrong number of
    buffers, a closed buffer, a workgroup count past the device's limit)."""
