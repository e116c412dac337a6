//===- BuildNonFinite.cpp - poot-spirv-build-nonfinite ---------------------===//
//
// naga rejects non-finite float literals; the same values built as a bitcast
// of their integer bits are accepted (an expression, not a literal). See the
// pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTSPIRVBUILDNONFINITE
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

bool nonFinite(const APFloat &value) { return !value.isFinite(); }

/// The integer attribute with the bits of float attribute `value` (a float
/// scalar or a dense float vector), or null when every element is finite.
Attribute bitsIfNonFinite(Attribute value, Type intType) {
  if (auto f = dyn_cast<FloatAttr>(value)) {
    if (!nonFinite(f.getValue()))
      return {};
    return IntegerAttr::get(intType, f.getValue().bitcastToAPInt());
  }
  auto dense = dyn_cast<DenseFPElementsAttr>(value);
  if (!dense || llvm::none_of(dense.getValues<APFloat>(), nonFinite))
    return {};
  return dense.bitcast(cast<ShapedType>(intType).getElementType());
}

struct BuildNonFinite
    : poot::impl::PootSPIRVBuildNonFiniteBase<BuildNonFinite> {
  void runOnOperation() override {
    SmallVector<spirv::ConstantOp> found;
    getOperation().walk([&](spirv::ConstantOp op) { found.push_back(op); });
    for (spirv::ConstantOp op : found) {
      Type type = op.getType();
      auto floatType = dyn_cast<FloatType>(getElementTypeOrSelf(type));
      if (!floatType)
        continue;
      Type intElement =
          IntegerType::get(&getContext(), floatType.getWidth());
      Type intType = intElement;
      if (auto vector = dyn_cast<VectorType>(type))
        intType = vector.clone(intElement);
      Attribute bits = bitsIfNonFinite(op.getValue(), intType);
      if (!bits)
        continue;
      OpBuilder b(op);
      auto integer = spirv::ConstantOp::create(b, op.getLoc(), intType,
                                               cast<TypedAttr>(bits));
      auto built = spirv::BitcastOp::create(b, op.getLoc(), type, integer);
      op.replaceAllUsesWith(built.getResult());
      op.erase();
    }
  }
};

} // namespace
