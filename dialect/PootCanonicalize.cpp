//===- PootCanonicalize.cpp - canonicalization patterns of poot ops -------===//
//
// The canonical form the attention matcher reads: one transpose where the
// tracer wrote two, one reshape or broadcast where it wrote a chain, implicit
// broadcasting instead of explicit `broadcast`/unit-dim `reshape` operands,
// `keepdim` reductions instead of reduce-then-reshape, constants on the right
// of commutative ops, no multiplication by one, and division by a constant
// whose reciprocal is exact written as a multiplication.
//
// Every pattern here is exact: the rewritten program computes the same bits
// (IEEE operations used the same way, or none at all). A rewrite that would
// round differently (division by a constant whose reciprocal is inexact) is
// left to the matcher, which reads both spellings.
//
//===----------------------------------------------------------------------===//

#include "dialect/PootDialect.h"

#include "dialect/Broadcast.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::poot;

static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The splat value of a constant operand, if it is one.
static std::optional<Attribute> splatConstant(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(attr);
  if (!splat)
    return std::nullopt;
  return splat.getSplatValue<Attribute>();
}

namespace {

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

/// transpose(transpose(x, p1), p2) -> transpose(x, p1[p2]). The identity that
/// may result is removed by TransposeOp's folder.
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getOperand().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> p1 = inner.getPermutation(), p2 = op.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t d : p2)
      composed.push_back(p1[d]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, inner.getOperand(), composed);
    return success();
  }
};

/// reshape(reshape(x)) -> reshape(x): only the element count matters.
struct ComposeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getOperand().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getOperand());
    return success();
  }
};

/// reshape(reduce(x, axis)) that re-inserts the reduced unit axis ->
/// reduce(x, axis, keepdim): softmax written with plain reductions and
/// reshapes reads as the keepdim form.
struct KeepdimReduce : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto reduce = op.getOperand().getDefiningOp<ReduceOp>();
    if (!reduce || reduce.getKeepdim() || !reduce->hasOneUse())
      return failure();
    SmallVector<int64_t> kept(tensorOf(reduce.getOperand()).getShape());
    kept[reduce.getAxis()] = 1;
    if (op.getType().getShape() != ArrayRef<int64_t>(kept))
      return failure();
    rewriter.replaceOpWithNewOp<ReduceOp>(op, reduce.getKindAttr(),
                                          reduce.getOperand(),
                                          reduce.getAxisAttr(),
                                          rewriter.getUnitAttr());
    return success();
  }
};

/// broadcast(broadcast(x)) -> broadcast(x): numpy broadcast_to composes.
struct ComposeBroadcasts : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getOperand().getDefiningOp<BroadcastOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<BroadcastOp>(op, op.getType(),
                                             inner.getOperand());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// The value an explicit broadcast stands for when an implicitly broadcasting
/// op consumes it: the operand of a `broadcast`, or of a `reshape` that only
/// prepends unit dimensions.
static Value implicitSource(Value value) {
  if (auto broadcast = value.getDefiningOp<BroadcastOp>())
    return broadcast.getOperand();
  if (auto reshape = value.getDefiningOp<ReshapeOp>()) {
    ArrayRef<int64_t> from = tensorOf(reshape.getOperand()).getShape();
    ArrayRef<int64_t> to = reshape.getType().getShape();
    if (to.size() >= from.size() && to.take_back(from.size()) == from &&
        llvm::all_of(to.drop_back(from.size()),
                     [](int64_t d) { return d == 1; }))
      return reshape.getOperand();
  }
  return {};
}

/// op(..., broadcast(x), ...) -> op(..., x, ...) when the op's own numpy
/// broadcast still gives the same result shape: elementwise ops (binary,
/// compare, select) broadcast implicitly, so the explicit copy says nothing.
struct DropExplicitBroadcast : RewritePattern {
  DropExplicitBroadcast(StringRef rootName, MLIRContext *ctx)
      : RewritePattern(rootName, /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> resultShape = tensorOf(op->getResult(0)).getShape();
    for (OpOperand &operand : op->getOpOperands()) {
      Value source = implicitSource(operand.get());
      if (!source)
        continue;
      SmallVector<int64_t> shape;
      for (OpOperand &other : op->getOpOperands()) {
        Value value = &other == &operand ? source : other.get();
        auto next = broadcastShapes(shape, tensorOf(value).getShape());
        if (!next)
          return failure();
        shape = *next;
      }
      if (ArrayRef<int64_t>(shape) != resultShape)
        continue;
      rewriter.modifyOpInPlace(op, [&] { operand.set(source); });
      return success();
    }
    return failure();
  }
};

