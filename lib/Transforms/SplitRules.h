//===- SplitRules.h - how each poot op carries a tensor-parallel split ---===//
//
// The analysis behind poot-tensor-parallel: given the column-parallel
// weights of one group (the projections whose outputs meet before a
// contraction: q/k/v at an attention, gate/up at the MLP's product), follow
// their split through the step in program order and decide, for every value
// the group reaches, along which dimension and into how many blocks it is
// split, which replicated operands a rank reads a block of, and which
// contractions leave partial sums (a poot.all_reduce after them).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_TRANSFORMS_SPLITRULES_H
#define POOT_TRANSFORMS_SPLITRULES_H

#include "dialect/PootDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>

namespace mlir::poot {

/// A value split over the ranks: rank r holds block `r / (degree / parts)`
/// of `parts` equal blocks along `dim`. `parts` divides the degree; fewer
/// parts than ranks replicates each block (KV heads fewer than ranks).
struct Split {
  int64_t dim = 0;
  int64_t parts = 1;
  /// The group's seed (column-parallel weight) the split came from: a
  /// retry with fewer parts, or with segments, is asked for that seed.
  unsigned seed = 0;
  /// A packed projection's segments along `dim` (unsplit sizes, summing to
  /// the dimension; each split into `parts` blocks, a rank holds its block
  /// of each). Empty: the dimension is one segment.
  SmallVector<int64_t, 4> segments = {};

  /// One part is the whole value on every rank: its dimension is moot.
  bool whole() const { return parts == 1 && segments.empty(); }

  bool sameAs(const Split &other) const {
    if (whole() && other.whole())
      return true;
    return dim == other.dim && parts == other.parts &&
           segments == other.segments;
  }
};

/// A slice that takes one segment of a packed projection: its bounds on
/// the split dimension in the rank's program.
struct SegmentSlice {
  Operation *slice;
  int64_t dim, start, limit;
};

/// One group's split, or why it cannot be split.
class GroupSplit {
public:
  GroupSplit(func::FuncOp func, int64_t degree,
             const DenseMap<Value, Split> &otherGroups)
      : func(func), degree(degree), otherGroups(otherGroups) {}

  /// Split `weight` (a weight argument) as `split` before the walk.
  LogicalResult seed(Value weight, Split split);
  /// Walk `ops` (the group's reach, in program order) and apply each op's
  /// rule. On failure `why()` says what stopped it, and `retry()` names a
  /// seed whose split would fit with fewer parts.
  LogicalResult walk(ArrayRef<Operation *> ops);
  /// After the walk: every use of every split value is an op whose rule
  /// accepted it (a weight also read elsewhere stays whole).
  LogicalResult checkUses();

  const DenseMap<Value, Split> &values() const { return splits; }
  ArrayRef<std::pair<OpOperand *, Split>> blockReads() const { return reads; }
  ArrayRef<Operation *> partialSums() const { return partials; }
  const DenseMap<unsigned, Split> &resultSplits() const { return results; }
  ArrayRef<SegmentSlice> segmentSlices() const { return segmentCuts; }
  StringRef why() const { return reason; }
  std::optional<std::pair<unsigned, int64_t>> retry() const { return retryAt; }
  /// A seed whose split dimension a slice cuts at these offsets: a packed
  /// projection, to retry with segments bounded there.
  std::optional<std::pair<unsigned, SmallVector<int64_t, 2>>>
  retryCuts() const {
    return cutsAt;
  }

private:
  LogicalResult visit(Operation *op);
  LogicalResult elementwise(Operation *op, bool lastDimLocal);
  LogicalResult matmul(MatMulOp op);
  LogicalResult attention(AttentionOp op);
  LogicalResult atReturn(func::ReturnOp op);
  /// `value`'s split (nullopt: replicated).
  std::optional<Split> splitOf(Value value) const;
  /// `operand` must be split as `split`: already so, a weight or state
  /// argument split now, or a replicated value each rank reads a block of.
  LogicalResult need(OpOperand &operand, Split split);
  LogicalResult assign(Value value, Split split);
  LogicalResult fail(Operation *op, const Twine &why);

  func::FuncOp func;
  int64_t degree;
  const DenseMap<Value, Split> &otherGroups;
  DenseMap<Value, Split> splits;
  SmallVector<std::pair<OpOperand *, Split>> reads;
  SmallVector<Operation *> partials;
  DenseMap<unsigned, Split> results;
  DenseSet<Operation *> handled;
  std::string reason;
  std::optional<std::pair<unsigned, int64_t>> retryAt;
  std::optional<std::pair<unsigned, SmallVector<int64_t, 2>>> cutsAt;
  SmallVector<SegmentSlice> segmentCuts;

  LogicalResult slice(SliceOp op);
};

/// A function argument a rank may bind a block of: a weight (no driver
/// slot) or a state (the runtime slices both from the unsharded arrays).
bool isSplittableArgument(func::FuncOp func, Value value);
/// A weight argument (no driver slot).
bool isWeightArgument(func::FuncOp func, Value value);

} // namespace mlir::poot

#endif // POOT_TRANSFORMS_SPLITRULES_H
