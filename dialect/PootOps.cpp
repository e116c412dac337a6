//===- PootOps.cpp - poot primitive op verifiers, type inference, folds ---===//
#include "dialect/PootDialect.h"

#include "dialect/Broadcast.h"
#include "dialect/OpInference.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::poot;

#define GET_OP_CLASSES
#include "dialect/PootOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static bool validAxis(int64_t axis, int64_t rank) {
  return axis >= 0 && axis < rank;
}

/// Result type of an elementwise op over `operands` (numpy broadcast), with
/// the given element type (nullptr: the first operand's).
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ValueRange operands, Type elementType,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Value operand : operands) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type)
      return emitOptionalError(loc, "operands must be ranked tensors");
    auto next = broadcastShapes(shape, type.getShape());
    if (!next)
      return emitOptionalError(loc, "operand shapes do not broadcast (numpy rules): ",
                               operands.getTypes());
    shape = *next;
  }
  if (!elementType)
    elementType = tensorOf(operands.front()).getElementType();
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

template <typename AdaptorT>
static LogicalResult inferBinary(MLIRContext *, std::optional<Location> loc,
                                 AdaptorT adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc, adaptor.getOperands(), nullptr, inferred);
}

#define POOT_BINARY(OP)                                                        \
  POOT_INFER_VIA(OP, inferBinary)                                              \
  LogicalResult OP::verify() { return verifyInferred##OP(*this); }
POOT_BINARY(AddOp)
POOT_BINARY(SubOp)
POOT_BINARY(MulOp)
POOT_BINARY(DivOp)
POOT_BINARY(MaxOp)
POOT_BINARY(MinOp)
POOT_BINARY(AndOp)
POOT_BINARY(OrOp)
#undef POOT_BINARY

//===----------------------------------------------------------------------===//
// ConstantOp, IotaOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult IotaOp::verify() {
  auto type = getType();
  if (!validAxis(getDim(), type.getRank()))
    return emitOpError("dim ") << getDim() << " is out of range for rank "
                               << type.getRank();
  if (type.getElementType().isInteger(1))
    return emitOpError("iota needs an i32 or float element type");
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult DynamicUpdateSliceOp::verify() {
  auto operand = tensorOf(getOperand());
  auto update = tensorOf(getUpdate());
  int64_t axis = getAxis();
  if (operand.getRank() != update.getRank())
    return emitOpError("update rank ") << update.getRank()
                                       << " must equal operand rank "
                                       << operand.getRank();
  if (!validAxis(axis, operand.getRank()))
    return emitOpError("axis ") << axis << " is out of range for rank "
                                << operand.getRank();
  for (int64_t d = 0; d < operand.getRank(); ++d) {
    int64_t u = update.getDimSize(d), o = operand.getDimSize(d);
    if (d == axis ? u > o : u != o)
      return emitOpError("update dim ")
             << d << " (" << u << ") must "
             << (d == axis ? "not exceed" : "equal") << " operand dim (" << o
             << ")";
  }
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (tensorOf(getOperand()).getNumElements() != getType().getNumElements())
    return emitOpError("element count changes: ")
           << getOperand().getType() << " -> " << getType();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getOperand()))
    return splat.resizeSplat(getType());
  return {};
}

LogicalResult BroadcastOp::verify() {
  if (!broadcastsTo(tensorOf(getOperand()).getShape(), getType().getShape()))
    return emitOpError("operand shape does not broadcast to the result (numpy "
                       "broadcast_to): ")
           << getOperand().getType() << " -> " << getType();
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getOperand()))
    return splat.resizeSplat(getType());
  return {};
}

static LogicalResult checkPermutation(std::optional<Location> loc,
                                      ArrayRef<int64_t> perm, int64_t rank) {
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries for rank ", rank);
  llvm::SmallBitVector seen(rank);
  for (int64_t p : perm) {
    if (!validAxis(p, rank) || seen.test(p))
      return emitOptionalError(loc, "permutation is not a permutation of 0..",
                               rank - 1);
    seen.set(p);
  }
  return success();
}

