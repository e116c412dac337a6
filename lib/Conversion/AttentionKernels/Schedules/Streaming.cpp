//===- Streaming.cpp - the streaming schedule ------------------------------===//
//
// One workgroup of `lanes` threads per (batch row, query head, query row);
// each lane streams its keys keeping (o, m, l) in workgroup memory, a
// barrier, then the lanes' states are folded (AttentionEmitter). Planned by
// poot-plan-attention when nothing more specific fits; the CPU runs it as
// loops (the reference the GPU kernels are checked by).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"

using namespace mlir;
using namespace mlir::poot;

static SmallVector<GpuKernel, 2> streamingKernels(AttentionRequestAttr req) {
  return {{"stream", KernelSignature::Launch::Stream,
           req.getRows() * req.getSplits(), WorkgroupMemory::Floats,
           emitLaneBody}};
}

const ScheduleInfo &poot::streamingSchedule() {
  static const ScheduleInfo info{AttentionSchedule::Streaming,
                                 streamingKernels, /*nvvmOnly=*/false,
                                 LoopForm::LaneLoops};
  return info;
}
