//===- GPUPipelines.cpp - poot -> SPIR-V / NVVM / ROCDL pipelines ---------===//
#include "lib/Conversion/GPUPipelines.h"

#include "lib/Conversion/Passes.h"
#include "lib/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

using ErrorHandler = function_ref<LogicalResult(const Twine &)>;

/// The SM version of an NVVM chip name (sm_90 -> 90, sm_90a -> 90), whose
/// mma.sync the planner may use; 0 when the name has no number.
int64_t mmaSmOf(StringRef chip) {
  int64_t sm = 0;
  StringRef digits = chip.drop_front(3).take_while(llvm::isDigit);
  if (!chip.starts_with("sm_") || digits.getAsInteger(10, sm))
    return 0;
  return sm;
}

/// The planner and the generator, for `target`, from the device description.
template <typename Options>
void addPlanAndGenerate(OpPassManager &pm, DeviceTarget target,
                        const Options &o) {
  DeviceDescription device = o.describe(target);
  if constexpr (std::is_same_v<Options, PootNVVMPipelineOptions>) {
    device.mmaSm = o.tensorCores ? mmaSmOf(o.chip) : 0;
    device.wideHeadMma = o.wideHeadMma;
  }
  pm.addPass(createPootPlanAttention(planAttentionOptions(device)));
  PootGenerateAttentionKernelsOptions generate;
  generate.target = target;
  pm.addPass(createPootGenerateAttentionKernels(generate));
}

/// Kernel-module cleanup and the GPU dialect's own lowering, `convert`.
void addKernelLowering(OpPassManager &pm, std::unique_ptr<Pass> convert) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(std::move(convert));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// A chip name the attach-target pass passes on to LLVM verbatim: anything
/// else would reach the backend as a processor name it does not know.
LogicalResult checkChip(StringRef pipeline, StringRef chip, StringRef pattern,
                        StringRef example, ErrorHandler onError) {
  if (llvm::Regex(pattern).match(chip))
    return success();
  return onError(pipeline + ": chip '" + chip + "' is not a valid name (" +
                 example + ")");
}

/// An NVVM pipeline's chip, and the options that need a newer chip:
/// griddepcontrol (dependent-launch) is sm_90 and up.
LogicalResult checkNVVMOptions(StringRef pipeline,
                               const PootNVVMPipelineOptions &o,
                               ErrorHandler onError) {
  if (failed(checkChip(pipeline, o.chip, "^sm_[0-9]+[af]?$",
                       "sm_90, sm_90a, sm_100f", onError)))
    return failure();
  if (o.dependentLaunch && mmaSmOf(o.chip) < 90)
    return onError(pipeline + ": dependent-launch needs sm_90 or newer "
                   "(griddepcontrol), not '" + o.chip + "'");
  return success();
}

