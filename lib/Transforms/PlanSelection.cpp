//===- PlanSelection.cpp - plan the block-selected attention ops ----------===//
//
// poot.selected_attention gets the seed's schedules over the positions it
// visits, (K + 1) * block_size per row instead of Lk: the lane rule (the
// widest power of two <= 64 whose lanes * (Dv + 2) floats fit workgroup
// memory, else AttentionLds), split-KV for a decode whose rows do not fill
// the compute units (<= 16 splits, chunks >= 128 positions; ScratchBytes when
// the scratch cannot be allocated) and the grid fold (GridLimit). An NVIDIA
// decode whose head widths are whole warps takes the warp-decode schedule
// (PlanCommon.h's rule, as poot.attention's decode does), its warps striding
// over the visited positions.
//
// poot.block_topk gets one workgroup per (batch row, query row) whose lanes
// stride over the blocks; its workgroup memory is two words per lane.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanSelection.h"
#include "lib/Transforms/PlanTail.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

constexpr int64_t kMaxLanes = 64;
constexpr int64_t kMaxSplits = 16;
constexpr int64_t kMinChunk = 128;
constexpr int64_t kWordBytes = 4;

RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The widest power of two <= `cap` whose `lanes * wordsPerLane` words fit.
int64_t lanesFitting(int64_t wordsPerLane, int64_t workgroupMemory,
                     int64_t cap = kMaxLanes) {
  int64_t lanes = cap;
  while (lanes >= 1 && lanes * wordsPerLane * kWordBytes > workgroupMemory)
    lanes /= 2;
  return lanes;
}

LogicalResult planBlockTopK(BlockTopKOp op, const DeviceDescription &device) {
  auto scores = tensorOf(op.getScores());
  if (!scores.getElementType().isF32())
    return op.emitError() << "DtypeLowering: the generated block top-k kernel "
                             "is f32 only, these block scores are "
                          << scores.getElementType();
  int64_t batch = scores.getDimSize(0), qLen = scores.getDimSize(1),
          blocks = scores.getDimSize(2);
  // No more lanes than blocks: a lane past the last block only idles.
  int64_t lanes = lanesFitting(
      2, device.workgroupMemory,
      std::min<int64_t>(kMaxLanes, llvm::PowerOf2Ceil(std::max<int64_t>(blocks, 1))));
  if (lanes < 1)
    return op.emitError() << "AttentionLds: one lane of the block top-k needs "
                          << 2 * kWordBytes
                          << " bytes of workgroup memory; the device has "
                          << device.workgroupMemory << " bytes";
  int64_t rows = batch * qLen;
  FailureOr<Grid> grid = foldLaunch(op, device, rows);
  if (failed(grid))
    return failure();
  op.setRequestAttr(BlockTopKRequestAttr::get(
      op.getContext(), batch, qLen, blocks, op.getK(), op.getBlockSize(),
      AttentionSchedule::Streaming, lanes, grid->x, grid->y));
  return success();
}

LogicalResult planSelectedAttention(SelectedAttentionOp op,
                                    const DeviceDescription &device) {
  auto q = tensorOf(op.getQuery());
  auto k = tensorOf(op.getKey());
  auto v = tensorOf(op.getValue());
  if (!q.getElementType().isF32())
    return op.emitError() << "DtypeLowering: the generated selected-attention "
                             "kernel is f32 only, this op is "
                          << q.getElementType();
  int64_t batch = q.getDimSize(0), qHeads = q.getDimSize(1),
          qLen = q.getDimSize(2);
  int64_t kvHeads = k.getDimSize(1), keyLen = k.getDimSize(2),
          keyWidth = k.getDimSize(3), valueWidth = v.getDimSize(3);
  int64_t slots = tensorOf(op.getBlockIds()).getDimSize(2);
  int64_t blockSize = op.getBlockSize();
  int64_t visited = (slots + 1) * blockSize;

  ScoreKind transform =
      op.getSoftcap() ? ScoreKind::ScaleSoftcap : ScoreKind::Scale;
  auto record = [&](AttentionSchedule schedule, int64_t lanes, int64_t splits,
                    Grid grid) {
    op.setRequestAttr(SelectedAttentionRequestAttr::get(
                    op.getContext(), batch, qHeads, kvHeads, qLen, keyLen,
                    keyWidth, valueWidth, slots, blockSize, visited, transform,
                    schedule, lanes, splits, llvm::divideCeil(visited, splits),
                    grid.x, grid.y));
    return success();
  };

  // NVIDIA decode: warp decode over the visited positions (each K/V row read
  // once per KV group, coalesced), as poot.attention's decode plans it.
  int64_t nRep = qHeads / kvHeads;
  if (device.target == DeviceTarget::NVVM && qLen == 1 &&
      warpDecodeFits(nRep, keyWidth, 0, valueWidth, device.workgroupMemory)) {
    int64_t groups = batch * kvHeads, rows = batch * qHeads;
    // Batch-invariant: the split one row of the batch would get.
    int64_t splits = std::min<int64_t>(
        warpDecodeSplits(splitBatch(device, batch) * kvHeads, visited,
                         device.computeUnits),
        device.maxSplits);
    SplitCost cost;
    cost.rows = rows;
    cost.stateBytes = (valueWidth + 2) * kWordBytes;
    cost.workgroupsPerSplit = groups;
    cost.detailed = false;
    FailureOr<int64_t> kept = keepSplits(op, device, splits, cost);
    if (failed(kept))
      return failure();
    splits = *kept;
    if (std::optional<Grid> grid =
            foldGrid(groups * splits, device.maxGridX, device.maxGridY))
      return record(AttentionSchedule::WarpDecode, 128, splits, *grid);
  }

  int64_t laneBytes = (valueWidth + 2) * kWordBytes;
  int64_t lanes = lanesFitting(valueWidth + 2, device.workgroupMemory);
  if (lanes < 1)
    return op.emitError()
           << "AttentionLds: one lane's running state for value width "
           << valueWidth << " needs " << laneBytes
           << " bytes of workgroup memory; the device has "
           << device.workgroupMemory << " bytes";

  int64_t rows = batch * qHeads * qLen;
  int64_t splitRows = splitBatch(device, batch) * qHeads * qLen;
  int64_t splits = 1;
  if (qLen == 1 && splitRows < device.computeUnits) {
    int64_t want = llvm::divideCeil(device.computeUnits, splitRows);
    splits = std::min({kMaxSplits, want, visited / kMinChunk, device.maxSplits});
    if (splits < 2)
      splits = 1;
  }
  SplitCost cost;
  cost.rows = rows;
  cost.stateBytes = laneBytes;
  cost.workgroupsPerSplit = rows;
  FailureOr<int64_t> kept = keepSplits(op, device, splits, cost);
  if (failed(kept))
    return failure();
  splits = *kept;
  FailureOr<Grid> grid = foldLaunch(op, device, rows * splits);
  if (failed(grid))
    return failure();
  return record(splits > 1 ? AttentionSchedule::SplitKV
                           : AttentionSchedule::Streaming,
                lanes, splits, *grid);
}

} // namespace

LogicalResult mlir::poot::planSelectionOp(Operation *op,
                                          const DeviceDescription &device) {
  if (auto topk = dyn_cast<BlockTopKOp>(op))
    return planBlockTopK(topk, device);
  if (auto selected = dyn_cast<SelectedAttentionOp>(op))
    return planSelectedAttention(selected, device);
  return success();
}
