//===- RetypeOpPattern.h - clone an op over converted types --------*- C++ -*-===//
//
// The fallback pattern of a type conversion that only changes how values are
// stored (bf16 carried as i16, i1 buffers as bytes): an op that computes
// nothing on the converted types (a view, an allocation, a launch, a select)
// is re-created as is, over the converted operands, with converted result
// types. Each pass says which ops it applies to.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_RETYPEOPPATTERN_H
#define POOT_CONVERSION_RETYPEOPPATTERN_H

#include "mlir/Transforms/DialectConversion.h"

#include <functional>

namespace mlir::poot {

struct RetypeOpPattern : ConversionPattern {
  /// `applies(op)`: whether `op` may be cloned over converted types (it must
  /// have no regions: their block arguments would keep the old types).
  RetypeOpPattern(const TypeConverter &converter, MLIRContext *ctx,
                  std::function<bool(Operation *)> applies)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/0, ctx),
        applies(std::move(applies)) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (op->getNumRegions() || !applies(op))
      return failure();
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op->getResultTypes(), types)))
      return failure();
    Operation *copy = rewriter.clone(*op);
    rewriter.modifyOpInPlace(copy, [&] {
      copy->setOperands(operands);
      for (auto [result, type] : llvm::zip(copy->getResults(), types))
        result.setType(type);
    });
    rewriter.replaceOp(op, copy->getResults());
    return success();
  }

private:
  std::function<bool(Operation *)> applies;
};

} // namespace mlir::poot

#endif // POOT_CONVERSION_RETYPEOPPATTERN_H
