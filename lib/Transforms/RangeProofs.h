//===- RangeProofs.h - value-range facts the attention rewrite relies on -*- C++ -*-===//
//
// The attention rewrite may only form a paged or live attention when the
// graph proves the read map lies in the pool and 1 <= len <= Lk. The proofs
// come from MLIR's IntegerRangeAnalysis (a DataFlowSolver with dead-code and
// sparse constant propagation), with two poot-specific rules:
//
//  - a function argument starts from its declared `#poot.range` (the binder
//    enforces it before anything runs), not from the full i32 range;
//  - an `index_guard` clamps only when its witness reaches a
//    `#poot.slot<validation>` result (directly or through `poot.and`); an
//    unwitnessed guard passes its operand's range through unchanged, so a
//    bound that relies on its clamp is not a proof.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_RANGEPROOFS_H
#define POOT_LIB_TRANSFORMS_RANGEPROOFS_H

#include "dialect/PootDialect.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mlir::poot {

class RangeProofs {
public:
  /// Runs the analysis over `func` once; queries are then lookups.
  explicit RangeProofs(func::FuncOp func);

  /// The signed bounds of every element of an i32 value, when the analysis
  /// reached it.
  std::optional<std::pair<int64_t, int64_t>> bounds(Value value) const;

  /// True when every element of `value` is proven to lie in [lo, hi].
  bool provesWithin(Value value, int64_t lo, int64_t hi) const;

  /// An index_guard whose clamp `value` depends on but which the analysis did
  /// not trust (its witness is not a validation result); null if none.
  IndexGuardOp unwitnessedGuardFeeding(Value value) const;

  /// True when the guard's witness reaches a validation result.
  bool isWitnessed(IndexGuardOp guard) const {
    return witnessed.contains(guard.getWitness());
  }

private:
  DataFlowSolver solver;
  llvm::DenseSet<Value> witnessed;
};

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_RANGEPROOFS_H
