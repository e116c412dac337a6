//===- PlanPrefill.h - plan the tiled GPU prefill ------------------*- C++ -*-===//
//
// The planner's rule for the tiled prefill schedule (TiledPrefillKernel.h):
// a GPU poot.attention with at least kTiledPrefillMinRows query rows gets a
// block of query rows per workgroup and key tiles in workgroup memory, the
// largest block and tile whose memory, registers and thread split fit. A
// GPU decode of a wide KV group gets the same body with the group's heads
// packed into the row block (the wide-head schedule).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_PLANPREFILL_H
#define POOT_LIB_TRANSFORMS_PLANPREFILL_H

#include "dialect/PootDialect.h"
#include "lib/Transforms/PlanCommon.h"

#include <optional>

namespace mlir::poot {

/// Query rows from which a GPU attention is planned as a tiled prefill.
constexpr int64_t kTiledPrefillMinRows = 16;

/// The request of a tiled prefill for `base` (the op's shape, transform,
/// mask kind and key bound; its schedule fields are replaced), or nullopt
/// when the op is no GPU prefill or no tiling fits (the caller plans the
/// streaming schedule, which refuses with its own reason when it cannot
/// fit). A launch past the grid is a GridLimit error.
std::optional<FailureOr<AttentionRequestAttr>>
planTiledPrefill(AttentionOp op, AttentionRequestAttr base,
                 const DeviceDescription &device);

/// KV groups from which a GPU decode is planned as the wide-head schedule.
constexpr int64_t kWideHeadMinHeads = 8;

/// The request of a wide-head decode (`wide_head`: the tiled body over the
/// packed (head, query row) rows of one KV group, split over keys) for
/// `base`, or nullopt when the op is no wide-group GPU decode (Lq below
/// kTiledPrefillMinRows, n_rep >= kWideHeadMinHeads) or no tiling fits (the
/// caller plans the streaming schedule). A scratch past the device's
/// allocation is a ScratchBytes error, a launch past the grid a GridLimit
/// error.
std::optional<FailureOr<AttentionRequestAttr>>
planWideHead(AttentionOp op, AttentionRequestAttr base,
             const DeviceDescription &device);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PLANPREFILL_H
