//===- LoopSpaces.h - comparing kernels' iteration spaces ------*- C++ -*-===//
//
// Passes that merge two top-level loops of a whole step (a fill into its
// reduction, an elementwise consumer into its producer) need them to run
// over the same iterations, corresponding induction variable by induction
// variable; passes that reshape a reduction kernel (jam-rows,
// fuse-epilogues) find its reduction loops the same way.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPROGRAM_LOOPSPACES_H
#define POOT_LIB_CONVERSION_GPUPROGRAM_LOOPSPACES_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::poot {

/// Whether `a` and `b` have the same constant lower bounds, upper bounds
/// and steps, dimension by dimension.
inline bool sameIterationSpace(scf::ParallelOp a, scf::ParallelOp b) {
  auto constants = [](ValueRange vs) {
    SmallVector<std::optional<int64_t>> out;
    for (Value v : vs)
      out.push_back(getConstantIntValue(v));
    return out;
  };
  for (auto [x, y] : {std::pair{a.getLowerBound(), b.getLowerBound()},
                      std::pair{a.getUpperBound(), b.getUpperBound()},
                      std::pair{a.getStep(), b.getStep()}}) {
    auto cx = constants(x), cy = constants(y);
    if (cx != cy || llvm::is_contained(cx, std::nullopt))
      return false;
  }
  return true;
}

/// The reduction loops of a kernel-to-be: `scf.for`s with iteration
/// arguments directly in the parallel loop's body.
inline SmallVector<scf::ForOp> reductionLoops(scf::ParallelOp loop) {
  SmallVector<scf::ForOp> found;
  for (auto inner : loop.getBody()->getOps<scf::ForOp>())
    if (inner.getNumRegionIterArgs() > 0)
      found.push_back(inner);
  return found;
}

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_LOOPSPACES_H
