//===- SplitReductions.cpp - poot-gpu-split-reductions ---------------------===//
//
// A decode step's matmuls have few outputs and long reductions ([1, d] x
// [d, n]: n threads, each summing d products). Mapped one thread per output
// they leave most of a GPU idle and read the weights at a fraction of its
// bandwidth. Upstream's linalg::splitReduction turns the reduction into an
// extra parallel dimension of partial sums plus a short final reduction, so
// the same op runs on ratio x more threads. This pass only chooses the ratio.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUSPLITREDUCTIONS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// Each thread still sums at least this many products: a shorter chunk
/// costs more in the final reduction than it gains.
constexpr int64_t kMinChunk = 128;

struct SplitReductions
    : poot::impl::PootGPUSplitReductionsBase<SplitReductions> {
  using Base::Base;

  /// The split ratio for `op`: 0 (leave it) unless it has one reduction
  /// loop, static f32 shapes and fewer outputs than `minThreads`; then the
  /// largest power of two dividing the reduction that brings the threads
  /// to `minThreads` and keeps chunks of >= kMinChunk products.
  int64_t ratioFor(linalg::LinalgOp op) {
    if (op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1 ||
        !op.hasPureTensorSemantics())
      return 0;
    // splitReduction reads every indexing map as a permutation of loop
    // dimensions (it asserts so): constant or compound indices stay whole.
    if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
          return map.isProjectedPermutation(/*allowZeroInResults=*/false);
        }))
      return 0;
    auto init = dyn_cast<RankedTensorType>(op.getDpsInits()[0].getType());
    if (!init || !init.getElementType().isF32())
      return 0;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t parallel = 1, reduction = 0;
    for (auto [range, kind] : llvm::zip(ranges, op.getIteratorTypesArray())) {
      if (ShapedType::isDynamic(range))
        return 0;
      if (kind == utils::IteratorType::reduction)
        reduction = range;
      else
        parallel *= range;
    }
    if (parallel >= minThreads || reduction < 2 * kMinChunk)
      return 0;
    int64_t ratio = int64_t(1)
                    << llvm::Log2_64(std::min<int64_t>(minThreads / parallel,
                                                       reduction / kMinChunk));
    while (ratio > 1 && reduction % ratio)
      ratio /= 2;
    return ratio > 1 ? ratio : 0;
  }

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (ratioFor(op) > 1)
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates) {
      rewriter.setInsertionPoint(op);
      // The partials' split dimension goes first: threads that differ in
      // the output's last index stay adjacent (coalesced weight reads).
      // An op whose combiner splitReduction cannot recognize stays whole.
      (void)linalg::splitReduction(
          rewriter, op, [&](linalg::LinalgOp target) {
            return linalg::SplitReductionOptions{ratioFor(target), 0,
                                                 /*innerParallel=*/false};
          });
    }
  }
};

} // namespace
