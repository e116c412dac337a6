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

/// For an i1 condition over the score frame [.., Lq, Lk]: true when it is
/// exactly the visible set `t <= i + (Lk - Lq)`, false when it is exactly
/// the hidden set `t > i + (Lk - Lq)`, nullopt otherwise (or when Lk < Lq).
std::optional<bool> causalSetOf(Value cond, int64_t lq, int64_t lk);

/// True when the mask step hides exactly the keys above the causal diagonal
/// with -inf or the lowest finite value and changes nothing else.
bool isCausalMask(const MaskStep &step, int64_t lq, int64_t lk);

} // namespace mlir::poot::match

#endif // POOT_LIB_TRANSFORMS_CAUSALMATCH_H
