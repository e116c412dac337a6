"""What a wgpu adapter offers, as the plain dict the runtime.vulkan kernel
checks and the compiler's device description read.

The keys are the ones runtime.vulkan.properties uses (so one check,
runtime.vulkan.kernel.check_kernel, serves both runtimes, and
compiler.devices.from_wgpu_limits mirrors from_vulkan_properties); the
values come from the adapter's WebGPU limits and features. `limits` keeps
the adapter's own names (max-compute-workgroup-storage-size, ...).
"""

from __future__ import annotations

import os
from typing import Any

#: WebGPU features a kernel of ours may use; requested when the adapter has them.
WANTED_FEATURES = ("shader-f16", "shader-f64", "shader-int64", "shader-i16", "subgroup")


def describe(adapter: Any) -> dict[str, Any]:
    info = adapter.info
    limits = {k: int(v) for k, v in dict(adapter.limits).items()}
    features = set(adapter.features)
    cpu = str(info.get("adapter_type", "")).lower() == "cpu"
    return {
        "device_name": str(info.get("device", "wgpu")),
        "device_type": "cpu" if cpu else str(info.get("adapter_type", "")).lower(),
        "backend": str(info.get("backend_type", "")),
        "api_version": "WebGPU (wgpu-native, %s backend)" % info.get("backend_type", "?"),
        # naga reads SPIR-V up to 1.6; the kernels are 1.0.
        "max_spirv_version": (1, 6),
        "max_workgroup_shared_memory": limits["max-compute-workgroup-storage-size"],
        "max_workgroup_count": (limits["max-compute-workgroups-per-dimension"],) * 3,
        "max_workgroup_size": (
            limits["max-compute-workgroup-size-x"],
            limits["max-compute-workgroup-size-y"],
            limits["max-compute-workgroup-size-z"],
        ),
        "max_workgroup_invocations": limits["max-compute-invocations-per-workgroup"],
        "max_storage_buffer_range": limits["max-storage-buffer-binding-size"],
        "max_per_stage_storage_buffers": limits["max-storage-buffers-per-shader-stage"],
        "min_storage_buffer_offset_alignment": limits["min-storage-buffer-offset-alignment"],
        "max_memory_allocation_size": limits["max-buffer-size"],
        # WebGPU reports no compute-unit count; a CPU adapter (llvmpipe) runs
        # workgroups on LP_NUM_THREADS threads (default: the cores).
        "compute_units": int(os.environ.get("LP_NUM_THREADS") or os.cpu_count() or 1) if cpu else None,
        # (wgpu-py 0.32 spells the key "stackgroup_min_size".)
        "subgroup_size": int(info.get("subgroup_min_size") or info.get("stackgroup_min_size") or 32),
        "supports_float16": "shader-f16" in features,
        "supports_float64": "shader-f64" in features,
        "supports_int64": "shader-int64" in features,
        "supports_int16": "shader-i16" in features,
        # WGSL and naga have no 8-bit types: kernels for wgpu keep bytes in
        # 32-bit words (the SPIR-V pipeline's client=wgpu).
        "supports_int8": False,
        "supports_storage_buffer_8bit": False,
        "supports_storage_buffer_16bit": "shader-f16" in features,
        "supports_variable_pointers": False,
        "supports_int64_atomics": False,
        "subgroup_basic": "subgroup" in features,
        "features": tuple(sorted(features)),
        "limits": limits,
    }
