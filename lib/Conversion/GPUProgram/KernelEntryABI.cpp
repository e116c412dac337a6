//===- KernelEntryABI.cpp - poot-gpu-spirv-entry-abi -----------------------===//
//
// convert-gpu-to-spirv needs every kernel's workgroup size as
// `spirv.entry_point_abi`; no upstream pass derives it. gpu-kernel-outlining
// records the launch's constant block size as `known_block_size`: copy it.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUSPIRVENTRYABI
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {
struct KernelEntryABI
    : poot::impl::PootGPUSPIRVEntryABIBase<KernelEntryABI> {
  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel() || func->hasAttr(spirv::getEntryPointABIAttrName()))
        return;
      std::optional<ArrayRef<int32_t>> size = func.getKnownBlockSize();
      if (!size) {
        func.emitError("poot-gpu-spirv-entry-abi: a kernel without a known "
                       "block size");
        failed = true;
        return;
      }
      func->setAttr(spirv::getEntryPointABIAttrName(),
                    spirv::getEntryPointABIAttr(func.getContext(),
                                                *size));
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