/// op(constant, x) -> op(x, constant) for commutative ops, so matchers look
/// for constants on the right only.
template <typename OpTy>
struct ConstantToRight : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!matchPattern(op.getLhs(), m_Constant()) ||
        matchPattern(op.getRhs(), m_Constant()))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      Value lhs = op.getLhs();
      op->setOperand(0, op.getRhs());
      op->setOperand(1, lhs);
    });
    return success();
  }
};

/// mul(x, 1) -> x when the constant does not widen the result.
struct MulByOne : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [x, c] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      if (x.getType() != op.getType())
        continue;
      std::optional<Attribute> splat = splatConstant(c);
      if (!splat)
        continue;
      bool one = false;
      if (auto f = dyn_cast<FloatAttr>(*splat))
        one = f.getValue().isExactlyValue(1.0);
      else if (auto i = dyn_cast<IntegerAttr>(*splat))
        one = i.getType().isInteger(32) && i.getValue().isOne();
      if (!one)
        continue;
      rewriter.replaceOp(op, x);
      return success();
    }
    return failure();
  }
};

/// div(x, c) -> mul(x, 1/c) for a float splat `c` whose reciprocal is exact
/// in the element type (c = +-2^k): x / c and x * (1/c) then round the same.
/// Other divisors keep their division; the matcher reads it as 1/c.
struct DivByExactReciprocal : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<Attribute> splat = splatConstant(op.getRhs());
    auto divisor = splat ? dyn_cast<FloatAttr>(*splat) : FloatAttr();
    if (!divisor)
      return failure();
    APFloat c = divisor.getValue();
    if (!c.isFiniteNonZero())
      return failure();
    APFloat reciprocal(c.getSemantics(), 1);
    if (reciprocal.divide(c, APFloat::rmNearestTiesToEven) != APFloat::opOK ||
        !reciprocal.isNormal())
      return failure();
    auto type = tensorOf(op.getRhs());
    auto constant = ConstantOp::create(
        rewriter, op.getLoc(), type,
        DenseElementsAttr::get(type, FloatAttr::get(type.getElementType(),
                                                    reciprocal)));
    rewriter.replaceOpWithNewOp<MulOp>(op, op.getType(), op.getLhs(), constant);
    return success();
  }
};

/// neg(neg(x)) -> x.
struct NegNeg : OpRewritePattern<NegOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NegOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getOperand().getDefiningOp<NegOp>();
    if (!inner)
      return failure();
    rewriter.replaceOp(op, inner.getOperand());
    return success();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *ctx) {
  results.add<ComposeTransposes>(ctx);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *ctx) {
  results.add<ComposeReshapes, KeepdimReduce>(ctx);
}

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *ctx) {
  results.add<ComposeBroadcasts>(ctx);
}

template <typename OpTy>
static void addElementwise(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<DropExplicitBroadcast>(OpTy::getOperationName(), ctx);
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  addElementwise<AddOp>(results, ctx);
  results.add<ConstantToRight<AddOp>>(ctx);
}

void SubOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  addElementwise<SubOp>(results, ctx);
}

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  addElementwise<MulOp>(results, ctx);
  results.add<ConstantToRight<MulOp>, MulByOne>(ctx);
}

void DivOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  addElementwise<DivOp>(results, ctx);
  results.add<DivByExactReciprocal>(ctx);
}

void MaxOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  addElementwise<MaxOp>(results, ctx);
  results.add<ConstantToRight<MaxOp>>(ctx);
}

void MinOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  addElementwise<MinOp>(results, ctx);
  results.add<ConstantToRight<MinOp>>(ctx);
}

void AndOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  addElementwise<AndOp>(results, ctx);
  results.add<ConstantToRight<AndOp>>(ctx);
}

void OrOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                       MLIRContext *ctx) {
  addElementwise<OrOp>(results, ctx);
  results.add<ConstantToRight<OrOp>>(ctx);
}

void CompareOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *ctx) {
  addElementwise<CompareOp>(results, ctx);
}

void SelectOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *ctx) {
  addElementwise<SelectOp>(results, ctx);
}

void NegOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *ctx) {
  results.add<NegNeg>(ctx);
}
