//===- ContractionPatterns.cpp - poot matmul/reduce/top_k/index_guard -----===//
//
// The ops that reduce: batched matmul (numpy batch broadcasting, accumulation
// in the element type, f16/bf16 in f32 rounded once: the 16-bit contract,
// docs/sixteen-bit-contract.md), reduce sum/max/min (a 16-bit sum likewise), top_k (a selection loop: k passes
// over each row, ties to the lower index, NaN ordered last as in a stable
// sort of -x) and index_guard (an elementwise clamp plus an all-reduction
// witness).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/PootToLinalg/LoweringUtils.h"

#include "dialect/PootDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::linalg_lowering;

namespace {

/// Where a sum of `element` values accumulates: f32 for the 16-bit floats
/// (the 16-bit contract), the element type itself otherwise.
Type accumulatorType(Type element) {
  if (element.isF16() || element.isBF16())
    return Float32Type::get(element.getContext());
  return element;
}

/// `acc` (a tensor of accumulators) rounded once, to nearest even, to
/// `resultType`'s element type; unchanged when it already has that type.
Value roundAccumulators(OpBuilder &b, Location loc, Value acc,
                        RankedTensorType resultType) {
  if (cast<RankedTensorType>(acc.getType()).getElementType() ==
      resultType.getElementType())
    return acc;
  return buildElementwise(
      b, loc, resultType, ValueRange{acc},
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        return arith::TruncFOp::create(nb, nloc, resultType.getElementType(),
                                       args[0]);
      });
}

/// `x` widened exactly to the accumulator type `acc` (no-op when equal).
Value widen(OpBuilder &b, Location loc, Value x, Type acc) {
  if (x.getType() == acc)
    return x;
  return arith::ExtFOp::create(b, loc, acc, x);
}

struct MatMulLowering : OpConversionPattern<MatMulOp> {
  MatMulLowering(const TypeConverter &converter, MLIRContext *ctx,
                 bool foldTransposedRhs)
      : OpConversionPattern(converter, ctx),
        foldTransposedRhs(foldTransposedRhs) {}

  /// Whether a 2-D rhs that is `poot.transpose %w perm = [1, 0]` is read
  /// through a transposed indexing map instead (see the option
  /// `fold-transposed-rhs` of convert-poot-to-linalg).
  bool foldTransposedRhs;

