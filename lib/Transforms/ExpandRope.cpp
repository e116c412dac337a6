//===- ExpandRope.cpp - poot.rope back to the rotate-half primitives ------===//
//
// The inverse of poot-recognize-rope, for a lowering that has no poot.rope
// kernel: the exact chain the tracer emits (composites.rope), so a program
// computes the same numbers whether or not RoPE was recognized in between.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTEXPANDROPE
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// rope(x, cos, sin) -> x * cos + concat(-x[..., h:], x[..., :h]) * sin.
struct ExpandRopeOp : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RopeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    ArrayRef<int64_t> shape = op.getType().getShape();
    int64_t last = shape.size() - 1, d = shape.back(), h = d / 2;
    SmallVector<int64_t> zeros(shape.size(), 0), ones(shape.size(), 1);
    SmallVector<int64_t> lowStart = zeros, lowLimit(shape);
    SmallVector<int64_t> highStart = zeros, highLimit(shape);
    lowLimit[last] = h;
    highStart[last] = h;

    Value direct = MulOp::create(rewriter, loc, x, op.getCos());
    Value low = SliceOp::create(rewriter, loc, x, lowStart, lowLimit, ones);
    Value high = SliceOp::create(rewriter, loc, x, highStart, highLimit, ones);
    Value negated = NegOp::create(rewriter, loc, high);
    Value rotated =
        ConcatOp::create(rewriter, loc, ValueRange{negated, low}, last);
    Value turned = MulOp::create(rewriter, loc, rotated, op.getSin());
    rewriter.replaceOpWithNewOp<AddOp>(op, direct, turned);
    return success();
  }
};

struct ExpandRope : poot::impl::PootExpandRopeBase<ExpandRope> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandRopeOp>(&getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
