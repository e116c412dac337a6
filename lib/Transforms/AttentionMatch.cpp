//===- AttentionMatch.cpp - read a primitive attention chain --------------===//
//
// Assembles a candidate from its parts, anchored at the softmax's exp:
//
//   softmax    exp(s - max(s)) normalized by its sum, then P.V  (SoftmaxMatch)
//   scores     s = transforms of matmul(q, k^T)                 (ScoreMatch)
//   operands   q, k, v behind scales, repeats, folds, ...       (OperandMatch)
//   live       the K, V and score selects of one live length
//
// and the shape of the op: `[B, Hq, Lq, Lk]` scores, read from a 4-D view
// where the chain computes head-folded `[B*Hq, Lq, Lk]` ones.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/AttentionMatch.h"
#include "mlir/IR/IRMapping.h"

#include "lib/Transforms/AttentionMatchDetail.h"
#include "lib/Transforms/MatchSupport.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::match;

static MatchStatus decline(Decline &d, std::string why, Operation *at) {
  d.why = std::move(why);
  d.at = at;
  return MatchStatus::Declined;
}

SmallVector<MatMulOp> mlir::poot::scoreMatmulsReaching(ExpOp exp) {
  SmallVector<MatMulOp> found;
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> stack{exp.getOperand()};
  while (!stack.empty() && seen.size() < 512) {
    Value value = stack.pop_back_val();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    Operation *def = value.getDefiningOp();
    if (!type || !isa<FloatType>(type.getElementType()) || !def ||
        !seen.insert(def))
      continue;
    if (auto matmul = dyn_cast<MatMulOp>(def)) {
      found.push_back(matmul);
      continue;
    }
    llvm::append_range(stack, def->getOperands());
  }
  return found;
}

/// The live length: the K and V zero selects and one -inf select of the
/// scores, all bounding the same `t < len`. Sets `live` to that score
/// select (null when the chain has no live selects).
static MatchStatus matchLive(AttentionChain &chain, ArrayRef<ScoreStep> steps,
                             SelectOp &live, Decline &d) {
  SelectOp keySelect = chain.key.liveSelect,
           valueSelect = chain.value.liveSelect;
  if (!keySelect && !valueSelect)
    return MatchStatus::Matched;
  auto lacking = [&](const char *what, Operation *at) {
    return decline(d,
                   std::string("live length: attention_live zeroes the K "
                               "and V rows past len and sets their scores to "
                               "-inf; this chain lacks the ") +
                       what +
                       " select (a -inf select of the scores alone, such as "
                       "a block selection, is not a live length)",
                   at);
  };
  if (!keySelect)
    return lacking("K", valueSelect);
  if (!valueSelect)
    return lacking("V", keySelect);
  int64_t lk = chain.shape.back();
  std::string why;
  auto keyBound =
      matchLiveBound(keySelect.getCond(), chain.key.liveKeepWhenTrue,
                     chain.key.liveAxisFromEnd, lk, why);
  if (!keyBound)
    return decline(d, why, keySelect);
  auto valueBound = matchLiveBound(valueSelect.getCond(),
                                   chain.value.liveKeepWhenTrue, 1, lk, why);
  if (!valueBound)
    return decline(d, why, valueSelect);
  const char *different =
      "live length: the K, V and score selects bound different lengths";
  if (valueBound->root != keyBound->root)
    return decline(d, different, valueSelect);
  // The score select of the same length; other -inf selects are masks.
  std::optional<Decline> firstMiss;
  for (const ScoreStep &step : llvm::reverse(steps)) {
    if (step.kind != ScoreStep::Select || !isNegInf(step.fill))
      continue;
    std::string stepWhy;
    auto bound = matchLiveBound(step.value, step.keepWhenTrue, 0, lk, stepWhy);
    if (bound && bound->root == keyBound->root) {
      live = cast<SelectOp>(step.op);
      chain.live = bound;
      return MatchStatus::Matched;
    }
    if (!firstMiss)
      firstMiss = Decline{bound ? different : stepWhy, step.op};
  }
  if (firstMiss)
    return decline(d, firstMiss->why, firstMiss->at);
  return lacking("score", keySelect);
}

/// The [B, Hq, Lq, Lk] of head-folded scores [N, Lq, Lk]: from a 4-D view
/// in the score chain, else from the query's own fold, else [1, N, ..].
static void unfoldShape(AttentionChain &chain, const ScoreWalk &walk,
                        ArrayRef<int64_t> folded) {
  if (!walk.shape4.empty()) {
    chain.shape.assign(walk.shape4.begin(), walk.shape4.end());
    return;
  }
  SmallVector<Value> reads{chain.query.base};
  for (Operation *op : chain.query.movement)
    reads.push_back(op->getResult(0));
  for (Value read : reads)
    if (auto reshape = read.getDefiningOp<ReshapeOp>())
      if (isBatchFold(reshape.getOperand().getType(), reshape.getType())) {
        ArrayRef<int64_t> four = tensorOf(reshape.getOperand()).getShape();
        chain.shape = {four[0], four[1], folded[1], folded[2]};
        return;
      }
  chain.shape = {1, folded[0], folded[1], folded[2]};
}

/// The element type of a K/V source as the op would read it.
static Type sourceElement(const KVSource &kv) {
  Value source = kv.dense ? kv.dense : kv.viewSource;
  return tensorOf(source).getElementType();
}

static bool isTwoByte(Type type) { return type.isF16() || type.isBF16(); }

