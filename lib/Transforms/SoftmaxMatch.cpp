//===- SoftmaxMatch.cpp - the softmax of an attention candidate -----------===//
//
// Reads, around the softmax's exp:
//
//   m   = reduce max s (last axis)      keepdim, or reshaped/broadcast back
//   ex  = exp(s - m)                     or exp(s + neg(m))
//   z   = reduce sum ex (last axis)      keepdim, or reshaped/broadcast back
//   p   = ex / z                         or ex * (1 / z)
//   p'  = select(all(s == -inf), 0, p)   optional: torch's fully-masked-row
//                                        guard (RowGuardMatch.cpp)
//   out = matmul p', v                   (p' head-folded by a reshape or not)
// or
//   out = matmul(ex, v) / z                  the division after the P.V product
//
// Every value in between must be used by the chain only. Each check that
// fails names itself and the op it stopped at.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/AttentionMatchDetail.h"
#include "lib/Transforms/MatchSupport.h"

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::match;

static LogicalResult fail(Decline &decline, std::string why, Operation *at) {
  decline.why = std::move(why);
  decline.at = at;
  return failure();
}

static const char *kEscapes =
    "a softmax intermediate is also used outside the attention chain";

static const char *kindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum: return "sum";
  case ReduceKind::Max: return "max";
  case ReduceKind::Min: return "min";
  }
  return "?";
}

/// Every view op (and the reduce itself) used once: by the next view, or by
/// the op that divides or subtracts.
static Operation *firstShared(ReduceOp reduce, ArrayRef<Operation *> views) {
  if (!reduce->hasOneUse())
    return reduce;
  for (Operation *view : views)
    if (!view->hasOneUse())
      return view;
  return nullptr;
}

/// The scores the shift reads and the ones the max reads, `a` and `b`, when
/// one is the other with the heads folded into (or out of) the batch by a
/// reshape: the canonicalizer lets the shift read the bmm's folded scores
/// while the max keeps their 4-D view when the view has other readers (the
/// row guard of core-ATen SDPA without a mask). Returns the view, or null.
static Value readScoresView(Value a, Value b) {
  for (auto [base, view] : {std::pair(a, b), std::pair(b, a)})
    if (auto reshape = view.getDefiningOp<ReshapeOp>();
        reshape && reshape.getOperand() == base &&
        isBatchFold(base.getType(), view.getType()))
      return view;
  return {};
}

/// True when every user of the max but one (the chain's: its first view or
/// the shift) is a compare -- the row guard's `max(s) == -inf` may be one --
/// and the views are not shared.
static bool guardMayRead(ReduceOp max, ArrayRef<Operation *> views) {
  auto others = llvm::count_if(max->getUsers(), [](Operation *user) {
    return !isa<CompareOp>(user);
  });
  return others == 1 && llvm::all_of(views, [](Operation *view) {
           return view->hasOneUse();
         });
}

/// `1 / d` with d a view of `sum`: the reciprocal a normalization multiplies
/// by. Returns the division, or null.
static DivOp readReciprocal(Value value, ReduceOp sum,
                            SmallVectorImpl<Operation *> &views) {
  auto div = value.getDefiningOp<DivOp>();
  std::optional<double> one = div ? splatDouble(div.getLhs()) : std::nullopt;
  if (!one || *one != 1.0 || readReduceView(div.getRhs(), views) != sum)
    return {};
  return div;
}

/// The op the chain continues with after `value`, whose (only) user is
/// `user`: `user` itself, or the one user of `user` when it is a reshape
/// that folds the heads into the batch ([B, H, Lq, X] -> [B*H, Lq, X]);
/// `read` is the value that op reads. Fails when the fold is shared.
static LogicalResult readThroughFold(Value value, Operation *user, Value &read,
                                     Operation *&reader, Decline &decline) {
  read = value;
  reader = user;
  auto reshape = dyn_cast<ReshapeOp>(user);
  if (!reshape || !isBatchFold(value.getType(), reshape.getType()))
    return success();
  if (!reshape->hasOneUse())
    return fail(decline, kEscapes, reshape);
  read = reshape.getResult();
  reader = *read.getUsers().begin();
  return success();
}

