//===- PlanRules.h - the planning rules, one per schedule ---------*- C++ -*-===//
//
// poot-plan-attention asks each schedule's planning rule in turn, in the
// order of planningRules() (PlanRules.cpp), whether it takes an op; the
// first that does plans it. A rule answers nullopt (not this schedule: ask
// the next), a request, or failure after a refusal (an error whose message
// starts with its reason tag). Each rule is its own file (PlanCpuTiled.cpp,
// PlanWarpDecode.cpp, PlanPrefill.cpp: tiled prefill and wide head with
// their tensor-core forms, PlanStreaming.cpp: streaming / split-KV, which
// takes every op the others leave) and ends in the planner tail
// (PlanTail.h). Adding a schedule's planning is its rule's file and one
// line in the list (docs/attention-schedules.md).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_PLANRULES_H
#define POOT_LIB_TRANSFORMS_PLANRULES_H

#include "lib/Transforms/PlanCommon.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace mlir::poot {

/// A rule's answer: nullopt when its schedule does not take the op, else
/// the request, or failure after a refusal on the op.
using PlanResult = std::optional<FailureOr<AttentionRequestAttr>>;

/// One schedule's planning rule. `shape` is the op's request with its sizes,
/// score, mask and key bound (its schedule fields are the rule's to set).
struct PlanningRule {
  /// The schedule the rule plans (its tensor-core or split form may be
  /// chosen instead).
  AttentionSchedule schedule;
  PlanResult (*plan)(AttentionOp op, AttentionRequestAttr shape,
                     const DeviceDescription &device);
};

/// The rules, in the order they are asked.
ArrayRef<PlanningRule> planningRules();

PlanResult planCpuTiled(AttentionOp op, AttentionRequestAttr shape,
                        const DeviceDescription &device);
PlanResult planWarpDecode(AttentionOp op, AttentionRequestAttr shape,
                          const DeviceDescription &device);
PlanResult planStreaming(AttentionOp op, AttentionRequestAttr shape,
                         const DeviceDescription &device);
// planTiledPrefill and planWideHead: PlanPrefill.h.

/// Bytes of one element of `type` (or of its elements).
inline int64_t elementBytes(Type type) {
  return (getElementTypeOrSelf(type).getIntOrFloatBitWidth() + 7) / 8;
}

/// The tail of the seed's GPU schedules and warp decode (PlanStreaming.cpp):
/// the planner tail (PlanTail.h) keeps or drops `splits` and folds the grid,
/// then `shape` gets the schedule. A split streaming schedule becomes
/// split_kv; warp_decode stays itself.
FailureOr<AttentionRequestAttr>
seedScheduleTail(AttentionOp op, AttentionRequestAttr shape,
                 const DeviceDescription &device, AttentionSchedule schedule,
                 int64_t lanes, int64_t splits, int64_t workgroupsPerSplit,
                 int64_t unroll, int64_t rowLanes = 0);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PLANRULES_H
