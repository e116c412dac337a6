//===- SelectionMatch.h - read the sparse indexer's block selection -*- C++ -*-===//
//
// The read-only half of the selection pass (SelectBlocks.cpp): the tracer's
// block top-k (`frontend/sparse.py`: a top_k over the block scores with every
// block at or past the row's own set to -inf, then the ids past the own block
// replaced by -1) and the visibility mask over the selected blocks
//
//   visible = (any_k(ids[k] == t / bs) | t / bs == p / bs) & t <= p
//
// read back to their operands. The mask's tensors broadcast against each
// other in several equivalent layouts (the canonicalizer drops reshapes that
// only prepend unit axes), so every value is read together with its *frame*:
// which logical axis (batch row, query row, selection slot, key, block) each
// of its dimensions runs over. Nothing here changes the IR.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_SELECTIONMATCH_H
#define POOT_LIB_TRANSFORMS_SELECTIONMATCH_H

#include "dialect/PootDialect.h"
#include "lib/Transforms/AttentionMatch.h"

#include <optional>
#include <string>

namespace mlir::poot {

/// The logical axes the selection's tensors run over. `Unit` marks a
/// dimension of extent 1 (it broadcasts over anything).
enum class SelectionAxis : int8_t { Unit, Batch, Head, Row, Slot, Key, Block };

/// The logical axis of each dimension of one value.
using SelectionFrame = SmallVector<SelectionAxis, 4>;

/// A tensor indexed by (batch row, query row) only, e.g. the query
/// positions: `root` behind reshapes and broadcasts, with its frame.
struct RowTensor {
  Value root;
  SelectionFrame frame;
};

/// The tracer's block top-k, ending at the -1 fix-ups of its indices.
struct BlockTopKChain {
  TopKOp topk;
  /// The block scores `[B, Lq, NB]` (f32).
  Value scores;
  /// The query positions the own block `p / bs` is computed from.
  RowTensor positions;
  int64_t blockSize = 0;
  /// `select(ids < own, ids, -1)`: each becomes the op's result.
  SmallVector<SelectOp> fixups;
};

/// The visibility mask over the selected blocks, read from the condition of
/// the score select of an attention chain.
struct SelectionMask {
  /// The block ids `[B, Lq, K]` (i32) behind reshapes, with their frame.
  Value ids;
  SelectionFrame idsFrame;
  int64_t slots = 0; // K
  RowTensor positions;
  int64_t blockSize = 0;
};

enum class SelectionStatus { NotCandidate, Declined, Matched };

/// Reads the block top-k that `topk` starts. NotCandidate unless its operand
/// is a select with a -inf branch; Declined (with `why`) when it is one but
/// not the tracer's block top-k.
SelectionStatus matchBlockTopK(TopKOp topk, BlockTopKChain &chain,
                               std::string &why);

/// Reads the visibility mask from `cond`, the condition of the -inf select
/// of scores `[B, Hq, Lq, Lk]` (`keepWhenTrue`: it keeps the scores where
/// the condition holds). Fails with `why` when the condition is not the
/// mask over the selected blocks.
FailureOr<SelectionMask> matchSelectionMask(Value cond,
                                            bool keepWhenTrue,
                                            ArrayRef<int64_t> scoreShape,
                                            std::string &why);

/// The same for an attention chain whose only score mask is one -inf
/// select (no live length, no other mask, not head-folded).
FailureOr<SelectionMask> matchSelectionMask(const AttentionChain &chain,
                                            std::string &why);

/// True when the attention rewrite should leave `chain` to the selection
/// pass: its only score mask is a -inf select whose condition is the mask
/// over the selected blocks.
bool isBlockSelectionCandidate(const AttentionChain &chain);

/// The `[B, Lq]` i32 tensor `rows` denotes (reshaped and broadcast from its
/// root as needed), built at the builder's insertion point; `created`
/// collects the new ops.
Value materializeRows(OpBuilder &builder, Location loc, const RowTensor &rows,
                      int64_t batch, int64_t queryRows,
                      SmallVectorImpl<Operation *> &created);

/// The same for the block ids: `[B, Lq, K]` i32.
Value materializeIds(OpBuilder &builder, Location loc, const SelectionMask &mask,
                     int64_t batch, int64_t queryRows,
                     SmallVectorImpl<Operation *> &created);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_SELECTIONMATCH_H
