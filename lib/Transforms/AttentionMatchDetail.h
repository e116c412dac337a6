//===- AttentionMatchDetail.h - the matcher's parts -------------*- C++ -*-===//
//
// The pieces AttentionMatch.cpp assembles: the softmax and its
// normalization (SoftmaxMatch.cpp), the score transform (ScoreMatch.cpp)
// and the operand sources (OperandMatch.cpp). Internal to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_ATTENTIONMATCHDETAIL_H
#define POOT_LIB_TRANSFORMS_ATTENTIONMATCHDETAIL_H

#include "lib/Transforms/AttentionMatch.h"

namespace mlir::poot::match {

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// `p = ex / sum(ex)` (or `ex * (1 / sum)`), `ex = exp(s - max(s))` (or
/// `exp(s + -max(s))`), both reductions over the last axis, and the P.V
/// matmul reading p -- or reading ex, its product then divided by the sum.
struct Softmax {
  ExpOp exp;
  /// The softmax input s, and the max it subtracts.
  Value scores;
  ReduceOp max;
  /// `reshape(s)` folding or unfolding the heads, when the shift or the max
  /// reads that view of s instead of s itself.
  Value scoresView;
  MatMulOp output;
  /// The op whose result the fused op replaces.
  Operation *result = nullptr;
  /// The fully-masked-row guard `select(all(s == -inf), 0, p)` between the
  /// probabilities and the P.V matmul, if any, and the ops of its condition
  /// (they read the scores or the max, and die with the chain).
  SelectOp guard;
  SmallVector<Operation *> guardOps;
};

/// Reads the softmax around `exp`; fails with the check that does not hold.
LogicalResult readSoftmax(ExpOp exp, Softmax &softmax, Decline &decline);

/// Reads `select`, one of whose arms is the probabilities `probs`, as the
/// fully-masked-row guard: the other arm zero exactly on the rows whose
/// scores are all -inf (RowGuardMatch.cpp). Sets softmax.guard/guardOps, or
/// fails saying why the select is not that guard.
LogicalResult readRowGuard(SelectOp select, Value probs, Softmax &softmax,
                           Decline &decline);

//===----------------------------------------------------------------------===//
// Score transform
//===----------------------------------------------------------------------===//

struct ScoreStep {
  enum Kind { Scale, Softcap, Mask, Select } kind;
  Operation *op;
  double number = 0; // scale factor or softcap
  /// Mask: the additive term; Select: the condition.
  Value value;
  /// Select: the splat fill.
  Value fill;
  bool keepWhenTrue = true;
  /// Applied on the head-folded [B*H, Lq, Lk] scores.
  bool folded = false;
};

/// What the walk from the softmax input back to the score matmul found.
struct ScoreWalk {
  MatMulOp scores;
  /// The transforms, outermost first.
  SmallVector<ScoreStep> steps;
  /// The [B, H, Lq, Lk] shape of a 4-D view of the scores, if any.
  SmallVector<int64_t, 4> shape4;
  /// Some scores of the chain are [B*H, Lq, Lk].
  bool folded = false;
};

/// `guardReads`: how many more users the softmax input has (the row
/// guard's condition reads it too).
LogicalResult readScoreSteps(Value softmaxInput, Operation *softmaxOp,
                             ScoreWalk &walk, Decline &decline,
                             unsigned guardReads = 0);

/// Folds the steps (outermost first) into the op's fixed score transform --
/// scale, then softcap, then the masks, then the live bound `live` (one of
/// the Select steps, or null) -- or says which order the op cannot express.
LogicalResult foldScoreSteps(ArrayRef<ScoreStep> outermostFirst, SelectOp live,
                             ScoreChain &transform, Decline &decline);

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

/// The query behind the splat scales applied to it (possibly under data
/// movement ops, which the rewrite then rebuilds); multiplies `factor`.
QuerySource readQuery(Value lhs, double &factor);

/// The key behind the score matmul's right operand `[.., Dk, Lk]`: a
/// transpose of `[.., Lk, Dk]` (any layout two transposes compose to), or a
/// key stored transposed; splat scales on the way multiply `factor`.
LogicalResult readKey(MatMulOp scores, KVSource &key, double &factor,
                      Decline &decline);

/// The value behind the P.V matmul's right operand.
void readValue(Value rhs, KVSource &value);

} // namespace mlir::poot::match

#endif // POOT_LIB_TRANSFORMS_ATTENTIONMATCHDETAIL_H
