"""Errors of the wgpu runtime (all are `poot_mlir.errors.PootError`s)."""

from __future__ import annotations

from poot_mlir.errors import PootError


class WgpuError(PootError, RuntimeError):
    """A wgpu call failed, or the runtime refused a request; the message
    names the rule or the failing call."""


class WgpuUnavailable(WgpuError):
    """No usable wgpu: the `wgpu` Python package (pip install "poot_mlir[wgpu]")
    or an adapter matching the preference is missing. The message says which."""


class KernelError(WgpuError, ValueError):
    """A SPIR-V kernel was refused at load time: not SPIR-V, no such entry
    point, more than the adapter allows, or naga (wgpu's shader translator)
    rejected it (its message is included)."""


class DispatchError(WgpuError, ValueError):
    """A dispatch was refused before anything was submitted (wrong number of
    buffers, a closed buffer, a workgroup count or binding past a limit)."""
