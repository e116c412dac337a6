//===- CausalMatch.h - the causal mask as an index expression ----*- C++ -*-===//
//
// Recognizes a mask step of the score chain that is exactly the causal mask
// `t <= i + (Lk - Lq)` (bottom-right aligned), so the rewrite can record
// poot.attention's `causal` instead of a mask tensor.
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

/// For an i1 condition over the score frame [.., Lq, Lk]: true when it is
/// exactly the visible set `t <= i + (Lk - Lq)`, false when it is exactly
/// the hidden set `t > i + (Lk - Lq)`, nullopt otherwise (or when Lk < Lq).
std::optional<bool> causalSetOf(Value cond, int64_t lq, int64_t lk);

/// True when the mask step hides exactly the keys above the causal diagonal
/// with -inf or the lowest finite value and changes nothing else.
bool isCausalMask(const MaskStep &step, int64_t lq, int64_t lk);

} // namespace mlir::poot::match

#endif // POOT_LIB_TRANSFORMS_CAUSALMATCH_H
