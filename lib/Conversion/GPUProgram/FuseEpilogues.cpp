//===- FuseEpilogues.cpp - poot-gpu-fuse-epilogues -------------------------===//
//
// Every elementwise consumer of a whole step's reduction is a kernel of its
// own: a BF16 decode matmul ends in a final-sum kernel, a kernel rounding
// its f32 sums to bf16 and often a kernel copying them into the heads'
// layout, each one launch (a few microseconds on a GPU) and one more pass
// over the values. When the consumer runs over the same iteration space and
// reads the reduction's results exactly where the same iteration stored
// them, it can run in that iteration, on the values still in registers:
// the consumer becomes the reduction kernel's epilogue.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/BufferViews.h"
#include "lib/Conversion/GPUProgram/LoopSpaces.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/CSE.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUFUSEEPILOGUES
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using mlir::poot::mayAlias;

namespace {

/// An elementwise kernel: loads, stores and pure ops, no nested regions.
bool isElementwise(scf::ParallelOp loop) {
  return llvm::all_of(loop.getBody()->without_terminator(), [](Operation &op) {
    return op.getNumRegions() == 0 &&
           (isa<memref::LoadOp, memref::StoreOp>(op) || isPure(&op));
  });
}

/// The memrefs a loop reads and writes (every nested op); fails on an op
/// whose effects are unknown or not on a named memref.
struct Accesses {
  SmallVector<Value> reads, writes;
};
FailureOr<Accesses> accessesOf(scf::ParallelOp loop) {
  Accesses out;
  WalkResult walk = loop.getBody()->walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface)
      return isPure(op) ? WalkResult::advance() : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (auto &effect : effects) {
      Value v = effect.getValue();
      if (isa<MemoryEffects::Allocate, MemoryEffects::Free>(effect.getEffect()))
        continue;
      if (!v || !isa<MemRefType>(v.getType()))
        return WalkResult::interrupt();
      (isa<MemoryEffects::Read>(effect.getEffect()) ? out.reads : out.writes)
          .push_back(v);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return out;
}

struct FuseEpilogues
    : poot::impl::PootGPUFuseEpiloguesBase<FuseEpilogues> {
  /// The producer's writes when `consumer` may run inside `producer`'s
  /// iterations: it writes nothing the producer touches, and reads what the
  /// producer writes only from the very buffers (checked element by element
  /// after the merge); failure otherwise.
  FailureOr<SmallVector<Value>> independent(scf::ParallelOp producer,
                                            scf::ParallelOp consumer) {
    FailureOr<Accesses> p = accessesOf(producer), c = accessesOf(consumer);
    if (failed(p) || failed(c))
      return failure();
    for (Value w : c->writes)
      for (Value a : llvm::concat<Value>(p->reads, p->writes))
        if (mayAlias(w, a))
          return failure();
    for (Value r : c->reads)
      for (Value w : p->writes)
        if (mayAlias(r, w) && r != w)
          return failure();
    return p->writes;
  }

  /// Whether `op` may write an element of `memref`.
  static bool mayWrite(Operation *op, Value memref) {
    if (auto store = dyn_cast<memref::StoreOp>(op))
      return mayAlias(store.getMemRef(), memref);
    if (op->getNumRegions() > 0) {
      WalkResult w = op->walk([&](Operation *inner) {
        return inner != op && mayWrite(inner, memref) ? WalkResult::interrupt()
                                                      : WalkResult::advance();
      });
      return w.wasInterrupted();
    }
    if (isMemoryEffectFree(op) || isa<memref::LoadOp>(op))
      return false;
    return true;
  }

  /// The store of `load`'s element earlier in the same block, with nothing
  /// between that may write the buffer: a store to the same memref at the
  /// same index values. Null when there is none.
  static memref::StoreOp storeReaching(memref::LoadOp load) {
    for (Operation *op = load->getPrevNode(); op; op = op->getPrevNode()) {
      if (!mayWrite(op, load.getMemRef()))
        continue;
      auto store = dyn_cast<memref::StoreOp>(op);
      if (store && store.getMemRef() == load.getMemRef() &&
          llvm::equal(store.getIndices(), load.getIndices()))
        return store;
      return {};
    }
    return {};
  }

  /// The producer with the consumer's body appended to its iterations, the
  /// consumer's loads of what the producer stored replaced by the stored
  /// values; null (nothing changed) when such a load does not read exactly
  /// the element its own iteration stored.
  scf::ParallelOp merge(IRRewriter &rewriter, scf::ParallelOp producer,
                        scf::ParallelOp consumer, ArrayRef<Value> produced) {
    rewriter.setInsertionPoint(producer);
    auto merged = cast<scf::ParallelOp>(rewriter.clone(*producer));
    Block *body = merged.getBody();
    IRMapping mapping;
    for (auto [from, to] : llvm::zip(consumer.getInductionVars(),
                                     merged.getInductionVars()))
      mapping.map(from, to);
    // The producer's last op: the consumer's part starts after it.
    Operation *boundary = body->getTerminator()->getPrevNode();
    rewriter.setInsertionPoint(body->getTerminator());
    for (Operation &op : consumer.getBody()->without_terminator())
      rewriter.clone(op, mapping);
    // Index math the two bodies computed alike becomes one value (CSE
    // keeps the first of equal ops: the boundary, a store, stays).
    DominanceInfo dominance(merged);
    eliminateCommonSubExpressions(rewriter, dominance, merged);
    SmallVector<memref::LoadOp> loads;
    for (Operation *op = boundary->getNextNode(); op != body->getTerminator();
         op = op->getNextNode())
      if (auto load = dyn_cast<memref::LoadOp>(op))
        if (llvm::any_of(produced,
                         [&](Value w) { return mayAlias(w, load.getMemRef()); }))
          loads.push_back(load);
    for (memref::LoadOp load : loads) {
      memref::StoreOp source = storeReaching(load);
      if (!source) {
        rewriter.eraseOp(merged);
        return {};
      }
      rewriter.replaceOp(load, source.getValueToStore());
    }
    return merged;
  }

  /// The next top-level loop after `producer` when only allocations and
  /// pure ops lie between them (listed in `between`: they move before the
  /// producer if the two merge, so the merged loop sees them); null
  /// otherwise.
  static scf::ParallelOp nextLoop(scf::ParallelOp producer,
                                  SmallVectorImpl<Operation *> &between) {
    for (Operation *op = producer->getNextNode(); op; op = op->getNextNode()) {
      if (auto loop = dyn_cast<scf::ParallelOp>(op))
        return loop;
      if (op->getNumRegions() > 0 || op->hasTrait<OpTrait::IsTerminator>() ||
          !(isPure(op) || isa<memref::AllocOp>(op)))
        return {};
      between.push_back(op);
    }
    return {};
  }

  /// Buffers nothing reads any more (a reduction's f32 sums once its
  /// rounding runs in its kernel): their stores and allocation go now,
  /// while the stores are still memref.store (the canonicalizer's dead
  /// allocation pattern knows no vector.store, which
  /// poot-gpu-vectorize-columns makes of them next).
  static void eraseUnreadBuffers(func::FuncOp func, IRRewriter &rewriter) {
    SmallVector<memref::AllocOp> allocs;
    func.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
    for (memref::AllocOp alloc : allocs) {
      bool onlyStored = llvm::all_of(alloc->getUses(), [](OpOperand &use) {
        auto store = dyn_cast<memref::StoreOp>(use.getOwner());
        return store && use.get() == store.getMemRef() &&
               use.getOperandNumber() == store.getMemrefMutable().getOperandNumber();
      });
      if (!onlyStored)
        continue;
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        rewriter.eraseOp(user);
      rewriter.eraseOp(alloc);
    }
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    IRRewriter rewriter(&getContext());
    SmallVector<scf::ParallelOp> loops =
        llvm::to_vector(func.getBody().front().getOps<scf::ParallelOp>());
    llvm::SmallPtrSet<Operation *, 16> erased;
    bool fused = false;
    for (scf::ParallelOp producer : loops) {
      if (erased.contains(producer) || producer.getNumResults() != 0 ||
          poot::reductionLoops(producer).empty())
        continue;
      // Consumers one after the other: the rounding, then the copy into
      // the heads' layout, ...
      while (true) {
        SmallVector<Operation *> between;
        scf::ParallelOp consumer = nextLoop(producer, between);
        if (!consumer || consumer.getNumResults() != 0 ||
            !isElementwise(consumer) ||
            !poot::sameIterationSpace(producer, consumer))
          break;
        FailureOr<SmallVector<Value>> produced =
            independent(producer, consumer);
        if (failed(produced))
          break;
        // The consumer's buffers and constants, before the merged loop.
        for (Operation *op : between)
          op->moveBefore(producer);
        scf::ParallelOp merged = merge(rewriter, producer, consumer, *produced);
        if (!merged) {
          for (Operation *op : between)
            op->moveBefore(consumer);
          break;
        }
        erased.insert(consumer);
        rewriter.eraseOp(consumer);
        rewriter.eraseOp(producer);
        producer = merged;
        fused = true;
      }
    }
    if (fused)
      eraseUnreadBuffers(func, rewriter);
  }
};

} // namespace