static LogicalResult inferTransposeOp(MLIRContext *,
                                            std::optional<Location> loc,
                                            TransposeOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = tensorOf(adaptor.getOperand());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (failed(checkPermutation(loc, perm, type.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}
POOT_INFER_VIA(TransposeOp, inferTransposeOp)

LogicalResult TransposeOp::verify() {
  if (failed(verifyInferredTransposeOp(*this)))
    return failure();
  return checkPermutation(getLoc(), getPermutation(),
                          tensorOf(getOperand()).getRank());
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (llvm::equal(getPermutation(),
                  llvm::seq<int64_t>(0, getPermutation().size())))
    return getOperand();
  return {};
}

static LogicalResult checkSlice(std::optional<Location> loc,
                                RankedTensorType type, ArrayRef<int64_t> start,
                                ArrayRef<int64_t> limit,
                                ArrayRef<int64_t> strides) {
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOptionalError(loc, "start, limit and strides need one entry per "
                                  "dimension (rank ", rank, ")");
  for (int64_t d = 0; d < rank; ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > type.getDimSize(d))
      return emitOptionalError(loc, "slice bounds of dim ", d,
                               " must satisfy 0 <= start <= limit <= ",
                               type.getDimSize(d));
    if (strides[d] < 1)
      return emitOptionalError(loc, "stride of dim ", d, " must be >= 1");
  }
  return success();
}

static LogicalResult inferSliceOp(MLIRContext *,
                                        std::optional<Location> loc,
                                        SliceOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = tensorOf(adaptor.getOperand());
  if (failed(checkSlice(loc, type, adaptor.getStart(), adaptor.getLimit(),
                        adaptor.getStrides())))
    return failure();
  SmallVector<int64_t> shape;
  // ceil((l - s) / st) without forming l - s + st - 1, which overflows for a
  // stride near 2^63 (checkSlice made 0 <= l - s and st >= 1).
  for (auto [s, l, st] : llvm::zip(adaptor.getStart(), adaptor.getLimit(),
                                   adaptor.getStrides()))
    shape.push_back((l - s) / st + ((l - s) % st != 0));
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}
POOT_INFER_VIA(SliceOp, inferSliceOp)

LogicalResult SliceOp::verify() {
  if (failed(verifyInferredSliceOp(*this)))
    return failure();
  return checkSlice(getLoc(), tensorOf(getOperand()), getStart(), getLimit(),
                    getStrides());
}

static LogicalResult inferConcatOp(MLIRContext *,
                                         std::optional<Location> loc,
                                         ConcatOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = tensorOf(inputs.front());
  int64_t axis = adaptor.getAxis();
  if (!validAxis(axis, first.getRank()))
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  for (Value input : inputs.drop_front()) {
    auto type = tensorOf(input);
    if (type.getRank() != first.getRank())
      return emitOptionalError(loc, "all inputs need the same rank");
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != axis && type.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "inputs differ in dim ", d,
                                 ", which is not the concat axis");
    std::optional<int64_t> sum =
        llvm::checkedAdd(shape[axis], type.getDimSize(axis));
    if (!sum)
      return emitOptionalError(loc, "concatenated size along axis ", axis,
                               " overflows int64");
    shape[axis] = *sum;
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}
POOT_INFER_VIA(ConcatOp, inferConcatOp)

LogicalResult ConcatOp::verify() { return verifyInferredConcatOp(*this); }

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

static LogicalResult inferGatherOp(MLIRContext *,
                                         std::optional<Location> loc,
                                         GatherOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto operand = tensorOf(adaptor.getOperand());
  auto indices = tensorOf(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (!validAxis(axis, operand.getRank()))
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             operand.getRank());
  SmallVector<int64_t> shape(operand.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, operand.getShape().drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, operand.getElementType()));
  return success();
}
POOT_INFER_VIA(GatherOp, inferGatherOp)

LogicalResult GatherOp::verify() { return verifyInferredGatherOp(*this); }

LogicalResult ScatterUpdateOp::verify() {
  auto operand = tensorOf(getOperand());
  auto indices = tensorOf(getIndices());
  auto updates = tensorOf(getUpdates());
  if (operand.getRank() < 1)
    return emitOpError("operand must have rank >= 1");
  if (indices.getRank() != 1)
    return emitOpError("indices must be 1-D, got ") << indices;
  SmallVector<int64_t> expected{indices.getDimSize(0)};
  llvm::append_range(expected, operand.getShape().drop_front());
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("updates must be [indices.shape[0]] + operand.shape[1:] = [")
           << expected << "], got " << updates;
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferMatMulOp(MLIRContext *,
                                         std::optional<Location> loc,
                                         MatMulOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = tensorOf(adaptor.getLhs());
  auto rhs = tensorOf(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "matmul operands need rank >= 2");
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "matmul operands need one element type");
  int64_t m = lhs.getShape().end()[-2], k = lhs.getShape().back();
  int64_t k2 = rhs.getShape().end()[-2], n = rhs.getShape().back();
  if (k != k2)
    return emitOptionalError(loc, "contraction dims differ: lhs has ", k,
                             ", rhs has ", k2);
  auto batch = broadcastShapes(lhs.getShape().drop_back(2),
                               rhs.getShape().drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dims do not broadcast (numpy rules)");
  SmallVector<int64_t> shape(*batch);
  shape.push_back(m);
  shape.push_back(n);
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}
POOT_INFER_VIA(MatMulOp, inferMatMulOp)

static LogicalResult inferReduceOp(MLIRContext *,
                                         std::optional<Location> loc,
                                         ReduceOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = tensorOf(adaptor.getOperand());
  int64_t axis = adaptor.getAxis();
  if (!validAxis(axis, type.getRank()))
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             type.getRank());
  SmallVector<int64_t> shape(type.getShape());
  if (adaptor.getKeepdim())
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}
POOT_INFER_VIA(ReduceOp, inferReduceOp)

LogicalResult ReduceOp::verify() {
  if (failed(verifyInferredReduceOp(*this)))
    return failure();
  if (getKind() != ReduceKind::Sum &&
      tensorOf(getOperand()).getElementType().isInteger(1))
    return emitOpError("max/min reductions need a numeric element type");
  return success();
}

static LogicalResult inferTopKOp(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       TopKOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto type = tensorOf(adaptor.getOperand());
  if (type.getRank() < 1)
    return emitOptionalError(loc, "top_k needs rank >= 1");
  // k becomes a dimension: check it before building a type with it.
  int64_t n = type.getShape().back();
  if (adaptor.getK() < 1 || adaptor.getK() > n)
    return emitOptionalError(loc, "k must satisfy 1 <= k <= ",
                             n, ", got ", adaptor.getK());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = adaptor.getK();
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 32)));
  return success();
}
POOT_INFER_VIA(TopKOp, inferTopKOp)

