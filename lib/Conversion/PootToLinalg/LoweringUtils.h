//===- LoweringUtils.h - shared helpers of the poot -> linalg patterns -*- C++ -*-===//
//
// Private to lib/Conversion/PootToLinalg: broadcasting indexing maps, the
// scalar form of `poot.convert`, and the entry points of the three pattern
// files (elementwise, data movement, contractions).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_POOTTOLINALG_LOWERINGUTILS_H
#define POOT_LIB_CONVERSION_POOTTOLINALG_LOWERINGUTILS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::poot::linalg_lowering {

/// The element type a poot tensor is stored with after lowering: i1 becomes
/// i8 holding 0 or 1 (numpy's bool layout), because LLVM 22's memref-to-llvm
/// lowering refuses sub-byte loads and stores. Other types are unchanged.
Type storageElementType(Type element);

/// `type` with its element type replaced by the storage element type.
RankedTensorType storageType(RankedTensorType type);

/// The logical scalar of a stored one: a stored i8 is true when nonzero;
/// every other type is returned unchanged.
Value toLogical(OpBuilder &b, Location loc, Value stored);

/// `value` as the storage scalar type `storage` (i1 -> i8 zero-extends).
Value toStorage(OpBuilder &b, Location loc, Value value, Type storage);

/// The map that reads an operand of shape `shape` inside a loop nest over
/// `loopShape` under numpy broadcasting: dimensions align at the trailing
/// end, and an operand dimension of 1 facing a loop dimension of another size
/// reads index 0.
AffineMap broadcastMap(ArrayRef<int64_t> shape, ArrayRef<int64_t> loopShape,
                       MLIRContext *ctx);

/// `n` parallel iterators.
SmallVector<utils::IteratorType> parallelIterators(int64_t n);

/// A `tensor.empty` of `type`.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type);

/// A `tensor.empty` of `type` filled with the scalar `value`.
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value);

/// An elementwise `linalg.generic` producing `resultType` (a storage type)
/// from `inputs` (each broadcast to the result shape); `body` maps the
/// logical input scalars (bools as i1) to the logical result scalar.
Value buildElementwise(
    OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// `value` converted to the scalar type `to` with `poot.convert` semantics:
/// floats round to nearest even, ints convert exactly where representable,
/// floats truncate toward zero into ints, and i1 is 0/1 (to i1: `!= 0`).
Value convertScalar(OpBuilder &b, Location loc, Value value, Type to);

/// A scalar constant of `type` (float, integer or index).
Value scalarConstant(OpBuilder &b, Location loc, Type type, double value);

/// `value` reshaped to `shape` (same element count, row-major order): a
/// collapse to 1-D followed by an expand, either one skipped when it is a
/// no-op.
Value reshapeTensor(OpBuilder &b, Location loc, Value value,
                    ArrayRef<int64_t> shape);

void populateElementwisePatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
void populateDataMovementPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns);
void populateContractionPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns,
                                 bool foldTransposedRhs = false);

} // namespace mlir::poot::linalg_lowering

#endif // POOT_LIB_CONVERSION_POOTTOLINALG_LOWERINGUTILS_H
