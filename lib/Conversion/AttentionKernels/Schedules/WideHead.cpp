//===- WideHead.cpp - the wide-head decode schedule ------------------------===//
//
// Decode of a wide KV group (MQA / absorbed MLA): the tiled body with the
// group's query heads packed into the row block and K/V sharing one staging
// region (TiledPrefillKernel.h, docs/wide-head-decode.md); a combine launch
// when split. GPU only.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "lib/Conversion/AttentionKernels/TiledPrefillKernel.h"

using namespace mlir;
using namespace mlir::poot;

static void emitWideHeadBody(const KernelBodyArgs &a) {
  emitTiledPrefill(a.b, a.loc, a.req, a.sig.layout, a.scale, a.softcap, a.bufs,
                   a.wg, a.lane, a.lds);
}

static SmallVector<GpuKernel, 2> wideHeadKernels(AttentionRequestAttr req) {
  SmallVector<GpuKernel, 2> kernels = {
      {"wide_head", firstLaunch(req), tiledPrefillWorkgroups(req),
       WorkgroupMemory::Floats, emitWideHeadBody}};
  if (req.getSplits() > 1)
    kernels.push_back(combineKernel(req));
  return kernels;
}

const ScheduleInfo &poot::wideHeadSchedule() {
  static const ScheduleInfo info{AttentionSchedule::WideHead, wideHeadKernels,
                                 /*nvvmOnly=*/false, LoopForm::None,
                                 /*packsKvGroup=*/true,
                                 /*sharesKeyValueStaging=*/true};
  return info;
}
