//===- SharedParts.cpp - parts several schedules share ---------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::poot;

KernelSignature::Launch poot::firstLaunch(AttentionRequestAttr req) {
  return req.getSplits() > 1 ? KernelSignature::Launch::Partials
                             : KernelSignature::Launch::Stream;
}

void poot::emitLaneBody(const KernelBodyArgs &a) {
  OpBuilder &b = a.b;
  Value splitsV = arith::ConstantIndexOp::create(b, a.loc, a.req.getSplits());
  Value row = arith::DivUIOp::create(b, a.loc, a.wg, splitsV);
  Value split = arith::RemUIOp::create(b, a.loc, a.wg, splitsV);
  a.emitter.emitLaneScan(a.bufs, row, split, a.lane, a.lds);
  gpu::BarrierOp::create(b, a.loc);
  a.emitter.emitLaneCombine(a.bufs, row, split, a.lane, a.lds);
}

static void emitCombineBody(const KernelBodyArgs &a) {
  a.emitter.emitSplitCombine(a.bufs, a.wg, a.lane);
}

GpuKernel poot::combineKernel(AttentionRequestAttr req) {
  return {"combine", KernelSignature::Launch::Combine, req.getRows(),
          WorkgroupMemory::None, emitCombineBody};
}
