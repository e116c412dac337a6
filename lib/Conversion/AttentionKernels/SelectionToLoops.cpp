//===- SelectionToLoops.cpp - the CPU form of the selection kernels -------===//
//
// poot.block_topk and poot.selected_attention as the loops of their GPU
// kernels (SelectionEmitter): for each workgroup, every lane of a phase runs
// before any lane of the next (all a barrier guarantees), so the CPU form has
// the GPU form's lanes, splits, rounds and combine order. Operands are read
// through bufferization.to_buffer and results returned as tensors, as the
// attention loops do (AttentionToLoops.cpp runs this from its pass).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/SelectionEmitter.h"
#include "lib/Conversion/AttentionKernels/TensorBridge.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

/// for (iv = 0; iv < n; ++iv) body(iv)
void forRange(OpBuilder &b, Location loc, int64_t n,
              function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                                 arith::ConstantIndexOp::create(b, loc, n),
                                 arith::ConstantIndexOp::create(b, loc, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

MemRefType flatType(RankedTensorType type) {
  return MemRefType::get({type.getNumElements()}, type.getElementType());
}

/// The op's inputs as flat read-only buffers, then a fresh output buffer.
SmallVector<Value> bindInputs(OpBuilder &b, Location loc, Operation *op,
                              Value &out) {
  SmallVector<Value> args;
  for (Value operand : SelectionSignature::orderedInputs(op))
    args.push_back(flatReadBuffer(b, loc, operand));
  out = memref::AllocOp::create(
      b, loc, flatType(cast<RankedTensorType>(op->getResult(0).getType())));
  return args;
}

void replaceWithFlat(OpBuilder &b, Location loc, Operation *op, Value out) {
  Value result = tensorFromFlat(
      b, loc, out, cast<RankedTensorType>(op->getResult(0).getType()));
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
}

LogicalResult lowerBlockTopK(BlockTopKOp op) {
  BlockTopKRequestAttr req = op.getRequestAttr();
  if (!req)
    return op.emitError("poot.block_topk has no request: run "
                        "poot-plan-attention first");
  OpBuilder b(op);
  Location loc = op.getLoc();
  SelectionSignature sig(op);
  Value out;
  SmallVector<Value> args = bindInputs(b, loc, op, out);
  args.push_back(out);
  SelectionBuffers bufs = sig.bind(args, SelectionSignature::Launch::Stream);
  BlockTopKEmitter emitter(b, loc, req);
  Value ldsKeys = memref::AllocOp::create(
      b, loc, MemRefType::get({emitter.ldsWords()}, b.getF32Type()));
  Value ldsIds = memref::AllocOp::create(
      b, loc, MemRefType::get({emitter.ldsWords()}, b.getI32Type()));
  forRange(b, loc, emitter.rows(), [&](Value row) {
    emitter.emitRow(bufs, row, ldsKeys, ldsIds,
                    [&](function_ref<void(Value)> phase) {
      forRange(b, loc, req.getLanes(), phase);
    });
  });
  replaceWithFlat(b, loc, op, out);
  return success();
}

LogicalResult lowerSelectedAttention(SelectedAttentionOp op) {
  using Launch = SelectionSignature::Launch;
  SelectedAttentionRequestAttr req = op.getRequestAttr();
  if (!req)
    return op.emitError("poot.selected_attention has no request: run "
                        "poot-plan-attention first");
  if (req.getSchedule() == AttentionSchedule::WarpDecode)
    return op.emitError("the warp-decode schedule has no CPU form (plan for "
                        "target=cpu)");
  OpBuilder b(op);
  Location loc = op.getLoc();
  SelectionSignature sig(op);
  std::optional<double> softcap;
  if (op.getSoftcap())
    softcap = op.getSoftcap()->convertToDouble();
  SelectedAttentionEmitter emitter(b, loc, req, op.getScale().convertToDouble(),
                                   softcap);
  int64_t splits = req.getSplits(), lanes = req.getLanes();
  Launch launch = splits > 1 ? Launch::Partials : Launch::Stream;
  Value out;
  SmallVector<Value> args = bindInputs(b, loc, op, out);
  Value scratch;
  if (launch == Launch::Partials)
    scratch = memref::AllocOp::create(
        b, loc, MemRefType::get({emitter.scratchFloats()}, b.getF32Type()));
  args.push_back(scratch ? scratch : out);
  SelectionBuffers bufs = sig.bind(args, launch);
  bufs.out = out;
  Value lds = memref::AllocOp::create(
      b, loc, MemRefType::get({emitter.ldsFloats()}, b.getF32Type()));
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
  if (scratch)
    forRange(b, loc, emitter.rows(), [&](Value row) {
      forRange(b, loc, lanes,
               [&](Value lane) { emitter.emitSplitCombine(bufs, row, lane); });
    });
  // No deallocs: the CPU pipeline's ownership-based deallocation frees them.
  replaceWithFlat(b, loc, op, out);
  return success();
}

} // namespace

LogicalResult mlir::poot::lowerSelectionToLoops(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<BlockTopKOp, SelectedAttentionOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    LogicalResult lowered = isa<BlockTopKOp>(op)
                                ? lowerBlockTopK(cast<BlockTopKOp>(op))
                                : lowerSelectedAttention(cast<SelectedAttentionOp>(op));
    if (failed(lowered))
      return failure();
  }
  return success();
}
