//===- PootToLinalg.cpp - convert-poot-to-linalg ---------------------------===//
//
// The pass: every primitive poot op must lower (a leftover one is an error
// naming it); the fused attention ops stay, for their own lowering. Bool
// tensors change type to their byte storage, function signatures included.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "lib/Conversion/PootToLinalg/LoweringUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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
/// poot.rope is a name for its primitive chain (the recognizer forms it so
/// the attention rewrite can see through it); on the CPU it lowers as that
/// chain: x * cos + concat(-x[..., h:], x[..., :h]) * sin. The primitives it
/// creates are then converted by the other patterns.
struct DecomposeRope : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank(), width = type.getShape().back();
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
