//===- LoweringUtils.cpp - shared helpers of the poot -> linalg patterns --===//
#include "lib/Conversion/PootToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::linalg_lowering;

Type linalg_lowering::storageElementType(Type element) {
  if (element.isInteger(1))
    return IntegerType::get(element.getContext(), 8);
  return element;
}

RankedTensorType linalg_lowering::storageType(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(),
                               storageElementType(type.getElementType()));
}

Value linalg_lowering::toLogical(OpBuilder &b, Location loc, Value stored) {
  // poot has no i8 values of its own: an i8 scalar is always a stored bool.
  if (!stored.getType().isInteger(8))
    return stored;
  Value zero = scalarConstant(b, loc, stored.getType(), 0);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, stored, zero);
}

Value linalg_lowering::toStorage(OpBuilder &b, Location loc, Value value,
                                 Type storage) {
  if (value.getType() == storage)
    return value;
  assert(value.getType().isInteger(1) && storage.isInteger(8) &&
         "only bools change type in storage");
  return arith::ExtUIOp::create(b, loc, storage, value);
}

AffineMap linalg_lowering::broadcastMap(ArrayRef<int64_t> shape,
                                        ArrayRef<int64_t> loopShape,
                                        MLIRContext *ctx) {
  int64_t rank = shape.size(), loops = loopShape.size();
  assert(rank <= loops && "operand rank exceeds the loop nest");
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t loop = i + loops - rank;
    // A size-1 dimension against a wider loop is the broadcast one: it
    // always reads its single element.
    if (shape[i] == 1 && loopShape[loop] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(loop, ctx));
  }
  return AffineMap::get(loops, 0, exprs, ctx);
}

SmallVector<utils::IteratorType> linalg_lowering::parallelIterators(int64_t n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

Value linalg_lowering::emptyTensor(OpBuilder &b, Location loc,
                                   RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
}

Value linalg_lowering::filledTensor(OpBuilder &b, Location loc,
                                    RankedTensorType type, Value value) {
  Value empty = emptyTensor(b, loc, type);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value linalg_lowering::buildElementwise(
    OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(
        cast<RankedTensorType>(input.getType()).getShape(), shape, ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs,
      ValueRange{emptyTensor(b, loc, resultType)}, maps,
      parallelIterators(shape.size()),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> logical;
        for (Value arg : args.drop_back())
          logical.push_back(toLogical(nb, nloc, arg));
        Value result = body(nb, nloc, logical);
        linalg::YieldOp::create(
            nb, nloc,
            toStorage(nb, nloc, result, resultType.getElementType()));
      });
  return generic.getResult(0);
}

Value linalg_lowering::convertScalar(OpBuilder &b, Location loc, Value value,
                                     Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat) {
    unsigned fw = fromFloat.getWidth(), tw = toFloat.getWidth();
    if (fw < tw)
      return arith::ExtFOp::create(b, loc, to, value);
    if (fw == tw) {
      // f16 <-> bf16: f32 holds both exactly, so one rounding happens.
      Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
      return arith::TruncFOp::create(b, loc, to, wide);
    }
    if (toFloat.isBF16() && fw > 32) {
      // f64 -> bf16 rounds through f32, as ml_dtypes does.
      value = arith::TruncFOp::create(b, loc, b.getF32Type(), value);
    }
    return arith::TruncFOp::create(b, loc, to, value);
  }
  if (fromFloat) {
    if (to.isInteger(1)) {
      // numpy astype(bool): nonzero (NaN included) is true.
      Value zero = scalarConstant(b, loc, from, 0.0);
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                   zero);
    }
    return arith::FPToSIOp::create(b, loc, to, value);
  }
  if (toFloat) {
    if (from.isInteger(1))
      return arith::UIToFPOp::create(b, loc, to, value);
    return arith::SIToFPOp::create(b, loc, to, value);
  }
  // Integer to integer: i1 <-> i32.
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0.0);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value, zero);
  }
  if (from.isInteger(1))
    return arith::ExtUIOp::create(b, loc, to, value);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtSIOp::create(b, loc, to, value);
  return arith::TruncIOp::create(b, loc, to, value);
}

Value linalg_lowering::scalarConstant(OpBuilder &b, Location loc, Type type,
                                      double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  if (type.isIndex())
    return arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value linalg_lowering::reshapeTensor(OpBuilder &b, Location loc, Value value,
                                     ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  int64_t rank = type.getRank(), newRank = shape.size();
  // A 0-d tensor and a tensor of only unit dims convert with an empty
  // reassociation.
  if (rank == 0)
    return tensor::ExpandShapeOp::create(b, loc, resultType, value,
                                         ArrayRef<ReassociationIndices>{});
  if (newRank == 0)
    return tensor::CollapseShapeOp::create(b, loc, resultType, value,
                                           ArrayRef<ReassociationIndices>{});
  Value flat = value;
  if (rank > 1) {
    ReassociationIndices all = llvm::to_vector<2>(llvm::seq<int64_t>(0, rank));
    auto flatType =
        RankedTensorType::get({type.getNumElements()}, type.getElementType());
    flat = tensor::CollapseShapeOp::create(b, loc, flatType, value,
                                           ArrayRef<ReassociationIndices>{all});
  }
  if (newRank == 1)
    return flat;
  ReassociationIndices all = llvm::to_vector<2>(llvm::seq<int64_t>(0, newRank));
  return tensor::ExpandShapeOp::create(b, loc, resultType, flat,
                                       ArrayRef<ReassociationIndices>{all});
}
