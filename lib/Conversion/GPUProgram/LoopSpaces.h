//===- LoopSpaces.h - comparing kernels' iteration spaces ------*- C++ -*-===//
//
// Passes that merge two top-level loops of a whole step (a fill into its
// reduction, an elementwise consumer into its producer) need them to run
// over the same iterations, corresponding induction variable by induction
// variable.
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

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_LOOPSPACES_H
