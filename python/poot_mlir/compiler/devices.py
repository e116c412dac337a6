"""Device descriptions: what the planner needs to know about a target.

A description is plain data (no MLIR): the compiler passes it to the
`poot-plan-attention` pass as options, and the artifact records it. The
device is described once, in C++ (lib/Transforms/DeviceDescription.h, one
set of defaults that every pass and pipeline reads); `Device`'s defaulted
fields mirror those defaults (the runtime imports this module without MLIR,
so it cannot read them), and test_device_description.py checks the mirror
against `_pootTargets.device_defaults()`. Presets
cover the devices we build for; `Device.custom(...)` describes any other,
`from_vulkan_properties` reads a real Vulkan device and `from_wgpu_limits` a
wgpu adapter.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping

from ..errors import UnknownDeviceError


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
    #: CPU only: f32 lanes of the host's SIMD registers (16 AVX-512, 8 AVX2,
    #: 4 SSE/NEON). > 0 plans the CPU's own attention schedule; 0 runs the
    #: GPU schedules as loops (the reference the GPU kernels are checked by).
    vector_width: int = 0
    #: CPU only: the host has AVX512-BF16 (and 16-lane vectors). A bf16 x
    #: bf16 linear layer with a torch Linear's [N, K] weight then runs on
    #: `vdpbf16ps` (x86vector.avx512.dot): two products a lane an
    #: instruction, exact, added in f32 (bf16 subnormal inputs read as 0:
    #: the instruction's DAZ); False widens bf16 to f32 for f32 FMAs.
    bf16_dot: bool = False
    #: Who reads SPIR-V (target spirv): "vulkan" (a Vulkan driver) or "wgpu"
    #: (naga: no 8-bit types, so bytes are kept in 32-bit words).
    client: str = "vulkan"
    #: Most split-KV partitions per row the planner may use (1: never split;
    #: every schedule also has its own, smaller bound). A tuning and testing
    #: knob: 1 forces the unsplit schedules.
    max_splits: int = 128
    #: NVVM only: let the planner use the chip's tensor cores (mma.sync,
    #: sm_80 and up) for two-byte prefill (`tiled_prefill_mma`); False
    #: keeps the FFMA tiled schedule (a comparison and fallback knob).
    tensor_cores: bool = True
    #: NVVM with tensor cores only: plan two-byte wide-head decodes (MQA /
    #: absorbed MLA) on mma.sync (`wide_head_mma`, docs/wide-head-decode.md;
    #: the default, verified on the H200); False keeps the FFMA `wide_head`.
    wide_head_mma: bool = True
    #: NVIDIA warp decode only: N >= 1 (default 4) reads K/V rows as 16-byte
    #: vectors and loads up to N keys a warp step before using any
    #: (docs/warp-decode.md; verified on the H200; the planner may take
    #: fewer); 0 keeps the scalar one-key-a-step form.
    max_unroll: int = 4
    #: NVIDIA warp decode of two-byte keys only: N >= 2 (default 2) lets a
    #: row that a whole warp would not read in 16-byte vectors (bf16/f16
    #: D = 128) take 32 / N lanes, so a warp-wide load reads N keys (half-warp
    #: rows; docs/warp-decode.md; verified on the H200); 1: whole-warp rows.
    max_keys_per_load: int = 2
    #: NVIDIA whole steps only: a kernel of few threads whose threads each run
    #: a long reduction (a split matmul's final sum, a norm's row sum) gets
    #: up to 32 lanes of a warp per thread, combined by shuffles
    #: (poot-gpu-warp-reductions, docs/gpu-steps.md); False: one thread each
    #: (a comparison knob). A batch-invariant device runs without it (its
    #: lanes follow the kernel's thread count, which follows the batch).
    warp_reductions: bool = True
    #: Whole GPU steps: a batched matmul's thread computes up to N rows, so
    #: the weight element they share is loaded once for all of them
    #: (poot-gpu-jam-rows, docs/gpu-steps.md); 1: a thread per row.
    jam_rows: int = 8
    #: NVIDIA whole steps with tensor cores (sm_80 and up) only: two-byte
    #: matmuls with at least N rows (batched decode, serving rows, prefill
    #: projections) run on mma.sync (poot-gpu-mma-matmuls, docs/gpu-steps.md);
    #: 0 keeps them on CUDA cores. 1 (every row count): a one-row GEMV as a
    #: 16-row tile with 15 rows masked reads its weight faster than the
    #: CUDA-core GEMV (bench/NOTES.md, H100). Off on a batch-invariant device.
    mma_matmul_rows: int = 1
    #: Of those, the matmuls with at least N rows and whole 128-column tiles
    #: run the staged kernel: operand tiles through workgroup memory by
    #: cp.async, fragments by ldmatrix; fewer rows the direct kernel (each
    #: warp loads its fragments). 0: never staged. Default 1 (every row
    #: count): verified against float64 on an H100, racecheck-clean, and as
    #: fast as the direct kernel or faster at every measured size
    #: (bench/mma_matmul_check.py, bench/NOTES.md).
    mma_staged_rows: int = 1
    #: NVIDIA sm_90 and up only: programmatic dependent launch. Every kernel
    #: waits on `griddepcontrol.wait` before anything else
    #: (poot-gpu-dependent-launch), so the CUDA runtime launches it with
    #: programmatic stream serialization: its launch and its workgroups'
    #: start overlap the tail of the kernel ahead instead of following it
    #: (docs/gpu-steps.md). The manifest records it; the runtime reads it.
    #: Off: on an H100 (bench/NOTES.md, session 43) a B=1 decode step ran
    #: the same, B=16 3.7% faster, a 64-row serving decode step 10% slower.
    dependent_launch: bool = False
    #: Batch invariance (issue 24): every reduction order a row sees is
    #: chosen for one row, never from the batch it is packed into -- the
    #: attention planner's split-KV count and chunks as if the batch were 1
    #: (every target), a whole GPU step's matmul split ratios per row
    #: (poot-gpu-split-reductions) and no warp-lane spreading of reductions
    #: (poot-gpu-warp-reductions, NVIDIA) -- so a request's output is
    #: bit-identical alone or batched. Costs a large batch splits (partials
    #: and a combine launch) it would not otherwise need, and NVIDIA steps
    #: their warp reductions (docs/attention-schedules.md, docs/gpu-steps.md).
    batch_invariant: bool = False

    def pipeline_options(self) -> str:
        """The device description as pass-pipeline options."""
        return self._limit_options() + self._lowering_options()

    def _limit_options(self) -> str:
        return (
            f"workgroup-memory={self.workgroup_memory} "
            f"max-grid-x={self.max_grid_x} max-grid-y={self.max_grid_y} "
            f"compute-units={self.compute_units} "
            f"max-buffer-bytes={self.max_buffer_bytes} "
            f"max-alloc-bytes={self.max_alloc_bytes} "
            f"max-splits={self.max_splits}"
            # Named only when on: the default's options (and artifacts) stay
            # as they were.
            + (" batch-invariant=1" if self.batch_invariant else "")
        )

    def _lowering_options(self) -> str:
        opts = f" chip={self.chip}" if self.chip else ""
        if self.target == "nvvm" and not self.tensor_cores:
            opts += " tensor-cores=0"
        if self.target == "nvvm":
            opts += f" wide-head-mma={int(self.wide_head_mma)}"
            opts += f" warp-reductions={int(self.warp_reductions)}"
            opts += f" mma-matmul-rows={self.mma_matmul_rows}"
            opts += f" mma-staged-rows={self.mma_staged_rows}"
            if self.dependent_launch:
                opts += " dependent-launch=1"
        opts += self._warp_options()
        if self.target in ("spirv", "nvvm", "rocdl"):
            opts += f" jam-rows={self.jam_rows}"
        if self.target == "spirv" and self.client != "vulkan":
            opts += f" client={self.client}"
        return opts

    def _warp_options(self) -> str:
        # The warp decode's knobs (NVVM only), always named: the device
        # description, not the pass's defaults, decides.
        if self.target != "nvvm":
            return ""
        return f" max-unroll={self.max_unroll} max-keys-per-load={self.max_keys_per_load}"

    def plan_options(self) -> str:
        """Options of the `poot-plan-attention` pass alone."""
        return f"target={self.target} " + self._limit_options() + self._warp_options()

    def with_limits(self, **changes: Any) -> "Device":
        """A copy with some limits changed (e.g. a small X grid for tests)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        # Recorded only when on, so a manifest of the default build reads as
        # it did before the field existed (Device(**json) restores False).
        if not self.batch_invariant:
            del fields["batch_invariant"]
        if not self.bf16_dot:
            del fields["bf16_dot"]
        if not self.dependent_launch:
            del fields["dependent_launch"]
        return fields

    @staticmethod
    def custom(**fields: Any) -> "Device":
        """Any device, described field by field."""
        return Device(**fields)


