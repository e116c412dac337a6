//===- SelectBlocks.cpp - sparse indexer chains -> block_topk, selected_attention
//
// The selection pass. SelectionMatch.cpp reads the two chains of
// `frontend/sparse.py`; this file builds the fused ops the way the attention
// rewrite builds poot.attention: each candidate op is verified with its
// diagnostics captured (the verifier is the typing rule), a chain is replaced
// only by an op that verifies, and whatever the chain used exclusively dies
// with it. A declined chain stays exactly as it was and, with `remarks=true`,
// says which check failed.
//
// Block top-k runs first, so the visibility mask of the attention reads the
// ids of a poot.block_topk; the attention itself is read by the attention
// rewrite's matcher (AttentionMatch.h), so scale, softcap, GQA repeats and
// transposed key layouts compose exactly as they do for poot.attention.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "lib/Transforms/AttentionMatch.h"
#include "lib/Transforms/MatchSupport.h"
#include "lib/Transforms/RewriteSupport.h"
#include "lib/Transforms/SelectionMatch.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Threading.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTSELECTBLOCKS
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;
using match::isNegInf;
using match::tensorOf;

namespace {

void eraseCreated(RewriterBase &rewriter, ArrayRef<Operation *> created) {
  for (Operation *op : llvm::reverse(created))
    rewriter.eraseOp(op);
}

/// The -inf selects between an attention's score matmul and the exp of its
/// softmax, found by walking the score chain (used only to explain a
/// decline).
struct ScoreSelects {
  SelectOp mask;   // reads the block-selection mask
  int64_t others = 0; // other -inf selects (a live length)
};

ScoreSelects findScoreSelects(ExpOp exp) {
  ScoreSelects found;
  auto sub = exp.getOperand().getDefiningOp<SubOp>();
  if (!sub)
    return found;
  Value current = sub.getLhs();
  Type scoreType = current.getType();
  ArrayRef<int64_t> shape = tensorOf(current).getShape();
  for (int step = 0; step < 32 && current; ++step) {
    Operation *def = current.getDefiningOp();
    Value next;
    if (!def || isa<MatMulOp>(def))
      break;
    if (auto select = dyn_cast<SelectOp>(def)) {
      bool negInfFalse = isNegInf(select.getOnFalse());
      if (!negInfFalse && !isNegInf(select.getOnTrue()))
        break;
      std::string why;
      if (succeeded(matchSelectionMask(select.getCond(), negInfFalse, shape, why)))
        found.mask = select;
      else
        ++found.others;
      next = negInfFalse ? select.getOnTrue() : select.getOnFalse();
    } else if (isa<MulOp, DivOp, AddOp, TanhOp>(def)) {
      for (Value operand : def->getOperands())
        if (operand.getType() == scoreType &&
            !matchPattern(operand, m_Constant())) {
          next = operand;
          break;
        }
    }
    current = next;
  }
  return found;
}

/// The P.V matmul reading `exp` (directly or through the division by its
/// sum): where a declined chain's remark goes.
Operation *outputOf(ExpOp exp) {
  for (Operation *user : exp->getUsers()) {
    if (isa<MatMulOp>(user))
      return user;
    if (isa<DivOp>(user))
      for (Operation *next : user->getUsers())
        if (isa<MatMulOp>(next))
          return next;
  }
  return exp;
}

/// True when the chain's only score mask is one -inf select: the form the
/// attention rewrite leaves to this pass.
bool loneNegInfSelect(const AttentionChain &chain) {
  const ScoreChain &transform = chain.transform;
  return !chain.live && transform.masks.size() == 1 &&
         transform.masks.front().kind == MaskStep::Select &&
         isNegInf(transform.masks.front().fill);
}

struct SelectBlocks : poot::impl::PootSelectBlocksBase<SelectBlocks> {
  using Base::Base;

  void note(Operation *op, const Twine &message) {
    if (remarks)
      op->emitRemark(message);
  }

  /// Replaces the fix-ups of `chain` with one poot.block_topk.
  LogicalResult formBlockTopK(BlockTopKChain &chain, IRRewriter &rewriter,
                              std::string &why) {
    Location loc = chain.topk.getLoc();
    rewriter.setInsertionPoint(chain.topk);
    auto scores = tensorOf(chain.scores);
    SmallVector<Operation *> created;
    Value positions =
        materializeRows(rewriter, loc, chain.positions, scores.getDimSize(0),
                        scores.getDimSize(1), created);
    int64_t k = tensorOf(chain.topk.getIndices()).getShape().back();
    auto op = BlockTopKOp::create(rewriter, loc, chain.fixups.front().getType(),
                                  chain.scores, positions,
                                  rewriter.getI64IntegerAttr(k),
                                  rewriter.getI64IntegerAttr(chain.blockSize),
                                  /*request=*/BlockTopKRequestAttr());
    std::string message;
    if (failed(verifyQuietly(op, message))) {
      rewriter.eraseOp(op);
      eraseCreated(rewriter, created);
      why = "poot.block_topk cannot type this chain: " + message;
      return failure();
    }
    SmallVector<Operation *> roots;
    for (SelectOp fixup : chain.fixups) {
      rewriter.replaceAllUsesWith(fixup.getResult(), op.getResult());
      roots.push_back(fixup);
    }
    eraseDeadFrom(rewriter, roots);
    return success();
  }

