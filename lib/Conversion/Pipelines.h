//===- Pipelines.h - per-target lowering pipelines ---------------*- C++ -*-===//
//
// Each target's pipeline is an options struct, a build function and one
// registration (the shape of upstream mlir/Dialect/GPU/Pipelines/Passes.h),
// registered from lib/InitAll so `poot-opt --poot-to-llvm-cpu` and Python's
// PassManager parse the same definition.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_PIPELINES_H
#define POOT_LIB_CONVERSION_PIPELINES_H

#include "lib/Transforms/DeviceDescription.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class DialectRegistry;
class OpPassManager;
namespace poot {

//===----------------------------------------------------------------------===//
// CPU: poot -> linalg -> buffers (destination passing) -> loops -> LLVM
//===----------------------------------------------------------------------===//

/// How the CPU step runs each poot.attention.
enum class CPUAttention { Loops, Offload };

/// How the CPU step runs its scf.parallel loops.
enum class CPUParallel { Serial, Omp };

struct PootToLLVMCPUPipelineOptions
    : public PassPipelineOptions<PootToLLVMCPUPipelineOptions> {
  PassOptions::Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("The step function's name; it gets the C interface "
                     "(empty: every public function)"),
      llvm::cl::init("")};
  // The CPU as a device for the attention planner (kCpuLoopsDevice in
  // DeviceDescription.h): lanes are loop iterations, so workgroup memory is
  // plentiful; one compute unit means the streaming schedule (more forces
  // split-KV, as on a GPU).
  PassOptions::Option<int64_t> workgroupMemory{
      *this, "workgroup-memory",
      llvm::cl::desc("Workgroup memory the planner may give a workgroup"),
      llvm::cl::init(kCpuLoopsDevice.workgroupMemory)};
  PassOptions::Option<int64_t> computeUnits{
      *this, "compute-units",
      llvm::cl::desc("Compute units the planner fills with split-KV"),
      llvm::cl::init(kCpuLoopsDevice.computeUnits)};
  PassOptions::Option<CPUAttention> attention{
      *this, "attention", llvm::cl::desc("How poot.attention runs"),
      llvm::cl::init(CPUAttention::Loops),
      llvm::cl::values(
          clEnumValN(CPUAttention::Loops, "loops",
                     "the kernel's schedule as CPU loops"),
          clEnumValN(CPUAttention::Offload, "offload",
                     "a call to a runtime-provided launcher"))};
  // The host's SIMD width in f32 lanes (16: AVX-512, 8: AVX2, 4: SSE/NEON);
  // > 0 plans the CPU's own attention schedule, 0 the GPU schedules as loops.
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("f32 lanes of the host's vectors (0: GPU schedules as "
                     "loops)"),
      llvm::cl::init(kCpuLoopsDevice.vectorWidth)};
  // The host has AVX512-BF16 (devices.py detects it): bf16 x bf16 linear
  // tiles use vdpbf16ps (poot-cpu-vectorize-matmuls{bf16-dot}).
  PassOptions::Option<bool> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("Use AVX512-BF16 dot products for bf16 x bf16 [N, K] "
                     "linear tiles"),
      llvm::cl::init(false)};
  PassOptions::Option<CPUParallel> parallel{
      *this, "parallel", llvm::cl::desc("How scf.parallel runs"),
      llvm::cl::init(CPUParallel::Serial),
      llvm::cl::values(
          clEnumValN(CPUParallel::Serial, "serial", "as sequential loops"),
          clEnumValN(CPUParallel::Omp, "omp",
                     "as OpenMP worksharing loops (the library needs "
                     "libomp)"))};
  PassOptions::Option<int64_t> maxSplits{
      *this, "max-splits",
      llvm::cl::desc("Most split-KV partitions per row (1: never split)"),
      llvm::cl::init(kCpuLoopsDevice.maxSplits)};
  PassOptions::Option<bool> batchInvariant{
      *this, "batch-invariant",
      llvm::cl::desc("Split-KV counts and chunks chosen for one row, as if "
                     "the batch were 1: a row's output is bit-identical "
                     "alone or batched"),
      llvm::cl::init(kCpuLoopsDevice.batchInvariant)};
  PassOptions::Option<int64_t> maxGridX{
      *this, "max-grid-x",
      llvm::cl::desc("Largest workgroup count per grid dimension (>= 1)"),
      llvm::cl::init(kCpuLoopsDevice.maxGridX)};
  PassOptions::Option<int64_t> maxAllocBytes{
      *this, "max-alloc-bytes",
      llvm::cl::desc("Largest arena of temporaries the runtime allocates "
                     "(0: no limit)"),
      llvm::cl::init(0)};
};

/// Lowers a poot module to the LLVM dialect for the in-process CPU runtime:
/// convert-poot-to-linalg, one-shot bufferization at function boundaries with
/// identity layouts, results turned into caller-owned out-parameters, buffer
/// deallocation, loops, and the LLVM conversions (math through LLVM
/// intrinsics and libm). The entry function gets `_mlir_ciface_<name>`.
void buildPootToLLVMCPUPipeline(OpPassManager &pm,
                                const PootToLLVMCPUPipelineOptions &options);

/// Registers `poot-to-llvm-cpu`.
void registerPootToLLVMCPUPipeline();

/// The dialect interfaces the CPU pipeline needs in every context
/// (bufferization and buffer-deallocation models).
void registerCPUPipelineDialectInterfaces(DialectRegistry &registry);

/// Tensors to buffers with the donated state in place, for every target:
/// one-shot bufferization at the function boundary with identity layouts, and poot-drop-aliased-results (each result that
/// is a donated argument's buffer leaves the signature, recorded on the
/// module for the manifest).
void addInPlaceBufferization(OpPassManager &pm);

} // namespace poot
} // namespace mlir

#endif // POOT_LIB_CONVERSION_PIPELINES_H
