//===- SplitKV.cpp - the split-KV schedule ---------------------------------===//
//
// The streaming body over a chunk of keys per (row, split), writing the
// unnormalised (o, m, l) to the scratch at (row * splits + split) * (Dv + 2)
// (`partials`), then one workgroup per row folds the splits (`combine`).
// Planned for a decode whose rows do not fill the device.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"

using namespace mlir;
using namespace mlir::poot;

static SmallVector<GpuKernel, 2> splitKVKernels(AttentionRequestAttr req) {
  return {{"partials", KernelSignature::Launch::Partials,
           req.getRows() * req.getSplits(), WorkgroupMemory::Floats,
           emitLaneBody},
          combineKernel(req)};
}

const ScheduleInfo &poot::splitKVSchedule() {
  static const ScheduleInfo info{AttentionSchedule::SplitKV, splitKVKernels,
                                 /*nvvmOnly=*/false, LoopForm::LaneLoops};
  return info;
}
