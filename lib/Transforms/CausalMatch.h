//===- CausalMatch.h - the causal mask as an index expression ----*- C++ -*-===//
//
// Recognizes a mask step of the score chain that is exactly the causal mask
// `t <= i + (Lk - Lq)` (bottom-right aligned), or that band's last W keys
// (a sliding window), so the rewrite can record poot.attention's `causal`
// (and `window`) instead of a mask tensor.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_CAUSALMATCH_H
#define POOT_LIB_TRANSFORMS_CAUSALMATCH_H

#include "lib/Transforms/AttentionMatch.h"

#include <optional>

namespace mlir::poot::match {

/// A compare of non-boolean values behind a condition, and whether the
/// condition is its negation.
struct BoolView {
  CompareOp compare;
  bool negated = false;
};

/// The compare `cond` (i1) equals or negates elementwise, seen through the
/// boolean identities on i1 splats (select(c, true, false) = c,
/// eq(x, false) = !x, and(x, true) = x, ... any nesting) and views that keep
/// the last two axes. Reads and rewrites nothing; nullopt for anything else.
std::optional<BoolView> readBoolView(Value cond);

/// The causal kind a whole chain of mask steps is, as a set of (query row
/// i, key t) pairs over the score frame [.., Lq, Lk]: 0 when it is exactly
/// the causal set `t <= i + (Lk - Lq)`, W when it is exactly the sliding
/// window `i + (Lk - Lq) - W < t <= i + (Lk - Lq)` (1 <= W, some row's
/// window short of key 0), nullopt for anything else (another diagonal, a
/// band that differs by one key, a tensor, a scale after the masks, Lk <
/// Lq). Each step's condition is read as `and` / `or` / negations of
/// compares of affine iota expressions; the steps hide the union of what
/// each hides with -inf or the lowest finite value.
std::optional<int64_t> causalWindowOf(ArrayRef<MaskStep> steps, int64_t lq,
                                      int64_t lk);

} // namespace mlir::poot::match

#endif // POOT_LIB_TRANSFORMS_CAUSALMATCH_H
