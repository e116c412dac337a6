//===- RecognizeRope.cpp - form poot.rope from the rotate-half chain ------===//
//
// The tracer writes a rotary embedding as six primitives. Folding them into
// one poot.rope lets later passes treat "q after RoPE" as one value.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "dialect/Broadcast.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTRECOGNIZEROPE
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// True when `value` is `x[..., from:to]` over the last axis of `x`, with
/// every other axis whole and unit strides.
bool isLastAxisHalf(Value value, Value x, int64_t from, int64_t to) {
  auto slice = value.getDefiningOp<SliceOp>();
  if (!slice || slice.getOperand() != x)
    return false;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  int64_t last = shape.size() - 1;
  for (int64_t d = 0; d <= last; ++d) {
    int64_t start = d == last ? from : 0, limit = d == last ? to : shape[d];
    if (slice.getStart()[d] != start || slice.getLimit()[d] != limit ||
        slice.getStrides()[d] != 1)
      return false;
  }
  return true;
}

/// True when `value` is rotate_half(x) = concat(-x[..., h:], x[..., :h]).
bool isRotateHalf(Value value, Value x) {
  auto concat = value.getDefiningOp<ConcatOp>();
  auto type = cast<RankedTensorType>(x.getType());
  if (!concat || concat.getInputs().size() != 2 || type.getRank() < 1 ||
      concat.getAxis() != type.getRank() - 1 || type.getShape().back() % 2)
    return false;
  int64_t d = type.getShape().back(), h = d / 2;
  auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
  return neg && isLastAxisHalf(neg.getOperand(), x, h, d) &&
         isLastAxisHalf(concat.getInputs()[1], x, 0, h);
}

/// add(mul(x, cos), mul(rotate_half(x), sin)) -> rope(x, cos, sin), with the
/// operands of add and of each mul in either order.
struct RotateHalfToRope : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [direct, rotated] : {std::pair(op.getLhs(), op.getRhs()),
                                   std::pair(op.getRhs(), op.getLhs())}) {
      auto directMul = direct.getDefiningOp<MulOp>();
      auto rotatedMul = rotated.getDefiningOp<MulOp>();
      if (!directMul || !rotatedMul)
        continue;
      for (auto [x, cos] : {std::pair(directMul.getLhs(), directMul.getRhs()),
                            std::pair(directMul.getRhs(), directMul.getLhs())}) {
        // The result must be x's shape: tables that widen it are not RoPE.
        if (x.getType() != op.getType())
          continue;
        for (auto [rot, sin] :
             {std::pair(rotatedMul.getLhs(), rotatedMul.getRhs()),
              std::pair(rotatedMul.getRhs(), rotatedMul.getLhs())}) {
          if (!isRotateHalf(rot, x) || !tablesFit(x, cos, sin))
            continue;
          rewriter.replaceOpWithNewOp<RopeOp>(op, op.getType(), x, cos, sin);
          return success();
        }
      }
    }
    return failure();
  }

  static bool tablesFit(Value x, Value cos, Value sin) {
    auto type = cast<RankedTensorType>(x.getType());
    return llvm::all_of(std::array<Value, 2>{cos, sin}, [&](Value table) {
      auto t = cast<RankedTensorType>(table.getType());
      return t.getElementType() == type.getElementType() &&
             broadcastsTo(t.getShape(), type.getShape());
    });
  }
};

struct RecognizeRope : poot::impl::PootRecognizeRopeBase<RecognizeRope> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RotateHalfToRope>(&getContext());
    // Only this rewrite: no folding, no constant merging elsewhere in the
    // function (the greedy driver still drops the chain's dead primitives).
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};

} // namespace
