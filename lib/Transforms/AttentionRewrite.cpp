//===- AttentionRewrite.cpp - primitive attention chains -> poot.attention ===//
//
// Every softmax exp with a matmul upstream is a candidate. For each one
// (AttentionMatch.cpp reads it) this picks the richest form the graph proves
// and the op's typing rule accepts:
//
//   paged (pools + read map)  -> dense over the gathered view
//   split key (key + shared)  -> dense over the concatenated key
//   dense
//
// and adds the live length when every live select is present and the length
// is proven in [1, Lk]. The masks (additive terms and boolean selects) become
// one additive mask operand (causal iota-compare masks become the op's
// `causal` kind, a sliding window of it also its `window`: CausalMatch.cpp);
// head-folded [B*H, L, D] operands are unfolded, a key stored transposed
// is transposed back, and scales applied to q or k are folded into the op's
// scale. The op's verifier is the typing rule: a
// form is built, verified with its diagnostics captured, and dropped again if
// it fails. A declined candidate keeps its primitive chain untouched and,
// with `remarks=true`, gets one remark naming the failed check at the op it
// stopped at.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"
#include "lib/Transforms/RewriteSupport.h"

#include "lib/Transforms/AttentionMatch.h"
#include "lib/Transforms/CausalMatch.h"
#include "lib/Transforms/MatchSupport.h"
#include "lib/Transforms/RangeProofs.h"
#include "lib/Transforms/SelectionMatch.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

