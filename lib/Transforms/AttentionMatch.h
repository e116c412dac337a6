//===- AttentionMatch.h - read a primitive attention chain -------*- C++ -*-===//
//
// The read-only half of the attention rewrite: from the final
// `matmul(p, v)` back to the softmax, the score transforms, the score
// matmul, and the K/V sources behind their transposes, GQA repeats, paged
// gathers, split-key concats and live-length selects. Nothing here changes
// the IR; AttentionRewrite.cpp decides which form to build from the result.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_ATTENTIONMATCH_H
#define POOT_LIB_TRANSFORMS_ATTENTIONMATCH_H

#include "dialect/PootDialect.h"

#include <optional>
#include <string>

namespace mlir::poot {

/// A paged view: `transpose(gather(pool, read, axis 0), [0, 2, 1, 3])`,
/// i.e. `[B, Hkv, Lk, D]` read out of a `[S, Hkv, D]` pool by `read [B, Lk]`.
struct PagedView {
  GatherOp gather;
  Value pool;
  Value read;
};

/// A split key: `concat(per_head, broadcast(shared))` on the last axis, with
/// `shared [B, 1, Lk, s]` broadcast over the heads.
struct SplitKey {
  ConcatOp concat;
  Value perHead; // [B, Hkv, Lk, Dk - s] (GQA repeat already read back)
  int64_t perHeadRep = 1;
  Value shared; // [B, 1, Lk, s]
};

/// Where K (or V) comes from, behind the score/output matmul.
struct KVSource {
  /// The `[B, Hkv, Lk, D]` value the dense form reads, when the graph holds
  /// it. Null when it only exists as `transpose(viewSource, viewPerm)` (two
  /// transposes the canonicalizer composed); the rewrite then builds it.
  Value dense;
  Value viewSource;
  SmallVector<int64_t> viewPerm;
  /// GQA/MQA group size read back from a repeat_kv chain (1: none).
  int64_t numRep = 1;
  /// The live-length select that zeroes rows `t >= len`, if any, and
  /// whether it keeps the rows when its condition holds.
  SelectOp liveSelect;
  bool liveKeepWhenTrue = true;
  std::optional<PagedView> paged;
  std::optional<SplitKey> split;
};

/// A live-length condition `t < len` read from a select's condition.
struct LiveBound {
  /// The length as the compare reads it (broadcastable over the chain).
  Value compared;
  /// The same value behind reshapes and broadcasts: equal roots mean the
  /// K, V and score selects agree.
  Value root;
};

/// The score transform between the score matmul and the softmax.
struct ScoreChain {
  double scale = 1.0;
  std::optional<double> softcap;
  /// Additive masks in program order, each with the factor the scale applied
  /// after it contributes ((s + m) * c = s * c + m * c).
  SmallVector<std::pair<Value, double>> masks;
  /// The select that sets scores of keys `t >= len` to -inf, if any, and
  /// whether it keeps the scores when its condition holds.
  SelectOp liveSelect;
  bool liveKeepWhenTrue = true;
};

/// Everything the rewrite needs to build a poot.attention.
struct AttentionChain {
  MatMulOp output; // matmul(p, v)
  MatMulOp scores; // matmul(q, transpose(k))
  Value query;
  ScoreChain transform;
  KVSource key;
  KVSource value;
};

enum class MatchStatus {
  /// Not a softmax-times-value product: not an attention candidate at all.
  NotCandidate,
  /// An attention candidate the op cannot take; `why` names the check.
  Declined,
  Matched,
};

/// Reads the chain ending at `output`.
MatchStatus matchAttentionChain(MatMulOp output, AttentionChain &chain,
                                std::string &why);

/// Reads `t < len` from the condition of a live select, with the key index
/// `t` on the axis `keyAxisFromEnd` places from the last (0 for scores
/// `[.., Lk]`, 1 for K/V rows `[.., Lk, D]`). `keepWhenTrue` says whether the
/// select keeps its chain operand when the condition holds.
std::optional<LiveBound> matchLiveBound(Value cond, bool keepWhenTrue,
                                        int64_t keyAxisFromEnd,
                                        int64_t keyLength, std::string &why);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_ATTENTIONMATCH_H