/// The f32 probabilities rounded to f16/bf16 for a two-byte P.V matmul
/// (`softmax(s.float()).to(q.dtype)`): the convert's one user, directly or
/// through a head fold, is that matmul. That the rounding fits the fused
/// op's contract (V's type, two-byte Q/K/V) matchAttentionChain checks.
static LogicalResult readConvertedProbs(ConvertOp convert, Softmax &softmax,
                                        Decline &decline) {
  Type from = tensorOf(convert.getOperand()).getElementType();
  Type to = tensorOf(convert.getResult()).getElementType();
  if (!from.isF32() || !(to.isF16() || to.isBF16()))
    return fail(decline,
                "'poot.convert' turns the " + typeString(from) +
                    " softmax probabilities into " + typeString(to) +
                    ": two-byte attention widens f16/bf16 to f32, nothing "
                    "else",
                convert);
  if (!convert->hasOneUse())
    return fail(decline, kEscapes, convert);
  Value read;
  Operation *user;
  if (failed(readThroughFold(convert.getResult(),
                             *convert->getUsers().begin(), read, user,
                             decline)))
    return failure();
  auto matmul = dyn_cast<MatMulOp>(user);
  if (!matmul || matmul.getLhs() != read || matmul.getRhs() == read)
    return fail(decline,
                "the probabilities 'poot.convert' rounds to " +
                    typeString(to) + " feed " + describe(user) +
                    ", not the P.V matmul as its left operand",
                user);
  softmax.output = matmul;
  softmax.result = matmul;
  return success();
}

/// The P.V matmul that reads `probs` (directly, or head-folded by one
/// reshape; behind the fully-masked-row guard or not) as its left operand.
static LogicalResult readOutput(Value probs, Softmax &softmax,
                                Decline &decline) {
  Operation *producer = probs.getDefiningOp();
  if (!probs.hasOneUse())
    return fail(decline, kEscapes, producer);
  Operation *next = *probs.getUsers().begin();
  // select(rows all -inf, 0, p): torch's decomposed SDPA (_safe_softmax).
  if (auto select = dyn_cast<SelectOp>(next);
      select && select.getCond() != probs &&
      ((select.getOnFalse() == probs && isZero(select.getOnTrue())) ||
       (select.getOnTrue() == probs && isZero(select.getOnFalse())))) {
    if (failed(readRowGuard(select, probs, softmax, decline)))
      return failure();
    if (!select->hasOneUse())
      return fail(decline, kEscapes, select);
    probs = select.getResult();
    next = *probs.getUsers().begin();
  }
  Value read;
  Operation *user;
  if (failed(readThroughFold(probs, next, read, user, decline)))
    return failure();
  if (auto matmul = dyn_cast<MatMulOp>(user)) {
    if (matmul.getLhs() == read && matmul.getRhs() != read) {
      softmax.output = matmul;
      softmax.result = matmul;
      return success();
    }
    return fail(decline,
                "the softmax probabilities are the right operand of "
                "'poot.matmul': attention multiplies them by V as P.V",
                matmul);
  }
  if (auto convert = dyn_cast<ConvertOp>(user))
    return readConvertedProbs(convert, softmax, decline);
  return fail(decline,
              "the softmax probabilities feed " + describe(user) +
                  ", not the P.V matmul (a mask, scale or other op applied "
                  "after the softmax is not part of attention)",
              user);
}

