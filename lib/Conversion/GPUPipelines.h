//===- GPUPipelines.h - poot -> SPIR-V / NVVM / ROCDL pipelines ---*- C++ -*-===//
//
// One pipeline per GPU target, each an options struct (the device
// description plus the target's own knobs), a build function and one
// registration (the shape of upstream mlir/Dialect/GPU/Pipelines/Passes.h).
// Each plans every poot.attention for the device, generates its kernels, and
// lowers the kernels:
//   poot-to-spirv : SPIR-V modules for Vulkan (serialize the spirv.module)
//   poot-to-nvvm  : PTX (format=isa) or cubin (format=bin) in a gpu.binary
//   poot-to-rocdl : kernels in the LLVM dialect with ROCDL intrinsics, ready
//                   to translate to LLVM IR (HSACO needs an AMDGPU llc)
//
// The pipelines are built from pass constructors and typed options, never
// from pipeline text: an option value the parser accepts cannot make a
// malformed pipeline, and one it refuses (an unknown format, a chip name that
// is not one) is a diagnostic.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPIPELINES_H
#define POOT_LIB_CONVERSION_GPUPIPELINES_H

#include "lib/Transforms/DeviceDescription.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace poot {

/// The device description (DeviceDescription.h) as pipeline options, shared
/// by the three GPU targets, with its one set of defaults (kDefaultDevice).
template <typename Derived>
struct PootDeviceOptions : public PassPipelineOptions<Derived> {
  using Opt = mlir::detail::PassOptions;
  /// The device these options describe, for `target`. mma-sm and
  /// wide-head-mma are NVVM's (PootNVVMPipelineOptions sets them).
  DeviceDescription describe(DeviceTarget target) const {
    DeviceDescription device;
    device.target = target;
    device.workgroupMemory = workgroupMemory;
    device.maxGridX = maxGridX;
    device.maxGridY = maxGridY;
    device.computeUnits = computeUnits;
    device.maxBufferBytes = maxBufferBytes;
    device.maxAllocBytes = maxAllocBytes;
    device.maxSplits = maxSplits;
    device.maxUnroll = maxUnroll;
    device.maxKeysPerLoad = maxKeysPerLoad;
    device.batchInvariant = batchInvariant;
    return device;
  }
  Opt::Option<int64_t> workgroupMemory{
      *this, "workgroup-memory",
      llvm::cl::desc("Workgroup memory per workgroup in bytes"),
      llvm::cl::init(kDefaultDevice.workgroupMemory)};
  Opt::Option<int64_t> maxGridX{
      *this, "max-grid-x",
      llvm::cl::desc("Largest workgroup count in X (>= 1)"),
      llvm::cl::init(kDefaultDevice.maxGridX)};
  Opt::Option<int64_t> maxGridY{
      *this, "max-grid-y",
      llvm::cl::desc("Largest workgroup count in Y (>= 1)"),
      llvm::cl::init(kDefaultDevice.maxGridY)};
  Opt::Option<int64_t> computeUnits{
      *this, "compute-units", llvm::cl::desc("Compute units of the device"),
      llvm::cl::init(kDefaultDevice.computeUnits)};
  Opt::Option<int64_t> maxBufferBytes{
      *this, "max-buffer-bytes", llvm::cl::desc("Largest single buffer"),
      llvm::cl::init(kDefaultDevice.maxBufferBytes)};
  Opt::Option<int64_t> maxAllocBytes{
      *this, "max-alloc-bytes", llvm::cl::desc("Largest allocation"),
      llvm::cl::init(kDefaultDevice.maxAllocBytes)};
  Opt::Option<int64_t> maxSplits{
      *this, "max-splits",
      llvm::cl::desc("Most split-KV partitions per row (1: never split)"),
      llvm::cl::init(kDefaultDevice.maxSplits)};
  Opt::Option<int64_t> maxUnroll{
      *this, "max-unroll",
      llvm::cl::desc("Warp decode: N >= 1 (default 4) 16-byte loads and up to "
                     "N keys a warp step; 0 the scalar one-key form"),
      llvm::cl::init(kDefaultDevice.maxUnroll)};
  Opt::Option<int64_t> maxKeysPerLoad{
      *this, "max-keys-per-load",
      llvm::cl::desc("Warp decode of two-byte keys: N >= 2 (default 2) "
                     "half-warp (32 / N lane) rows of 16-byte loads where a "
                     "whole warp's would be narrower (bf16/f16 D = 128); 1 a "
                     "whole warp per key row"),
      llvm::cl::init(kDefaultDevice.maxKeysPerLoad)};
  Opt::Option<int64_t> jamRows{
      *this, "jam-rows",
      llvm::cl::desc("Whole steps: rows of a batched matmul one thread "
                     "computes, loading the weight they share once "
                     "(poot-gpu-jam-rows; 1: a thread per row)"),
      llvm::cl::init(kDefaultDevice.jamRows)};
  Opt::Option<bool> batchInvariant{
      *this, "batch-invariant",
      llvm::cl::desc("Every reduction order a row sees is chosen for one "
                     "row: split-KV counts and chunks as if the batch were "
                     "1, matmul split ratios per row "
                     "(poot-gpu-split-reductions), no warp-lane spreading "
                     "(poot-gpu-warp-reductions), so a row's output is "
                     "bit-identical alone or batched; costs a large batch "
                     "splits it would not need"),
      llvm::cl::init(kDefaultDevice.batchInvariant)};
};

