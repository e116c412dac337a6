//===- MmaEpilogue.h - elementwise consumers run in an mma kernel -*- C++ -*-===//
//
// A tensor-core matmul's f32 sums are usually consumed by one elementwise
// op right after it: the rounding to bf16 (a projection), the residual add
// (o_proj, down_proj), a copy into another layout. As a kernel of its own
// that op reads the f32 sums back (4 bytes an element) and writes its
// result; at prefill sizes (4096 rows x 14336 columns) each such pass costs
// as much as a fifth of the matmul. poot-gpu-mma-matmuls runs it in the
// matmul's kernel instead, on the sums still in registers, and the f32
// buffer is never written.
//
// The consumer qualifies when it is a linalg.generic of parallel loops
// whose one read of the sums is a bijection onto the sums' buffer in
// row-major order (the element a kernel thread holds at linear index L is
// the consumer's iteration L, decomposed by its loop ranges), every other
// operand is linearly addressed, its payload is scalar and pure (values
// from outside it: constants only) and ignores its init, and it writes no
// buffer the matmul reads.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPROGRAM_MMAEPILOGUE_H
#define POOT_LIB_CONVERSION_GPUPROGRAM_MMAEPILOGUE_H

#include "lib/Conversion/GPUProgram/MmaContraction.h"

namespace mlir::poot {

struct MmaEpilogue {
  linalg::GenericOp op;
  /// The consumer's input that reads the sums.
  OpOperand *sums = nullptr;
  /// The consumer's loop ranges (a linear index into the sums decomposes
  /// by them, the last fastest).
  SmallVector<int64_t> ranges;
  /// Its other inputs and their accesses over its loops.
  SmallVector<OpOperand *> inputs;
  SmallVector<LinearAccess> inputAccess;
  /// Its result buffer's access over its loops.
  LinearAccess resultAccess;
  /// Allocations and views between the matmul and the consumer: they move
  /// before the matmul's launch (the consumer's operands must dominate it).
  SmallVector<Operation *> between;
};

/// The elementwise consumer of the sums in `out` (the marked matmul
/// `op`'s output buffer, written whole by it) that can run in `op`'s
/// kernel, or nothing. `reads` are the buffers the kernel reads (weight,
/// lhs): the consumer may write none of them. `stale`: ops whose reads
/// no longer count (tensor-core matmuls whose prologue was materialized:
/// their kernels read its buffer, not their inputs).
std::optional<MmaEpilogue> matchMmaEpilogue(linalg::LinalgOp op, Value out,
                                            int64_t sumsCount,
                                            ArrayRef<Value> reads,
                                            ArrayRef<Operation *> stale);

/// Erase the allocation under `buffer` when nothing but views of it and
/// deallocations use it any more (the sums' buffer once its consumer ran
/// in the kernel).
void eraseIfUnused(Value buffer);

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_MMAEPILOGUE_H
