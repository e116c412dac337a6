//===- DeviceDescription.h - the device attention is planned for --*- C++ -*-===//
//
// The one description of a device that every pass, pipeline and the Python
// compiler read, with the one set of defaults. The planner's options
// (poot-plan-attention), the GPU pipelines' options (poot-to-{spirv,nvvm,
// rocdl}, poot-step-to-*), the CPU pipeline's planner options and Python's
// `compiler.devices.Device` used to declare these limits each with their
// own defaults (workgroup memory 64 KiB on the pass, 32 KiB on the
// pipelines; `wide-head-mma` off on the pass, on in poot-to-nvvm and
// Python), so the same device planned differently depending on the entry
// point. The shape follows IREE's `#iree_gpu.target` (one record with the
// workgroup-memory, grid and mma limits).
//
// Python mirrors the defaulted fields in `compiler.devices.Device` (plain
// data: the runtime imports it without MLIR);
// test/python/test_device_description.py checks the mirror against
// `_pootTargets.device_defaults()`, which reads `kDefaultDevice`.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_DEVICEDESCRIPTION_H
#define POOT_LIB_TRANSFORMS_DEVICEDESCRIPTION_H

#include <cstdint>

namespace mlir::poot {

/// How kernels are lowered. An option parser checks it (an unknown name is a
/// parse diagnostic listing the valid ones), instead of a string each pass
/// compares.
enum class DeviceTarget { CPU, SPIRV, NVVM, ROCDL };

/// A device as the planner and the pipelines see it.
struct DeviceDescription {
  DeviceTarget target = DeviceTarget::CPU;
  /// Workgroup (shared / LDS) memory one workgroup may use, in bytes.
  int64_t workgroupMemory = 32768;
  /// Largest workgroup count in X and Y of one launch (>= 1).
  int64_t maxGridX = 65535;
  int64_t maxGridY = 65535;
  /// Compute units (SMs, CUs, cores) a launch can fill.
  int64_t computeUnits = 1;
  /// CPU only: f32 lanes of the host's SIMD registers; > 0 plans the CPU
  /// schedule (cpu_tiled), 0 the GPU schedules as loops.
  int64_t vectorWidth = 0;
  /// Largest single buffer (storage buffer range), in bytes.
  int64_t maxBufferBytes = int64_t(1) << 27;
  /// Largest allocation the device can make, in bytes.
  int64_t maxAllocBytes = int64_t(1) << 32;
  /// Most split-KV partitions per row any schedule may use (1: never split).
  int64_t maxSplits = 128;
  /// NVVM only: the SM version whose warp-level mma.sync m16n8k16 the
  /// two-byte schedules may use (0: no tensor cores). The pipelines derive
  /// it from the chip (and `tensor-cores`).
  int64_t mmaSm = 0;
  /// NVVM with mmaSm >= 80: two-byte wide-head decodes on tensor cores
  /// (wide_head_mma; verified on the H200, docs/wide-head-decode.md).
  bool wideHeadMma = true;
  /// NVIDIA warp decode: up to N keys a warp step in 16-byte loads (0: the
  /// scalar one-key form; docs/warp-decode.md).
  int64_t maxUnroll = 4;
  /// NVIDIA warp decode of two-byte keys: N keys a load in rows of 32 / N
  /// lanes where a whole warp's row would be narrower than 16-byte vectors.
  int64_t maxKeysPerLoad = 2;
  /// Whole GPU steps: rows of a batched matmul one thread computes together,
  /// so the weight element they share is loaded once for all of them
  /// (poot-gpu-jam-rows; 1: a thread per row).
  int64_t jamRows = 8;
  /// Whole NVIDIA steps with mmaSm >= 80: two-byte matmuls with at least
  /// this many rows run on mma.sync (poot-gpu-mma-matmuls: batched decode,
  /// serving rows, prefill projections); 0: every matmul on CUDA cores.
  /// Off on a batch-invariant device (a row's sums would follow whether its
  /// batch reaches the threshold). 1: every row count, a decode GEMV too
  /// (a 16-row tile, 15 rows masked, beats the CUDA-core GEMV; bench/NOTES.md).
  int64_t mmaMatmulRows = 1;
  /// Of those, the ones with at least this many rows and whole 128-column
  /// tiles run the staged kernel (operand tiles through workgroup memory
  /// by cp.async, fragments by ldmatrix: MmaKernel.h), the others the
  /// direct one (fragments loaded from global memory by each warp); 0:
  /// never staged. Default 1 (every row count): verified against float64
  /// on an H100 and racecheck-clean (bench/mma_matmul_check.py), and at
  /// least as fast as the direct kernel at every measured size (decode
  /// projections 1.0-1.2x, prefill 313-322 TFLOP/s; bench/NOTES.md).
  int64_t mmaStagedRows = 1;
  /// Batch invariance (docs/attention-schedules.md, docs/gpu-steps.md):
  /// every reduction order a row sees is chosen for one row, never from the
  /// batch it is packed into -- the planners' split-KV counts and chunks as
  /// if the batch were 1, poot-gpu-split-reductions' ratio per row (no
  /// rows-dependent partial cap), and no warp-lane spreading of reductions
  /// (its lanes follow the loop's iteration count) -- so a request's output
  /// is bit-identical alone or batched. Costs: a large batch keeps a row's
  /// splits (more partials and a combine launch where the batch alone would
  /// fill the device), and NVIDIA steps lose poot-gpu-warp-reductions.
  bool batchInvariant = false;
};

/// The widest CPU vector, in f32 lanes, that the CPU passes plan for
/// (AVX-512 is 16). Wider is refused: tiles of `4 x width` columns and
/// vectors of thousands of lanes make the lowering run for minutes.
inline constexpr int64_t kMaxVectorWidth = 64;

/// Whether `width` is a vector width the CPU passes take: 0 (the GPU
/// schedules run as loops) up to kMaxVectorWidth.
inline constexpr bool validVectorWidth(int64_t width) {
  return width >= 0 && width <= kMaxVectorWidth;
}

/// The defaults: what a device nobody described more closely gets.
inline constexpr DeviceDescription kDefaultDevice{};

/// The CPU running the GPU schedules as loops (poot-to-llvm-cpu, Python's
/// CPU_SEED): lanes are loop iterations, so workgroup memory is plentiful
/// and the grid is only a loop bound; a scratch is host memory. A preset,
/// like Python's, not a second set of defaults.
inline constexpr DeviceDescription kCpuLoopsDevice = [] {
  DeviceDescription cpu;
  cpu.target = DeviceTarget::CPU;
  cpu.workgroupMemory = int64_t(1) << 20;
  cpu.maxGridX = int64_t(1) << 31;
  cpu.maxGridY = int64_t(1) << 31;
  cpu.maxBufferBytes = int64_t(1) << 30;
  return cpu;
}();

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_DEVICEDESCRIPTION_H