/// Who reads the SPIR-V: a Vulkan driver, or wgpu, whose shader translator
/// (naga) has no 8-bit types (WGSL has none).
enum class SPIRVClient { Vulkan, Wgpu };

struct PootSPIRVPipelineOptions
    : public PootDeviceOptions<PootSPIRVPipelineOptions> {
  Opt::Option<SPIRVClient> client{
      *this, "client", llvm::cl::desc("Who reads the SPIR-V"),
      llvm::cl::init(SPIRVClient::Vulkan),
      llvm::cl::values(
          clEnumValN(SPIRVClient::Vulkan, "vulkan",
                     "a Vulkan 1.2 driver: bytes stored as bytes"),
          clEnumValN(SPIRVClient::Wgpu, "wgpu",
                     "wgpu (naga): bytes and bools kept in 32-bit words")),
  };
};

/// What gpu-module-to-binary makes of an NVVM kernel module.
enum class NVVMFormat { Isa, Bin };

struct PootNVVMPipelineOptions
    : public PootDeviceOptions<PootNVVMPipelineOptions> {
  Opt::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("NVIDIA architecture, sm_<N>[a|f]"),
      llvm::cl::init("sm_90")};
  Opt::Option<NVVMFormat> format{
      *this, "format", llvm::cl::desc("NVVM binary format"),
      llvm::cl::init(NVVMFormat::Isa),
      llvm::cl::values(
          clEnumValN(NVVMFormat::Isa, "isa", "PTX text"),
          clEnumValN(NVVMFormat::Bin, "bin", "cubin (runs ptxas)"))};
  Opt::Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("Path of libdevice.10.bc (empty: the toolkit's)"),
      llvm::cl::init("")};
  Opt::Option<bool> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Let the planner use the chip's mma.sync (sm_80 and up) "
                     "for two-byte prefill (tiled_prefill_mma); off: the "
                     "FFMA tiled schedule"),
      llvm::cl::init(true)};
  Opt::Option<bool> wideHeadMma{
      *this, "wide-head-mma",
      llvm::cl::desc("With tensor-cores: plan two-byte wide-head decodes "
                     "(MQA / absorbed MLA) on mma.sync (wide_head_mma, the "
                     "default; verified on the H200); off: the FFMA wide_head"),
      llvm::cl::init(kDefaultDevice.wideHeadMma)};
  Opt::Option<int64_t> mmaMatmulRows{
      *this, "mma-matmul-rows",
      llvm::cl::desc("Whole steps with tensor-cores (sm_80 and up): two-byte "
                     "matmuls with at least this many rows on mma.sync "
                     "(poot-gpu-mma-matmuls); 0: on CUDA cores"),
      llvm::cl::init(kDefaultDevice.mmaMatmulRows)};
  Opt::Option<int64_t> mmaStagedRows{
      *this, "mma-staged-rows",
      llvm::cl::desc("Of the tensor-core matmuls, those with at least this "
                     "many rows (and whole 128-column tiles) run the staged "
                     "kernel (cp.async + ldmatrix); 0: never"),
      llvm::cl::init(kDefaultDevice.mmaStagedRows)};
  Opt::Option<bool> dependentLaunch{
      *this, "dependent-launch",
      llvm::cl::desc("sm_90 and up: every kernel waits on griddepcontrol "
                     "first, so the runtime may launch it while the kernel "
                     "ahead finishes (programmatic dependent launch, "
                     "poot-gpu-dependent-launch)"),
      llvm::cl::init(false)};
  Opt::Option<bool> warpReductions{
      *this, "warp-reductions",
      llvm::cl::desc("Whole steps: spread the long reductions of kernels "
                     "with few threads over the lanes of a warp, combined by "
                     "shuffles (poot-gpu-warp-reductions); off: a thread each"),
      llvm::cl::init(true)};
};

