//===- InitAll.cpp - the one registration list -----------------------------===//
#include "lib/InitAll.h"

#include "dialect/PootDialect.h"
#include "lib/Conversion/GPUPipelines.h"
#include "lib/Conversion/Passes.h"
#include "lib/Conversion/Pipelines.h"
#include "lib/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ComplexToLLVM/ComplexToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "mlir/Target/SPIRV/Target.h"
#include "mlir/Transforms/Passes.h"

void mlir::poot::registerAllDialects(DialectRegistry &registry) {
  // affine: the whole-step lowering's index math (affine.linearize_index
  // from fold-memref-alias-ops) reads back in lit tests.
  registry.insert<poot::PootDialect, affine::AffineDialect,
                  arith::ArithDialect, func::FuncDialect,
                  math::MathDialect, tensor::TensorDialect,
                  linalg::LinalgDialect, scf::SCFDialect, memref::MemRefDialect,
                  gpu::GPUDialect, cf::ControlFlowDialect,
                  bufferization::BufferizationDialect, vector::VectorDialect,
                  LLVM::LLVMDialect, spirv::SPIRVDialect, NVVM::NVVMDialect,
                  ROCDL::ROCDLDialect, omp::OpenMPDialect>();
  // GPU targets serialize kernels (gpu-module-to-binary) and translate them
  // to LLVM IR: their target attributes and translations must be known.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  spirv::registerSPIRVTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerROCDLDialectTranslation(registry);
  // The CPU target's parallel loops are OpenMP worksharing loops.
  registerOpenMPDialectTranslation(registry);
  // convert-gpu-to-nvvm/rocdl load these ConvertToLLVM interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  // Python contexts load every registered dialect, and ConvertToLLVM then
  // requires the interface of each loaded one (vector, gpu included).
  vector::registerConvertVectorToLLVMInterface(registry);
  gpu::registerConvertGpuToLLVMInterface(registry);
  registerConvertComplexToLLVMInterface(registry);
  registerConvertOpenMPToLLVMInterface(registry);
  // The CPU pipeline bufferizes arith/linalg/tensor/scf/func ops.
  poot::registerCPUPipelineDialectInterfaces(registry);
}

void mlir::poot::registerAllPasses() {
  // Pipelines may not be registered twice: guard against a second call.
  static bool pipelinesRegistered = [] {
    PassPipelineRegistration<poot::FuseAttentionPipelineOptions>(
        "poot-fuse-attention",
        "Canonicalize, recognize RoPE, rewrite attention chains into "
        "poot.attention, form the sparse indexer's poot.block_topk and "
        "poot.selected_attention, CSE",
        poot::buildFuseAttentionPipeline);
    return true;
  }();
  (void)pipelinesRegistered;
  // Upstream generic transforms: canonicalize, cse, inline, symbol-dce, ...
  mlir::registerTransformsPasses();
  // Upstream bufferization passes (one-shot-bufferize, the deallocation
  // passes): what the CPU and step pipelines run, runnable on their own.
  bufferization::registerBufferizationPasses();
  poot::registerPootTransformsPasses();
  // Every pass of lib/Conversion/Passes.td (the generated list: a new pass
  // is registered by declaring it), then the pipelines.
  poot::registerPootConversionPasses();
  poot::registerPootGPUPipelines();
  poot::registerPootToLLVMCPUPipeline();
}
