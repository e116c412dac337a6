//===- WarpDecode.cpp - the NVIDIA warp decode schedule --------------------===//
//
// One workgroup of warps per (batch row, KV group, split) serves the group's
// n_rep query heads (WarpDecodeKernel.h, docs/warp-decode.md); a combine
// launch when split. GPU only: warps and shuffles have no loop form.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "lib/Conversion/AttentionKernels/WarpDecodeKernel.h"

using namespace mlir;
using namespace mlir::poot;

static void emitWarpBody(const KernelBodyArgs &a) {
  emitWarpDecode(a.b, a.loc, a.req, a.sig.layout, a.scale, a.softcap, a.bufs,
                 a.wg, a.lane, a.lds);
}

static SmallVector<GpuKernel, 2> warpDecodeKernels(AttentionRequestAttr req) {
  SmallVector<GpuKernel, 2> kernels = {
      {"warp", firstLaunch(req),
       req.getBatch() * req.getKvHeads() * req.getSplits(),
       WorkgroupMemory::Floats, emitWarpBody}};
  if (req.getSplits() > 1)
    kernels.push_back(combineKernel(req));
  return kernels;
}

const ScheduleInfo &poot::warpDecodeSchedule() {
  static const ScheduleInfo info{AttentionSchedule::WarpDecode,
                                 warpDecodeKernels, /*nvvmOnly=*/false,
                                 LoopForm::None};
  return info;
}
