//===- PootRanges.cpp - integer range inference for poot ops --------------===//
//
// These implementations let MLIR's IntegerRangeAnalysis (dataflow) bound the
// i32 values the attention rewrite must prove things about: a live length in
// [1, Lk], a read map inside the pool. A tensor's range covers every element.
// Non-i32 results are left unset (the analysis treats them as unknown).
//
//===----------------------------------------------------------------------===//

#include "dialect/PootDialect.h"

#include "mlir/Interfaces/Utils/InferIntRangeCommon.h"

using namespace mlir;
using namespace mlir::poot;

static bool isI32(Value value) {
  return getElementTypeOrSelf(value.getType()).isInteger(32);
}

static ConstantIntRanges rangeI32(int64_t min, int64_t max) {
  return ConstantIntRanges::fromSigned(APInt(32, min, /*isSigned=*/true),
                                       APInt(32, max, /*isSigned=*/true));
}

void ConstantOp::inferResultRanges(ArrayRef<ConstantIntRanges>,
                                   SetIntRangeFn setResultRanges) {
  auto dense = dyn_cast<DenseIntElementsAttr>(getValue());
  if (!dense || !isI32(getResult()) || dense.getNumElements() == 0)
    return;
  std::optional<ConstantIntRanges> range;
  for (const APInt &value : dense.getValues<APInt>()) {
    auto point = ConstantIntRanges::constant(value);
    range = range ? range->rangeUnion(point) : point;
  }
  setResultRanges(getResult(), *range);
}

void IotaOp::inferResultRanges(ArrayRef<ConstantIntRanges>,
                               SetIntRangeFn setResultRanges) {
  if (!isI32(getResult()))
    return;
  setResultRanges(getResult(),
                  rangeI32(0, std::max<int64_t>(getType().getDimSize(getDim()) - 1, 0)));
}

void ConvertOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                  SetIntRangeFn setResultRanges) {
  if (!isI32(getResult()))
    return;
  Type from = getElementTypeOrSelf(getOperand().getType());
  if (from.isInteger(32))
    setResultRanges(getResult(), argRanges[0]);
  else if (from.isInteger(1))
    setResultRanges(getResult(), rangeI32(0, 1));
}

void AddOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                              SetIntRangeFn setResultRanges) {
  if (isI32(getResult()))
    setResultRanges(getResult(), intrange::inferAdd(argRanges));
}

void SubOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                              SetIntRangeFn setResultRanges) {
  if (isI32(getResult()))
    setResultRanges(getResult(), intrange::inferSub(argRanges));
}

void MaxOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                              SetIntRangeFn setResultRanges) {
  if (isI32(getResult()))
    setResultRanges(getResult(), intrange::inferMaxS(argRanges));
}

void MinOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                              SetIntRangeFn setResultRanges) {
  if (isI32(getResult()))
    setResultRanges(getResult(), intrange::inferMinS(argRanges));
}

void IndexGuardOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                     SetIntRangeFn setResultRanges) {
  // clamp(x, min, max) lies in [clamp(x.smin), clamp(x.smax)].
  int64_t lo = getMin(), hi = getMax();
  int64_t xmin = argRanges[0].smin().getSExtValue();
  int64_t xmax = argRanges[0].smax().getSExtValue();
  setResultRanges(getClamped(), rangeI32(std::clamp(xmin, lo, hi),
                                         std::clamp(xmax, lo, hi)));
}

//===----------------------------------------------------------------------===//
// Data movement: every element of the result is an element of an input, so
// the result range is the input range (or the union of the inputs').
//===----------------------------------------------------------------------===//

static void passThrough(Value result, const ConstantIntRanges &range,
                        SetIntRangeFn setResultRanges) {
  if (isI32(result))
    setResultRanges(result, range);
}

void ReshapeOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                  SetIntRangeFn setResultRanges) {
  passThrough(getResult(), argRanges[0], setResultRanges);
}

void BroadcastOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                    SetIntRangeFn setResultRanges) {
  passThrough(getResult(), argRanges[0], setResultRanges);
}

void TransposeOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                    SetIntRangeFn setResultRanges) {
  passThrough(getResult(), argRanges[0], setResultRanges);
}

void SliceOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                SetIntRangeFn setResultRanges) {
  passThrough(getResult(), argRanges[0], setResultRanges);
}

void GatherOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                 SetIntRangeFn setResultRanges) {
  // argRanges[0] is the gathered operand; the indices only pick elements.
  passThrough(getResult(), argRanges[0], setResultRanges);
}

void ConcatOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                 SetIntRangeFn setResultRanges) {
  ConstantIntRanges range = argRanges.front();
  for (const ConstantIntRanges &next : argRanges.drop_front())
    range = range.rangeUnion(next);
  passThrough(getResult(), range, setResultRanges);
}

void SelectOp::inferResultRanges(ArrayRef<ConstantIntRanges> argRanges,
                                 SetIntRangeFn setResultRanges) {
  // argRanges[0] is the i1 condition.
  passThrough(getResult(), argRanges[1].rangeUnion(argRanges[2]),
              setResultRanges);
}
