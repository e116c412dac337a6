//===- PlanStreaming.cpp - plan the streaming / split-KV schedule ---------===//
//
// The seed's schedule, which takes every op the other rules leave: lanes,
// the widest power of two <= 64 whose running state lanes * (Dv + 2) f32
// fits workgroup memory (else AttentionLds); a decode whose rows do not fill
// the compute units splits its keys (split_kv: <= 16 splits, chunks of
// >= 128 keys) while the planner tail keeps them; a batch-invariant device
// counts the rows of one batch row.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanRules.h"
#include "lib/Transforms/PlanTail.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::poot;

namespace {
constexpr int64_t kMaxLanes = 64;
constexpr int64_t kMaxSplits = 16;
constexpr int64_t kMinChunk = 128;
constexpr int64_t kFloatBytes = 4;

/// `shape` (the op's sizes, score, mask and key bound) with a schedule.
AttentionRequestAttr withSchedule(AttentionRequestAttr shape,
                                  AttentionSchedule schedule, int64_t lanes,
                                  int64_t splits, int64_t chunk, Grid grid,
                                  int64_t unroll, int64_t rowLanes) {
  return AttentionRequestAttr::get(
      shape.getContext(), shape.getBatch(), shape.getQHeads(),
      shape.getKvHeads(), shape.getQLen(), shape.getKeyLen(),
      shape.getKeyWidth(), shape.getSharedWidth(), shape.getValueWidth(),
      shape.getTransform(), shape.getMask(), shape.getKeyBound(), schedule,
      lanes, splits, chunk, grid.x, grid.y, /*q_block=*/0, /*key_block=*/0,
      unroll, rowLanes, shape.getWindow());
}
} // namespace

FailureOr<AttentionRequestAttr>
poot::seedScheduleTail(AttentionOp op, AttentionRequestAttr shape,
                       const DeviceDescription &device,
                       AttentionSchedule schedule, int64_t lanes,
                       int64_t splits, int64_t workgroupsPerSplit,
                       int64_t unroll, int64_t rowLanes) {
  SplitCost cost;
  cost.rows = shape.getRows();
  cost.stateBytes = shape.getStateFloats() * kFloatBytes;
  cost.workgroupsPerSplit = workgroupsPerSplit;
  FailureOr<int64_t> kept = keepSplits(op, device, splits, cost);
  if (failed(kept))
    return failure();
  splits = *kept;
  int64_t chunk = llvm::divideCeil(shape.getSplitKeys(), splits);

  // splits > 1 only when the workgroups fit the grid (checked above).
  FailureOr<Grid> grid = foldLaunch(op, device, workgroupsPerSplit * splits);
  if (failed(grid))
    return failure();
  if (schedule == AttentionSchedule::Streaming && splits > 1)
    schedule = AttentionSchedule::SplitKV;
  return withSchedule(shape, schedule, lanes, splits, chunk, *grid, unroll,
                      rowLanes);
}

PlanResult poot::planStreaming(AttentionOp op, AttentionRequestAttr shape,
                               const DeviceDescription &device) {
  int64_t valueWidth = shape.getValueWidth();
  // Lanes: the widest power of two <= 64 whose running state fits.
  std::optional<int64_t> laneBytesOr =
      mul(llvm::checkedAdd(valueWidth, int64_t(2)), kFloatBytes);
  if (!laneBytesOr) {
    op.emitError() << "AttentionLds: one lane's running state for value width "
                   << valueWidth << " overflows a 64-bit byte count";
    return FailureOr<AttentionRequestAttr>(failure());
  }
  int64_t laneBytes = *laneBytesOr;
  int64_t lanes = kMaxLanes;
  while (lanes >= 1 &&
         mul(lanes, laneBytes).value_or(INT64_MAX) > device.workgroupMemory)
    lanes /= 2;
  if (lanes < 1) {
    op.emitError() << "AttentionLds: one lane's running state for value width "
                   << valueWidth << " needs " << laneBytes
                   << " bytes of workgroup memory; the device has "
                   << device.workgroupMemory << " bytes";
    return FailureOr<AttentionRequestAttr>(failure());
  }

  // Split-KV: decode rows that do not fill the device. (B * Hq * Lq is at
  // most q's element count, which the tensor type keeps below 2^63.)
  int64_t qLen = shape.getQLen(), keyLen = shape.getSplitKeys();
  int64_t rows = shape.getBatch() * shape.getQHeads() * qLen;
  // Batch-invariant: the split one row of the batch would get.
  int64_t splitRows = splitBatch(device, shape.getBatch()) *
                      shape.getQHeads() * qLen;
  int64_t splits = 1;
  if (qLen == 1 && splitRows < device.computeUnits) {
    int64_t want = llvm::divideCeil(device.computeUnits, splitRows);
    splits = std::min({kMaxSplits, want, keyLen / kMinChunk, device.maxSplits});
    if (splits < 2)
      splits = 1;
  }
  return seedScheduleTail(op, shape, device, AttentionSchedule::Streaming,
                          lanes, splits, /*workgroupsPerSplit=*/rows,
                          /*unroll=*/0);
}