GiB = 1 << 30

def _cpu_flags() -> set[str]:
    """The host's CPU feature flags (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return set()


def _vector_width(flags: set[str]) -> int:
    """f32 lanes of the widest vector registers LLVM targets on this host."""
    if "avx512f" in flags:
        return 16
    if "avx2" in flags or "avx" in flags:
        return 8
    return 4  # SSE2 (every x86-64), NEON/ASIMD (every AArch64)


def _bf16_dot(flags: set[str]) -> bool:
    """AVX512-BF16's vdpbf16ps, at the 16-lane vectors it runs on
    (`POOT_CPU_BF16_DOT=0` turns it off: a comparison knob)."""
    return ("avx512_bf16" in flags and "avx512f" in flags
            and _env_int("POOT_CPU_BF16_DOT", 1) > 0)


def _l1_data_bytes() -> int:
    """The per-core L1 data cache (the CPU schedule's key-block budget)."""
    try:
        size = os.sysconf("SC_LEVEL1_DCACHE_SIZE")
        if size > 0:
            return int(size)
    except (ValueError, OSError, AttributeError):
        pass
    try:
        text = open("/sys/devices/system/cpu/cpu0/cache/index0/size").read().strip()
        return int(text.rstrip("K")) * 1024 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        return 32 * 1024


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        parsed = int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None
    if parsed < 0:
        raise ValueError(f"{name}={value!r} must be >= 0")
    return parsed


def detect_cpu() -> Device:
    """The host CPU as the planner sees it: its cores (the threads the step
    may use: the affinity mask), its vector width and its L1 data cache.
    `POOT_CPU_CORES` and `POOT_CPU_VECTOR_WIDTH` override the detection
    (`Device.with_limits` does so per compile)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return Device(
        name="cpu",
        target="cpu",
        workgroup_memory=_l1_data_bytes(),
        max_grid_x=1 << 31,
        max_grid_y=1 << 31,
        compute_units=max(1, _env_int("POOT_CPU_CORES", cores)),
        max_buffer_bytes=64 * GiB,
        max_alloc_bytes=64 * GiB,
        vector_width=_env_int("POOT_CPU_VECTOR_WIDTH", _vector_width(_cpu_flags())),
        bf16_dot=_bf16_dot(_cpu_flags()),
    )


#: The host CPU (detected at import): the CPU schedule, vectors of the
#: host's width, work split over its cores.
CPU = detect_cpu()

#: The CPU running the GPU schedules as loops (lanes as iterations, so
#: workgroup memory is plentiful): the reference the GPU kernels match.
CPU_SEED = Device(
    name="cpu-seed",
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

#: Mesa lavapipe through wgpu (wgpu-py 0.32's Vulkan backend), read from the
#: adapter's limits in CI: the same 32 KiB of workgroup storage and 128 MiB
#: binding size as raw Vulkan; SPIR-V for naga.
WGPU_LAVAPIPE = dataclasses.replace(VULKAN_LAVAPIPE, name="wgpu-lavapipe", client="wgpu")

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
    d.name: d for d in (CPU, CPU_SEED, VULKAN_LAVAPIPE, WGPU_LAVAPIPE, SM_90, GFX942)
}


def get(name: str) -> Device:
    """A preset by name (cpu, cpu-seed, vulkan-lavapipe, wgpu-lavapipe, sm_90,
    gfx942); an unknown name is an `errors.UnknownDeviceError` (a KeyError)
    listing the known ones."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        known = tuple(sorted(PRESETS))
        raise UnknownDeviceError(
            f"unknown device {name!r}; the known device names are {', '.join(known)} "
            "(devices.get(name)); describe any other device with Device.custom(...), "
            "devices.from_vulkan_properties(...) or devices.from_wgpu_limits(...)",
            name=str(name),
            known=known,
        ) from None


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


def from_wgpu_limits(
    limits: Mapping[str, Any],
    name: str = "wgpu",
    compute_units: int = 1,
    subgroup_size: int = 32,
) -> Device:
    """The description of a wgpu adapter from its WebGPU limits (the
    `adapter.limits` mapping of wgpu-py, or runtime.wgpu's
    `Device.properties["limits"]`): workgroup storage, dispatch size and
    binding size bound the planner; the invocations limit must admit the
    generator's 64-lane workgroups. WebGPU reports no compute-unit count:
    pass it (runtime.wgpu's properties estimate it for a CPU adapter)."""
    invocations = int(limits["max-compute-invocations-per-workgroup"])
    if invocations < 64 or int(limits["max-compute-workgroup-size-x"]) < 64:
        raise ValueError(
            f"adapter {name!r} runs {invocations} invocations per workgroup; "
            "the attention kernels need 64"
        )
    grid = int(limits["max-compute-workgroups-per-dimension"])
    return Device(
        name=name,
        target="spirv",
        workgroup_memory=int(limits["max-compute-workgroup-storage-size"]),
        max_grid_x=grid,
        max_grid_y=grid,
        compute_units=int(compute_units),
        max_buffer_bytes=int(limits["max-storage-buffer-binding-size"]),
        max_alloc_bytes=int(limits["max-buffer-size"]),
        subgroup_size=int(subgroup_size),
        client="wgpu",
    )
