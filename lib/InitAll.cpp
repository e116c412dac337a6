//===- InitAll.cpp - the one registration list -----------------------------===//
#include "lib/InitAll.h"

#include "dialect/PootDialect.h"
#include "lib/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::poot::registerAllDialects(DialectRegistry &registry) {
  registry.insert<poot::PootDialect, arith::ArithDialect, func::FuncDialect,
                  math::MathDialect, tensor::TensorDialect,
                  linalg::LinalgDialect, scf::SCFDialect, memref::MemRefDialect,
                  gpu::GPUDialect, cf::ControlFlowDialect,
                  bufferization::BufferizationDialect, vector::VectorDialect,
                  LLVM::LLVMDialect, spirv::SPIRVDialect, NVVM::NVVMDialect,
                  ROCDL::ROCDLDialect>();
}

void mlir::poot::registerAllPasses() {
  // Upstream generic transforms: canonicalize, cse, inline, symbol-dce, ...
  mlir::registerTransformsPasses();
  poot::registerPootTransformsPasses();
}
