//===- MmaContraction.h - two-byte matmuls that run on tensor cores -*- C++ -*-===//
//
// A whole step's batched two-byte matmuls (batched decode, serving rows,
// prefill projections) run on mma.sync m16n8k16 (poot-gpu-mma-matmuls).
// Which linalg ops qualify, and how their loops split into rows, columns,
// the reduction and batch loops, is decided here once: poot-gpu-split-
// reductions reads it on tensors (to split and mark such an op) and
// poot-gpu-mma-matmuls on buffers (to lower the marked op).
//
// The payload must be the 16-bit contract's accumulation
// (docs/sixteen-bit-contract.md): `out + extf(a) * extf(b)` with `a` and `b` of one
// two-byte float type and an f32 `out`. `b` is an input read directly: the
// weight, indexed by the reduction loop and the columns. `a` is any scalar
// expression without side effects of inputs, loop indices and buffers from
// outside that does not read along the columns (a fused prologue: an
// RMSNorm's scaling, SiLU(gate) * up, a gather of each row's last token);
// poot-gpu-mma-matmuls computes it once into a buffer of its own.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPROGRAM_MMACONTRACTION_H
#define POOT_LIB_CONVERSION_GPUPROGRAM_MMACONTRACTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::poot {

/// The mark poot-gpu-split-reductions puts on an op poot-gpu-mma-matmuls
/// lowers, naming the kernel it chose (MmaKernel.h).
inline constexpr llvm::StringLiteral kMmaMatmulAttr = "poot.mma_matmul";
inline constexpr llvm::StringLiteral kMmaDirectKernel = "direct";
inline constexpr llvm::StringLiteral kMmaStagedKernel = "staged";

/// One warp's columns (8 mma tiles of 8); the warps of one workgroup,
/// which share those columns and split the reduction between them
/// (combined through workgroup memory: 4x fewer partial sums than a warp
/// each); the reduction one warp's loop trip covers. A tensor-core op's
/// columns divide by kMmaWarpColumns, its reduction (each split's, when
/// split) by kMmaReductionChunk.
inline constexpr int64_t kMmaWarpColumns = 64;
inline constexpr int64_t kMmaWarpsPerColumns = 4;
inline constexpr int64_t kMmaReductionStep = 64;
inline constexpr int64_t kMmaReductionChunk =
    kMmaWarpsPerColumns * kMmaReductionStep;

/// An operand's element offset as a linear function of the loops:
/// `offset + sum(coefficients[d] * loop d)` (row-major static shape).
struct LinearAccess {
  SmallVector<int64_t> coefficients;
  int64_t offset = 0;
};

struct MmaContraction {
  unsigned reduction = 0;          // k
  /// n: the weight's own parallel loops (a projection's heads x head_dim
  /// after reshapes fold in), outermost first, which every operand reads
  /// as one flattened run; `columns` is the innermost, whose coefficient
  /// is the run's.
  SmallVector<unsigned> columnLoops;
  unsigned columns = 0;
  SmallVector<unsigned> rows;      // m: loops the weight does not read
  SmallVector<unsigned> batch;     // loops both sides read (a split's)
  SmallVector<int64_t> ranges;     // static loop ranges
  OpOperand *weight = nullptr;     // b
  /// The inputs the `a` expression reads, and the 16-bit value it computes
  /// in the payload (a block argument when `a` is an input read directly).
  SmallVector<OpOperand *> lhsInputs;
  Value lhs;
  /// The payload ops computing `lhs` (linalg.index included), in payload
  /// order: what poot-gpu-mma-matmuls runs once to materialize a prologue.
  SmallVector<Operation *> lhsOps;
  Type element;                    // bf16 or f16
  /// Whether the weight is contiguous along the reduction ([N, K], a torch
  /// Linear's layout) rather than along the columns ([K, N]).
  bool weightAlongReduction = false;

  int64_t rowCount() const { return rangeProduct(rows); }
  int64_t batchCount() const { return rangeProduct(batch); }
  int64_t columnCount() const { return rangeProduct(columnLoops); }
  int64_t reductionCount() const { return ranges[reduction]; }

private:
  int64_t rangeProduct(ArrayRef<unsigned> loops) const {
    int64_t count = 1;
    for (unsigned d : loops)
      count *= ranges[d];
    return count;
  }
};

/// The access of `operand` of `op` (its type's static row-major shape),
/// or nothing when an index is not a linear function of the loops.
std::optional<LinearAccess> linearAccess(linalg::LinalgOp op,
                                         OpOperand *operand);

/// `op` as a tensor-core matmul with at least `minRows` rows whose columns
/// and reduction the kernel tiles exactly and whose weight it reads in
/// aligned 16-byte vectors; nothing otherwise (the op stays on the CUDA-core
/// path). Works on tensors and on buffers (identity layouts only).
std::optional<MmaContraction> matchMmaContraction(linalg::LinalgOp op,
                                                  int64_t minRows);

/// Whether `access` lands on multiples of `chunk` elements at every loop
/// but `unit`, whose coefficient is 1: the operand is read in aligned
/// vectors of `chunk` elements along `unit`.
bool alignedChunks(const LinearAccess &access, unsigned unit, int64_t chunk);

/// Rows of one warp's tile (16, 32 or 64: one to four m16 tiles), from the
/// op's row count.
int64_t mmaWarpRows(int64_t rows);

/// The staged kernel's tiles (MmaKernel.h): a workgroup of
/// kMmaWarpsPerColumns warps owns up to 128 rows x kMmaStagedColumns
/// columns of the output; the operands' tiles, kMmaStagedDepth deep along
/// the reduction, go through workgroup memory in several buffers (up to
/// the 48 KB a kernel may declare statically).
inline constexpr int64_t kMmaStagedColumns = 2 * kMmaWarpColumns;
inline constexpr int64_t kMmaStagedDepth = 32;

/// How the kMmaWarpsPerColumns warps of one workgroup share its tile.
/// The direct kernel, few rows (decode): each warp takes all of the
/// workgroup's rows and a part of the reduction of its 64 columns, the
/// parts added through workgroup memory. The direct kernel from 128 rows (a
/// short prefill chunk): `rowWarps` warps take 64-row tiles of their own,
/// so the weight fragments they all load reach the SM from L2 once (L1
/// serves the others). The staged kernel (from the device's
/// mma_staged_rows, columns in whole 128-column tiles): 128 rows as 2 x 2
/// warps of 64 x 64, or 16-64 rows as 4 warps of 32 columns each.
struct MmaWorkgroupShape {
  int64_t warpRows = 16; ///< rows of one warp's tile (mmaWarpRows)
  int64_t rowWarps = 1;  ///< warps over distinct row tiles: 1, 2 or 4
  bool staged = false;
  int64_t reductionWarps() const {
    return staged ? 1 : kMmaWarpsPerColumns / rowWarps;
  }
  int64_t columnWarps() const {
    return staged ? kMmaWarpsPerColumns / rowWarps : 1;
  }
  int64_t rows() const { return warpRows * rowWarps; }
  int64_t columns() const {
    return staged ? kMmaStagedColumns : kMmaWarpColumns;
  }
  /// The staged kernel's workgroup-memory buffers (3 of 16 KB for 128
  /// rows, 4 of up to 12 KB for fewer).
  int64_t stages() const { return rows() > 64 ? 3 : 4; }
};
/// `stagedRows`: the device's mma_staged_rows (0: the direct kernel only).
MmaWorkgroupShape mmaWorkgroupShape(int64_t rows, int64_t columns,
                                    int64_t stagedRows);

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_MMACONTRACTION_H
