//===- PootToLinalg.cpp - convert-poot-to-linalg ---------------------------===//
//
// The pass: every primitive poot op must lower (a leftover one is an error
// naming it); the fused attention ops stay, for their own lowering. Bool
// tensors change type to their byte storage, function signatures included.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "lib/Conversion/PootToLinalg/LoweringUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::poot {
#define GEN_PASS_DEF_CONVERTPOOTTOLINALG
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

void poot::populatePootToLinalgTypeConversions(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](RankedTensorType type) -> Type {
    return linalg_lowering::storageType(type);
  });
}

namespace {
/// The shape of a RoPE operand with its last dimension `width` split into
/// (2, width / 2) halves; a broadcast last dimension (1) becomes (1, 1).
SmallVector<int64_t> halvedShape(ArrayRef<int64_t> shape, int64_t width) {
  SmallVector<int64_t> out(shape.drop_back());
  if (shape.back() == width)
    out.append({2, width / 2});
  else
    out.append({1, 1});
  return out;
}

/// poot.rope is a name for its primitive chain (the recognizer forms it so
/// the attention rewrite can see through it): y = x * cos + concat(-x[...,
/// h:], x[..., :h]) * sin. A float rope of an even width lowers as one
/// elementwise linalg.generic over the halves (x, cos and sin viewed as
/// [..., 2, h]): each element computes x * cos, the rotated element (the
/// other half's, negated in the first half) times sin, and their sum, with
/// the chain's ops in its order and type (the same rounding per op), so a
/// rotary embedding is one kernel on a GPU instead of the chain's slices,
/// negation, concatenation and products. Anything else lowers as the chain;
/// the primitives it creates are then converted by the other patterns.
struct DecomposeRope : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank(), width = type.getShape().back();
    if (Value fused = halvesGeneric(rewriter, loc, op, x, adaptor)) {
      rewriter.replaceOp(op, fused);
      return success();
    }
    SmallVector<int64_t> start(rank, 0), limit(type.getShape()),
        strides(rank, 1);
    limit.back() = width / 2;
    Value first = SliceOp::create(rewriter, loc, x, start, limit, strides);
    start.back() = width / 2;
    limit.back() = width;
    Value second = SliceOp::create(rewriter, loc, x, start, limit, strides);
    Value negated = NegOp::create(rewriter, loc, second);
    Value rotated = ConcatOp::create(rewriter, loc, ValueRange{negated, first},
                                     /*axis=*/rank - 1);
    Value lhs = MulOp::create(rewriter, loc, x, adaptor.getCos());
    Value rhs = MulOp::create(rewriter, loc, rotated, adaptor.getSin());
    rewriter.replaceOpWithNewOp<AddOp>(op, lhs, rhs);
    return success();
  }

  /// The one-generic form, or null when it does not apply (an odd or
  /// dynamic width, a non-float or mixed element type, tables whose last
  /// dimension is neither the width nor 1).
  static Value halvesGeneric(OpBuilder &b, Location loc, RopeOp op, Value x,
                             OpAdaptor adaptor) {
    auto type = cast<RankedTensorType>(x.getType());
    auto result = dyn_cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || !result || result.getShape() != type.getShape())
      return {};
    int64_t rank = type.getRank(), width = type.getShape().back();
    Type element = type.getElementType();
    if (width < 2 || width % 2 || !isa<FloatType>(element))
      return {};
    SmallVector<Value> tables{adaptor.getCos(), adaptor.getSin()};
    for (Value t : tables) {
      auto tt = dyn_cast<RankedTensorType>(t.getType());
      if (!tt || !tt.hasStaticShape() || tt.getRank() == 0 ||
          tt.getElementType() != element ||
          (tt.getShape().back() != width && tt.getShape().back() != 1))
        return {};
    }
    MLIRContext *ctx = b.getContext();
    SmallVector<int64_t> loop = halvedShape(type.getShape(), width);
    Value xs = linalg_lowering::reshapeTensor(b, loc, x, loop);
    SmallVector<Value> inputs{xs, xs, xs};
    SmallVector<AffineMap> maps;
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank + 1, ctx);
    maps.push_back(identity);
    // The two halves of the same (..., j) position.
    for (int64_t half : {0, 1})
      maps.push_back(identity.replace(getAffineDimExpr(rank - 1, ctx),
                                      getAffineConstantExpr(half, ctx),
                                      rank + 1, 0));
    for (Value t : tables) {
      auto tt = cast<RankedTensorType>(t.getType());
      SmallVector<int64_t> shape = halvedShape(tt.getShape(), width);
      inputs.push_back(linalg_lowering::reshapeTensor(b, loc, t, shape));
      maps.push_back(linalg_lowering::broadcastMap(shape, loop, ctx));
    }
    maps.push_back(identity);
    auto outType = RankedTensorType::get(loop, element);
    Value init = linalg_lowering::emptyTensor(b, loc, outType);
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{outType}, inputs, ValueRange{init}, maps,
        linalg_lowering::parallelIterators(rank + 1),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value xv = args[0], first = args[1], second = args[2];
          Value cos = args[3], sin = args[4];
          Value half = linalg::IndexOp::create(nb, l, rank - 1);
          Value zero = arith::ConstantIndexOp::create(nb, l, 0);
          Value inFirst = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, half, zero);
          Value negated = arith::NegFOp::create(nb, l, second);
          Value rotated =
              arith::SelectOp::create(nb, l, inFirst, negated, first);
          Value lhs = arith::MulFOp::create(nb, l, xv, cos);
          Value rhs = arith::MulFOp::create(nb, l, rotated, sin);
          linalg::YieldOp::create(
              nb, l, ValueRange{arith::AddFOp::create(nb, l, lhs, rhs)});
        });
    return linalg_lowering::reshapeTensor(b, loc, generic.getResult(0),
                                          type.getShape());
  }
};
} // namespace

