//===- PromoteAccumulators.cpp - poot-gpu-promote-accumulators -------------===//
//
// convert-linalg-to-parallel-loops lowers a reduction as an scf.for that
// loads the output element, adds one product and stores it back on every
// iteration. On a GPU that is a global-memory read-modify-write per product
// (LLVM cannot keep it in a register: it cannot tell the kernel's buffers
// apart). This pass carries the element through the loop instead: one load
// before it, one store after it.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUPROMOTEACCUMULATORS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// The load/store pair of `loop`'s accumulator: the body's only store, to
/// loop-invariant indices of a loop-invariant memref, and the only load of
/// that memref, at the same indices, before it. Anything else in the body
/// (a nested region, an op with other effects) keeps the loop as it is.
std::optional<std::pair<memref::LoadOp, memref::StoreOp>>
accumulatorOf(scf::ForOp loop) {
  Block *body = loop.getBody();
  memref::StoreOp store;
  for (Operation &op : body->without_terminator()) {
    if (auto s = dyn_cast<memref::StoreOp>(op)) {
      if (store)
        return std::nullopt;
      store = s;
      continue;
    }
    if (op.getNumRegions() != 0 ||
        !(isa<memref::LoadOp>(op) || isMemoryEffectFree(&op)))
      return std::nullopt;
  }
  if (!store || !loop.isDefinedOutsideOfLoop(store.getMemRef()) ||
      !llvm::all_of(store.getIndices(), [&](Value index) {
        return loop.isDefinedOutsideOfLoop(index);
      }))
    return std::nullopt;
  memref::LoadOp load;
  for (auto candidate : body->getOps<memref::LoadOp>()) {
    if (candidate.getMemRef() != store.getMemRef())
      continue;
    if (load || candidate.getIndices() != store.getIndices())
      return std::nullopt;
    load = candidate;
  }
  if (!load || !load->isBeforeInBlock(store))
    return std::nullopt;
  return std::pair{load, store};
}

struct PromoteAccumulators
    : poot::impl::PootGPUPromoteAccumulatorsBase<PromoteAccumulators> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    // Only loops inside a parallel loop (a kernel-to-be): a top-level loop
    // is the host's, and poot-gpu-host-to-parallel wraps it as it is.
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<scf::ParallelOp>())
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      // Index math that does not change per step (a linearize of the
      // output's indices, from a folded view) leaves the loop first
      // (upstream LICM), so the accumulator's indices read as invariant.
      moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
      auto pair = accumulatorOf(loop);
      if (!pair)
        continue;
      auto [load, store] = *pair;
      rewriter.setInsertionPoint(loop);
      Value init = memref::LoadOp::create(rewriter, load.getLoc(),
                                          store.getMemRef(), store.getIndices());
      FailureOr<LoopLikeOpInterface> grown = loop.replaceWithAdditionalYields(
          rewriter, ValueRange{init}, /*replaceInitOperandUsesInLoop=*/false,
          [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
            return SmallVector<Value>{store.getValueToStore()};
          });
      if (failed(grown))
        continue;
      auto carried = cast<scf::ForOp>(grown->getOperation());
      rewriter.replaceAllUsesWith(load.getResult(),
                                  carried.getRegionIterArgs().back());
      rewriter.setInsertionPointAfter(carried);
      memref::StoreOp::create(rewriter, store.getLoc(), carried.getResults().back(),
                              store.getMemRef(), store.getIndices());
      rewriter.eraseOp(store);
      rewriter.eraseOp(load);
    }
  }
};

} // namespace
