//===- Passes.h - poot -> other dialects -------------------------*- C++ -*-===//
#ifndef POOT_LIB_CONVERSION_PASSES_H
#define POOT_LIB_CONVERSION_PASSES_H

#include "dialect/PootDialect.h"
#include "lib/Transforms/DeviceDescription.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
class TypeConverter;
namespace poot {

#define GEN_PASS_DECL
#include "lib/Conversion/Passes.h.inc"

/// The types `convert-poot-to-linalg` lowers to: a tensor of i1 becomes a
/// tensor of i8 holding 0 or 1 (numpy's bool layout; LLVM 22 lowers no
/// sub-byte memref access); every other type is kept.
void populatePootToLinalgTypeConversions(TypeConverter &converter);

/// Patterns lowering every primitive poot op to linalg/tensor/arith/math/scf
/// on tensors (see `convert-poot-to-linalg`), with `converter` set up by
/// populatePootToLinalgTypeConversions. The fused attention ops get no
/// pattern. With `foldTransposedRhs`, a matmul of a 2-D rhs that is a
/// `poot.transpose perm = [1, 0]` reads the transpose's operand through a
/// transposed indexing map (convert-poot-to-linalg's fold-transposed-rhs).
void populatePootToLinalgPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns,
                                  bool foldTransposedRhs = false);

#define GEN_PASS_REGISTRATION
#include "lib/Conversion/Passes.h.inc"

} // namespace poot
} // namespace mlir

#endif // POOT_LIB_CONVERSION_PASSES_H
