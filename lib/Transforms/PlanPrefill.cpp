//===- PlanPrefill.cpp - plan the tiled GPU prefill -----------------------===//
//
// Candidates, best first: more query rows per block (each staged K/V tile is
// reused by more rows), then longer key tiles. A candidate fits when
//   - the block is at most the query length (no block mostly empty),
//   - `lanes` threads (64 on SPIR-V, the invocations every WebGPU adapter
//     admits; 128 elsewhere) split the R x C scores and the R x Dv outputs
//     evenly, at most 32 scores and 64 outputs per thread (registers),
//   - its workgroup memory (PlanCommon.h tiledPrefillFloats) fits.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanPrefill.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::poot;

std::optional<FailureOr<AttentionRequestAttr>>
poot::planTiledPrefill(AttentionOp op, AttentionRequestAttr base,
                       const DeviceLimits &device) {
  constexpr int64_t floatBytes = 4, maxScores = 32, maxOutputs = 64;
  int64_t qLen = base.getQLen();
  if (device.target == DeviceTarget::CPU || qLen < kTiledPrefillMinRows)
    return std::nullopt;
  int64_t lanes = device.target == DeviceTarget::SPIRV ? 64 : 128;
  int64_t dq = base.getKeyWidth() + base.getSharedWidth(),
          dv = base.getValueWidth();
  static constexpr std::pair<int64_t, int64_t> candidates[] = {
      {64, 32}, {32, 32}, {32, 16}, {16, 32}, {16, 16}, {8, 16}, {8, 8}};
  for (auto [rows, tile] : candidates) {
    if (rows > qLen || (rows * tile) % lanes || (rows * dv) % lanes ||
        rows * tile / lanes > maxScores || rows * dv / lanes > maxOutputs)
      continue;
    std::optional<int64_t> floats =
        tiledPrefillFloatsChecked(rows, tile, dq, dv);
    if (!floats || mul(*floats, floatBytes).value_or(INT64_MAX) >
                       device.workgroupMemory)
      continue;
    // B * Hq * Lq is at most q's element count (below 2^63).
    int64_t workgroups = base.getBatch() * base.getQHeads() *
                         llvm::divideCeil(qLen, rows);
    std::optional<Grid> grid =
        foldGrid(workgroups, device.maxGridX, device.maxGridY);
    if (!grid) {
      op.emitError() << "GridLimit: " << workgroups
                     << " workgroups do not fit a " << device.maxGridX << " x "
                     << device.maxGridY << " grid";
      return FailureOr<AttentionRequestAttr>(failure());
    }
    return FailureOr<AttentionRequestAttr>(AttentionRequestAttr::get(
        op.getContext(), base.getBatch(), base.getQHeads(), base.getKvHeads(),
        qLen, base.getKeyLen(), base.getKeyWidth(), base.getSharedWidth(), dv,
        base.getTransform(), base.getMask(), base.getKeyBound(),
        AttentionSchedule::TiledPrefill, lanes, /*splits=*/1,
        /*chunk=*/base.getKeyLen(), grid->x, grid->y, rows, tile));
  }
  return std::nullopt;
}
