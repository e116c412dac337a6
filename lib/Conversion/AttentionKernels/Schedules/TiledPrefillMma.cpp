//===- TiledPrefillMma.cpp - the tensor-core prefill schedule --------------===//
//
// Two-byte prefill on NVIDIA tensor cores (sm_80+): the tiled walk with 4
// warps of 16 query rows, S = Q K^T and O += P V as mma.sync m16n8k16
// (TiledPrefillMmaKernel.h). Its staging is i32 words. NVVM only, never
// split.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "lib/Conversion/AttentionKernels/TiledPrefillKernel.h"
#include "lib/Conversion/AttentionKernels/TiledPrefillMmaKernel.h"

using namespace mlir;
using namespace mlir::poot;

static void emitPrefillMmaBody(const KernelBodyArgs &a) {
  emitTiledPrefillMma(a.b, a.loc, a.req, a.sig.layout, a.scale, a.softcap,
                      a.bufs, a.wg, a.lane, a.lds);
}

static SmallVector<GpuKernel, 2>
tiledPrefillMmaKernels(AttentionRequestAttr req) {
  return {{"prefill_mma", KernelSignature::Launch::Stream,
           tiledPrefillWorkgroups(req), WorkgroupMemory::Words,
           emitPrefillMmaBody}};
}

const ScheduleInfo &poot::tiledPrefillMmaSchedule() {
  static const ScheduleInfo info{AttentionSchedule::TiledPrefillMma,
                                 tiledPrefillMmaKernels, /*nvvmOnly=*/true,
                                 LoopForm::None};
  return info;
}