void poot::populatePootToLinalgPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns,
                                        bool foldTransposedRhs) {
  patterns.add<DecomposeRope>(converter, patterns.getContext());
  linalg_lowering::populateElementwisePatterns(converter, patterns);
  linalg_lowering::populateDataMovementPatterns(converter, patterns);
  linalg_lowering::populateContractionPatterns(converter, patterns,
                                               foldTransposedRhs);
}

namespace {
struct ConvertPootToLinalg
    : poot::impl::ConvertPootToLinalgBase<ConvertPootToLinalg> {
  using ConvertPootToLinalgBase::ConvertPootToLinalgBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    TypeConverter converter;
    populatePootToLinalgTypeConversions(converter);

    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.addIllegalDialect<PootDialect>();
    target.addLegalOp<AttentionOp, SelectedAttentionOp, BlockTopKOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return converter.isSignatureLegal(func.getFunctionType()) &&
             converter.isLegal(&func.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    populatePootToLinalgPatterns(converter, patterns, foldTransposedRhs);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    getOperation()->walk(dropBoolMarkers);
  }

  /// A `poot.*` marker states a rule about its value's type (a validation
  /// result is a tensor<i1>); on a bool now stored as bytes it no longer
  /// holds, so the bool arguments and results lose their markers (the
  /// compiler reads them into the artifact manifest before lowering).
  static void dropBoolMarkers(func::FuncOp func) {
    auto isBytes = [](Type type) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      return tensor && tensor.getElementType().isInteger(8);
    };
    auto strip = [](DictionaryAttr attrs) {
      SmallVector<NamedAttribute> kept;
      for (NamedAttribute attr : attrs)
        if (!attr.getName().getValue().starts_with("poot."))
          kept.push_back(attr);
      return DictionaryAttr::get(attrs.getContext(), kept);
    };
    FunctionType type = func.getFunctionType();
    for (auto [i, input] : llvm::enumerate(type.getInputs()))
      if (isBytes(input))
        func.setArgAttrs(i, strip(func.getArgAttrDict(i)
                                      ? func.getArgAttrDict(i)
                                      : DictionaryAttr::get(func.getContext())));
    for (auto [i, result] : llvm::enumerate(type.getResults()))
      if (isBytes(result))
        func.setResultAttrs(
            i, strip(func.getResultAttrDict(i)
                         ? func.getResultAttrDict(i)
                         : DictionaryAttr::get(func.getContext())));
  }
};
} // namespace
