//===- ExpandIntDivisions.cpp - poot-gpu-expand-int-divisions -------------===//
//
// Integer floor/ceil divisions as plain arithmetic in the kernels, and
// nothing else of arith-expand: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUEXPANDINTDIVISIONS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

struct ExpandIntDivisions
    : poot::impl::PootGPUExpandIntDivisionsBase<ExpandIntDivisions> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
