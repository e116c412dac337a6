//===- PlanWarpDecode.cpp - plan the NVIDIA warp decode -------------------===//
//
// NVIDIA decode: the warp-cooperative schedule (WarpDecodeKernel.h,
// docs/warp-decode.md) when the head widths are whole warps, the group's
// warp states fit workgroup memory and its registers stay modest
// (PlanCommon.h warpDecodeFits); otherwise the next rule is asked. Each
// workgroup reads its keys once for all n_rep heads.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanRules.h"

using namespace mlir;
using namespace mlir::poot;

PlanResult poot::planWarpDecode(AttentionOp op, AttentionRequestAttr shape,
                                const DeviceDescription &device) {
  int64_t nRep = shape.getNumRep();
  if (device.target != DeviceTarget::NVVM || shape.getQLen() != 1 ||
      !warpDecodeFits(nRep, shape.getKeyWidth(), shape.getSharedWidth(),
                      shape.getValueWidth(), device.workgroupMemory))
    return std::nullopt;
  // At most k's element count (below 2^63).
  int64_t groups = shape.getBatch() * shape.getKvHeads();
  if (!foldGrid(groups, device.maxGridX, device.maxGridY))
    return std::nullopt;
  // Batch-invariant: the split one row of the batch would get.
  int64_t splits = std::min<int64_t>(
      warpDecodeSplits(splitBatch(device, shape.getBatch()) *
                           shape.getKvHeads(),
                       shape.getSplitKeys(), device.computeUnits),
      device.maxSplits);
  // Half-warp (or narrower) rows where a whole warp's row would not read
  // 16-byte vectors (bf16/f16 D = 128), within max-keys-per-load and while
  // the doubled lane state still fits; 0 records the whole warp. Two-byte
  // keys only: that is what ran on the H200 (bench/NOTES.md "half-warp
  // rows"); f32 rows narrower than 128 keep the whole warp.
  int64_t dk = shape.getKeyWidth(), ds = shape.getSharedWidth(),
          dv = shape.getValueWidth();
  int64_t keyBytes = elementBytes(op.getKey().getType());
  int64_t rowLanes = AttentionRequestAttr::warpRowLanes(
      keyBytes, {dk, ds, dv}, keyBytes == 2 ? device.maxKeysPerLoad : 1);
  int64_t keysPerLoad = AttentionRequestAttr::kWarpSize / rowLanes;
  if (keysPerLoad > 1 &&
      !warpDecodeFits(nRep, dk, ds, dv, device.workgroupMemory, keysPerLoad))
    keysPerLoad = 1;
  // unroll 0: the scalar one-key form (max-unroll=0 with whole-warp rows;
  // the default is 4); rows of several keys a load are vector loads.
  int64_t unroll =
      device.maxUnroll == 0 && keysPerLoad == 1
          ? 0
          : warpDecodeUnroll(nRep, dk, ds, dv,
                             std::max<int64_t>(device.maxUnroll, 1),
                             keysPerLoad);
  return seedScheduleTail(
      op, shape, device, AttentionSchedule::WarpDecode,
      AttentionRequestAttr::kWarpSize * AttentionRequestAttr::kWarpsPerGroup,
      splits, /*workgroupsPerSplit=*/groups, unroll,
      keysPerLoad > 1 ? AttentionRequestAttr::kWarpSize / keysPerLoad : 0);
}