namespace mlir::poot {
#define GEN_PASS_DEF_POOTATTENTIONREWRITE
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;
using match::tensorOf;

static std::string locString(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

namespace {

/// Builds one candidate's poot.attention.
class ChainRewriter {
public:
  ChainRewriter(AttentionChain &chain, IRRewriter &rewriter,
                function_ref<const RangeProofs &()> proofs, bool remarks)
      : chain(chain), rewriter(rewriter), proofs(proofs), remarks(remarks),
        loc(chain.output.getLoc()) {}

  /// Replaces the chain, or leaves it exactly as it was and says why.
  LogicalResult run(Decline &decline);

private:
  struct Operands {
    Value key, value, keyShared, read;
  };

  LogicalResult buildLength(std::string &why);
  LogicalResult buildMask(std::string &why);
  Value unfold(Value value);
  Value buildQuery();
  Value denseOperand(const KVSource &kv);
  FailureOr<AttentionOp> attempt(const Operands &operands, std::string &why);
  void note(const Twine &message) {
    if (remarks)
      chain.output->emitRemark(message);
  }
  template <typename OpTy, typename... Args>
  OpTy build(Args &&...args) {
    auto op = OpTy::create(rewriter, loc, std::forward<Args>(args)...);
    created.push_back(op);
    return op;
  }
  Value scalar(double value, Type of) {
    auto type = RankedTensorType::get({}, of);
    return build<ConstantOp>(
        type, DenseElementsAttr::get(type, FloatAttr::get(of, value)));
  }
  void dropCreated() {
    for (Operation *op : llvm::reverse(created))
      rewriter.eraseOp(op);
    created.clear();
  }
  Value guardRows(AttentionOp attention);
  void replaceAndClean(AttentionOp attention);

  AttentionChain &chain;
  IRRewriter &rewriter;
  function_ref<const RangeProofs &()> proofs;
  bool remarks;
  Location loc;
  Type element;
  SmallVector<Operation *> created;
  Value query, mask, length;
  bool causal = false;
  /// The sliding window of the causal kind (0: none).
  int64_t window = 0;
};

LogicalResult ChainRewriter::buildLength(std::string &why) {
  if (!chain.live)
    return success();
  int64_t lk = chain.shape.back();
  Value compared = chain.live->compared;
  const RangeProofs &ranges = proofs();
  if (!ranges.provesWithin(compared, 1, lk)) {
    if (IndexGuardOp guard = ranges.unwitnessedGuardFeeding(compared)) {
      why = "live length: 1 <= len <= " + std::to_string(lk) +
            " rests on the clamp of the poot.index_guard at " +
            locString(guard.getLoc()) +
            ", whose witness is not returned as a #poot.slot<validation> "
            "result";
      return failure();
    }
    std::string range = "unknown";
    if (auto bounds = ranges.bounds(compared))
      range = "[" + std::to_string(bounds->first) + ", " +
              std::to_string(bounds->second) + "]";
    why = "live length: cannot prove 1 <= len <= " + std::to_string(lk) +
          " from value ranges (len is in " + range + ")";
    return failure();
  }

  // The op takes len as [B] i32.
  int64_t batch = chain.shape.front();
  auto wanted = RankedTensorType::get({batch}, rewriter.getI32Type());
  Value root = chain.live->root;
  if (root.getType() == wanted) {
    length = root;
    return success();
  }
  int64_t count = tensorOf(compared).getNumElements();
  Value flat = compared;
  auto flatType = RankedTensorType::get({count}, rewriter.getI32Type());
  if (flat.getType() != flatType)
    flat = build<ReshapeOp>(flatType, flat);
  if (count != batch)
    flat = build<BroadcastOp>(wanted, flat);
  length = flat;
  return success();
}

/// `[N, X, Y]` (or lower rank, leading axes 1) laid over head-folded scores
/// -> `[B, H, X, Y]` (N = B * H) or `[1, 1, X, Y]` (N = 1); 4-D values pass.
/// Reads through the reshape that folded it, when there is one. Null when N
/// is neither.
Value ChainRewriter::unfold(Value value) {
  auto type = tensorOf(value);
  if (type.getRank() == 4)
    return value;
  if (type.getRank() > 4)
    return {};
  SmallVector<int64_t> dims(3 - type.getRank(), 1);
  llvm::append_range(dims, type.getShape());
  int64_t batch = chain.shape[0], heads = chain.shape[1];
  SmallVector<int64_t> four;
  if (dims[0] == batch * heads)
    four = {batch, heads, dims[1], dims[2]};
  else if (dims[0] == 1)
    four = {1, 1, dims[1], dims[2]};
  else
    return {};
  auto wanted = RankedTensorType::get(four, type.getElementType());
  if (auto reshape = value.getDefiningOp<ReshapeOp>();
      reshape && reshape.getOperand().getType() == wanted)
    return reshape.getOperand();
  return build<ReshapeOp>(wanted, value);
}

LogicalResult ChainRewriter::buildMask(std::string &why) {
  // Masks that are together exactly the causal index set, or a sliding
  // window of it, become the op's `causal` kind (and `window`): no mask
  // tensor, and kernels skip the hidden keys.
  int64_t lq = chain.shape[2], lk = chain.shape[3];
  if (std::optional<int64_t> window =
          match::causalWindowOf(chain.transform.masks, lq, lk)) {
    causal = true;
    this->window = *window;
    return success();
  }
  // Replay the mask steps on a zero score: each boolean select becomes
  // select(m, 0, fill); s + that is the select of s wherever s + fill rounds
  // to fill (always for -inf, for |s| below 2^103 with f32's lowest).
  // The mask keeps the type the chain adds it in: the op's, or f32 where a
  // two-byte chain adds it to scores it widened (the op adds it as given).
  Type maskElement;
  for (const MaskStep &step : chain.transform.masks) {
    Value typed = step.kind == MaskStep::Add      ? step.value
                  : step.kind == MaskStep::Select ? step.fill
                                                  : Value();
    if (!typed)
      continue;
    Type of = tensorOf(typed).getElementType();
    if (maskElement && of != maskElement) {
      why = "the masks are added in both " + match::typeString(maskElement) +
            " and " + match::typeString(of) +
            " (on both sides of the scores' 'poot.convert'): the op takes "
            "one mask";
      return failure();
    }
    maskElement = of;
  }
  Value acc;
  for (const MaskStep &step : chain.transform.masks) {
    Value operand = step.value;
    if (step.kind != MaskStep::Scale && step.folded &&
        !(operand = unfold(step.value))) {
      why = "the mask " + match::typeString(step.value.getType()) +
            " does not lay over the head-folded scores";
      return failure();
    }
    switch (step.kind) {
    case MaskStep::Add:
      acc = acc ? build<AddOp>(acc, operand).getResult() : operand;
      break;
    case MaskStep::Select: {
      Value kept = acc ? acc : scalar(0.0, maskElement);
      acc = step.keepWhenTrue
                ? build<SelectOp>(operand, kept, step.fill).getResult()
                : build<SelectOp>(operand, step.fill, kept).getResult();
      break;
    }
    case MaskStep::Scale:
      if (acc)
        acc = build<MulOp>(acc, scalar(step.factor, maskElement)).getResult();
      break;
    }
  }
  if (!acc)
    return success();
  // The op reads [B|1, Hq|1, Lq|1, Lk]: prepend unit axes, widen the key axis.
  auto type = tensorOf(acc);
  if (type.getRank() < 4) {
    SmallVector<int64_t> shape(4 - type.getRank(), 1);
    llvm::append_range(shape, type.getShape());
    acc = build<ReshapeOp>(RankedTensorType::get(shape, maskElement), acc);
    type = tensorOf(acc);
  }
  int64_t keys = chain.shape.back();
  if (type.getRank() == 4 && type.getShape().back() == 1 && keys != 1) {
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = keys;
    acc = build<BroadcastOp>(RankedTensorType::get(shape, maskElement), acc);
  }
  mask = acc;
  return success();
}

Value ChainRewriter::buildQuery() {
  return unfold(rebuildQuery(rewriter, chain.query, created));
}

Value ChainRewriter::denseOperand(const KVSource &kv) {
  if (!kv.dense)
    return build<TransposeOp>(kv.viewSource, kv.viewPerm);
  Value value = unfold(kv.dense);
  if (value && kv.transposed)
    value = build<TransposeOp>(value, ArrayRef<int64_t>{0, 1, 3, 2});
  return value;
}

FailureOr<AttentionOp> ChainRewriter::attempt(const Operands &operands,
                                              std::string &why) {
  const ScoreChain &transform = chain.transform;
  ArrayRef<int64_t> out = tensorOf(chain.result->getResult(0)).getShape();
  auto resultType = RankedTensorType::get(
      {chain.shape[0], chain.shape[1], chain.shape[2], out.back()}, element);
  auto attention = AttentionOp::create(
      rewriter, loc, resultType, query, operands.key, operands.value, mask,
      operands.keyShared, operands.read, length,
      rewriter.getF64FloatAttr(transform.scale),
      transform.softcap ? rewriter.getF64FloatAttr(*transform.softcap)
                        : FloatAttr(),
      /*causal=*/UnitAttr(), /*window=*/IntegerAttr(),
      /*request=*/AttentionRequestAttr());
  if (causal)
    attention.setCausal(true);
  if (window)
    attention.setWindowAttr(rewriter.getI64IntegerAttr(window));
  std::string message;
  if (succeeded(verifyQuietly(attention, message)))
    return attention;
  rewriter.eraseOp(attention);
  why = "poot.attention cannot type this chain: " + message;
  return failure();
}

/// The op's result with the rows the mask hides entirely set to 0, as the
/// chain's fully-masked-row guard sets them (the op gives 0/0 = NaN there,
/// its definition and the oracle's). With finite scores a row of `s + mask`
/// is all -inf exactly when the mask's row is: `max(mask) == -inf`. Without
/// a mask tensor no row is hidden entirely (the causal kind keeps key 0 for
/// every row, a live length keeps len >= 1 keys), and the guard is a no-op.
Value ChainRewriter::guardRows(AttentionOp attention) {
  Value result = attention.getResult();
  if (!chain.rowGuard || !mask)
    return result;
  auto maskType = tensorOf(mask);
  Value peak = build<ReduceOp>(ReduceKind::Max, mask, maskType.getRank() - 1,
                               /*keepdim=*/true);
  Value ninf = scalar(-std::numeric_limits<double>::infinity(),
                      maskType.getElementType());
  Value hidden = build<CompareOp>(CompareDirection::EQ, peak, ninf);
  return build<SelectOp>(hidden, scalar(0.0, element), result).getResult();
}

void ChainRewriter::replaceAndClean(AttentionOp attention) {
  // Everything the chain used exclusively dies with it: the softmax, the
  // score transform, the score matmul, transposes, repeat_kv copies, gathers
  // (and any rebuilt op the operands did not end up using).
  Value replacement = guardRows(attention);
  Value opResult = replacement;
  Type resultType = chain.result->getResult(0).getType();
  if (replacement.getType() != resultType)
    replacement = build<ReshapeOp>(resultType, replacement);
  SmallVector<Operation *> roots;
  for (Value operand : chain.result->getOperands())
    if (Operation *def = operand.getDefiningOp())
      roots.push_back(def);
  llvm::append_range(roots, created);
  rewriter.replaceOp(chain.result, replacement);
  // A head-folded result the program views as [B, H, Lq, Dv] again reads
  // the op's (guarded) result directly (the pipeline does not canonicalize
  // after us).
  if (replacement != opResult)
    for (Operation *user : llvm::make_early_inc_range(replacement.getUsers()))
      if (auto reshape = dyn_cast<ReshapeOp>(user);
          reshape && reshape.getType() == opResult.getType())
        rewriter.replaceOp(reshape, opResult);
  eraseDeadFrom(rewriter, roots);
}

LogicalResult ChainRewriter::run(Decline &decline) {
  decline.at = chain.transform.liveSelect ? chain.transform.liveSelect
                                          : chain.output.getOperation();
  element = chain.element;
  rewriter.setInsertionPoint(chain.result);
  if (failed(buildLength(decline.why))) {
    dropCreated();
    return failure();
  }
  decline.at = chain.output;
  if (failed(buildMask(decline.why))) {
    dropCreated();
    return failure();
  }
  if (!(query = buildQuery())) {
    decline.why = "the head-folded query does not lay over the [B, H, Lq, D] "
                  "the scores unfold to";
    dropCreated();
    return failure();
  }

  KVSource &key = chain.key, &value = chain.value;
  FailureOr<AttentionOp> attention = failure();
  std::string formWhy;

  // Paged: K and V gathered from their pools by one read map proven in range.
  if (key.paged || value.paged) {
    if (!key.paged || !value.paged || key.paged->read != value.paged->read) {
      note("paged key not fused, attention reads the gathered view: K and V "
           "are not both gathered by one read map");
    } else {
      int64_t slots = tensorOf(key.paged->pool).getDimSize(0);
      const RangeProofs &ranges = proofs();
      if (ranges.provesWithin(key.paged->read, 0, slots - 1)) {
        attention = attempt({key.paged->pool, value.paged->pool, Value(),
                             key.paged->read},
                            formWhy);
        if (failed(attention))
          note("paged key not fused, attention reads the gathered view: " +
               formWhy);
      } else {
        std::string range = "unknown";
        if (auto bounds = ranges.bounds(key.paged->read))
          range = "[" + std::to_string(bounds->first) + ", " +
                  std::to_string(bounds->second) + "]";
        note("paged key not fused, attention reads the gathered view: cannot "
             "prove the read map inside the pool [0, " +
             std::to_string(slots) + ") (its range is " + range + ")");
      }
    }
  }

  // Split key: the per-head part and the shared part, never the broadcast.
  Value valueOperand = denseOperand(value);
  if (failed(attention) && key.split && valueOperand) {
    attention = attempt({key.split->perHead, valueOperand, key.split->shared,
                         Value()},
                        formWhy);
    if (failed(attention))
      note("split key not formed, attention reads the concatenated key: " +
           formWhy);
  }

  if (failed(attention)) {
    Value keyOperand = denseOperand(key);
    if (!keyOperand || !valueOperand)
      decline.why = "the head-folded K or V does not lay over the "
                    "[B, H, Lk, D] the scores unfold to";
    else
      attention =
          attempt({keyOperand, valueOperand, Value(), Value()}, decline.why);
  }
  if (failed(attention)) {
    dropCreated();
    return failure();
  }
  replaceAndClean(*attention);
  return success();
}

struct AttentionRewrite
    : poot::impl::PootAttentionRewriteBase<AttentionRewrite> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<ExpOp> exps;
    func.walk([&](ExpOp op) { exps.push_back(op); });

    // The range analysis runs once, on the first candidate that needs it.
    std::optional<RangeProofs> ranges;
    auto proofs = [&]() -> const RangeProofs & {
      if (!ranges)
        ranges.emplace(func);
      return *ranges;
    };

    EraseTracker tracker;
    IRRewriter rewriter(&getContext(), &tracker);
    // Every candidate score matmul gets one remark at most, even when it
    // reaches several exps.
    llvm::DenseSet<Operation *> reported;
    for (ExpOp exp : exps) {
      if (tracker.erased.contains(exp.getOperation()))
        continue;
      SmallVector<MatMulOp> candidates = scoreMatmulsReaching(exp);
      if (candidates.empty())
        continue;
      AttentionChain chain;
      Decline decline;
      MatchStatus status = matchAttentionChain(exp, chain, decline);
      // The sparse indexer's chain: poot-select-blocks forms it.
      if (status == MatchStatus::Matched && isBlockSelectionCandidate(chain))
        continue;
      if (status == MatchStatus::Matched &&
          succeeded(
              ChainRewriter(chain, rewriter, proofs, remarks).run(decline)))
        continue;
      if (!remarks)
        continue;
      bool fresh = false;
      for (MatMulOp candidate : candidates)
        fresh |= reported.insert(candidate).second;
      if (!fresh)
        continue;
      Operation *at = decline.at ? decline.at : exp.getOperation();
      at->emitRemark("attention not fused: ") << decline.why;
    }
  }
};

} // namespace