  /// The operand of `rhs`'s defining `poot.transpose` when it swaps the two
  /// axes of a 2-D tensor (a torch Linear's `x @ W.T`), else null.
  static Value transposedSource(Value rhs) {
    auto transpose = rhs.getDefiningOp<TransposeOp>();
    if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
      return {};
    return transpose.getOperand();
  }

  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType resultType = op.getType();
    ArrayRef<int64_t> lhsShape =
        cast<RankedTensorType>(adaptor.getLhs().getType()).getShape();
    ArrayRef<int64_t> rhsShape =
        cast<RankedTensorType>(adaptor.getRhs().getType()).getShape();
    ArrayRef<int64_t> batch = resultType.getShape().drop_back(2);
    int64_t nb = batch.size();
    // Loops: batch..., m, n, k (k is the reduction).
    int64_t loops = nb + 3;
    AffineExpr m = getAffineDimExpr(nb, ctx), n = getAffineDimExpr(nb + 1, ctx),
               k = getAffineDimExpr(nb + 2, ctx);
    auto operandMap = [&](ArrayRef<int64_t> shape, AffineExpr row,
                          AffineExpr col) {
      AffineMap batchMap = broadcastMap(shape.drop_back(2), batch, ctx);
      SmallVector<AffineExpr> exprs(batchMap.getResults());
      exprs.push_back(row);
      exprs.push_back(col);
      return AffineMap::get(loops, 0, exprs, ctx);
    };
    SmallVector<AffineExpr> outExprs;
    for (int64_t d = 0; d < nb + 2; ++d)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    SmallVector<AffineMap> maps{operandMap(lhsShape, m, k),
                                operandMap(rhsShape, k, n),
                                AffineMap::get(loops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators = parallelIterators(nb + 2);
    iterators.push_back(utils::IteratorType::reduction);

    // 16-bit operands accumulate in f32 (linalg.matmul widens its inputs
    // to the init's type); the result is rounded once at the end.
    Type accType = accumulatorType(resultType.getElementType());
    auto accTensorType = resultType.clone(accType);
    Value zero = scalarConstant(rewriter, loc, accType, 0.0);
    if (rhsShape.size() == 2) {
      // One matrix for every batch row (a linear layer): the result's batch
      // dims are the lhs's own, so they are more rows of one linalg.matmul,
      // the form the CPU pipeline tiles and vectorizes.
      int64_t rows = resultType.getNumElements() / rhsShape[1];
      Value lhs = adaptor.getLhs();
      auto lhsType = cast<RankedTensorType>(lhs.getType());
      if (lhsType.getRank() != 2) {
        SmallVector<ReassociationIndices> collapse(1);
        int64_t lhsRank = lhsType.getRank();
        for (int64_t d = 0; d + 1 < lhsRank; ++d)
          collapse[0].push_back(d);
        collapse.push_back({lhsRank - 1});
        lhs = tensor::CollapseShapeOp::create(rewriter, loc, lhs, collapse);
      }
      auto flatType = RankedTensorType::get({rows, rhsShape[1]}, accType);
      Value init = filledTensor(rewriter, loc, flatType, zero);
      // `x @ W.T` with W [N, K] (a torch Linear's weight): the matmul reads
      // W itself through the map (n, k), so no transposed copy of the
      // weight is made per call (a strided 4-byte gather over the whole
      // weight: 96 ms for a 512 x 32000 one) and the CPU pipeline vectorizes
      // the rows of W as dot products (poot-cpu-vectorize-matmuls).
      Value rhs = adaptor.getRhs();
      Value source = foldTransposedRhs ? transposedSource(op.getRhs()) : Value();
      if (source)
        rhs = rewriter.getRemappedValue(source);
      auto matmul = linalg::MatmulOp::create(rewriter, loc, TypeRange{flatType},
                                             ValueRange{lhs, rhs},
                                             ValueRange{init});
      if (source) {
        AffineExpr dm, dn, dk;
        bindDims(ctx, dm, dn, dk);
        matmul.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(
            {AffineMap::get(3, 0, {dm, dk}, ctx),
             AffineMap::get(3, 0, {dn, dk}, ctx),
             AffineMap::get(3, 0, {dm, dn}, ctx)}));
      }
      Value product = matmul.getResult(0);
      SmallVector<ReassociationIndices> expand(1);
      for (int64_t d = 0; d + 1 < resultType.getRank(); ++d)
        expand[0].push_back(d);
      expand.push_back({resultType.getRank() - 1});
      if (resultType.getRank() != 2)
        product = tensor::ExpandShapeOp::create(rewriter, loc, accTensorType,
                                                product, expand);
      rewriter.replaceOp(op,
                         roundAccumulators(rewriter, loc, product, resultType));
      return success();
    }
    Value init = filledTensor(rewriter, loc, accTensorType, zero);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{accTensorType},
        ValueRange{adaptor.getLhs(), adaptor.getRhs()}, ValueRange{init}, maps,
        iterators, [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value product =
              arith::MulFOp::create(b, nloc, widen(b, nloc, args[0], accType),
                                    widen(b, nloc, args[1], accType));
          Value sum = arith::AddFOp::create(b, nloc, args[2], product);
          linalg::YieldOp::create(b, nloc, sum);
        });
    rewriter.replaceOp(op, roundAccumulators(rewriter, loc,
                                             generic.getResult(0), resultType));
    return success();
  }
};

