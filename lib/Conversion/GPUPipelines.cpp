//===- GPUPipelines.cpp - poot -> SPIR-V / NVVM / ROCDL pipelines ---------===//
#include "lib/Conversion/GPUPipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

/// The planner and the generator, for `target`, from the device description.
std::string planAndGenerate(StringRef target,
                            const PootGPUPipelineOptions &o) {
  return llvm::formatv(
      "poot-plan-attention{{target={0} workgroup-memory={1} max-grid-x={2} "
      "max-grid-y={3} compute-units={4} max-buffer-bytes={5} "
      "max-alloc-bytes={6}},poot-generate-attention-kernels{{target={0}}",
      target, o.workgroupMemory.getValue(), o.maxGridX.getValue(),
      o.maxGridY.getValue(), o.computeUnits.getValue(),
      o.maxBufferBytes.getValue(), o.maxAllocBytes.getValue());
}

void addText(OpPassManager &pm, StringRef text) {
  if (failed(parsePassPipeline(text, pm)))
    llvm::report_fatal_error(llvm::Twine("poot: malformed built-in pipeline: ") +
                             text);
}

} // namespace

void mlir::poot::addKernelLowering(OpPassManager &pm, StringRef target,
                                   const PootGPUPipelineOptions &o,
                                   bool everyType) {
  if (target == "spirv") {
    // Vulkan 1.0 + storage buffers; math.exp/tanh become GLSL.std.450 ops.
    // A whole step also stores bytes (bools), two-byte and f64 values: the
    // 8/16-bit storage extensions and the Int8/Int16/Float16/Float64
    // capabilities (Vulkan 1.2 devices, lavapipe included, have them).
    std::string caps = everyType
                           ? "Shader,Int8,Int16,Int64,Float16,Float64,"
                             "StorageBuffer8BitAccess,StorageBuffer16BitAccess"
                           : "Shader";
    std::string exts = everyType ? "SPV_KHR_storage_buffer_storage_class,"
                                   "SPV_KHR_8bit_storage,SPV_KHR_16bit_storage"
                                 : "SPV_KHR_storage_buffer_storage_class";
    addText(pm, "spirv-attach-target{ver=v1.0 caps=" + caps + " exts=" +
                    exts + "},"
                "gpu.module(canonicalize,cse,convert-math-to-spirv),"
                "convert-gpu-to-spirv,"
                "spirv.module(spirv-lower-abi-attrs,spirv-update-vce)");
  } else if (target == "nvvm") {
    std::string chip = o.chip.empty() ? "sm_90" : o.chip.getValue();
    std::string attach = "nvvm-attach-target{chip=" + chip + " O=3";
    if (!o.libdevice.empty())
      attach += " l=" + o.libdevice.getValue();
    attach += "}";
    addText(pm, attach +
                    ",gpu.module(canonicalize,cse,convert-scf-to-cf,"
                    "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
                    "canonicalize,cse),reconcile-unrealized-casts,"
                    "gpu-module-to-binary{format=" +
                    o.format.getValue() + "}");
  } else {
    std::string chip = o.chip.empty() ? "gfx942" : o.chip.getValue();
    addText(pm, "rocdl-attach-target{chip=" + chip +
                    " O=3},gpu.module(canonicalize,cse,convert-scf-to-cf,"
                    "convert-gpu-to-rocdl{runtime=HIP "
                    "use-bare-ptr-memref-call-conv=1},canonicalize,cse),"
                    "reconcile-unrealized-casts");
  }
}

void mlir::poot::addPlanAndGenerate(OpPassManager &pm, StringRef target,
                                    const PootGPUPipelineOptions &o) {
  addText(pm, planAndGenerate(target, o));
}

void mlir::poot::buildPootToSPIRVPipeline(OpPassManager &pm,
                                          const PootGPUPipelineOptions &o) {
  addPlanAndGenerate(pm, "spirv", o);
  addKernelLowering(pm, "spirv", o);
}

void mlir::poot::buildPootToNVVMPipeline(OpPassManager &pm,
                                         const PootGPUPipelineOptions &o) {
  addPlanAndGenerate(pm, "nvvm", o);
  addKernelLowering(pm, "nvvm", o);
}

void mlir::poot::buildPootToROCDLPipeline(OpPassManager &pm,
                                          const PootGPUPipelineOptions &o) {
  addPlanAndGenerate(pm, "rocdl", o);
  addKernelLowering(pm, "rocdl", o);
}

void mlir::poot::registerPootGPUPipelines() {
  // The upstream passes the pipelines are written in.
  registerGPUPasses();
  spirv::registerSPIRVPasses();
  registerConvertGPUToSPIRVPass();
  registerConvertMathToSPIRVPass();
  registerConvertGpuOpsToNVVMOps();
  registerConvertGpuOpsToROCDLOps();
  registerSCFToControlFlowPass();
  registerReconcileUnrealizedCastsPass();

  for (StringRef target : {"spirv", "nvvm", "rocdl"})
    PassPipelineRegistration<PootGPUPipelineOptions>(
        ("poot-step-to-" + target).str(),
        ("Compile a whole step function for " + target +
         ": every primitive and the attention in kernels, the state in "
         "place, the host side as a program of launches")
            .str(),
        [target](OpPassManager &pm, const PootGPUPipelineOptions &o) {
          buildPootStepToGPUPipeline(pm, target, o);
        });
  PassPipelineRegistration<PootGPUPipelineOptions>(
      "poot-to-spirv",
      "Plan, generate and lower attention kernels to SPIR-V (Vulkan)",
      buildPootToSPIRVPipeline);
  PassPipelineRegistration<PootGPUPipelineOptions>(
      "poot-to-nvvm",
      "Plan, generate and lower attention kernels to PTX/cubin (NVIDIA)",
      buildPootToNVVMPipeline);
  PassPipelineRegistration<PootGPUPipelineOptions>(
      "poot-to-rocdl",
      "Plan, generate and lower attention kernels to ROCDL (AMD)",
      buildPootToROCDLPipeline);
}