struct PootROCDLPipelineOptions
    : public PootDeviceOptions<PootROCDLPipelineOptions> {
  Opt::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("AMD architecture, gfx<hex digits>"),
      llvm::cl::init("gfx942")};
};

void buildPootToSPIRVPipeline(OpPassManager &pm,
                              const PootSPIRVPipelineOptions &options);
void buildPootToNVVMPipeline(OpPassManager &pm,
                             const PootNVVMPipelineOptions &options);
void buildPootToROCDLPipeline(OpPassManager &pm,
                              const PootROCDLPipelineOptions &options);

/// Registers poot-to-spirv, poot-to-nvvm and poot-to-rocdl, and the upstream
/// passes they are built from.
/// Whole steps (poot-step-to-{spirv,nvvm,rocdl}): every primitive and the
/// attention as kernels (linalg fused, bufferized with the state in place,
/// parallel loops mapped to blocks and threads and outlined), the host side
/// recorded as a program (poot.programs).
void buildPootStepToSPIRVPipeline(OpPassManager &pm,
                                  const PootSPIRVPipelineOptions &options);
void buildPootStepToNVVMPipeline(OpPassManager &pm,
                                 const PootNVVMPipelineOptions &options);
void buildPootStepToROCDLPipeline(OpPassManager &pm,
                                  const PootROCDLPipelineOptions &options);

/// What the whole-step passes need to know of the target beside its plan.
struct WholeStepTarget {
  /// Kernels may load and store vectors (NVVM, ROCDL; not SPIR-V).
  bool vectorMemory = false;
  /// The device's grid X limit: a launch gets at most this many blocks.
  int64_t maxGridX = kDefaultDevice.maxGridX;
  /// One device buffer's limits (0 elements: no count limit).
  int64_t maxBufferBytes = kDefaultDevice.maxBufferBytes;
  int64_t maxElements = 0;
  /// Lanes of one warp that combine a reduction by shuffles
  /// (poot-gpu-warp-reductions); 0: not used (SPIR-V: the subgroup size is
  /// the driver's choice; ROCDL: not run on AMD hardware yet).
  int64_t warpLanes = 0;
  /// Rows of a batched matmul one thread computes (poot-gpu-jam-rows).
  int64_t jamRows = kDefaultDevice.jamRows;
  /// Reduction orders chosen per row, never from the batch
  /// (DeviceDescription::batchInvariant): split-reductions' ratio per row,
  /// no warp-lane spreading.
  bool batchInvariant = kDefaultDevice.batchInvariant;
  /// Two-byte matmuls with at least this many rows on tensor cores
  /// (poot-gpu-mma-matmuls; 0: none, as on SPIR-V and ROCDL).
  int64_t mmaRows = 0;
  /// Of those, the rows from which the staged kernel runs (0: never).
  int64_t mmaStagedRows = 0;
};

/// The target-independent part of a whole step (StepPipelines.cpp), with the
/// planner and the attention generator added by `planAndGenerate`; the
/// caller adds the kernels' lowering. `target`: its vector memory (for
/// poot-gpu-vectorize-columns), grid and buffer limits.
void addWholeStepPasses(OpPassManager &pm,
                        llvm::function_ref<void(OpPassManager &)> planAndGenerate,
                        const WholeStepTarget &target);

void registerPootGPUPipelines();

} // namespace poot
} // namespace mlir

#endif // POOT_LIB_CONVERSION_GPUPIPELINES_H
