//===- MmaKernel.h - the tensor-core matmul kernels' plan and shared parts -*- C++ -*-===//
//
// poot-gpu-mma-matmuls lowers a marked two-byte matmul (MmaContraction.h)
// to one launch of a generated kernel on mma.sync m16n8k16 with f32
// accumulators. It plans the op once (MmaPlan) and emits one of two
// kernels from the plan:
//  - the direct kernel (MmaDirectKernel.cpp): each warp loads its operand
//    fragments from global memory in 16-byte vectors; for few rows
//    (decode, serving rows: the weight streamed once for all rows);
//  - the staged kernel (MmaStagedKernel.cpp): 128 x 128 output tiles whose
//    operand tiles go through workgroup memory in a cp.async pipeline and
//    reach the warps by ldmatrix; for prefill-sized matmuls, where the
//    direct kernel is bound by its load instructions through L1.
// Both store the sums through the same epilogue (MmaEpilogue.h).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPROGRAM_MMAKERNEL_H
#define POOT_LIB_CONVERSION_GPUPROGRAM_MMAKERNEL_H

#include "lib/Conversion/AttentionKernels/MmaFragments.h"
#include "lib/Conversion/GPUProgram/MmaContraction.h"
#include "lib/Conversion/GPUProgram/MmaEpilogue.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <optional>

namespace mlir::poot {

/// What the kernel of one op is generated from.
struct MmaPlan {
  MmaContraction mm;
  LinearAccess out, weight;
  /// The two-byte lhs buffer the kernel loads as vectors (an input read
  /// directly, or the materialized prologue) and its access.
  Value lhs;
  LinearAccess lhsAccess;
  /// The init's value when a constant fill the kernel folds; else the
  /// kernel accumulates onto the output.
  std::optional<double> fill;
  /// The elementwise consumer of the sums run on them in the kernel
  /// (MmaEpilogue.h): the kernel's first buffer is then its result, its
  /// other inputs come after the lhs.
  std::optional<MmaEpilogue> epilogue;
  int64_t rows = 0, tiles = 0, steps = 0;
  /// How the workgroup's warps share its tile, and which kernel runs.
  MmaWorkgroupShape shape;

  /// Elements of one lhs / weight vector along the reduction: the staged
  /// kernel and a weight contiguous along the reduction read 8, the direct
  /// kernel's [K, N] form 4.
  int64_t chunk() const {
    return shape.staged || mm.weightAlongReduction ? 8 : 4;
  }
};

/// What both kernels share: the kernel's buffers (output or epilogue
/// result, weight, lhs, epilogue inputs), linear offsets over the op's
/// loops, and the store of one sum through the epilogue.
class MmaKernelBase : public MmaBuilder {
public:
  MmaKernelBase(OpBuilder &b, Location loc, const MmaPlan &plan,
                gpu::GPUFuncOp func);

protected:
  using LoopValues = SmallVector<std::pair<unsigned, Value>>;

  /// sum(coefficient x value) over `loops`, plus `base`.
  Value offset(const LinearAccess &access, const LoopValues &loops,
               Value base);
  /// The loops of `dims` (the last fastest) at their linear index `linear`.
  LoopValues decompose(Value linear, ArrayRef<unsigned> dims);
  /// The loops of the linear row `row`, clamped to the last row (a row
  /// past the end reads the last row's addresses; its results are not
  /// stored).
  LoopValues rowLoops(Value row);
  /// The batch loops of the linear batch index `bz`, the last fastest.
  LoopValues batchLoops(Value bz);
  /// Store the sum of linear output element `linear`: as it is, or
  /// through the epilogue.
  void storeSum(Value linear, Value sum);

  const MmaPlan &plan;
  const MmaContraction &mm;
  Value outMem, weightMem, lhsMem;
  SmallVector<Value> epilogueInputs;
};

/// The kernel bodies, into `func` (empty; its arguments as MmaKernelBase
/// reads them).
void emitMmaDirectKernel(OpBuilder &b, Location loc, const MmaPlan &plan,
                         gpu::GPUFuncOp func);
void emitMmaStagedKernel(OpBuilder &b, Location loc, const MmaPlan &plan,
                         gpu::GPUFuncOp func);

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_MMAKERNEL_H
