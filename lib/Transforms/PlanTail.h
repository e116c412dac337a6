//===- PlanTail.h - the planner tail every schedule shares ---------*- C++ -*-===//
//
// Every schedule ends its plan the same way: a split over keys is kept only
// while its scratch (rows x splits row states) fits one device buffer and
// its workgroups fit the grid, a scratch that fits but passes the device's
// largest allocation is refused (ScratchBytes), and the workgroups are
// folded onto the grid (GridLimit when even that does not fit). This used
// to be written once per schedule (streaming/split-KV/warp decode, wide
// head, the CPU schedule, both selection schedules); a rule changed in one
// copy drifted from the others. The refusal messages keep each schedule's
// words (the Python driver and the tests read them).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_PLANTAIL_H
#define POOT_LIB_TRANSFORMS_PLANTAIL_H

#include "lib/Transforms/PlanCommon.h"

namespace mlir::poot {

/// What a split over keys costs: the scratch of row states every split
/// writes and the workgroups each split launches.
struct SplitCost {
  /// Rows whose running state each split writes (B * Hq * Lq).
  int64_t rows = 0;
  /// Bytes of one row state ((Dv + 2) floats).
  int64_t stateBytes = 0;
  /// Workgroups of one split; nullopt when the schedule launches no grid
  /// (the CPU schedule's work items are loop iterations).
  std::optional<int64_t> workgroupsPerSplit;
  /// The scratch is one device buffer (GPU); false: host memory (CPU),
  /// bounded only by the largest allocation.
  bool deviceBuffer = true;
  /// How ScratchBytes names the scratch ("split-KV", "wide-head split-KV").
  StringRef scratchName = "split-KV";
  /// ScratchBytes spells out rows x splits x state bytes.
  bool detailed = true;
};

/// The splits the device keeps of `splits` (1 when the scratch does not fit
/// a buffer or the split grid does not fit), or failure after a
/// ScratchBytes error on `op` when the scratch fits a buffer but not an
/// allocation.
FailureOr<int64_t> keepSplits(Operation *op, const DeviceDescription &device,
                              int64_t splits, const SplitCost &cost);

/// `workgroups` folded onto the device's grid, or failure after a
/// GridLimit error on `op` ("<n> <kind>workgroups do not fit ...").
FailureOr<Grid> foldLaunch(Operation *op, const DeviceDescription &device,
                           int64_t workgroups, StringRef kind = "");

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PLANTAIL_H