/// `matmul(ex, v)` (ex head-folded by one reshape or not) divided by the
/// softmax sum afterwards: `out = (ex . v) / z` or `(ex . v) * (1 / z)`.
static LogicalResult readDivisionAfter(Operation *next, Value ex, ReduceOp sum,
                                       Softmax &softmax, Decline &decline) {
  Value read;
  Operation *user;
  if (failed(readThroughFold(ex, next, read, user, decline)))
    return failure();
  auto matmul = dyn_cast<MatMulOp>(user);
  if (!matmul || matmul.getLhs() != read || matmul.getRhs() == read)
    return fail(decline,
                "the exp feeds " + describe(user) +
                    ", not a division by its sum (nor a P.V matmul divided "
                    "by it afterwards)",
                user);
  Value product = matmul.getResult();
  auto unnormalized = [&](Operation *at) {
    return fail(decline,
                "the P.V matmul reads the unnormalized exp and its product "
                "is not divided by the softmax sum ('poot.reduce') "
                "afterwards",
                at);
  };
  if (!product.hasOneUse())
    return unnormalized(matmul);
  Operation *divide = *product.getUsers().begin();
  SmallVector<Operation *> views;
  if (auto div = dyn_cast<DivOp>(divide); div && div.getLhs() == product) {
    if (readReduceView(div.getRhs(), views) != sum ||
        !rowsAlign(div.getRhs(), sum, product))
      return unnormalized(div);
  } else if (auto mul = dyn_cast<MulOp>(divide)) {
    Value other = mul.getLhs() == product ? mul.getRhs() : mul.getLhs();
    DivOp reciprocal = readReciprocal(other, sum, views);
    if (!reciprocal || !rowsAlign(reciprocal.getRhs(), sum, product))
      return unnormalized(mul);
    if (!reciprocal->hasOneUse())
      return fail(decline, kEscapes, reciprocal);
  } else {
    return unnormalized(divide);
  }
  if (Operation *shared = firstShared(sum, views))
    return fail(decline, kEscapes, shared);
  softmax.output = matmul;
  softmax.result = divide;
  return success();
}

