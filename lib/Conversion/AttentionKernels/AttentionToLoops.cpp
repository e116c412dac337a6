//===- AttentionToLoops.cpp - the CPU form of the attention kernel --------===//
//
// The same AttentionEmitter phases as the GPU kernels, with the ids taken
// from loops: for each workgroup, every lane's scan runs before any lane's
// combine (that is all the barrier guarantees), so the CPU form has the GPU
// form's lanes, splits and combine order, and its numerics.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"
#include "lib/Conversion/AttentionKernels/CpuAttentionKernel.h"
#include "lib/Conversion/AttentionKernels/KernelSignature.h"
#include "lib/Conversion/AttentionKernels/SelectionEmitter.h"
#include "lib/Conversion/AttentionKernels/TensorBridge.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTATTENTIONTOLOOPS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// for (iv = 0; iv < n; ++iv) body(iv)
void forRange(OpBuilder &b, Location loc, int64_t n,
              function_ref<void(Value)> body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value end = arith::ConstantIndexOp::create(b, loc, n);
  auto loop = scf::ForOp::create(b, loc, zero, end, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

struct AttentionToLoops
    : poot::impl::PootAttentionToLoopsBase<AttentionToLoops> {
  LogicalResult lower(AttentionOp op) {
    AttentionRequestAttr req = op.getRequestAttr();
    if (!req)
      return op.emitError("poot.attention has no request: run "
                          "poot-plan-attention first");
    OpBuilder b(op);
    Location loc = op.getLoc();
    KernelSignature sig(op, req);
    const ScheduleInfo &schedule = scheduleInfo(req.getSchedule());
    if (schedule.loops == LoopForm::CpuTiled)
      return lowerCpuTiled(op, req, sig);
    // The loops run the seed's lane phases; the GPU-only schedules (warps
    // and shuffles, barriers inside the key walk) have no loop form here.
    if (schedule.loops == LoopForm::None)
      return op.emitError()
             << "poot-attention-to-loops cannot express the "
             << stringifyAttentionSchedule(req.getSchedule())
             << " schedule (a GPU kernel): plan for the CPU target";
    // The lane loops write what the schedule's first kernel writes: the
    // output, or the scratch of partial states (split-KV).
    KernelSignature::Launch launch = schedule.kernels(req).front().launch;

    SmallVector<Value> args;
    for (Value operand : KernelSignature::orderedInputs(op))
      args.push_back(flatReadBuffer(b, loc, operand));
    AttentionEmitter emitter(
        b, loc, req, sig.layout, op.getScale().convertToDouble(),
        op.getSoftcap()
            ? std::optional<double>(op.getSoftcap()->convertToDouble())
            : std::nullopt);
    auto resultType = cast<RankedTensorType>(op.getType());
    auto outType = MemRefType::get({resultType.getNumElements()},
                                   resultType.getElementType());
    Value out = memref::AllocOp::create(b, loc, outType);
    Value scratch;
    if (launch == KernelSignature::Launch::Partials)
      scratch = memref::AllocOp::create(
          b, loc, MemRefType::get({emitter.scratchFloats()}, b.getF32Type()));
    args.push_back(scratch ? scratch : out);
    AttentionBuffers bufs = sig.bind(args, launch);
    bufs.out = out;
    Value lds = memref::AllocOp::create(
        b, loc, MemRefType::get({emitter.ldsFloats()}, b.getF32Type()));

    int64_t splits = req.getSplits(), lanes = req.getLanes();
    Value splitsV = arith::ConstantIndexOp::create(b, loc, splits);
    forRange(b, loc, emitter.rows() * splits, [&](Value wg) {
      Value row = arith::DivUIOp::create(b, loc, wg, splitsV);
      Value split = arith::RemUIOp::create(b, loc, wg, splitsV);
      forRange(b, loc, lanes, [&](Value lane) {
        emitter.emitLaneScan(bufs, row, split, lane, lds);
      });
      forRange(b, loc, lanes, [&](Value lane) {
        emitter.emitLaneCombine(bufs, row, split, lane, lds);
      });
    });
    if (scratch) {
      forRange(b, loc, emitter.rows(), [&](Value row) {
        forRange(b, loc, lanes,
                 [&](Value lane) { emitter.emitSplitCombine(bufs, row, lane); });
      });
    }
    // No deallocs here: the CPU pipeline's ownership-based deallocation
    // frees the workgroup memory and the scratch (it refuses explicit ones).

    Value result = tensorFromFlat(b, loc, out, resultType);
    op.getResult().replaceAllUsesWith(result);
    op.erase();
    return success();
  }

  /// The CPU's own schedule (CpuAttentionKernel.h) on the same buffers.
  LogicalResult lowerCpuTiled(AttentionOp op, AttentionRequestAttr req,
                              const KernelSignature &sig) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<Value> args;
    for (Value operand : KernelSignature::orderedInputs(op))
      args.push_back(flatReadBuffer(b, loc, operand));
    CpuAttentionKernel kernel(
        b, loc, req, sig.layout, op.getScale().convertToDouble(),
        op.getSoftcap()
            ? std::optional<double>(op.getSoftcap()->convertToDouble())
            : std::nullopt);
    auto resultType = cast<RankedTensorType>(op.getType());
    Value out = memref::AllocOp::create(
        b, loc, MemRefType::get({resultType.getNumElements()},
                                resultType.getElementType()));
    Value scratch;
    if (int64_t floats = kernel.scratchFloats())
      scratch = memref::AllocOp::create(
          b, loc, MemRefType::get({floats}, b.getF32Type()));
    args.push_back(scratch ? scratch : out);
    AttentionBuffers bufs = sig.bind(args, scratch
                                               ? KernelSignature::Launch::Partials
                                               : KernelSignature::Launch::Stream);
    bufs.out = out;
    bufs.scratch = scratch;
    kernel.emit(bufs);
    op.getResult().replaceAllUsesWith(tensorFromFlat(b, loc, out, resultType));
    op.erase();
    return success();
  }

  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops)
      if (failed(lower(op)))
        return signalPassFailure();
    // poot.block_topk and poot.selected_attention: SelectionToLoops.cpp.
    if (failed(lowerSelectionToLoops(getOperation())))
      return signalPassFailure();
  }
};

} // namespace
