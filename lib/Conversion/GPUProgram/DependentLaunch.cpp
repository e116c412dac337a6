//===- DependentLaunch.cpp - poot-gpu-dependent-launch ---------------------===//
//
// Programmatic dependent launch (Passes.td): every kernel waits for the
// grids ahead of it before anything else, then lets the grid after it be
// scheduled. The wait comes first so that no load or store of a kernel can
// run before the kernel ahead has finished: correctness does not depend on
// knowing which buffers a kernel shares with its predecessor.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUDEPENDENTLAUNCH
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {
struct DependentLaunch
    : poot::impl::PootGPUDependentLaunchBase<DependentLaunch> {
  void runOnOperation() override {
    getOperation().walk([](gpu::GPUFuncOp func) {
      if (!func.isKernel() || func.getBody().empty())
        return;
      Block &entry = func.getBody().front();
      // Already done (the pass ran before on this module).
      if (auto first = dyn_cast<NVVM::GriddepcontrolOp>(entry.front());
          first && first.getKind() == NVVM::GridDepActionKind::wait)
        return;
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Location loc = func.getLoc();
      NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
      NVVM::GriddepcontrolOp::create(b, loc,
                                     NVVM::GridDepActionKind::launch_dependents);
    });
  }
};
} // namespace
