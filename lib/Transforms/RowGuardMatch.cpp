//===- RowGuardMatch.cpp - the fully-masked-row guard after a softmax -----===//
//
// PyTorch's core-ATen decomposition of scaled_dot_product_attention
// (`_safe_softmax`, torch 2.5 and later, 2.13/2.14 included) zeroes the
// probabilities of a row whose scores are all -inf, where a plain softmax
// gives 0/0 = NaN:
//
//   hidden = logical_not(any(logical_not(s == -inf), dim=-1, keepdim=True))
//   p      = where(hidden, 0, softmax(s))
//
// The importer spells any()/all() as `reduce max/min (convert i1 -> i32)`
// compared with 0, and logical_not as `eq(x, false)`. This reads every
// spelling of "all scores of the row are -inf": all(s == -inf),
// !any(s != -inf), max(s) == -inf (the softmax's own max or another),
// through the boolean identities readBoolView sees through. The rewrite
// then keeps the op's own definition of such a row (0/0, the spec's) and
// zeroes it after the op (AttentionRewrite.cpp).
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/AttentionMatchDetail.h"
#include "lib/Transforms/CausalMatch.h"
#include "lib/Transforms/MatchSupport.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <array>

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::match;

/// The scores s, and the view of them the softmax reads beside s, if any:
/// the guard may read either.
struct Scores {
  Value scores, view;
  bool contains(Value value) const {
    return value && (value == scores || value == view);
  }
  std::array<Value, 2> values() const { return {scores, view}; }
};

/// `s == -inf` (false: not negated) or `s != -inf` (true), -inf on either
/// side: whether a key of `scores` is hidden.
static std::optional<bool> readHiddenKey(CompareOp compare, Scores scores) {
  Value lhs = compare.getLhs(), rhs = compare.getRhs();
  if (isNegInf(lhs))
    std::swap(lhs, rhs);
  if (!scores.contains(lhs) || !isNegInf(rhs))
    return std::nullopt;
  if (compare.getDirection() == CompareDirection::EQ)
    return false;
  if (compare.getDirection() == CompareDirection::NE)
    return true;
  return std::nullopt;
}

/// The reduce over the last axis of a scores-shaped operand behind `value`
/// (keepdim, or reshaped/broadcast back), laid out as one value per row of
/// `probs`; or null.
static ReduceOp readRowReduce(Value value, Scores scores, Value probs) {
  SmallVector<Operation *> views;
  ReduceOp reduce = readReduceView(value, views);
  if (!reduce || !rowsAlign(value, reduce, probs))
    return {};
  auto operand = tensorOf(reduce.getOperand());
  bool shaped = llvm::any_of(scores.values(), [&](Value s) {
    return s && operand.getShape() == tensorOf(s).getShape();
  });
  if (!shaped || reduce.getAxis() != operand.getRank() - 1)
    return {};
  return reduce;
}

/// `r <dir> c` with c an integer splat and r in {0, 1}: true when it is
/// `r != 0`, false when it is `r == 0`, nullopt otherwise.
static std::optional<bool> readTruthOf01(CompareOp compare, Value &r) {
  auto splatInt = [](Value v) -> std::optional<int64_t> {
    DenseIntElementsAttr dense;
    if (!matchPattern(v, m_Constant(&dense)) || !dense.isSplat())
      return std::nullopt;
    return dense.getSplatValue<APInt>().getSExtValue();
  };
  CompareDirection dir = compare.getDirection();
  r = compare.getLhs();
  std::optional<int64_t> c = splatInt(compare.getRhs());
  bool swapped = false;
  if (!c) {
    r = compare.getRhs();
    c = splatInt(compare.getLhs());
    swapped = true;
  }
  if (!c)
    return std::nullopt;
  auto holds = [&](int64_t x) {
    int64_t a = swapped ? *c : x, b = swapped ? x : *c;
    switch (dir) {
    case CompareDirection::EQ: return a == b;
    case CompareDirection::NE: return a != b;
    case CompareDirection::LT: return a < b;
    case CompareDirection::LE: return a <= b;
    case CompareDirection::GT: return a > b;
    case CompareDirection::GE: return a >= b;
    }
    return false;
  };
  bool at0 = holds(0), at1 = holds(1);
  if (at0 == at1)
    return std::nullopt;
  return at1;
}

