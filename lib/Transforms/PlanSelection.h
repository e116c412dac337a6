//===- PlanSelection.h - plan the block-selected attention ops ----*- C++ -*-===//
//
// The planner's half for poot.block_topk and poot.selected_attention: one
// #poot.block_topk_request / #poot.selected_attention_request per op, chosen
// by the rules the seed gives poot.attention (PlanAttention.cpp) and refused
// with the same reason tags.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_PLANSELECTION_H
#define POOT_LIB_TRANSFORMS_PLANSELECTION_H

#include "dialect/PootDialect.h"
#include "lib/Transforms/PlanCommon.h"

namespace mlir::poot {

/// Records the request of `op` when it is a poot.block_topk or a
/// poot.selected_attention (any other op: success, nothing recorded); a
/// refusal is an error whose message starts with its reason tag.
LogicalResult planSelectionOp(Operation *op, const DeviceDescription &device);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PLANSELECTION_H
