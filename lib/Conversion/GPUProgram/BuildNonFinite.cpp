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

/// `value` as an f32 (exact for every f16, infinities and NaN included).
APFloat toF32(APFloat value) {
  bool lost = false;
  value.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
  return value;
}

/// The integer attribute of type `intType` with the bits of float attribute
/// `value` (a float scalar or a dense float vector) -- converted to f32 first
/// when `widen` -- or null when every element is finite.
Attribute bitsIfNonFinite(Attribute value, Type intType, bool widen) {
  auto bits = [&](APFloat v) { return (widen ? toF32(v) : v).bitcastToAPInt(); };
  if (auto f = dyn_cast<FloatAttr>(value)) {
    if (!nonFinite(f.getValue()))
      return {};
    return IntegerAttr::get(intType, bits(f.getValue()));
  }
  auto dense = dyn_cast<DenseFPElementsAttr>(value);
  if (!dense || llvm::none_of(dense.getValues<APFloat>(), nonFinite))
    return {};
  SmallVector<APInt> elements;
  for (APFloat v : dense.getValues<APFloat>())
    elements.push_back(bits(v));
  return DenseIntElementsAttr::get(cast<ShapedType>(intType), elements);
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
      // Below 32 bits the value goes through f32: naga reads no 16-bit
      // integer constant.
      bool widen = floatType.getWidth() < 32;
      Type wideElement = widen ? Float32Type::get(&getContext()) : floatType;
      Type intElement = IntegerType::get(
          &getContext(), cast<FloatType>(wideElement).getWidth());
      Type intType = intElement, wideType = wideElement;
      if (auto vector = dyn_cast<VectorType>(type)) {
        intType = vector.clone(intElement);
        wideType = vector.clone(wideElement);
      }
      Attribute bits = bitsIfNonFinite(op.getValue(), intType, widen);
      if (!bits)
        continue;
      OpBuilder b(op);
      auto integer = spirv::ConstantOp::create(b, op.getLoc(), intType,
                                               cast<TypedAttr>(bits));
      Value built = spirv::BitcastOp::create(b, op.getLoc(), wideType, integer);
      if (widen)
        built = spirv::FConvertOp::create(b, op.getLoc(), type, built);
      op.replaceAllUsesWith(built);
      op.erase();
    }
  }
};

} // namespace
