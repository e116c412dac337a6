//===- MatchSupport.h - readers the attention matcher shares ----*- C++ -*-===//
//
// Constants, shapes, use counts and message helpers used by every part of
// the attention matcher (SoftmaxMatch.cpp, ScoreMatch.cpp,
// OperandMatch.cpp, AttentionMatch.cpp) and by the rewrite that builds from
// it. Nothing here changes the IR.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_MATCHSUPPORT_H
#define POOT_LIB_TRANSFORMS_MATCHSUPPORT_H

#include "dialect/PootDialect.h"

#include <optional>
#include <string>

namespace mlir::poot::match {

inline RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The value of a float splat constant.
std::optional<APFloat> splatFloat(Value value);
/// The same, as a double.
std::optional<double> splatDouble(Value value);

bool isNegInf(Value value);
bool isZero(Value value);
/// True for a splat of the element type's most negative finite value (the
/// `torch.finfo(dtype).min` fill of Hugging Face masks).
bool isLowestFinite(Value value);

/// "'poot.mul'" or "argument #2" -- for messages.
std::string describe(Value value);
std::string describe(Operation *op);
std::string typeString(Type type);
/// `%g` of a double, for messages.
std::string number(double value);

/// True when `value` has exactly `count` uses.
bool hasUses(Value value, unsigned count);
/// How many users of `value` are among `ops`.
unsigned usersAmong(Value value, ArrayRef<Operation *> ops);

/// True when `a` and `b` are the same tensor with the heads folded into (or
/// out of) the batch: one is `[N, X, Y]`, the other `[B, H, X, Y]` with
/// `N = B * H`. Row-major reshapes between them keep every `(b, h)` slice.
bool isBatchFold(Type a, Type b);

/// The reduce `value` reads, behind reshapes and broadcasts (a plain reduce
/// reshaped back to keepdim, an explicit broadcast of the result); the ops
/// passed through go to `views`. Null when `value` is no reduce.
ReduceOp readReduceView(Value value, SmallVectorImpl<Operation *> &views);

/// True when `divisor` lays the reduction `reduce` (over the last axis of
/// its operand, one value per row) out against `dividend [.., X, Y]`: shape
/// `[.., X, 1]` or `[.., X, Y]` with the dividend's leading axes, the
/// reduced rows matching them up to a batch fold.
bool rowsAlign(Value divisor, ReduceOp reduce, Value dividend);

/// A splat scale `mul(x, c)` / `mul(c, x)` / `div(x, c)` whose result has
/// x's type: returns x and the factor (1/c for the division).
std::optional<std::pair<Value, double>> readScale(Value value);

} // namespace mlir::poot::match

#endif // POOT_LIB_TRANSFORMS_MATCHSUPPORT_H
