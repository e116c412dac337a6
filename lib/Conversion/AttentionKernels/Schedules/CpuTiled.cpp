//===- CpuTiled.cpp - the CPU's tiled schedule -----------------------------===//
//
// One work item per (batch row, KV group, query block, split), key blocks
// sized to the L1 cache, vectors over the head width, a combine loop when
// split (CpuAttentionKernel.h). It has no GPU kernel: poot-attention-to-loops
// emits it.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"

using namespace mlir;
using namespace mlir::poot;

static SmallVector<GpuKernel, 2> noKernels(AttentionRequestAttr) { return {}; }

const ScheduleInfo &poot::cpuTiledSchedule() {
  static const ScheduleInfo info{AttentionSchedule::CpuTiled, noKernels,
                                 /*nvvmOnly=*/false, LoopForm::CpuTiled};
  return info;
}
