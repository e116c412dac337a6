//===- AttentionRewrite.cpp - primitive attention chains -> poot.attention ===//
//
// For each candidate chain (AttentionMatch.cpp reads it) this picks the
// richest form the graph proves and the op's typing rule accepts:
//
//   paged (pools + read map)  -> dense over the gathered view
//   split key (key + shared)  -> dense over the concatenated key
//   dense
//
// and adds the live length when every live select is present and the length
// is proven in [1, Lk]. The op's verifier is the typing rule: a form is built,
// verified with its diagnostics captured, and dropped again if it fails. A
// declined candidate keeps its primitive chain untouched and, with
// `remarks=true`, says which check failed.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "lib/Transforms/AttentionMatch.h"
#include "lib/Transforms/RangeProofs.h"
#include "lib/Transforms/SelectionMatch.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTATTENTIONREWRITE
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static std::string locString(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

namespace {

/// Records erased ops so the pass never touches a candidate that an earlier
/// rewrite removed.
struct EraseTracker : RewriterBase::Listener {
  llvm::DenseSet<Operation *> erased;
  void notifyOperationErased(Operation *op) override { erased.insert(op); }
};

/// Builds one candidate's poot.attention.
class ChainRewriter {
public:
  ChainRewriter(AttentionChain &chain, IRRewriter &rewriter,
                function_ref<const RangeProofs &()> proofs, bool remarks)
      : chain(chain), rewriter(rewriter), proofs(proofs), remarks(remarks),
        loc(chain.output.getLoc()) {}

  /// Replaces the chain, or leaves it exactly as it was and says why.
  LogicalResult run(std::string &why);

private:
  struct Operands {
    Value key, value, keyShared, read;
  };

  LogicalResult buildLength(std::string &why);
  void buildMask();
  FailureOr<AttentionOp> attempt(const Operands &operands, std::string &why);
  Value denseKey();
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
  void dropCreated() {
    for (Operation *op : llvm::reverse(created))
      rewriter.eraseOp(op);
    created.clear();
  }
  void replaceAndClean(AttentionOp attention);

  AttentionChain &chain;
  IRRewriter &rewriter;
  function_ref<const RangeProofs &()> proofs;
  bool remarks;
  Location loc;
  SmallVector<Operation *> created;
  Value mask, length;
};

LogicalResult ChainRewriter::buildLength(std::string &why) {
  SelectOp scoreSelect = chain.transform.liveSelect;
  SelectOp keySelect = chain.key.liveSelect, valueSelect = chain.value.liveSelect;
  if (!scoreSelect && !keySelect && !valueSelect)
    return success();
  if (!scoreSelect || !keySelect || !valueSelect) {
    why = std::string("live length: attention_live zeroes the K and V rows "
                      "past len and sets their scores to -inf; this chain "
                      "lacks the ") +
          (!keySelect ? "K" : !valueSelect ? "V" : "score") +
          " select (a -inf select of the scores alone, such as a block "
          "selection, is not a live length)";
    return failure();
  }
  int64_t lk = tensorOf(chain.scores.getResult()).getShape().back();
  auto read = [&](SelectOp select, bool keepWhenTrue, int64_t axisFromEnd) {
    return matchLiveBound(select.getCond(), keepWhenTrue, axisFromEnd, lk, why);
  };
  std::optional<LiveBound> scoreBound = read(scoreSelect, chain.transform.liveKeepWhenTrue, 0);
  if (!scoreBound)
    return failure();
  std::optional<LiveBound> keyBound = read(keySelect, chain.key.liveKeepWhenTrue, 1);
  if (!keyBound)
    return failure();
  std::optional<LiveBound> valueBound = read(valueSelect, chain.value.liveKeepWhenTrue, 1);
  if (!valueBound)
    return failure();
  if (keyBound->root != scoreBound->root || valueBound->root != scoreBound->root) {
    why = "live length: the K, V and score selects bound different lengths";
    return failure();
  }

  Value compared = scoreBound->compared;
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
  int64_t batch = tensorOf(chain.query).getDimSize(0);
  auto wanted = RankedTensorType::get({batch}, rewriter.getI32Type());
  Value root = scoreBound->root;
  if (root.getType() == wanted) {
    length = root;
    return success();
  }
  auto type = tensorOf(compared);
  int64_t count = type.getNumElements();
  Value flat = compared;
  auto flatType = RankedTensorType::get({count}, rewriter.getI32Type());
  if (flat.getType() != flatType)
    flat = build<ReshapeOp>(flatType, flat);
  if (count != batch)
    flat = build<BroadcastOp>(wanted, flat);
  length = flat;
  return success();
}

void ChainRewriter::buildMask() {
  Type element = tensorOf(chain.query).getElementType();
  for (auto [term, factor] : chain.transform.masks) {
    if (factor != 1.0) {
      auto scalar = RankedTensorType::get({}, element);
      auto constant = build<ConstantOp>(
          scalar, DenseElementsAttr::get(scalar, FloatAttr::get(element, factor)));
      term = build<MulOp>(term, constant).getResult();
    }
    mask = mask ? build<AddOp>(mask, term).getResult() : term;
  }
  if (!mask)
    return;
  // The op reads [B|1, Hq|1, Lq|1, Lk]: prepend unit axes, widen the key axis.
  auto type = tensorOf(mask);
  ArrayRef<int64_t> scores = tensorOf(chain.scores.getResult()).getShape();
  if (type.getRank() < 4) {
    SmallVector<int64_t> shape(4 - type.getRank(), 1);
    llvm::append_range(shape, type.getShape());
    mask = build<ReshapeOp>(RankedTensorType::get(shape, element), mask);
    type = tensorOf(mask);
  }
  if (type.getRank() == 4 && type.getShape().back() == 1 && scores.back() != 1) {
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = scores.back();
    mask = build<BroadcastOp>(RankedTensorType::get(shape, element), mask);
  }
}

Value ChainRewriter::denseKey() {
  if (chain.key.dense)
    return chain.key.dense;
  return build<TransposeOp>(chain.key.viewSource, chain.key.viewPerm);
}

FailureOr<AttentionOp> ChainRewriter::attempt(const Operands &operands,
                                              std::string &why) {
  const ScoreChain &transform = chain.transform;
  auto attention = AttentionOp::create(
      rewriter, loc, chain.output.getType(), chain.query, operands.key,
      operands.value, mask, operands.keyShared, operands.read, length,
      rewriter.getF64FloatAttr(transform.scale),
      transform.softcap ? rewriter.getF64FloatAttr(*transform.softcap)
                        : FloatAttr());
  std::string message;
  LogicalResult verified = failure();
  {
    // Only this thread's diagnostics: functions are rewritten in parallel,
    // and another function's remarks must reach their own handler.
    uint64_t thread = llvm::get_threadid();
    ScopedDiagnosticHandler capture(rewriter.getContext(), [&](Diagnostic &d) {
      if (llvm::get_threadid() != thread)
        return failure();
      if (message.empty())
        message = d.str();
      return success();
    });
    verified = verify(attention, /*verifyRecursively=*/false);
  }
  if (succeeded(verified))
    return attention;
  rewriter.eraseOp(attention);
  why = "poot.attention cannot type this chain: " + message;
  return failure();
}

void ChainRewriter::replaceAndClean(AttentionOp attention) {
  // Everything the chain used exclusively dies with it: the softmax, the
  // score transform, the score matmul, transposes, repeat_kv copies, gathers.
  llvm::SetVector<Operation *> worklist;
  for (Value operand : chain.output->getOperands())
    if (Operation *def = operand.getDefiningOp())
      worklist.insert(def);
  rewriter.replaceOp(chain.output, attention.getResult());
  llvm::DenseSet<Operation *> erased;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (erased.contains(op) || !isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (!erased.contains(def))
          worklist.insert(def);
    erased.insert(op);
    rewriter.eraseOp(op);
  }
}

LogicalResult ChainRewriter::run(std::string &why) {
  rewriter.setInsertionPoint(chain.output);
  if (failed(buildLength(why))) {
    dropCreated();
    return failure();
  }
  buildMask();

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
  if (failed(attention) && key.split) {
    attention = attempt({key.split->perHead, value.dense, key.split->shared,
                         Value()},
                        formWhy);
    if (failed(attention))
      note("split key not formed, attention reads the concatenated key: " +
           formWhy);
  }

  if (failed(attention))
    attention = attempt({denseKey(), value.dense, Value(), Value()}, why);
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
    SmallVector<MatMulOp> outputs;
    func.walk([&](MatMulOp op) { outputs.push_back(op); });

    // The range analysis runs once, on the first candidate that needs it.
    std::optional<RangeProofs> ranges;
    auto proofs = [&]() -> const RangeProofs & {
      if (!ranges)
        ranges.emplace(func);
      return *ranges;
    };

    EraseTracker tracker;
    IRRewriter rewriter(&getContext(), &tracker);
    for (MatMulOp output : outputs) {
      if (tracker.erased.contains(output.getOperation()))
        continue;
      AttentionChain chain;
      std::string why;
      MatchStatus status = matchAttentionChain(output, chain, why);
      if (status == MatchStatus::NotCandidate)
        continue;
      // The sparse indexer's chain: poot-select-blocks forms it.
      if (status == MatchStatus::Matched && isBlockSelectionCandidate(chain))
        continue;
      if (status == MatchStatus::Matched &&
          succeeded(ChainRewriter(chain, rewriter, proofs, remarks).run(why)))
        continue;
      if (remarks)
        output->emitRemark("attention not fused: ") << why;
    }
  }
};

} // namespace