LogicalResult TopKOp::verify() { return verifyInferredTopKOp(*this); }

//===----------------------------------------------------------------------===//
// Compare, select, guard
//===----------------------------------------------------------------------===//

static LogicalResult inferCompareOp(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          CompareOp::Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc, adaptor.getOperands(), IntegerType::get(ctx, 1),
                        inferred);
}
POOT_INFER_VIA(CompareOp, inferCompareOp)

LogicalResult CompareOp::verify() {
  if (failed(verifyInferredCompareOp(*this)))
    return failure();
  if (tensorOf(getLhs()).getElementType() != tensorOf(getRhs()).getElementType())
    return emitOpError("compared operands need one element type");
  return success();
}

static LogicalResult inferSelectOp(MLIRContext *,
                                         std::optional<Location> loc,
                                         SelectOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc, adaptor.getOperands(),
                        tensorOf(adaptor.getOnTrue()).getElementType(), inferred);
}
POOT_INFER_VIA(SelectOp, inferSelectOp)

LogicalResult SelectOp::verify() {
  if (failed(verifyInferredSelectOp(*this)))
    return failure();
  if (tensorOf(getOnTrue()).getElementType() !=
      tensorOf(getOnFalse()).getElementType())
    return emitOpError("on_true and on_false need one element type");
  return success();
}

LogicalResult IndexGuardOp::verify() {
  if (getMin() > getMax())
    return emitOpError("min (") << getMin() << ") exceeds max (" << getMax()
                                << ")";
  return success();
}

LogicalResult MatMulOp::verify() { return verifyInferredMatMulOp(*this); }

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

static LogicalResult inferRopeOp(MLIRContext *, std::optional<Location> loc,
                                 RopeOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}
POOT_INFER_VIA(RopeOp, inferRopeOp)

LogicalResult RopeOp::verify() {
  if (failed(verifyInferredRopeOp(*this)))
    return failure();
  auto input = tensorOf(getInput());
  if (input.getRank() < 1 || input.getShape().back() % 2 != 0)
    return emitOpError("rotary width (the input's last dimension) must be "
                       "even, got ")
           << input;
  for (auto [name, table] : {std::pair<StringRef, Value>{"cos", getCos()},
                             std::pair<StringRef, Value>{"sin", getSin()}}) {
    auto type = tensorOf(table);
    if (type.getElementType() != input.getElementType())
      return emitOpError() << name << " needs the input's element type";
    if (!broadcastsTo(type.getShape(), input.getShape()))
      return emitOpError() << name << " must broadcast to the input's shape "
                           << "(numpy rules): " << type << " vs " << input;
  }
  return success();
}