/// The identity of a reduction and its combiner at `type`.
Value reductionIdentity(OpBuilder &b, Location loc, ReduceKind kind, Type type) {
  if (isa<FloatType>(type)) {
    double inf = std::numeric_limits<double>::infinity();
    switch (kind) {
    case ReduceKind::Sum: return scalarConstant(b, loc, type, 0.0);
    case ReduceKind::Max: return scalarConstant(b, loc, type, -inf);
    case ReduceKind::Min: return scalarConstant(b, loc, type, inf);
    }
  }
  if (type.isInteger(1))
    return scalarConstant(b, loc, type, kind == ReduceKind::Min ? 1 : 0);
  unsigned width = type.getIntOrFloatBitWidth();
  switch (kind) {
  case ReduceKind::Sum:
    return scalarConstant(b, loc, type, 0);
  case ReduceKind::Max:
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, APInt::getSignedMinValue(width)));
  case ReduceKind::Min:
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, APInt::getSignedMaxValue(width)));
  }
  llvm_unreachable("unknown reduce kind");
}

Value reductionCombine(OpBuilder &b, Location loc, ReduceKind kind, Value acc,
                       Value x) {
  Type type = x.getType();
  if (isa<FloatType>(type)) {
    switch (kind) {
    case ReduceKind::Sum: return arith::AddFOp::create(b, loc, acc, x);
    case ReduceKind::Max: return arith::MaximumFOp::create(b, loc, acc, x);
    case ReduceKind::Min: return arith::MinimumFOp::create(b, loc, acc, x);
    }
  }
  if (type.isInteger(1)) {
    // The 1-bit ring: a sum is the parity; max/min are or/and.
    switch (kind) {
    case ReduceKind::Sum: return arith::XOrIOp::create(b, loc, acc, x);
    case ReduceKind::Max: return arith::OrIOp::create(b, loc, acc, x);
    case ReduceKind::Min: return arith::AndIOp::create(b, loc, acc, x);
    }
  }
  switch (kind) {
  case ReduceKind::Sum: return arith::AddIOp::create(b, loc, acc, x);
  case ReduceKind::Max: return arith::MaxSIOp::create(b, loc, acc, x);
  case ReduceKind::Min: return arith::MinSIOp::create(b, loc, acc, x);
  }
  llvm_unreachable("unknown reduce kind");
}

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto operandType = cast<RankedTensorType>(adaptor.getOperand().getType());
    RankedTensorType resultType = storageType(op.getType());
    Type storage = resultType.getElementType();
    int64_t rank = operandType.getRank();
    int64_t axis = op.getAxis();
    ReduceKind kind = op.getKind();

    SmallVector<AffineExpr> outExprs;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis)
        outExprs.push_back(getAffineDimExpr(d, ctx));
      else if (op.getKeepdim())
        outExprs.push_back(getAffineConstantExpr(0, ctx));
    }
    SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx),
                                AffineMap::get(rank, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators = parallelIterators(rank);
    iterators[axis] = utils::IteratorType::reduction;
    // A 16-bit sum accumulates in f32 and is rounded once; max and min
    // are exact in any type and stay in it.
    Type accType = kind == ReduceKind::Sum ? accumulatorType(storage) : storage;
    auto accTensorType = resultType.clone(accType);
    Value identity = reductionIdentity(
        rewriter, loc, kind,
        accType == storage ? op.getType().getElementType() : accType);
    Value init = filledTensor(rewriter, loc, accTensorType,
                              toStorage(rewriter, loc, identity, accType));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{accTensorType},
        ValueRange{adaptor.getOperand()}, ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value x = toLogical(b, nloc, args[0]);
          if (accType != storage)
            x = widen(b, nloc, x, accType);
          Value combined =
              reductionCombine(b, nloc, kind, toLogical(b, nloc, args[1]), x);
          linalg::YieldOp::create(b, nloc, toStorage(b, nloc, combined, accType));
        });
    rewriter.replaceOp(op, roundAccumulators(rewriter, loc,
                                             generic.getResult(0), resultType));
    return success();
  }
};

