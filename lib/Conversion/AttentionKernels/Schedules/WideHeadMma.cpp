//===- WideHeadMma.cpp - the tensor-core wide-head decode schedule ---------===//
//
// Two-byte wide-head decode on NVIDIA tensor cores (sm_80+): the wide_head
// walk with S = Q K^T and O += P V as mma.sync m16n8k16
// (WideHeadMmaKernel.h); its i32 staging is stored as 16-byte vectors (an
// aligned buffer); a combine launch when split. NVVM only.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "lib/Conversion/AttentionKernels/TiledPrefillKernel.h"
#include "lib/Conversion/AttentionKernels/WideHeadMmaKernel.h"

using namespace mlir;
using namespace mlir::poot;

static void emitWideHeadMmaBody(const KernelBodyArgs &a) {
  emitWideHeadMma(a.b, a.loc, a.req, a.sig.layout, a.scale, a.softcap, a.bufs,
                  a.wg, a.lane, a.lds);
}

static SmallVector<GpuKernel, 2> wideHeadMmaKernels(AttentionRequestAttr req) {
  SmallVector<GpuKernel, 2> kernels = {
      {"wide_head_mma", firstLaunch(req), tiledPrefillWorkgroups(req),
       WorkgroupMemory::AlignedWords, emitWideHeadMmaBody}};
  if (req.getSplits() > 1)
    kernels.push_back(combineKernel(req));
  return kernels;
}

const ScheduleInfo &poot::wideHeadMmaSchedule() {
  static const ScheduleInfo info{AttentionSchedule::WideHeadMma,
                                 wideHeadMmaKernels, /*nvvmOnly=*/true,
                                 LoopForm::None, /*packsKvGroup=*/true};
  return info;
}
