//===- ApproximateVectorMath.cpp - poot-cpu-approximate-vector-math -------===//
//
// A math op on a vector has no libm function to become: LLVM would split it
// into one scalar call per lane, which costs more than the kernel around
// it. Upstream's polynomial approximations (MathToPolynomialApproximation)
// turn vector exp/tanh/... into vector arithmetic; scalar math keeps its
// libm call (and its numerics).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUAPPROXIMATEVECTORMATH
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {
struct PootCPUApproximateVectorMath
    : poot::impl::PootCPUApproximateVectorMathBase<
          PootCPUApproximateVectorMath> {
  void runOnOperation() override {
    SmallVector<Operation *> vectorMath;
    getOperation()->walk([&](Operation *op) {
      if (op->getDialect() &&
          op->getDialect()->getNamespace() == math::MathDialect::getDialectNamespace() &&
          op->getNumResults() == 1 && isa<VectorType>(op->getResult(0).getType()))
        vectorMath.push_back(op);
    });
    if (vectorMath.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(vectorMath, std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