/// True when (a, ia) comes before (b, ib) in top_k's order: larger first,
/// equal values by lower index, NaN after every number (NaNs by index).
Value precedes(OpBuilder &b, Location loc, Value a, Value ia, Value x, Value ix) {
  using P = arith::CmpFPredicate;
  Value gt = arith::CmpFOp::create(b, loc, P::OGT, a, x);
  Value eq = arith::CmpFOp::create(b, loc, P::OEQ, a, x);
  Value lowerIndex =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ia, ix);
  Value aNumber = arith::CmpFOp::create(b, loc, P::ORD, a, a);
  Value aNaN = arith::CmpFOp::create(b, loc, P::UNO, a, a);
  Value xNaN = arith::CmpFOp::create(b, loc, P::UNO, x, x);
  Value tieFirst = arith::AndIOp::create(b, loc, eq, lowerIndex);
  Value numberBeforeNaN = arith::AndIOp::create(b, loc, aNumber, xNaN);
  Value bothNaN = arith::AndIOp::create(b, loc, aNaN, xNaN);
  Value nanTieFirst = arith::AndIOp::create(b, loc, bothNaN, lowerIndex);
  Value result = arith::OrIOp::create(b, loc, gt, tieFirst);
  result = arith::OrIOp::create(b, loc, result, numberBeforeNaN);
  return arith::OrIOp::create(b, loc, result, nanTieFirst);
}

struct TopKLowering : OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto operandType = cast<RankedTensorType>(adaptor.getOperand().getType());
    Type elementType = operandType.getElementType();
    int64_t n = operandType.getShape().back();
    int64_t k = op.getK();
    int64_t rows = operandType.getNumElements() / std::max<int64_t>(n, 1);
    Type i32 = rewriter.getI32Type();

    // Work on [rows, n]; reshape the [rows, k] results back at the end.
    Value flat = reshapeTensor(rewriter, loc, adaptor.getOperand(), {rows, n});
    auto valuesType = RankedTensorType::get({rows, k}, elementType);
    auto indicesType = RankedTensorType::get({rows, k}, i32);
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value cRows = arith::ConstantIndexOp::create(rewriter, loc, rows);
    Value cK = arith::ConstantIndexOp::create(rewriter, loc, k);
    Value cN = arith::ConstantIndexOp::create(rewriter, loc, n);
    Value values0 = emptyTensor(rewriter, loc, valuesType);
    Value indices0 = emptyTensor(rewriter, loc, indicesType);

    // For each row and rank j: scan the row for the best element that comes
    // after the previous pick in the order; k passes, no scratch.
    auto rowLoop = scf::ForOp::create(
        rewriter, loc, c0, cRows, c1, ValueRange{values0, indices0},
        [&](OpBuilder &b, Location l, Value r, ValueRange rowArgs) {
          Value zeroElt = scalarConstant(b, l, elementType, 0.0);
          auto rankLoop = scf::ForOp::create(
              b, l, c0, cK, c1,
              ValueRange{rowArgs[0], rowArgs[1], zeroElt, c0},
              [&](OpBuilder &b2, Location l2, Value j, ValueRange rankArgs) {
                Value prevV = rankArgs[2], prevI = rankArgs[3];
                Value first = arith::CmpIOp::create(
                    b2, l2, arith::CmpIPredicate::eq, j, c0);
                Value falseV = arith::ConstantIntOp::create(b2, l2, b2.getI1Type(), 0);
                auto scan = scf::ForOp::create(
                    b2, l2, c0, cN, c1, ValueRange{zeroElt, c0, falseV},
                    [&](OpBuilder &b3, Location l3, Value i, ValueRange s) {
                      Value bestV = s[0], bestI = s[1], found = s[2];
                      Value x = tensor::ExtractOp::create(b3, l3, flat,
                                                          ValueRange{r, i});
                      Value afterPrev = arith::OrIOp::create(
                          b3, l3, first, precedes(b3, l3, prevV, prevI, x, i));
                      Value trueV = arith::ConstantIntOp::create(b3, l3, b3.getI1Type(), 1);
                      Value notFound = arith::XOrIOp::create(b3, l3, found, trueV);
                      Value better = arith::OrIOp::create(
                          b3, l3, notFound, precedes(b3, l3, x, i, bestV, bestI));
                      Value take = arith::AndIOp::create(b3, l3, afterPrev, better);
                      Value v = arith::SelectOp::create(b3, l3, take, x, bestV);
                      Value vi = arith::SelectOp::create(b3, l3, take, i, bestI);
                      Value f = arith::OrIOp::create(b3, l3, found, take);
                      scf::YieldOp::create(b3, l3, ValueRange{v, vi, f});
                    });
                Value bestV = scan.getResult(0), bestI = scan.getResult(1);
                Value vals = tensor::InsertOp::create(b2, l2, bestV, rankArgs[0],
                                                      ValueRange{r, j});
                Value bestI32 = arith::IndexCastOp::create(b2, l2, i32, bestI);
                Value idxs = tensor::InsertOp::create(b2, l2, bestI32,
                                                      rankArgs[1], ValueRange{r, j});
                scf::YieldOp::create(b2, l2, ValueRange{vals, idxs, bestV, bestI});
              });
          scf::YieldOp::create(
              b, l, ValueRange{rankLoop.getResult(0), rankLoop.getResult(1)});
        });
    ArrayRef<int64_t> shape = op.getValues().getType().getShape();
    Value values = reshapeTensor(rewriter, loc, rowLoop.getResult(0), shape);
    Value indices = reshapeTensor(rewriter, loc, rowLoop.getResult(1), shape);
    rewriter.replaceOp(op, ValueRange{values, indices});
    return success();
  }
};