/// Whether `cond` holds exactly on the rows of `scores` whose entries are
/// all -inf (true) or exactly on the other rows (false), one value per row
/// of the probabilities `probs`; nullopt when it is neither.
static std::optional<bool> readAllHidden(Value cond, Scores scores,
                                         Value probs) {
  std::optional<BoolView> view = readBoolView(cond);
  if (!view)
    return std::nullopt;
  CompareOp compare = view->compare;
  Type element = tensorOf(compare.getLhs()).getElementType();
  if (isa<FloatType>(element)) {
    // max(s) == -inf: the row's largest score is -inf.
    Value lhs = compare.getLhs(), rhs = compare.getRhs();
    if (isNegInf(lhs))
      std::swap(lhs, rhs);
    ReduceOp max = readRowReduce(lhs, scores, probs);
    if (!max || max.getKind() != ReduceKind::Max ||
        !scores.contains(max.getOperand()) || !isNegInf(rhs))
      return std::nullopt;
    if (compare.getDirection() == CompareDirection::EQ)
      return !view->negated;
    if (compare.getDirection() == CompareDirection::NE)
      return view->negated;
    return std::nullopt;
  }
  // any(x) = max(x as 0/1) != 0, all(x) = min(x as 0/1) != 0.
  Value r;
  std::optional<bool> truth = readTruthOf01(compare, r);
  if (!truth)
    return std::nullopt;
  ReduceOp reduce = readRowReduce(r, scores, probs);
  auto convert = reduce ? reduce.getOperand().getDefiningOp<ConvertOp>()
                        : ConvertOp();
  if (!convert ||
      !tensorOf(convert.getOperand()).getElementType().isInteger(1) ||
      reduce.getKind() == ReduceKind::Sum)
    return std::nullopt;
  std::optional<BoolView> inner = readBoolView(convert.getOperand());
  std::optional<bool> visible =
      inner ? readHiddenKey(inner->compare, scores) : std::nullopt;
  if (!visible)
    return std::nullopt;
  // x is "key visible" (true) or "key hidden" (false).
  bool keyVisible = *visible != inner->negated;
  bool isAny = reduce.getKind() == ReduceKind::Max;
  // all(hidden) is the predicate; any(visible) its negation; any(hidden)
  // and all(visible) are other sets.
  if (isAny != keyVisible)
    return std::nullopt;
  bool rowHidden = !isAny; // r != 0 means "all hidden" for all(hidden)
  if (!*truth)
    rowHidden = !rowHidden;
  return rowHidden != view->negated;
}

/// The ops computing `cond` from `scores` (and from the softmax's max),
/// constants aside: stops at the scores and at `max`.
static void collectCone(Value cond, Scores scores, ReduceOp max,
                        llvm::SetVector<Operation *> &cone) {
  SmallVector<Value> stack{cond};
  while (!stack.empty()) {
    Value value = stack.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def || scores.contains(value) || def == max.getOperation() ||
        matchPattern(value, m_Constant()) || !cone.insert(def))
      continue;
    llvm::append_range(stack, def->getOperands());
  }
}

LogicalResult match::readRowGuard(SelectOp select, Value probs,
                                  Softmax &softmax, Decline &decline) {
  bool zeroOnTrue = select.getOnFalse() == probs;
  Value zero = zeroOnTrue ? select.getOnTrue() : select.getOnFalse();
  Scores scores{softmax.scores, softmax.scoresView};
  std::optional<bool> hidden =
      readAllHidden(select.getCond(), scores, probs);
  if (!hidden || *hidden != zeroOnTrue || !isZero(zero) ||
      select.getType() != probs.getType()) {
    decline.why = "'poot.select' after the softmax is not the fully-masked-"
                  "row guard (zeroing exactly the rows whose scores are all "
                  "-inf, as torch's decomposed scaled_dot_product_attention "
                  "does): it is not part of attention";
    decline.at = select;
    return failure();
  }
  llvm::SetVector<Operation *> cone;
  collectCone(select.getCond(), scores, softmax.max, cone);
  // The guard dies with the chain: its condition may read the scores and
  // the max, and nothing else may read the condition.
  for (Operation *op : cone)
    for (Operation *user : op->getUsers())
      if (user != select.getOperation() && !cone.contains(user)) {
        decline.why = "the fully-masked-row guard's condition (" +
                      describe(op) +
                      ") is also used outside the attention chain";
        decline.at = op;
        return failure();
      }
  softmax.guard = select;
  softmax.guardOps.assign(cone.begin(), cone.end());
  return success();
}