  /// `kv` as the `[B, H, L, D]` operand the op reads (a transposed key or
  /// a composed view is transposed back).
  Value denseOperand(IRRewriter &rewriter, Location loc, const KVSource &kv,
                     SmallVectorImpl<Operation *> &created) {
    Value value = kv.dense;
    if (!value) {
      auto view = TransposeOp::create(rewriter, loc, kv.viewSource, kv.viewPerm);
      created.push_back(view);
      return view;
    }
    if (kv.transposed) {
      auto back = TransposeOp::create(rewriter, loc, value,
                                      ArrayRef<int64_t>{0, 1, 3, 2});
      created.push_back(back);
      value = back;
    }
    return value;
  }

  /// Replaces an attention chain over the selected blocks with one
  /// poot.selected_attention.
  LogicalResult formSelectedAttention(AttentionChain &chain,
                                      const SelectionMask &mask,
                                      IRRewriter &rewriter, std::string &why) {
    Operation *result = chain.result;
    Location loc = result->getLoc();
    rewriter.setInsertionPoint(result);
    SmallVector<Operation *> created;
    Value query = rebuildQuery(rewriter, chain.query, created);
    Value key = denseOperand(rewriter, loc, chain.key, created);
    Value value = denseOperand(rewriter, loc, chain.value, created);
    auto q = tensorOf(query);
    if (q.getRank() != 4) {
      eraseCreated(rewriter, created);
      why = "the query is not [B, Hq, Lq, D]";
      return failure();
    }
    Value positions = materializeRows(rewriter, loc, mask.positions,
                                      q.getDimSize(0), q.getDimSize(2), created);
    Value ids = materializeIds(rewriter, loc, mask, q.getDimSize(0),
                               q.getDimSize(2), created);
    const ScoreChain &transform = chain.transform;
    auto op = SelectedAttentionOp::create(
        rewriter, loc, result->getResult(0).getType(), query, key, value, ids,
        positions, rewriter.getI64IntegerAttr(mask.blockSize),
        rewriter.getF64FloatAttr(transform.scale),
        transform.softcap ? rewriter.getF64FloatAttr(*transform.softcap)
                          : FloatAttr(),
        /*request=*/SelectedAttentionRequestAttr());
    std::string message;
    if (failed(verifyQuietly(op, message))) {
      rewriter.eraseOp(op);
      eraseCreated(rewriter, created);
      why = "poot.selected_attention cannot type this chain: " + message;
      return failure();
    }
    if (chain.key.paged || chain.value.paged)
      note(op, "paged key: poot.selected_attention reads the gathered view "
               "(it has no read map; the seed keeps indexer attention over "
               "the gathered view)");
    if (chain.key.split)
      note(op, "split key: poot.selected_attention reads the concatenated "
               "key (it has no key_shared operand)");
    SmallVector<Operation *> roots;
    for (Value operand : result->getOperands())
      if (Operation *def = operand.getDefiningOp())
        roots.push_back(def);
    rewriter.replaceOp(result, op.getResult());
    eraseDeadFrom(rewriter, roots);
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    EraseTracker tracker;
    IRRewriter rewriter(&getContext(), &tracker);

    // 1. Block top-k, so the masks below read the fused ids.
    SmallVector<TopKOp> topks;
    func.walk([&](TopKOp op) { topks.push_back(op); });
    for (TopKOp topk : topks) {
      if (tracker.erased.contains(topk.getOperation()))
        continue;
      BlockTopKChain chain;
      std::string why;
      SelectionStatus status = matchBlockTopK(topk, chain, why);
      if (status == SelectionStatus::NotCandidate)
        continue;
      if (status == SelectionStatus::Matched &&
          succeeded(formBlockTopK(chain, rewriter, why)))
        continue;
      note(topk, "block top-k not formed: " + why);
    }

    // 2. Attention over the selected blocks: the chains the attention
    //    rewrite left (its matcher reads them; a chain it declined carries
    //    its remark already).
    SmallVector<ExpOp> exps;
    func.walk([&](ExpOp op) { exps.push_back(op); });
    for (ExpOp exp : exps) {
      if (tracker.erased.contains(exp.getOperation()))
        continue;
      AttentionChain chain;
      Decline decline;
      MatchStatus status = matchAttentionChain(exp, chain, decline);
      std::string why = decline.why;
      // The selected-attention kernel is f32 only (two-byte attention is
      // poot.attention's: docs/two-byte-attention.md).
      if (status == MatchStatus::Matched && !chain.element.isF32()) {
        status = MatchStatus::Declined;
        why = "element type " + match::typeString(chain.element) +
              " is not f32: the generated attention kernel is F32 only, so "
              "the chain stays primitive";
      }
      if (status == MatchStatus::Matched) {
        FailureOr<SelectionMask> mask = matchSelectionMask(chain, why);
        if (succeeded(mask) &&
            succeeded(formSelectedAttention(chain, *mask, rewriter, why)))
          continue;
      }
      // Say why only for the chains that are this pass's: a lone -inf score
      // select (what the attention rewrite leaves), or a score select that
      // reads the block mask. Any other chain is the attention rewrite's.
      bool lone = status == MatchStatus::Matched && loneNegInfSelect(chain);
      if (lone || findScoreSelects(exp).mask)
        note(outputOf(exp), "selected attention not formed: " + why);
    }
  }
};

} // namespace