struct IndexGuardLowering : OpConversionPattern<IndexGuardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(IndexGuardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value operand = adaptor.getOperand();
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t rank = type.getRank();
    // The bounds are i64 attributes: compare in i64 so no bound wraps,
    // unless both fit the operand's own type (the usual case; GPUs then
    // need no 64-bit arithmetic).
    int64_t lo = op.getMinAttr().getInt(), hi = op.getMaxAttr().getInt();
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    bool narrow = llvm::isIntN(width, lo) && llvm::isIntN(width, hi);
    auto widen = [narrow](OpBuilder &b, Location l, Value x) -> Value {
      return narrow ? x : arith::ExtSIOp::create(b, l, b.getI64Type(), x);
    };
    auto inRange = [lo, hi, widen](OpBuilder &b, Location l, Value x) {
      Value wide = widen(b, l, x);
      Type t = wide.getType();
      Value geLo = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, wide,
                                         scalarConstant(b, l, t, lo));
      Value leHi = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, wide,
                                         scalarConstant(b, l, t, hi));
      return arith::AndIOp::create(b, l, geLo, leHi).getResult();
    };
    Value clamped = buildElementwise(
        rewriter, loc, type, ValueRange{operand},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value wide = widen(b, l, args[0]);
          Type t = wide.getType();
          wide = arith::MaxSIOp::create(b, l, wide, scalarConstant(b, l, t, lo));
          wide = arith::MinSIOp::create(b, l, wide, scalarConstant(b, l, t, hi));
          if (narrow)
            return wide;
          return arith::TruncIOp::create(b, l, args[0].getType(), wide)
              .getResult();
        });

    // witness = all(lo <= x <= hi): an all-reduction into a 0-d i1.
    // The witness is a bool, stored as a byte.
    auto witnessType = RankedTensorType::get({}, rewriter.getI8Type());
    Value init = filledTensor(
        rewriter, loc, witnessType,
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI8Type(), 1));
    SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx),
                                AffineMap::get(rank, 0, {}, ctx)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    auto witness = linalg::GenericOp::create(
        rewriter, loc, TypeRange{witnessType}, ValueRange{operand},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value ok = arith::AndIOp::create(b, l, toLogical(b, l, args[1]),
                                           inRange(b, l, args[0]));
          linalg::YieldOp::create(b, l, toStorage(b, l, ok, b.getI8Type()));
        });
    rewriter.replaceOp(op, ValueRange{clamped, witness.getResult(0)});
    return success();
  }
};

} // namespace

void linalg_lowering::populateContractionPatterns(const TypeConverter &converter,
                                                  RewritePatternSet &patterns,
                                                  bool foldTransposedRhs) {
  patterns.add<MatMulLowering>(converter, patterns.getContext(),
                               foldTransposedRhs);
  patterns.add<ReduceLowering, TopKLowering, IndexGuardLowering>(
      converter, patterns.getContext());
}
