//===- PootDialect.cpp - poot dialect registration and arg/result markers -===//
//
// Besides registering the dialect, this checks the `poot.slot` and
// `poot.range` markers on function arguments and results, so a malformed
// driver contract is a diagnostic at parse time, not a wrong bind later.
//
//===----------------------------------------------------------------------===//

#include "dialect/PootDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::poot;

#include "dialect/PootDialect.cpp.inc"

void PootDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialect/PootOps.cpp.inc"
      >();
}

Operation *PootDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

namespace {
/// A 0-d or N-d static tensor of i32, checked for the given rank (-1: any).
bool isI32Tensor(Type type, int64_t rank) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isInteger(32) &&
         (rank < 0 || tensor.getRank() == rank);
}

LogicalResult verifyArgSlot(Operation *op, SlotAttr slot, Type type,
                            unsigned index) {
  auto fail = [&](StringRef rule) {
    return op->emitError() << "argument #" << index << " marked "
                           << stringifySlotKind(slot.getKind()) << ": "
                           << rule << ", got " << type;
  };
  switch (slot.getKind()) {
  case SlotKind::State:
    return success();
  case SlotKind::Pos:
    // One position for the whole step, or one per batch row (rows of a
    // continuous batch sit at different positions).
    return isI32Tensor(type, 0) || isI32Tensor(type, 1)
               ? success()
               : fail("a pos slot must be tensor<i32> or a per-row "
                      "tensor<Bxi32>");
  case SlotKind::SlotMap:
    return isI32Tensor(type, 2)
               ? success()
               : fail("a slot map must be a 2-D i32 tensor [rows, cap]");
  case SlotKind::WriteMap:
    return isI32Tensor(type, 1)
               ? success()
               : fail("a write map must be a 1-D i32 tensor [rows * tokens]");
  case SlotKind::Validation:
    return op->emitError() << "argument #" << index
                           << ": validation slots mark results, not arguments";
  }
  return success();
}
LogicalResult verifyNameAttr(Operation *op, NamedAttribute attr) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'poot.name' must be a non-empty string";
  return success();
}
} // namespace

/// A #poot.shard names a dimension of the (ranked tensor) value it marks.
static LogicalResult verifyShardAttr(Operation *op, NamedAttribute attr,
                                     Type type, StringRef what,
                                     unsigned index) {
  auto shard = dyn_cast<ShardAttr>(attr.getValue());
  if (!shard)
    return op->emitError() << "'poot.shard' must be a #poot.shard attribute";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || shard.getDim() >= tensor.getRank())
    return op->emitError() << what << " #" << index << ": shard dim "
                           << shard.getDim() << " is not a dimension of "
                           << type;
  ArrayRef<int64_t> segments = shard.getSegments();
  int64_t whole = 0;
  for (int64_t segment : segments)
    whole += segment;
  if (!segments.empty() &&
      whole != tensor.getDimSize(shard.getDim()) * shard.getParts())
    return op->emitError() << what << " #" << index << ": shard segments sum to "
                           << whole << ", not " << shard.getParts()
                           << " blocks of " << type;
  return success();
}

LogicalResult PootDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitError() << attr.getName()
                           << " is only meaningful on function arguments";
  Type type = func.getArgumentTypes()[argIndex];
  if (attr.getName() == kNameAttrName)
    return verifyNameAttr(op, attr);
  if (attr.getName() == kSlotAttrName) {
    auto slot = dyn_cast<SlotAttr>(attr.getValue());
    if (!slot)
      return op->emitError() << "'poot.slot' must be a #poot.slot attribute";
    return verifyArgSlot(op, slot, type, argIndex);
  }
  if (attr.getName() == kRangeAttrName) {
    if (!isa<RangeAttr>(attr.getValue()))
      return op->emitError() << "'poot.range' must be a #poot.range attribute";
    if (!isI32Tensor(type, -1))
      return op->emitError() << "argument #" << argIndex
                             << ": a declared range needs an i32 tensor, got "
                             << type;
    // The range analysis and the binders read the bounds as i32 values.
    auto range = cast<RangeAttr>(attr.getValue());
    if (!llvm::isInt<32>(range.getMin()) || !llvm::isInt<32>(range.getMax()))
      return op->emitError()
             << "argument #" << argIndex << ": declared range ["
             << range.getMin() << ", " << range.getMax()
             << "] does not fit the argument's i32 elements ["
             << std::numeric_limits<int32_t>::min() << ", "
             << std::numeric_limits<int32_t>::max() << "]";
    return success();
  }
  if (attr.getName() == kShardAttrName)
    return verifyShardAttr(op, attr, type, "argument", argIndex);
  return op->emitError() << "unknown poot argument attribute " << attr.getName();
}

LogicalResult PootDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (func && attr.getName() == kNameAttrName)
    return verifyNameAttr(op, attr);
  if (func && attr.getName() == kShardAttrName)
    return verifyShardAttr(op, attr, func.getResultTypes()[resultIndex],
                           "result", resultIndex);
  if (!func || attr.getName() != kSlotAttrName)
    return op->emitError() << "unknown poot result attribute " << attr.getName();
  auto slot = dyn_cast<SlotAttr>(attr.getValue());
  if (!slot)
    return op->emitError() << "'poot.slot' must be a #poot.slot attribute";
  Type type = func.getResultTypes()[resultIndex];
  switch (slot.getKind()) {
  case SlotKind::Validation: {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 0 || !tensor.getElementType().isInteger(1))
      return op->emitError() << "result #" << resultIndex
                             << ": a validation output must be tensor<i1>, got "
                             << type;
    return success();
  }
  case SlotKind::State: {
    // State out must name a state argument of the same type: that argument's
    // buffer is donated to this result.
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      auto argSlot = func.getArgAttrOfType<SlotAttr>(i, kSlotAttrName);
      if (argSlot && argSlot.getKind() == SlotKind::State &&
          argSlot.getName() == slot.getName()) {
        if (func.getArgumentTypes()[i] != type)
          return op->emitError()
                 << "result #" << resultIndex << ": state out '"
                 << slot.getName().getValue() << "' has type " << type
                 << " but its state argument has "
                 << func.getArgumentTypes()[i];
        return success();
      }
    }
    return op->emitError() << "result #" << resultIndex << ": state out '"
                           << slot.getName().getValue()
                           << "' has no state argument of the same name";
  }
  default:
    return op->emitError() << "result #" << resultIndex << ": only state and "
                           << "validation slots mark results";
  }
}