/// The numeric contract of two-byte attention (docs/two-byte-attention.md):
/// Q, K and V share one element type E; for E = f16/bf16 the chain may
/// widen its scores (or Q and K) to f32 and round its probabilities back to
/// E, and its output is E -- the fused op computes everything in f32 and
/// rounds once. An f32 chain has no converts. Everything else declines.
/// May move `chain.result` onto the convert that rounds an f32 output to E.
static MatchStatus checkElementTypes(AttentionChain &chain, Decline &d) {
  Type q = tensorOf(chain.query.base).getElementType();
  Type k = sourceElement(chain.key), v = sourceElement(chain.value);
  if (q != k || q != v)
    return decline(d,
                   "Q is " + typeString(q) + ", K " + typeString(k) +
                       " and V " + typeString(v) +
                       ": poot.attention reads Q, K and V in one element "
                       "type, so the chain stays primitive",
                   chain.output);
  chain.element = q;
  // Nothing else needs checking: the softmax runs in f32, f16 or bf16
  // (SoftmaxMatch), a score convert only widens two-byte scores -- those of
  // the Q/K types -- to f32 (ScoreMatch), and probabilities rounded to a
  // type other than V's cannot reach the P.V matmul, which takes one type.
  Value result = chain.result->getResult(0);
  Type out = tensorOf(result).getElementType();
  if (out.isF32() && isTwoByte(q) && result.hasOneUse()) {
    // `(p @ v.float()).to(q.dtype)`: the op's one rounding -- in core ATen
    // after the bmm's heads are unfolded again (`view(bmm).to(q.dtype)`).
    Operation *user = *result.getUsers().begin();
    if (auto unfold = dyn_cast<ReshapeOp>(user);
        unfold && unfold->hasOneUse() &&
        isBatchFold(result.getType(), unfold.getType()))
      user = *unfold->getUsers().begin();
    if (auto convert = dyn_cast<ConvertOp>(user);
        convert && tensorOf(convert.getResult()).getElementType() == q) {
      chain.result = convert;
      out = q;
    }
  }
  if (out != q)
    return decline(d,
                   "the attention output is " + typeString(out) +
                       " while Q, K and V are " + typeString(q) +
                       ": two-byte attention rounds its output once to " +
                       typeString(q) +
                       " (an f32 output is not in its contract), so the "
                       "chain stays primitive",
                   chain.result);
  return MatchStatus::Matched;
}

MatchStatus mlir::poot::matchAttentionChain(ExpOp exp, AttentionChain &chain,
                                            Decline &d) {
  Softmax softmax;
  if (failed(readSoftmax(exp, softmax, d)))
    return MatchStatus::Declined;
  chain.output = softmax.output;
  chain.result = softmax.result;
  chain.rowGuard = softmax.guard;

  ScoreWalk walk;
  if (failed(readScoreSteps(softmax.scores, exp, walk, d,
                            usersAmong(softmax.scores, softmax.guardOps))))
    return MatchStatus::Declined;
  chain.scores = walk.scores;

  // The scale on q or k before the score matmul is the op's scale too.
  double factor = 1.0;
  chain.query = readQuery(chain.scores.getLhs(), factor);
  if (failed(readKey(chain.scores, chain.key, factor, d)))
    return MatchStatus::Declined;
  readValue(chain.output.getRhs(), chain.value);
  chain.transform.scale = factor;
  if (checkElementTypes(chain, d) == MatchStatus::Declined)
    return MatchStatus::Declined;

  auto scoreType = tensorOf(chain.scores.getResult());
  chain.folded = walk.folded || scoreType.getRank() == 3 ||
                 tensorOf(chain.output.getResult()).getRank() == 3;
  if (scoreType.getRank() == 4)
    chain.shape.assign(scoreType.getShape().begin(),
                       scoreType.getShape().end());
  else
    unfoldShape(chain, walk, scoreType.getShape());

  SelectOp live;
  if (chain.folded && (chain.key.liveSelect || chain.value.liveSelect))
    return decline(d,
                   "live length: the K/V zero selects of a head-folded "
                   "[B*H, L, D] chain are not read as a live length",
                   chain.key.liveSelect ? chain.key.liveSelect
                                        : chain.value.liveSelect);
  if (matchLive(chain, walk.steps, live, d) == MatchStatus::Declined)
    return MatchStatus::Declined;
  if (failed(foldScoreSteps(walk.steps, live, chain.transform, d)))
    return MatchStatus::Declined;
  // The rewrite finds the rows the guard zeroes from the mask alone; with a
  // live length too, a row may be hidden by the two together.
  if (chain.rowGuard && chain.live && !chain.transform.masks.empty())
    return decline(d,
                   "the fully-masked-row guard ('poot.select' zeroing rows "
                   "whose scores are all -inf) of a live-length chain with "
                   "a mask: the op cannot tell the rows the mask and the "
                   "live length hide together, so the chain stays primitive",
                   chain.rowGuard);
  return MatchStatus::Matched;
}

Value mlir::poot::rebuildQuery(OpBuilder &builder, const QuerySource &query,
                               SmallVectorImpl<Operation *> &created) {
  Value value = query.base;
  for (Operation *op : llvm::reverse(query.movement)) {
    IRMapping mapping;
    mapping.map(op->getOperand(0), value);
    Operation *clone = builder.clone(*op, mapping);
    // Data movement over a two-byte base whose f32 widening the matcher
    // read through: the clone moves the base's own element type.
    auto type = cast<RankedTensorType>(clone->getResult(0).getType());
    Type element = tensorOf(value).getElementType();
    if (type.getElementType() != element)
      clone->getResult(0).setType(type.clone(element));
    created.push_back(clone);
    value = clone->getResult(0);
  }
  return value;
}
