//===- ScoreMatch.cpp - the score transform of an attention candidate -----===//
//
// Walks from the softmax input back to the score matmul, reading each op as
// a scale (splat mul/div), a softcap (c * tanh(s / c)), an additive mask, a
// boolean mask select (the scores or a -inf / lowest-finite fill), or a
// reshape that folds the heads into the batch, and then folds the steps into
// the op's fixed order: scale, softcap, masks, live length.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/AttentionMatchDetail.h"
#include "lib/Transforms/MatchSupport.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::match;

static LogicalResult fail(Decline &decline, std::string why, Operation *at) {
  decline.why = std::move(why);
  decline.at = at;
  return failure();
}

/// True when `value` is computed from a matmul through score-transform ops
/// only: the chain side of an `add`, as opposed to the mask.
static bool leadsToScores(Value value, int depth = 0) {
  Operation *def = value.getDefiningOp();
  if (!def || depth > 32)
    return false;
  if (isa<MatMulOp>(def))
    return true;
  if (isa<MulOp, DivOp, AddOp>(def))
    return llvm::any_of(def->getOperands(), [&](Value operand) {
      return !matchPattern(operand, m_Constant()) &&
             leadsToScores(operand, depth + 1);
    });
  if (isa<TanhOp, ReshapeOp, ConvertOp>(def))
    return leadsToScores(def->getOperand(0), depth + 1);
  if (auto select = dyn_cast<SelectOp>(def))
    return leadsToScores(select.getOnTrue(), depth + 1) ||
           leadsToScores(select.getOnFalse(), depth + 1);
  return false;
}

/// `c * tanh(x / c)` or `c * tanh(x * (1/c))`, either operand order:
/// returns x and c.
static std::optional<std::pair<Value, double>> readSoftcap(MulOp outer) {
  for (auto [t, c] : {std::pair(outer.getLhs(), outer.getRhs()),
                      std::pair(outer.getRhs(), outer.getLhs())}) {
    auto tanh = t.getDefiningOp<TanhOp>();
    std::optional<double> cap = splatDouble(c);
    if (!tanh || !cap || !(*cap != 0) || !tanh->hasOneUse())
      continue;
    Value inner = tanh.getOperand();
    if (!inner.hasOneUse())
      continue;
    auto close = [](double a, double b) {
      return std::abs(a - b) <= 1e-6 * std::abs(b);
    };
    if (auto div = inner.getDefiningOp<DivOp>()) {
      std::optional<double> d = splatDouble(div.getRhs());
      if (d && close(*d, *cap) && div.getLhs().getType() == inner.getType())
        return std::pair(div.getLhs(), *cap);
    }
    if (auto mul = inner.getDefiningOp<MulOp>())
      for (auto [x, a] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        std::optional<double> r = splatDouble(a);
        if (r && close(*r * *cap, 1.0) && x.getType() == inner.getType())
          return std::pair(x, *cap);
      }
  }
  return std::nullopt;
}

/// A select in the score chain: which operand carries the scores, the fill
/// it hides the others with, and whether it keeps the scores when its
/// condition holds.
static LogicalResult readMaskSelect(SelectOp select, ScoreStep &step,
                                    Value &next, Decline &decline) {
  bool keepWhenTrue;
  if (splatFloat(select.getOnFalse()) && !splatFloat(select.getOnTrue()))
    keepWhenTrue = true;
  else if (splatFloat(select.getOnTrue()) && !splatFloat(select.getOnFalse()))
    keepWhenTrue = false;
  else
    return fail(decline,
                "'poot.select' in the score chain does not choose between "
                "the scores and a splat fill constant",
                select);
  Value fill = keepWhenTrue ? select.getOnFalse() : select.getOnTrue();
  next = keepWhenTrue ? select.getOnTrue() : select.getOnFalse();
  if (!isNegInf(fill) && !isLowestFinite(fill)) {
    Type element = tensorOf(fill).getElementType();
    double value = *splatDouble(fill);
    return fail(decline,
                "'poot.select' hides scores with " + number(value) +
                    ", neither -inf nor " + typeString(element) +
                    "'s lowest finite value: as the op's additive mask a "
                    "hidden score would become s + " +
                    number(value) + " rather than " + number(value) +
                    ", which changes every row whose keys are all hidden",
                select);
  }
  step = {ScoreStep::Select, select, 0, select.getCond(), fill, keepWhenTrue};
  return success();
}

