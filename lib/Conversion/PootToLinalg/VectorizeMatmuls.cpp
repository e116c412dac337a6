//===- VectorizeMatmuls.cpp - poot-cpu-vectorize-matmuls ------------------===//
//
// The step's linear layers (linalg.matmul, f32, static shapes) as vector
// code, with upstream's tiling and vectorization, on buffers (after
// bufferization: tiled tensor IR made one-shot bufferization's analysis of a
// decoder step ~3x slower): an scf.parallel over output tiles of TM x TN (TN a
// few host vectors wide: the accumulator stays in registers), an scf.for
// over the reduction in steps of TK, and each TM x TN x TK tile vectorized to
// one vector.contract (the accumulator tile is re-read per K step from L1:
// upstream's hoistRedundantVectorTransfers did not hoist it here, measured
// cost ~8 memory ops per 64 FMAs). The parallel loop becomes an OpenMP loop downstream (big matmuls
// only: a tiny one is not worth a parallel region); the contract lowers to
// outer products, i.e. FMAs of a broadcast lhs element with a row of the
// rhs.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUVECTORIZEMATMULS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// The largest divisor of `n` that is <= `cap`.
int64_t divisorAtMost(int64_t n, int64_t cap) {
  for (int64_t t = std::min(n, cap); t > 1; --t)
    if (n % t == 0)
      return t;
  return 1;
}

/// The widest of 4, 2, 1 vectors (then halves of one) that divides `n`.
int64_t vectorTile(int64_t n, int64_t width) {
  for (int64_t t = 4 * width; t >= 1; t /= 2)
    if (n % t == 0)
      return t;
  return 1;
}

bool isStaticF32(linalg::MatmulOp op) {
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
      return false;
  }
  // Default indexing maps only (no transposed/broadcast variants).
  return op.hasPureBufferSemantics() &&
         op.getIndexingMapsArray() ==
             linalg::MatmulOp::getDefaultIndexingMaps(op.getContext());
}

struct PootCPUVectorizeMatmuls
    : poot::impl::PootCPUVectorizeMatmulsBase<PootCPUVectorizeMatmuls> {
  using PootCPUVectorizeMatmulsBase::PootCPUVectorizeMatmulsBase;

  LogicalResult tileAndVectorize(IRRewriter &rewriter, linalg::MatmulOp op) {
    auto lhs = cast<MemRefType>(op.getInputs()[0].getType());
    auto rhs = cast<MemRefType>(op.getInputs()[1].getType());
    int64_t m = lhs.getDimSize(0), k = lhs.getDimSize(1), n = rhs.getDimSize(1);
    int64_t tn = vectorTile(n, vectorWidth), tm = divisorAtMost(m, 4),
            tk = divisorAtMost(k, 16);
    rewriter.setInsertionPoint(op);
    linalg::LinalgTilingOptions outer;
    bool parallel = m * n * k >= minParallelWork;
    outer.setLoopType(parallel ? linalg::LinalgTilingLoopType::ParallelLoops
                               : linalg::LinalgTilingLoopType::Loops);
    outer.setTileSizes({tm, tn, 0});
    FailureOr<linalg::TiledLinalgOp> tiles =
        linalg::tileLinalgOp(rewriter, op, outer);
    if (failed(tiles))
      return op.emitError("poot-cpu-vectorize-matmuls: tiling failed");
    rewriter.eraseOp(op);

    linalg::LinalgOp tile = tiles->op;
    rewriter.setInsertionPoint(tile);
    linalg::LinalgTilingOptions inner;
    inner.setTileSizes({0, 0, tk});
    FailureOr<linalg::TiledLinalgOp> steps =
        linalg::tileLinalgOp(rewriter, tile, inner);
    if (failed(steps))
      return tile->emitError("poot-cpu-vectorize-matmuls: tiling K failed");
    rewriter.eraseOp(tile);

    Operation *step = steps->op;
    rewriter.setInsertionPoint(step);
    // As a vector.contract (not a broadcast-multiply-reduce), which lowers
    // to outer products: FMAs along contiguous rhs rows.
    if (failed(linalg::vectorize(
            rewriter, step, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
            /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
            /*assumeDynamicDimsMatchVecSizes=*/false,
            /*createNamedContraction=*/true)))
      return step->emitError("poot-cpu-vectorize-matmuls: vectorization failed");
    rewriter.eraseOp(step);
    return success();
  }

  void runOnOperation() override {
    if (vectorWidth <= 0)
      return;
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) {
      if (isStaticF32(op))
        matmuls.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::MatmulOp op : matmuls)
      if (failed(tileAndVectorize(rewriter, op)))
        return signalPassFailure();

  }
};

} // namespace
