//===- SelectionEmitter.h - the block-selected attention kernels -*- C++ -*-===//
//
// The bodies of the poot.block_topk and poot.selected_attention kernels,
// written once over flat memrefs and ids (row, split, lane) like the
// AttentionEmitter: the GPU kernels (GenerateKernels.cpp) take the ids from
// gpu.block_id / gpu.thread_id and separate phases with barriers; the CPU
// loops (SelectionToLoops.cpp) run every lane of a phase before the next.
//
// Selected attention reuses the seed's schedule: its lane state, online
// softmax update and both combines are AttentionEmitter's (over the
// equivalent dense request); only the keys a lane visits differ.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_SELECTIONEMITTER_H
#define POOT_CONVERSION_ATTENTIONKERNELS_SELECTIONEMITTER_H

#include "dialect/PootDialect.h"
#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"
#include "lib/Conversion/AttentionKernels/KernelBuilder.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace mlir::poot {

/// Flat (1-D) buffers of the selection kernels; the ones a kernel does not
/// take are null.
struct SelectionBuffers {
  Value scores, positions, ids;       // block_topk: scores, q_pos -> ids
  Value query, key, value, out, scratch; // selected_attention (ids, q_pos too)
};

/// The one definition of the selection kernels' arguments (the Python
/// launch plan mirrors the names): block_topk (scores, q_pos, out);
/// selected_attention (query, key, value, block_ids, q_pos, out|scratch),
/// combine (scratch, out).
class SelectionSignature {
public:
  enum class Launch { Stream, Partials, Combine };
  explicit SelectionSignature(Operation *op);
  SmallVector<Type> argumentTypes(MLIRContext *ctx, Launch launch) const;
  SelectionBuffers bind(ValueRange args, Launch launch) const;
  /// The op's tensor inputs in kernel-argument order.
  static SmallVector<Value> orderedInputs(Operation *op);

private:
  struct Arg {
    StringRef name;
    int64_t elements;
    bool isInt;
  };
  SmallVector<Arg> args(Launch launch) const;
  SmallVector<Arg> inputs;
  Arg out, scratch;
};

/// Phases run once per lane: the GPU runs `body` for its own thread and
/// then a barrier; the CPU loops over the lanes.
using LanePhase = function_ref<void(function_ref<void(Value lane)> body)>;

class BlockTopKEmitter : private KernelBuilder {
public:
  BlockTopKEmitter(OpBuilder &builder, Location loc, BlockTopKRequestAttr req);
  /// Workgroup memory: every lane's best, its key (f32) and its id (i32) in
  /// two buffers of `lanes` words (an id never travels as a float: a
  /// device may flush its bit pattern, a denormal, to zero).
  int64_t ldsWords() const { return req.getLanes(); }
  int64_t rows() const { return req.getBatch() * req.getQLen(); }
  /// The whole row: min(K, NB) rounds (each a lane phase that finds the
  /// lanes' bests, log2(lanes) phases folding them in a tree, then a phase
  /// in which lane 0 publishes the round's winner), then the -1 padding
  /// past NB.
  void emitRow(const SelectionBuffers &bufs, Value row, Value ldsKeys,
               Value ldsIds, LanePhase eachLane);

private:
  /// (key, id) ranks before (otherKey, otherId): numbers before NaN,
  /// higher first, ties to the lower id (poot.top_k's order).
  Value ranksBefore(Value key, Value id, Value otherKey, Value otherId);
  /// The row's own block p / bs, or -1 for a negative position.
  Value ownBlock(const SelectionBuffers &bufs, Value row);

  BlockTopKRequestAttr req;
};

class SelectedAttentionEmitter : private KernelBuilder {
public:
  SelectedAttentionEmitter(OpBuilder &builder, Location loc,
                           SelectedAttentionRequestAttr req, double scale,
                           std::optional<double> softcap);
  int64_t ldsFloats() const { return dense.ldsFloats(); }
  int64_t scratchFloats() const { return dense.scratchFloats(); }
  int64_t rows() const { return dense.rows(); }

  /// Phase 1 for one lane: its state, then the positions u = begin + lane,
  /// begin + lane + lanes, ... < end of the split's chunk of the row's
  /// (K + 1) * bs visited positions; position u is key u % bs of the row's
  /// (u / bs)-th block (the listed ids, then the own block). A listed id
  /// that is padding (< 0), past the last block, the own block or a repeat
  /// of an earlier slot visits nothing, and no key past q_pos is visited.
  void emitLaneScan(const SelectionBuffers &bufs, Value row, Value split,
                    Value lane, Value lds);
  /// Phase 2 and the split combine: AttentionEmitter's.
  void emitLaneCombine(const SelectionBuffers &bufs, Value row, Value split,
                       Value lane, Value lds);
  void emitSplitCombine(const SelectionBuffers &bufs, Value row, Value lane);

  /// The warp-decode schedule (NVIDIA decode): WarpDecodeKernel's body with
  /// its warps striding over the visited positions instead of the keys.
  void emitWarpDecode(const SelectionBuffers &bufs, Value wg, Value tid,
                      Value lds);

  /// The position p of (batch row, query row) `bi` and its own block
  /// (p / bs, or -1 for p < 0).
  std::pair<Value, Value> rowPosition(const SelectionBuffers &bufs, Value bi);
  /// Visited position u of row `bi` at (p, own): its key t and whether to
  /// visit it (see emitLaneScan).
  std::pair<Value, Value> visitedKey(const SelectionBuffers &bufs, Value bi,
                                     Value p, Value own, Value u);

private:
  AttentionBuffers denseBuffers(const SelectionBuffers &bufs) const;

  SelectedAttentionRequestAttr req;
  double scale;
  std::optional<double> softcap;
  AttentionEmitter dense;
};

/// The schedule of poot.attention that has the selected attention's lane
/// state, splits and combine (no mask, every key addressed densely).
AttentionRequestAttr denseEquivalent(SelectedAttentionRequestAttr req);

/// The CPU form of every planned poot.block_topk and poot.selected_attention
/// in `module`: the kernels' phases as loops (SelectionToLoops.cpp).
LogicalResult lowerSelectionToLoops(ModuleOp module);

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_SELECTIONEMITTER_H