LogicalResult match::readSoftmax(ExpOp exp, Softmax &softmax,
                                 Decline &decline) {
  softmax.exp = exp;
  // exp(s - max(s)), or exp(s + neg(max(s))).
  Value shifted = exp.getOperand();
  Operation *shift = shifted.getDefiningOp();
  Value s, maxView;
  NegOp neg;
  if (auto sub = dyn_cast_or_null<SubOp>(shift)) {
    s = sub.getLhs();
    maxView = sub.getRhs();
  } else if (auto add = dyn_cast_or_null<AddOp>(shift)) {
    for (auto [x, n] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())})
      if ((neg = n.getDefiningOp<NegOp>())) {
        s = x;
        maxView = neg.getOperand();
        break;
      }
  }
  if (!s)
    return fail(decline,
                "the exp reads " + describe(shifted) +
                    ", not the scores minus their max (a softmax's "
                    "exp(s - max(s)))",
                exp);
  Type element = tensorOf(s).getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return fail(decline,
                "element type " + typeString(element) +
                    " is not f32, f16 or bf16: the generated attention "
                    "kernel reads those and computes in f32, so the chain "
                    "stays primitive",
                exp);
  int64_t rank = tensorOf(exp.getResult()).getRank();
  if (rank != 4 && rank != 3)
    return fail(decline,
                "the softmax runs over " + typeString(s.getType()) +
                    ", not the [B, Hq, Lq, Lk] (or head-folded [B*Hq, Lq, "
                    "Lk]) scores of one attention",
                exp);

  SmallVector<Operation *> maxViews;
  ReduceOp max = readReduceView(maxView, maxViews);
  if (!max)
    return fail(decline,
                "the value the softmax subtracts before the exp (" +
                    describe(maxView) + ") is not a reduce max of the scores",
                shift);
  if (max.getKind() != ReduceKind::Max)
    return fail(decline,
                "'poot.reduce' before the exp takes the " +
                    std::string(kindName(max.getKind())) +
                    " of the scores, not their max",
                max);
  Value view; // the scores' other layout, when the max and shift differ
  if (max.getOperand() != s && !(view = readScoresView(s, max.getOperand())))
    return fail(decline,
                "the max the softmax subtracts ('poot.reduce') is taken over " +
                    describe(max.getOperand()) +
                    ", not over the scores the exp reads (" + describe(s) +
                    ")",
                max);
  int64_t maxRank = tensorOf(max.getOperand()).getRank();
  if (max.getAxis() != maxRank - 1)
    return fail(decline,
                "'poot.reduce' takes the softmax max over axis " +
                    std::to_string(max.getAxis()) +
                    ", not the last (key) axis " +
                    std::to_string(maxRank - 1),
                max);
  if (!rowsAlign(maxView, max, max.getOperand()))
    return fail(decline,
                "the max the softmax subtracts is laid out as " +
                    typeString(maxView.getType()) +
                    ", not one value per row of the scores " +
                    typeString(s.getType()),
                maxViews.empty() ? max.getOperation() : maxViews.front());
  if (!shifted.hasOneUse() || (neg && !neg->hasOneUse()))
    return fail(decline, kEscapes, shift);
  // The row guard's condition may compare the max with -inf: such users are
  // checked once the guard is read (at the end).
  if (Operation *shared = firstShared(max, maxViews);
      shared && (shared != max || !guardMayRead(max, maxViews)))
    return fail(decline, kEscapes, shared);
  softmax.scores = view ? view.getDefiningOp<ReshapeOp>().getOperand() : s;
  softmax.scoresView = view;
  softmax.max = max;

  // The users of ex: its sum and the normalization.
  Value ex = exp.getResult();
  ReduceOp sum;
  SmallVector<Operation *> others;
  for (Operation *user : ex.getUsers()) {
    auto reduce = dyn_cast<ReduceOp>(user);
    if (!sum && reduce && reduce.getKind() == ReduceKind::Sum)
      sum = reduce;
    else
      others.push_back(user);
  }
  if (!sum) {
    for (Operation *user : others) {
      Operation *reader = user;
      if (auto reshape = dyn_cast<ReshapeOp>(user);
          reshape && reshape->hasOneUse())
        reader = *reshape->getUsers().begin();
      if (auto matmul = dyn_cast<MatMulOp>(reader))
        return fail(decline,
                    "the P.V matmul reads the unnormalized exp: no reduce "
                    "sum of the exp divides it",
                    matmul);
    }
    return fail(decline,
                "the exp is not normalized by a reduce sum of it (not a "
                "softmax)",
                exp);
  }
  if (sum.getAxis() != rank - 1)
    return fail(decline,
                "'poot.reduce' sums the softmax over axis " +
                    std::to_string(sum.getAxis()) +
                    ", not the last (key) axis " + std::to_string(rank - 1),
                sum);
  if (others.empty())
    return fail(decline,
                "the exp is only summed, never divided by its sum (not a "
                "softmax)",
                exp);
  if (others.size() > 1)
    return fail(decline, kEscapes, exp);

  Operation *normalize = others.front();
  SmallVector<Operation *> sumViews;
  bool dividedHere = true; // else the division follows the P.V matmul
  if (auto div = dyn_cast<DivOp>(normalize); div && div.getLhs() == ex) {
    if (readReduceView(div.getRhs(), sumViews) != sum ||
        !rowsAlign(div.getRhs(), sum, ex))
      return fail(decline,
                  "'poot.div' divides the exp by " + describe(div.getRhs()) +
                      ", not by its softmax sum",
                  div);
  } else if (auto mul = dyn_cast<MulOp>(normalize)) {
    Value other = mul.getLhs() == ex ? mul.getRhs() : mul.getLhs();
    DivOp reciprocal = readReciprocal(other, sum, sumViews);
    if (other == ex || !reciprocal ||
        !rowsAlign(reciprocal.getRhs(), sum, ex))
      return fail(decline,
                  "'poot.mul' multiplies the exp by " + describe(other) +
                      ", not by the reciprocal 1 / sum of its softmax sum",
                  mul);
    if (!reciprocal->hasOneUse())
      return fail(decline, kEscapes, reciprocal);
  } else {
    dividedHere = false;
  }
  if (dividedHere) {
    if (Operation *shared = firstShared(sum, sumViews))
      return fail(decline, kEscapes, shared);
    if (failed(readOutput(normalize->getResult(0), softmax, decline)))
      return failure();
  } else if (failed(readDivisionAfter(normalize, ex, sum, softmax, decline))) {
    return failure();
  }
  // Every reader of the max (and of the scores' view) but the chain's one
  // is the row guard's.
  if (!hasUses(max.getResult(),
               1 + usersAmong(max.getResult(), softmax.guardOps)))
    return fail(decline, kEscapes, max);
  if (view && !hasUses(view, 1 + usersAmong(view, softmax.guardOps)))
    return fail(decline, kEscapes, view.getDefiningOp());
  return success();
}