LogicalResult match::readScoreSteps(Value softmaxInput, Operation *softmaxOp,
                                    ScoreWalk &walk, Decline &decline,
                                    unsigned guardReads) {
  Type scoreType = softmaxInput.getType();
  Value current = softmaxInput;
  Operation *reader = softmaxOp;
  // The softmax reads its input twice (its max and the shift), and the
  // fully-masked-row guard's condition may read it too.
  unsigned expectedUses = 2 + guardReads;
  while (true) {
    Operation *def = current.getDefiningOp();
    if (!def)
      return fail(decline,
                  "the softmax input is not computed from a score matmul "
                  "(it is " +
                      describe(current) + ")",
                  reader);
    if (!hasUses(current, expectedUses))
      return fail(decline,
                  "the scores computed by " + describe(current) +
                      " are also used outside the attention chain",
                  def);
    expectedUses = 1;
    if (current.getType() != scoreType &&
        !isBatchFold(current.getType(), scoreType))
      return fail(decline, "the score chain changes type at " + describe(def),
                  def);
    auto type = tensorOf(current);
    bool folded = type.getRank() == 3;
    walk.folded |= folded;
    if (!folded && walk.shape4.empty())
      llvm::append_range(walk.shape4, type.getShape());

    Value next;
    ScoreStep step{ScoreStep::Scale, def};
    step.folded = folded;
    bool pushed = true;
    if (auto matmul = dyn_cast<MatMulOp>(def)) {
      walk.scores = matmul;
      return success();
    }
    if (auto convert = dyn_cast<ConvertOp>(def)) {
      // Two-byte scores widened for an f32 softmax (`s.float()`): the fused
      // op computes them in f32 anyway. Steps below the convert are in the
      // two-byte type.
      Type from = tensorOf(convert.getOperand()).getElementType();
      Type to = type.getElementType();
      if (!to.isF32() || !(from.isF16() || from.isBF16()))
        return fail(decline,
                    "'poot.convert' in the score chain turns " +
                        typeString(from) + " scores into " + typeString(to) +
                        ": two-byte attention widens f16/bf16 to f32, "
                        "nothing else",
                    convert);
      // (A second widening further back would need a narrowing between,
      // which the check above declines.)
      Value narrow = convert.getOperand();
      scoreType = isBatchFold(current.getType(), scoreType)
                      ? RankedTensorType::get(
                            cast<RankedTensorType>(scoreType).getShape(), from)
                      : narrow.getType();
      reader = def;
      current = narrow;
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(def)) {
      // Heads folded into (or out of) the batch around a mask.
      if (!isBatchFold(reshape.getOperand().getType(), type))
        return fail(decline,
                    "'poot.reshape' in the score chain does not fold the "
                    "heads into the batch ([B*H, Lq, Lk] <-> [B, H, Lq, Lk])",
                    reshape);
      next = reshape.getOperand();
      pushed = false;
    } else if (auto mul = dyn_cast<MulOp>(def)) {
      if (auto softcap = readSoftcap(mul)) {
        step.kind = ScoreStep::Softcap;
        step.number = std::abs(softcap->second);
        next = softcap->first;
      } else if (auto scale = readScale(current)) {
        step.number = scale->second;
        next = scale->first;
      } else {
        return fail(decline,
                    "'poot.mul' in the score chain neither scales by a splat "
                    "constant nor completes a softcap c * tanh(s / c)",
                    mul);
      }
    } else if (auto div = dyn_cast<DivOp>(def)) {
      std::optional<double> divisor = splatDouble(div.getRhs());
      if (!divisor || *divisor == 0 || !std::isfinite(*divisor))
        return fail(decline,
                    "'poot.div' in the score chain does not divide by a "
                    "finite nonzero splat constant",
                    div);
      step.number = 1.0 / *divisor;
      next = div.getLhs();
    } else if (auto add = dyn_cast<AddOp>(def)) {
      bool lhs = leadsToScores(add.getLhs()), rhs = leadsToScores(add.getRhs());
      if (lhs == rhs)
        return fail(decline,
                    "cannot tell the scores from the mask in 'poot.add' "
                    "(both or neither operand comes from the score matmul)",
                    add);
      next = lhs ? add.getLhs() : add.getRhs();
      step.kind = ScoreStep::Mask;
      step.value = lhs ? add.getRhs() : add.getLhs();
    } else if (auto select = dyn_cast<SelectOp>(def)) {
      if (failed(readMaskSelect(select, step, next, decline)))
        return failure();
      step.folded = folded;
    } else {
      return fail(decline,
                  describe(def) +
                      " between the score matmul and the softmax is not a "
                      "scale, softcap, additive mask or mask select",
                  def);
    }
    if (pushed)
      walk.steps.push_back(step);
    reader = def;
    current = next;
  }
}