/// Like upstream PassPipelineRegistration, except that `check` sees the
/// parsed options first and may refuse a value the option parser accepted
/// through the error handler: a diagnostic where the pipeline is parsed.
template <typename Options>
void registerChecked(
    StringRef arg, StringRef description,
    std::function<LogicalResult(const Options &, ErrorHandler)> check,
    void (*build)(OpPassManager &, const Options &)) {
  registerPassPipeline(
      arg, description,
      [check, build](OpPassManager &pm, StringRef text, ErrorHandler onError) {
        Options options;
        if (failed(options.parseFromString(text)) ||
            failed(check(options, onError)))
          return failure();
        build(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}

} // namespace

/// The SPIR-V lowering of every gpu.module: Vulkan 1.0 + storage buffers;
/// math.exp/tanh become GLSL.std.450 ops. A whole step (`everyType`) also
/// stores two-byte and f64 values (the 16-bit storage extension and the
/// Int16/64, Float16/64 capabilities) and, for a Vulkan client, bytes (bools):
/// the 8-bit storage extension and Int8 (Vulkan 1.2 devices, lavapipe
/// included, have them). For wgpu, whose naga reads no 8-bit types, the
/// target env leaves them out, and upstream's SPIR-V type conversion keeps
/// bytes in 32-bit words (loads shift and mask, stores are atomic and/or on
/// the word): the buffers' bytes are laid out the same. Non-finite float
/// constants are built from their bits for every client (naga refuses them
/// as literals; a Vulkan driver folds the bitcast); for wgpu, signed
/// instructions also get signed-typed operands (naga reads signedness from
/// the type).
static void addSPIRVLowering(OpPassManager &pm, bool everyType,
                             SPIRVClient client) {
  // Two-byte floats: math functions in f32, rounded once (GLSL.std.450's
  // f16 forms are low-precision, and math-to-spirv would retype them);
  // bf16 as its bits, its arithmetic in f32 rounded per op
  // (poot-spirv-bf16-as-i16; upstream's SPIR-V types would read bf16
  // buffers as f32).
  pm.addPass(math::createMathExtendToSupportedTypes());
  PootSPIRVBf16AsI16Options bits;
  bits.sixteenBitInts = client == SPIRVClient::Vulkan;
  pm.addPass(createPootSPIRVBf16AsI16(bits));
  GpuSPIRVAttachTargetOptions attach;
  attach.spirvVersion = "v1.0";
  attach.spirvCapabilities = {"Shader"};
  attach.spirvExtensions = {"SPV_KHR_storage_buffer_storage_class"};
  // f16 attention (two-byte loads, f32 math): OpFConvert on f16 needs
  // Float16, f16 storage-buffer elements the 16-bit storage extension.
  // SPIRVUpdateVCE declares them only in a module that uses f16.
  if (!everyType) {
    attach.spirvCapabilities.push_back("Float16");
    attach.spirvCapabilities.push_back("StorageBuffer16BitAccess");
    attach.spirvExtensions.push_back("SPV_KHR_16bit_storage");
  }
  if (everyType) {
    for (const char *cap : {"Int16", "Int64", "Float16", "Float64",
                            "StorageBuffer16BitAccess"})
      attach.spirvCapabilities.push_back(cap);
    attach.spirvExtensions.push_back("SPV_KHR_16bit_storage");
    if (client == SPIRVClient::Vulkan) {
      attach.spirvCapabilities.push_back("Int8");
      attach.spirvCapabilities.push_back("StorageBuffer8BitAccess");
      attach.spirvExtensions.push_back("SPV_KHR_8bit_storage");
    }
  }
  attach.deviceId = spirv::TargetEnvAttr::kUnknownDeviceID;
  pm.addPass(createGpuSPIRVAttachTarget(attach));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createConvertMathToSPIRVPass());
  pm.addPass(createConvertGPUToSPIRVPass());
  OpPassManager &spirvModule = pm.nest<spirv::ModuleOp>();
  spirvModule.addPass(spirv::createSPIRVLowerABIAttributesPass());
  spirvModule.addPass(createPootSPIRVBuildNonFinite());
  if (client == SPIRVClient::Wgpu) {
    spirvModule.addPass(createPootSPIRVSignedOperands());
    spirvModule.addPass(createPootSPIRVOrderedCompares());
  }
  spirvModule.addPass(spirv::createSPIRVUpdateVCEPass());
}

static void addNVVMLowering(OpPassManager &pm,
                            const PootNVVMPipelineOptions &o) {
  GpuNVVMAttachTargetOptions attach;
  attach.chip = o.chip;
  attach.optLevel = 3;
  if (!o.libdevice.empty())
    attach.linkLibs.push_back(o.libdevice);
  pm.addPass(createGpuNVVMAttachTarget(attach));
  if (o.dependentLaunch)
    pm.nest<gpu::GPUModuleOp>().addPass(createPootGPUDependentLaunch());
  ConvertGpuOpsToNVVMOpsOptions convert;
  convert.useBarePtrCallConv = true;
  addKernelLowering(pm, createConvertGpuOpsToNVVMOps(convert));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = o.format == NVVMFormat::Bin ? "bin" : "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

static void addROCDLLowering(OpPassManager &pm,
                             const PootROCDLPipelineOptions &o) {
  GpuROCDLAttachTargetOptions attach;
  attach.chip = o.chip;
  attach.optLevel = 3;
  pm.addPass(createGpuROCDLAttachTarget(attach));
  // f16/bf16 math functions (a bf16 softmax's exp, a bf16 SiLU) in f32,
  // rounded once: the ROCm device library has no bf16 forms, and an
  // unconverted math.exp cannot be translated to LLVM IR.
  pm.addPass(math::createMathExtendToSupportedTypes());
  ConvertGpuOpsToROCDLOpsOptions convert;
  convert.runtime = gpu::amd::Runtime::HIP;
  convert.useBarePtrCallConv = true;
  addKernelLowering(pm, createConvertGpuOpsToROCDLOps(convert));
}

void mlir::poot::buildPootToSPIRVPipeline(OpPassManager &pm,
                                          const PootSPIRVPipelineOptions &o) {
  addPlanAndGenerate(pm, DeviceTarget::SPIRV, o);
  addSPIRVLowering(pm, /*everyType=*/false, o.client);
}

void mlir::poot::buildPootToNVVMPipeline(OpPassManager &pm,
                                         const PootNVVMPipelineOptions &o) {
  addPlanAndGenerate(pm, DeviceTarget::NVVM, o);
  addNVVMLowering(pm, o);
}

void mlir::poot::buildPootToROCDLPipeline(OpPassManager &pm,
                                          const PootROCDLPipelineOptions &o) {
  addPlanAndGenerate(pm, DeviceTarget::ROCDL, o);
  addROCDLLowering(pm, o);
}

// Whole steps: the step passes (StepPipelines.cpp) around the same planner,
// generator and kernel lowering.
void mlir::poot::buildPootStepToSPIRVPipeline(
    OpPassManager &pm, const PootSPIRVPipelineOptions &o) {
  // SPIR-V counts array elements in 32 bits and indexes in i32.
  addWholeStepPasses(pm, [&](OpPassManager &p) {
    addPlanAndGenerate(p, DeviceTarget::SPIRV, o);
  }, {/*vectorMemory=*/false, o.maxGridX, o.maxBufferBytes,
      /*maxElements=*/(int64_t(1) << 31) - 1, /*warpLanes=*/0, o.jamRows,
      o.batchInvariant});
  pm.addPass(createPootGPUSPIRVEntryABI());
  addSPIRVLowering(pm, /*everyType=*/true, o.client);
}

void mlir::poot::buildPootStepToNVVMPipeline(
    OpPassManager &pm, const PootNVVMPipelineOptions &o) {
  addWholeStepPasses(pm, [&](OpPassManager &p) {
    addPlanAndGenerate(p, DeviceTarget::NVVM, o);
  }, {/*vectorMemory=*/true, o.maxGridX, o.maxBufferBytes, /*maxElements=*/0,
      /*warpLanes=*/o.warpReductions ? 32 : 0, o.jamRows,
      o.batchInvariant,
      /*mmaRows=*/o.tensorCores && mmaSmOf(o.chip) >= 80 ? o.mmaMatmulRows
                                                          : int64_t(0),
      o.mmaStagedRows});
  addNVVMLowering(pm, o);
}

void mlir::poot::buildPootStepToROCDLPipeline(
    OpPassManager &pm, const PootROCDLPipelineOptions &o) {
  addWholeStepPasses(pm, [&](OpPassManager &p) {
    addPlanAndGenerate(p, DeviceTarget::ROCDL, o);
  }, {/*vectorMemory=*/true, o.maxGridX, o.maxBufferBytes, /*maxElements=*/0,
      /*warpLanes=*/0, o.jamRows,
      o.batchInvariant});
  addROCDLLowering(pm, o);
}

void mlir::poot::registerPootGPUPipelines() {
  // The upstream passes the pipelines are built from, so a pipeline printed
  // as text (--mlir-print-ir-*, reproducers) parses back.
  registerGPUPasses();
  spirv::registerSPIRVPasses();
  registerConvertGPUToSPIRVPass();
  registerConvertMathToSPIRVPass();
  registerConvertGpuOpsToNVVMOps();
  registerConvertGpuOpsToROCDLOps();
  registerSCFToControlFlowPass();
  registerReconcileUnrealizedCastsPass();

  registerChecked<PootSPIRVPipelineOptions>(
      "poot-step-to-spirv",
      "Compile a whole step for SPIR-V: every primitive and the attention as "
      "kernels, the state in place, the host side as a program of launches",
      [](const PootSPIRVPipelineOptions &, ErrorHandler) { return success(); },
      buildPootStepToSPIRVPipeline);
  registerChecked<PootNVVMPipelineOptions>(
      "poot-step-to-nvvm",
      "Compile a whole step for NVVM (PTX/cubin), as poot-step-to-spirv",
      [](const PootNVVMPipelineOptions &o, ErrorHandler onError) {
        return checkNVVMOptions("poot-step-to-nvvm", o, onError);
      },
      buildPootStepToNVVMPipeline);
  registerChecked<PootROCDLPipelineOptions>(
      "poot-step-to-rocdl",
      "Compile a whole step for ROCDL (LLVM IR), as poot-step-to-spirv",
      [](const PootROCDLPipelineOptions &o, ErrorHandler onError) {
        return checkChip("poot-step-to-rocdl", o.chip, "^gfx[0-9a-f]+$",
                         "gfx90a, gfx942, gfx1100", onError);
      },
      buildPootStepToROCDLPipeline);
  registerChecked<PootSPIRVPipelineOptions>(
      "poot-to-spirv",
      "Plan, generate and lower attention kernels to SPIR-V (Vulkan)",
      [](const PootSPIRVPipelineOptions &, ErrorHandler) { return success(); },
      buildPootToSPIRVPipeline);
  registerChecked<PootNVVMPipelineOptions>(
      "poot-to-nvvm",
      "Plan, generate and lower attention kernels to PTX/cubin (NVIDIA)",
      [](const PootNVVMPipelineOptions &o, ErrorHandler onError) {
        return checkNVVMOptions("poot-to-nvvm", o, onError);
      },
      buildPootToNVVMPipeline);
  registerChecked<PootROCDLPipelineOptions>(
      "poot-to-rocdl",
      "Plan, generate and lower attention kernels to ROCDL (AMD)",
      [](const PootROCDLPipelineOptions &o, ErrorHandler onError) {
        return checkChip("poot-to-rocdl", o.chip, "^gfx[0-9a-f]+$",
                         "gfx90a, gfx942, gfx1100", onError);
      },
      buildPootToROCDLPipeline);
}
