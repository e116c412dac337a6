//===- TiledPrefill.cpp - the tiled GPU prefill schedule -------------------===//
//
// One workgroup per (batch row, query head, block of q_block query rows);
// K/V tiles staged in workgroup memory and read by every row of the block
// (TiledPrefillKernel.h, docs/prefill.md). GPU only.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "lib/Conversion/AttentionKernels/TiledPrefillKernel.h"

using namespace mlir;
using namespace mlir::poot;

static void emitTiledBody(const KernelBodyArgs &a) {
  emitTiledPrefill(a.b, a.loc, a.req, a.sig.layout, a.scale, a.softcap, a.bufs,
                   a.wg, a.lane, a.lds);
}

static SmallVector<GpuKernel, 2> tiledPrefillKernels(AttentionRequestAttr req) {
  return {{"prefill", firstLaunch(req), tiledPrefillWorkgroups(req),
           WorkgroupMemory::Floats, emitTiledBody}};
}

const ScheduleInfo &poot::tiledPrefillSchedule() {
  static const ScheduleInfo info{AttentionSchedule::TiledPrefill,
                                 tiledPrefillKernels, /*nvvmOnly=*/false,
                                 LoopForm::None};
  return info;
}
