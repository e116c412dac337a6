//===- AttentionMatch.h - read a primitive attention chain -------*- C++ -*-===//
//
// The read-only half of the attention rewrite. Every candidate is anchored
// at the softmax's `exp`: from there the matcher reads the softmax
// (SoftmaxMatch.cpp), forward to the normalization and the P.V matmul,
// backward through the score transforms to the score matmul
// (ScoreMatch.cpp), and on to the Q/K/V sources behind their transposes,
// scales, GQA repeats, paged gathers, split-key concats, live-length selects
// and head folds (OperandMatch.cpp). Nothing here changes the IR;
// AttentionRewrite.cpp decides which form to build from the result.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_ATTENTIONMATCH_H
#define POOT_LIB_TRANSFORMS_ATTENTIONMATCH_H

#include "dialect/PootDialect.h"

#include <optional>
#include <string>

namespace mlir::poot {

/// Why a candidate does not fuse: the failed check, and the op it stopped
/// at (its location is the user's source line the remark points to).
struct Decline {
  std::string why;
  Operation *at = nullptr;
};

/// A paged view: `transpose(gather(pool, read, axis 0), [0, 2, 1, 3])`,
/// i.e. `[B, Hkv, Lk, D]` read out of a `[S, Hkv, D]` pool by `read [B, Lk]`.
struct PagedView {
  GatherOp gather;
  Value pool;
  Value read;
};

/// A split key: `concat(per_head, shared)` on the last axis, with `shared
/// [B, 1, Lk, s]` broadcast over the heads (or, with one key head, taken as
/// it is: canonicalization folds the identity broadcast away).
struct SplitKey {
  ConcatOp concat;
  Value perHead; // [B, Hkv, Lk, Dk - s] (GQA repeat already read back)
  int64_t perHeadRep = 1;
  Value shared; // [B, 1, Lk, s]
};

/// Where K (or V) comes from, behind the score/output matmul.
struct KVSource {
  /// The value the dense form reads: `[B, Hkv, Lk, D]`, or `[B*H, Lk, D]`
  /// when the heads are folded into the batch (`folded`; the rewrite
  /// reshapes it), or `[.., D, Lk]` for a key stored transposed
  /// (`transposed`; the rewrite transposes it). Null when it only exists as
  /// `transpose(viewSource, viewPerm)` (two transposes the canonicalizer
  /// composed); the rewrite then builds it.
  Value dense;
  Value viewSource;
  SmallVector<int64_t> viewPerm;
  bool transposed = false;
  /// GQA/MQA group size read back from a repeat_kv chain (1: none).
  int64_t numRep = 1;
  /// The live-length select that zeroes rows `t >= len`, if any, whether it
  /// keeps the rows when its condition holds, and where its key axis is
  /// (counted from the last: 1 for `[.., Lk, D]`, 0 for a transposed key).
  SelectOp liveSelect;
  bool liveKeepWhenTrue = true;
  int64_t liveAxisFromEnd = 1;
  std::optional<PagedView> paged;
  std::optional<SplitKey> split;
};

/// The query the op reads: `base` with the data movement ops that stood
/// between a folded scale and the score matmul rebuilt over it (top-down:
/// `movement[0]` fed the matmul). Empty `movement`: `base` is read as is.
struct QuerySource {
  Value base;
  SmallVector<Operation *> movement;
};

/// A live-length condition `t < len` read from a select's condition.
struct LiveBound {
  /// The length as the compare reads it (broadcastable over the chain).
  Value compared;
  /// The same value behind reshapes and broadcasts: equal roots mean the
  /// K, V and score selects agree.
  Value root;
};

/// One step of the mask the op adds, in program order. The rewrite
/// materializes the steps into one additive mask operand: it replays them
/// on a zero score, so `mask = select(m, 0, fill)` for a boolean mask.
struct MaskStep {
  enum Kind { Add, Select, Scale } kind;
  /// Add: the term; Select: the condition.
  Value value;
  /// Select: the splat fill (-inf or the lowest finite value).
  Value fill;
  bool keepWhenTrue = true;
  /// Scale: the factor a later scale applies to everything masked so far.
  double factor = 1.0;
  /// The term or condition is laid over the head-folded `[B*H, Lq, Lk]`
  /// scores (the rewrite unfolds it).
  bool folded = false;
};

/// The score transform between the score matmul and the softmax.
struct ScoreChain {
  /// Every scale: on the scores, and on q or k before the score matmul.
  double scale = 1.0;
  std::optional<double> softcap;
  SmallVector<MaskStep> masks;
  /// The select that sets scores of keys `t >= len` to -inf, if any, and
  /// whether it keeps the scores when its condition holds.
  SelectOp liveSelect;
  bool liveKeepWhenTrue = true;
};

/// Everything the rewrite needs to build a poot.attention.
struct AttentionChain {
  /// The op whose result the fused op replaces: the P.V matmul, or the
  /// division of its product by the softmax sum.
  Operation *result = nullptr;
  MatMulOp output; // matmul(p, v)
  MatMulOp scores; // matmul(q, transpose(k))
  QuerySource query;
  ScoreChain transform;
  /// The `[B, Hq, Lq, Lk]` scores the op computes, and whether the chain
  /// computes some of them head-folded as `[B*Hq, Lq, Lk]`.
  SmallVector<int64_t, 4> shape;
  bool folded = false;
  KVSource key;
  KVSource value;
  std::optional<LiveBound> live;
  /// torch's fully-masked-row guard `select(all(s == -inf), 0, p)` before
  /// the P.V matmul, if the chain has one: the rewrite zeroes the op's
  /// result on rows its mask hides entirely (the op itself gives 0/0 there).
  SelectOp rowGuard;
  /// The op's element type: Q's, K's and V's (f32, or f16/bf16 for
  /// two-byte attention, whose scores/softmax the chain may widen to f32).
  Type element;
};

enum class MatchStatus {
  /// An attention candidate the op cannot take; the Decline says why.
  Declined,
  Matched,
};

/// The score matmuls upstream of `exp` through float values only, without
/// crossing another matmul: the candidates an `exp` stands for. Empty: the
/// exp is not an attention candidate at all.
SmallVector<MatMulOp> scoreMatmulsReaching(ExpOp exp);

/// Reads the attention chain around the softmax whose exp is `exp`.
MatchStatus matchAttentionChain(ExpOp exp, AttentionChain &chain,
                                Decline &decline);

/// Reads `t < len` from the condition of a live select, with the key index
/// `t` on the axis `keyAxisFromEnd` places from the last (0 for scores
/// `[.., Lk]`, 1 for K/V rows `[.., Lk, D]`). `keepWhenTrue` says whether the
/// select keeps its chain operand when the condition holds.
/// The query as the fused op reads it: the data movement that stood between
/// a folded scale and the score matmul, cloned over the unscaled base at the
/// builder's insertion point (`created` collects the clones).
Value rebuildQuery(OpBuilder &builder, const QuerySource &query,
                   SmallVectorImpl<Operation *> &created);

std::optional<LiveBound> matchLiveBound(Value cond, bool keepWhenTrue,
                                        int64_t keyAxisFromEnd,
                                        int64_t keyLength, std::string &why);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_ATTENTIONMATCH_H
