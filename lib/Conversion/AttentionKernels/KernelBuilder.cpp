//===- KernelBuilder.cpp - arithmetic shorthands for the kernel emitters ---===//
#include "lib/Conversion/AttentionKernels/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

Value KernelBuilder::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value KernelBuilder::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value KernelBuilder::add(Value x, Value y) {
  if (isa<IndexType>(x.getType()))
    return arith::AddIOp::create(b, loc, x, y);
  return arith::AddFOp::create(b, loc, x, y);
}

Value KernelBuilder::mul(Value x, Value y) {
  if (isa<IndexType>(x.getType()))
    return arith::MulIOp::create(b, loc, x, y);
  return arith::MulFOp::create(b, loc, x, y);
}

Value KernelBuilder::divui(Value x, int64_t y) {
  return arith::DivUIOp::create(b, loc, x, index(y));
}

Value KernelBuilder::remui(Value x, int64_t y) {
  return arith::RemUIOp::create(b, loc, x, index(y));
}

Value KernelBuilder::widen(Value x) {
  Type element = getElementTypeOrSelf(x.getType());
  if (!element.isF16() && !element.isBF16())
    return x;
  Type wide = b.getF32Type();
  if (auto vector = dyn_cast<VectorType>(x.getType()))
    wide = vector.clone(wide);
  return arith::ExtFOp::create(b, loc, wide, x);
}

Value KernelBuilder::narrowTo(Value x, Type element) {
  if (getElementTypeOrSelf(x.getType()) == element ||
      !isa<FloatType>(element))
    return x;
  Type narrow = element;
  if (auto vector = dyn_cast<VectorType>(x.getType()))
    narrow = vector.clone(element);
  // arith.truncf without a rounding mode is round-to-nearest-even on every
  // target we lower to (LLVM fptrunc, SPIR-V OpFConvert).
  return arith::TruncFOp::create(b, loc, narrow, x);
}

Value KernelBuilder::load(Value mem, Value idx) {
  return widen(memref::LoadOp::create(b, loc, mem, ValueRange{idx}));
}

void KernelBuilder::store(Value val, Value mem, Value idx) {
  Type element = cast<MemRefType>(mem.getType()).getElementType();
  memref::StoreOp::create(b, loc, narrowTo(val, element), mem, ValueRange{idx});
}

Value KernelBuilder::exp(Value x) { return math::ExpOp::create(b, loc, x); }

Value KernelBuilder::isNegInf(Value x) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                               f32(-std::numeric_limits<double>::infinity()));
}

Value KernelBuilder::select(Value cond, Value x, Value y) {
  return arith::SelectOp::create(b, loc, cond, x, y);
}

Value KernelBuilder::weight(Value m, Value max) {
  return select(isNegInf(m), f32(0.0),
                exp(arith::SubFOp::create(b, loc, m, max)));
}

Value KernelBuilder::indexOf(Value i32) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32);
}

KernelBuilder::OnlineStep KernelBuilder::onlineStep(Value m, Value s) {
  Value max = arith::MaximumFOp::create(b, loc, m, s);
  return {max, weight(m, max), weight(s, max)};
}

Value KernelBuilder::rescaleAdd(Value acc, const OnlineStep &step, Value x) {
  return add(mul(acc, step.rescale), x ? mul(step.weight, x) : step.weight);
}
