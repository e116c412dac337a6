//===- FuseElementwiseChains.cpp - poot-fuse-elementwise-chains ------------===//
//
// Fuses elementwise linalg.generic ops into their consumers with upstream's
// elementwise fusion patterns, under a control that keeps the fusions that
// save work (a producer with one use; on the CPU, only into elementwise
// consumers) and bounds the payload (fusing a long chain op by op clones the
// growing payload each time: unbounded, quadratic in the chain).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
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
    MLIRContext *context = &getContext();
    int64_t cap = maxBodyOps;
    bool anyConsumer = intoReductions;
    linalg::ControlFusionFn fuse = [cap, anyConsumer](OpOperand *operand) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
      return isElementwise(producer) && consumer &&
             (anyConsumer || isElementwise(consumer)) &&
             producer->hasOneUse() &&
             payloadOps(producer) + payloadOps(consumer) <= cap;
    };
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, fuse);
    if (propagateReshapes) {
      // What upstream's linalg-fuse-elementwise-ops adds around its fusion
      // (same control as its own: a producer with one use).
      linalg::ControlFusionFn oneUse = [](OpOperand *operand) {
        Operation *producer = operand->get().getDefiningOp();
        return producer && producer->hasOneUse();
      };
      linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, oneUse);
      tensor::populateBubbleUpExpandShapePatterns(patterns);
      affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
      linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
      tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
      tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
      context->getLoadedDialect<linalg::LinalgDialect>()
          ->getCanonicalizationPatterns(patterns);
      linalg::populateConstantFoldLinalgOperations(patterns, oneUse);
    }
    // Not converging within the driver's iteration limit only leaves some
    // chain less fused than it could be.
    (void)applyPatternsGreedily(
        getOperation(), std::move(patterns),
        GreedyRewriteConfig().setUseTopDownTraversal(true));
  }
};

} // namespace
