//===- DataMovementPatterns.cpp - poot shape/data ops -> tensor/linalg/scf ===//
//
// reshape, transpose, slice, concat, dynamic_update_slice, gather and
// scatter_update. The runtime-indexed ops keep every access in bounds the
// way their descriptions say: dynamic_update_slice clamps its offset, gather
// clips each index, scatter_update skips an index outside [0, S) (the -1 of
// a padding token included).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/PootToLinalg/LoweringUtils.h"

#include "dialect/PootDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::linalg_lowering;

namespace {

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t v) -> OpFoldResult {
    return b.getIndexAttr(v);
  });
}

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTensor(rewriter, op.getLoc(),
                                         adaptor.getOperand(),
                                         op.getType().getShape()));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // linalg.transpose: result dim d = input dim permutation[d], as numpy.
    Value init = emptyTensor(rewriter, op.getLoc(), storageType(op.getType()));
    auto transpose = linalg::TransposeOp::create(
        rewriter, op.getLoc(), adaptor.getOperand(), init, op.getPermutation());
    rewriter.replaceOp(op, transpose.getResult());
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = storageType(op.getType());
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getOperand(), indexAttrs(rewriter, op.getStart()),
        indexAttrs(rewriter, type.getShape()),
        indexAttrs(rewriter, op.getStrides()));
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = storageType(op.getType());
    int64_t axis = op.getAxis();
    Value result = emptyTensor(rewriter, op.getLoc(), type);
    SmallVector<int64_t> offsets(type.getRank(), 0);
    SmallVector<int64_t> strides(type.getRank(), 1);
    for (Value input : adaptor.getInputs()) {
      auto inputType = cast<RankedTensorType>(input.getType());
      result = tensor::InsertSliceOp::create(
          rewriter, op.getLoc(), input, result, indexAttrs(rewriter, offsets),
          indexAttrs(rewriter, inputType.getShape()),
          indexAttrs(rewriter, strides));
      offsets[axis] += inputType.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct DynamicUpdateSliceLowering : OpConversionPattern<DynamicUpdateSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicUpdateSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto operandType = cast<RankedTensorType>(adaptor.getOperand().getType());
    auto updateType = cast<RankedTensorType>(adaptor.getUpdate().getType());
    int64_t axis = op.getAxis();
    int64_t room = operandType.getDimSize(axis) - updateType.getDimSize(axis);
    // s = clamp(start, 0, operand.shape[axis] - n), computed in i32.
    Type i32 = rewriter.getI32Type();
    Value start = tensor::ExtractOp::create(rewriter, loc, adaptor.getStart(),
                                            ValueRange{});
    start = arith::MaxSIOp::create(rewriter, loc, start,
                                   scalarConstant(rewriter, loc, i32, 0));
    start = arith::MinSIOp::create(rewriter, loc, start,
                                   scalarConstant(rewriter, loc, i32, room));
    Value offset = arith::IndexCastOp::create(rewriter, loc,
                                              rewriter.getIndexType(), start);
    SmallVector<OpFoldResult> offsets(operandType.getRank(),
                                      rewriter.getIndexAttr(0));
    offsets[axis] = offset;
    SmallVector<int64_t> strides(operandType.getRank(), 1);
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, adaptor.getUpdate(), adaptor.getOperand(), offsets,
        indexAttrs(rewriter, updateType.getShape()),
        indexAttrs(rewriter, strides));
    return success();
  }
};

struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value operand = adaptor.getOperand();
    auto operandType = cast<RankedTensorType>(operand.getType());
    auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
    RankedTensorType resultType = storageType(op.getType());
    int64_t axis = op.getAxis();
    int64_t indexRank = indicesType.getRank();
    int64_t rank = resultType.getRank();
    int64_t maxIndex = operandType.getDimSize(axis) - 1;

    // Loop over the result; the indices tensor is read at the loop dims it
    // occupies, and the operand with tensor.extract at the clipped index.
    SmallVector<AffineExpr> indexExprs;
    for (int64_t d = 0; d < indexRank; ++d)
      indexExprs.push_back(getAffineDimExpr(axis + d, ctx));
    SmallVector<AffineMap> maps{
        AffineMap::get(rank, 0, indexExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType}, ValueRange{adaptor.getIndices()},
        ValueRange{emptyTensor(rewriter, loc, resultType)}, maps,
        parallelIterators(rank),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Type i32 = b.getI32Type();
          Value index = arith::MaxSIOp::create(b, nloc, args[0],
                                               scalarConstant(b, nloc, i32, 0));
          index = arith::MinSIOp::create(
              b, nloc, index, scalarConstant(b, nloc, i32, maxIndex));
          SmallVector<Value> coords;
          for (int64_t d = 0; d < axis; ++d)
            coords.push_back(linalg::IndexOp::create(b, nloc, d));
          coords.push_back(
              arith::IndexCastOp::create(b, nloc, b.getIndexType(), index));
          for (int64_t d = axis + 1; d < operandType.getRank(); ++d)
            coords.push_back(
                linalg::IndexOp::create(b, nloc, d - 1 + indexRank));
          Value element = tensor::ExtractOp::create(b, nloc, operand, coords);
          linalg::YieldOp::create(b, nloc, element);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct ScatterUpdateLowering : OpConversionPattern<ScatterUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto operandType = cast<RankedTensorType>(adaptor.getOperand().getType());
    auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
    int64_t rank = operandType.getRank();
    int64_t slots = operandType.getDimSize(0);
    SmallVector<int64_t> rowShape(operandType.getShape());
    rowShape[0] = 1;
    SmallVector<OpFoldResult> sizes = indexAttrs(rewriter, rowShape);
    SmallVector<OpFoldResult> strides =
        indexAttrs(rewriter, SmallVector<int64_t>(rank, 1));
    Value indices = adaptor.getIndices();
    Value updates = adaptor.getUpdates();

    if (indicesType.getDimSize(0) == 1)
      return rewriteOneRow(op, rewriter, adaptor.getOperand(), indices, updates,
                           sizes, strides);

    // One row per index, in order (a later duplicate wins); an index outside
    // [0, S) writes nothing.
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc,
                                              indicesType.getDimSize(0));
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, step, ValueRange{adaptor.getOperand()},
        [&](OpBuilder &b, Location nloc, Value i, ValueRange iterArgs) {
          Value acc = iterArgs[0];
          Value slot = tensor::ExtractOp::create(b, nloc, indices, ValueRange{i});
          Value inPool = slotInPool(b, nloc, slot, slots);
          auto ifOp = scf::IfOp::create(
              b, nloc, inPool,
              [&](OpBuilder &tb, Location tloc) {
                SmallVector<OpFoldResult> rowOffsets(rank, tb.getIndexAttr(0));
                rowOffsets[0] = i;
                Value row = tensor::ExtractSliceOp::create(
                    tb, tloc, updates, rowOffsets, sizes, strides);
                SmallVector<OpFoldResult> dstOffsets(rank, tb.getIndexAttr(0));
                dstOffsets[0] = arith::IndexCastOp::create(
                                    tb, tloc, tb.getIndexType(), slot)
                                    .getResult();
                Value written = tensor::InsertSliceOp::create(
                    tb, tloc, row, acc, dstOffsets, sizes, strides);
                scf::YieldOp::create(tb, tloc, written);
              },
              [&](OpBuilder &eb, Location eloc) {
                scf::YieldOp::create(eb, eloc, acc);
              });
          scf::YieldOp::create(b, nloc, ifOp.getResult(0));
        });
    // A write map names each slot once (the binder refuses a repeat), so
    // its iterations write distinct rows and may run in parallel.
    if (indexesThroughWriteMap(op, op.getIndices()))
      loop->setAttr("poot.distinct_iterations", rewriter.getUnitAttr());
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }

  /// `0 <= slot < slots` for an i32 slot: a scatter writes only those.
  static Value slotInPool(OpBuilder &b, Location loc, Value slot, int64_t slots) {
    Type i32 = b.getI32Type();
    Value geZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, slot,
                                         scalarConstant(b, loc, i32, 0));
    Value ltSlots = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          slot, scalarConstant(b, loc, i32, slots));
    return arith::AndIOp::create(b, loc, geZero, ltSlots);
  }

  /// One index (a one-token KV write): no loop and no branch on the host.
  /// The row goes to the clamped slot, and an index outside [0, S) writes
  /// back the row already there: `pool[c] = in ? update : pool[c]` with
  /// `c = in ? slot : 0`. (A branch around the insert would, for a pool
  /// that is not donated state, bufferize to a buffer chosen on the host,
  /// which no GPU step can launch.)
  static LogicalResult rewriteOneRow(ScatterUpdateOp op,
                                     ConversionPatternRewriter &rewriter,
                                     Value operand, Value indices,
                                     Value updates,
                                     ArrayRef<OpFoldResult> sizes,
                                     ArrayRef<OpFoldResult> strides) {
    Location loc = op.getLoc();
    auto operandType = cast<RankedTensorType>(operand.getType());
    int64_t rank = operandType.getRank();
    Type i32 = rewriter.getI32Type();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value slot = tensor::ExtractOp::create(rewriter, loc, indices, ValueRange{zero});
    Value inPool = slotInPool(rewriter, loc, slot, operandType.getDimSize(0));
    Value clamped = arith::SelectOp::create(rewriter, loc, inPool, slot,
                                            scalarConstant(rewriter, loc, i32, 0));
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    Value row = tensor::ExtractSliceOp::create(rewriter, loc, updates, offsets,
                                               sizes, strides);
    offsets[0] = arith::IndexCastOp::create(rewriter, loc,
                                            rewriter.getIndexType(), clamped)
                     .getResult();
    Value current = tensor::ExtractSliceOp::create(rewriter, loc, operand,
                                                   offsets, sizes, strides);
    auto rowType = cast<RankedTensorType>(row.getType());
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext());
    auto chosen = linalg::GenericOp::create(
        rewriter, loc, TypeRange{rowType}, ValueRange{row, current},
        ValueRange{emptyTensor(rewriter, loc, rowType)},
        SmallVector<AffineMap>(3, id), parallelIterators(rank),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          linalg::YieldOp::create(
              b, nloc,
              arith::SelectOp::create(b, nloc, inPool, args[0], args[1])
                  .getResult());
        });
    rewriter.replaceOp(op, tensor::InsertSliceOp::create(
                               rewriter, loc, chosen.getResult(0), operand,
                               offsets, sizes, strides)
                               .getResult());
    return success();
  }

  /// `indices` is a `#poot.slot<write_map>` argument, seen through reshapes
  /// and slices (which keep its words distinct).
  static bool indexesThroughWriteMap(Operation *op, Value indices) {
    while (Operation *def = indices.getDefiningOp()) {
      if (!isa<ReshapeOp, SliceOp>(def))
        return false;
      indices = def->getOperand(0);
    }
    // (During the conversion the argument's block may already be detached:
    // find the function from the op.)
    auto arg = cast<BlockArgument>(indices);
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func || arg.getArgNumber() >= func.getNumArguments())
      return false;
    auto slot = func.getArgAttrOfType<SlotAttr>(arg.getArgNumber(),
                                                PootDialect::kSlotAttrName);
    return slot && slot.getKind() == SlotKind::WriteMap;
  }
};

} // namespace

void linalg_lowering::populateDataMovementPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, SliceLowering,
               ConcatLowering, DynamicUpdateSliceLowering, GatherLowering,
               ScatterUpdateLowering>(converter, patterns.getContext());
}
