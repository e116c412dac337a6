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
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPIPELINES_H
#define POOT_LIB_CONVERSION_GPUPIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace poot {

struct PootGPUPipelineOptions
    : public PassPipelineOptions<PootGPUPipelineOptions> {
  // The device description the planner reads.
  PassOptions::Option<int64_t> workgroupMemory{
      *this, "workgroup-memory",
      llvm::cl::desc("Workgroup memory per workgroup in bytes"),
      llvm::cl::init(32768)};
  PassOptions::Option<int64_t> maxGridX{
      *this, "max-grid-x", llvm::cl::desc("Largest workgroup count in X"),
      llvm::cl::init(65535)};
  PassOptions::Option<int64_t> maxGridY{
      *this, "max-grid-y", llvm::cl::desc("Largest workgroup count in Y"),
      llvm::cl::init(65535)};
  PassOptions::Option<int64_t> computeUnits{
      *this, "compute-units", llvm::cl::desc("Compute units of the device"),
      llvm::cl::init(1)};
  PassOptions::Option<int64_t> maxBufferBytes{
      *this, "max-buffer-bytes", llvm::cl::desc("Largest single buffer"),
      llvm::cl::init(int64_t(1) << 27)};
  PassOptions::Option<int64_t> maxAllocBytes{
      *this, "max-alloc-bytes", llvm::cl::desc("Largest allocation"),
      llvm::cl::init(int64_t(1) << 32)};
  // Target knobs.
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("GPU architecture (sm_90, gfx942)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("NVVM binary format: isa (PTX) or bin (cubin via ptxas)"),
      llvm::cl::init("isa")};
  PassOptions::Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("Path of libdevice.10.bc (NVVM; empty: the toolkit's)"),
      llvm::cl::init("")};
};

void buildPootToSPIRVPipeline(OpPassManager &pm,
                              const PootGPUPipelineOptions &options);
void buildPootToNVVMPipeline(OpPassManager &pm,
                             const PootGPUPipelineOptions &options);
void buildPootToROCDLPipeline(OpPassManager &pm,
                              const PootGPUPipelineOptions &options);

/// The planner and the attention kernel generator for `target` (spirv,
/// nvvm, rocdl), from the device description.
void addPlanAndGenerate(OpPassManager &pm, StringRef target,
                        const PootGPUPipelineOptions &options);
/// The gpu.modules' lowering for `target`: SPIR-V modules, PTX/cubin in a
/// gpu.binary, or the LLVM dialect with ROCDL intrinsics.
void addKernelLowering(OpPassManager &pm, StringRef target,
                       const PootGPUPipelineOptions &options,
                       bool everyType = false);

/// A whole step for `target`: every primitive in generated kernels (linalg,
/// fused, bufferized with the state in place, parallel loops mapped to
/// blocks and threads, outlined), the attention kernels launched in line,
/// and the host function recorded as a program (poot.programs).
void buildPootStepToGPUPipeline(OpPassManager &pm, StringRef target,
                                const PootGPUPipelineOptions &options);

/// Registers poot-to-spirv, poot-to-nvvm and poot-to-rocdl (attention
/// kernels), poot-step-to-{spirv,nvvm,rocdl} (whole steps), and the upstream
/// passes they are built from.
void registerPootGPUPipelines();

} // namespace poot
} // namespace mlir

#endif // POOT_LIB_CONVERSION_GPUPIPELINES_H
