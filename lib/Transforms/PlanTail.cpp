//===- PlanTail.cpp - the planner tail every schedule shares ---------------===//
//
// See PlanTail.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanTail.h"

using namespace mlir;
using namespace mlir::poot;

FailureOr<int64_t> poot::keepSplits(Operation *op, const DeviceDescription &device,
                                    int64_t splits, const SplitCost &cost) {
  if (splits <= 1)
    return splits;
  // A scratch whose size overflows fits no buffer.
  int64_t scratchBytes =
      mul(mul(cost.rows, splits), cost.stateBytes).value_or(INT64_MAX);
  if (cost.deviceBuffer) {
    std::optional<int64_t> workgroups =
        cost.workgroupsPerSplit ? mul(*cost.workgroupsPerSplit, splits)
                                : std::optional<int64_t>(1);
    if (scratchBytes > device.maxBufferBytes || !workgroups ||
        !foldGrid(*workgroups, device.maxGridX, device.maxGridY))
      return int64_t(1);
  }
  if (scratchBytes <= device.maxAllocBytes)
    return splits;
  InFlightDiagnostic diag = op->emitError()
                            << "ScratchBytes: the " << cost.scratchName
                            << " scratch needs " << scratchBytes << " bytes";
  if (cost.detailed)
    diag << " (" << cost.rows << " rows x " << splits << " splits x "
         << cost.stateBytes << " bytes)";
  diag << "; the device can allocate " << device.maxAllocBytes << " bytes";
  return failure();
}

FailureOr<Grid> poot::foldLaunch(Operation *op, const DeviceDescription &device,
                                 int64_t workgroups, StringRef kind) {
  if (std::optional<Grid> grid =
          foldGrid(workgroups, device.maxGridX, device.maxGridY))
    return *grid;
  op->emitError() << "GridLimit: " << workgroups << " " << kind
                  << "workgroups do not fit a " << device.maxGridX << " x "
                  << device.maxGridY << " grid";
  return failure();
}