LogicalResult match::foldScoreSteps(ArrayRef<ScoreStep> outermostFirst,
                                    SelectOp live, ScoreChain &transform,
                                    Decline &decline) {
  bool liveSeen = false;
  bool maskIsSelect = false;
  for (const ScoreStep &step : llvm::reverse(outermostFirst)) {
    switch (step.kind) {
    case ScoreStep::Scale:
      if (transform.softcap)
        return fail(decline,
                    "a scale applied after the softcap is not the op's score "
                    "transform (scale, softcap, mask)",
                    step.op);
      if (liveSeen && !(step.number > 0))
        return fail(decline,
                    "a non-positive scale after the live-length select would "
                    "turn its -inf into another value",
                    step.op);
      transform.scale *= step.number;
      if (!transform.masks.empty()) {
        MaskStep scale{MaskStep::Scale};
        scale.factor = step.number;
        transform.masks.push_back(scale);
      }
      break;
    case ScoreStep::Softcap:
      if (transform.softcap)
        return fail(decline, "two softcaps in one score chain", step.op);
      if (!transform.masks.empty())
        return fail(decline,
                    maskIsSelect
                        ? "a mask select before the softcap is not the op's "
                          "score transform (the softcap comes before the "
                          "mask)"
                        : "a mask added before the softcap is not the op's "
                          "score transform (the softcap comes before the "
                          "mask)",
                    step.op);
      if (liveSeen)
        return fail(decline,
                    "the live-length select comes before the softcap, which "
                    "would turn its -inf into -softcap",
                    step.op);
      transform.softcap = step.number;
      break;
    case ScoreStep::Mask: {
      if (transform.masks.empty())
        maskIsSelect = false;
      MaskStep add{MaskStep::Add, step.value};
      add.folded = step.folded;
      transform.masks.push_back(add);
      break;
    }
    case ScoreStep::Select: {
      if (step.op == live.getOperation()) {
        liveSeen = true;
        transform.liveSelect = live;
        transform.liveKeepWhenTrue = step.keepWhenTrue;
        break;
      }
      // The op applies the live length after every mask: a finite fill
      // after it would be overwritten by -inf on the keys both hide.
      if (liveSeen && !isNegInf(step.fill))
        return fail(decline,
                    "a mask select filling with a finite value after the "
                    "live-length select is not the op's order (the live "
                    "length applies after every mask)",
                    step.op);
      if (transform.masks.empty())
        maskIsSelect = true;
      MaskStep select{MaskStep::Select, step.value, step.fill,
                      step.keepWhenTrue};
      select.folded = step.folded;
      transform.masks.push_back(select);
      break;
    }
    }
  }
  if (!std::isfinite(transform.scale))
    return fail(decline, "the product of the score scales is not finite",
                outermostFirst.empty() ? nullptr : outermostFirst.front().op);
  return success();
}
