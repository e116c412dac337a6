//===- FuseElementwiseChains.cpp - poot-fuse-elementwise-chains ------------===//
//
// Fuses chains of elementwise linalg.generic ops with upstream's elementwise
// fusion patterns, under a control that keeps the fusions that only save
// work: elementwise into elementwise, a producer with one use, and a payload
// of bounded size (fusing a long chain op by op clones the growing payload
// each time: unbounded, quadratic in the chain).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTFUSEELEMENTWISECHAINS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

bool isElementwise(linalg::GenericOp op) {
  return op && op.getNumLoops() == op.getNumParallelLoops();
}

/// Operations in `op`'s payload (its terminator excluded).
int64_t payloadOps(linalg::GenericOp op) {
  return static_cast<int64_t>(op.getBody()->getOperations().size()) - 1;
}

struct FuseElementwiseChains
    : poot::impl::PootFuseElementwiseChainsBase<FuseElementwiseChains> {
  using Base::Base;

  void runOnOperation() override {
    int64_t cap = maxBodyOps;
    linalg::ControlFusionFn control = [cap](OpOperand *operand) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
      return isElementwise(producer) && isElementwise(consumer) &&
             producer->hasOneUse() &&
             payloadOps(producer) + payloadOps(consumer) <= cap;
    };
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    // Not converging within the driver's iteration limit only leaves some
    // chain less fused than it could be.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
