//===- PlanPrefill.cpp - plan the tiled GPU prefill -----------------------===//
//
// Candidates, best first: more query rows per block (each staged K/V tile is
// reused by more rows), then longer key tiles. A candidate fits when
//   - the block is at most the query length (no block mostly empty),
//   - `lanes` threads (64 on SPIR-V, the invocations every WebGPU adapter
//     admits; 128 elsewhere) split the R x C scores and the R x Dv outputs
//     evenly, at most 32 scores and 64 outputs per thread (registers),
//   - its workgroup memory (dialect/AttentionLayout.h tiledPrefillFloats) fits.
//
// With tensor cores (NVVM, `mma-sm` >= 80) a two-byte prefill takes the
// mma schedule first (TiledPrefillMmaKernel.h) when its tiles fit: 64 query
// rows (4 warps of 16) and Lq >= 64, Dq a multiple of 16 (the mma's k) up
// to 256 with Dk a multiple of 8 (K rows staged as 16-byte chunks of the
// per-head part, then of the shared part), Dv a multiple of 8 (its n) up to
// 128 (the O fragments stay in registers: Dv / 2 floats a thread), dense or
// paged keys, split or not, and a key tile of 64 keys (else 32) whose
// workgroup memory fits. What it does not take plans
// the FFMA tiled schedule below.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanPrefill.h"
#include "lib/Transforms/PlanTail.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::poot;

/// `base` with a tiled schedule's launch recorded: `workgroups` folded onto
/// the grid (a GridLimit error when they do not fit), `lanes` threads each,
/// `rows` x `tile` blocks, `splits` chunks of `chunk` keys. `kind` names the
/// workgroups in the error ("wide-head ", or nothing).
static FailureOr<AttentionRequestAttr>
withTiledLaunch(AttentionOp op, AttentionRequestAttr base,
                const DeviceDescription &device, AttentionSchedule schedule,
                int64_t lanes, int64_t splits, int64_t chunk,
                int64_t workgroups, int64_t rows, int64_t tile,
                StringRef kind = "") {
  FailureOr<Grid> grid = foldLaunch(op, device, workgroups, kind);
  if (failed(grid))
    return failure();
  return AttentionRequestAttr::get(
      op.getContext(), base.getBatch(), base.getQHeads(), base.getKvHeads(),
      base.getQLen(), base.getKeyLen(), base.getKeyWidth(),
      base.getSharedWidth(), base.getValueWidth(), base.getTransform(),
      base.getMask(), base.getKeyBound(), schedule, lanes, splits, chunk,
      grid->x, grid->y, rows, tile, /*unroll=*/0, /*row_lanes=*/0,
      base.getWindow());
}

/// The tensor-core request for `base`, or nullopt when the mma schedule
/// does not take it (the caller plans the FFMA tiled schedule).
static std::optional<FailureOr<AttentionRequestAttr>>
planTiledPrefillMma(AttentionOp op, AttentionRequestAttr base,
                    const DeviceDescription &device) {
  constexpr int64_t wordBytes = 4, threads = 32 * kMmaPrefillWarps;
  Type element = getElementTypeOrSelf(op.getQuery().getType());
  int64_t dk = base.getKeyWidth(), ds = base.getSharedWidth(),
          dq = dk + ds, dv = base.getValueWidth(), qLen = base.getQLen();
  if (device.target != DeviceTarget::NVVM || device.mmaSm < 80 ||
      !(element.isBF16() || element.isF16()) || qLen < kMmaPrefillRows ||
      dk % 8 || dq % 16 || dq > 256 || dv % 8 || dv > 128)
    return std::nullopt;
  for (int64_t tile : {64, 32}) {
    if (mul(tiledPrefillMmaWords(tile, dq, dv), wordBytes)
            .value_or(INT64_MAX) > device.workgroupMemory)
      continue;
    int64_t workgroups = base.getBatch() * base.getQHeads() *
                         llvm::divideCeil(qLen, kMmaPrefillRows);
    return withTiledLaunch(op, base, device, AttentionSchedule::TiledPrefillMma,
                           threads, /*splits=*/1, /*chunk=*/base.getKeyLen(),
                           workgroups, kMmaPrefillRows, tile);
  }
  return std::nullopt;
}

std::optional<FailureOr<AttentionRequestAttr>>
poot::planTiledPrefill(AttentionOp op, AttentionRequestAttr base,
                       const DeviceDescription &device) {
  constexpr int64_t floatBytes = 4, maxScores = 32, maxOutputs = 64;
  int64_t qLen = base.getQLen();
  if (device.target == DeviceTarget::CPU || qLen < kTiledPrefillMinRows)
    return std::nullopt;
  if (std::optional<FailureOr<AttentionRequestAttr>> mma =
          planTiledPrefillMma(op, base, device))
    return mma;
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
    return withTiledLaunch(op, base, device, AttentionSchedule::TiledPrefill,
                           lanes, /*splits=*/1, /*chunk=*/base.getKeyLen(),
                           workgroups, rows, tile);
  }
  return std::nullopt;
}

/// The wide-head decode's split over keys (either form) for a tiling of
/// `rows` x `tile` and `blocks` row blocks a group, and its launch: enough
/// workgroups for about 4 per compute unit, chunks of at least 128 keys
/// and a whole number of tiles, at most 128 splits (as warp decode: the
/// combine launch stays light). Kept unsplit when the scratch passes
/// max-buffer-bytes or the split grid does not fit; ScratchBytes past
/// max-alloc-bytes, GridLimit when even the unsplit grid does not fit.
static FailureOr<AttentionRequestAttr>
withWideHeadSplits(AttentionOp op, AttentionRequestAttr base,
                   const DeviceDescription &device, AttentionSchedule schedule,
                   int64_t lanes, int64_t rows, int64_t tile) {
  constexpr int64_t floatBytes = 4, workgroupsPerUnit = 4, minChunk = 128,
                    maxWideSplits = 128;
  int64_t keyLen = base.getSplitKeys(), dv = base.getValueWidth();
  // B * Hkv * blocks <= B * Hq * Lq (below 2^63).
  int64_t units = base.getBatch() * base.getKvHeads();
  int64_t blocks = llvm::divideCeil(base.getNumRep() * base.getQLen(), rows);
  int64_t perSplit = units * blocks;
  int64_t rowCount = base.getBatch() * base.getQHeads() * base.getQLen();
  // Batch-invariant: the split one row of the batch would get.
  int64_t splitUnits = splitBatch(device, base.getBatch()) * base.getKvHeads();
  int64_t splits = std::min<int64_t>(
      {(int64_t)llvm::divideCeil(
           mul(workgroupsPerUnit, device.computeUnits).value_or(INT64_MAX),
           splitUnits * blocks),
       keyLen / minChunk, maxWideSplits, device.maxSplits});
  splits = std::max<int64_t>(1, splits);
  int64_t chunk = keyLen;
  if (splits > 1) {
    chunk = llvm::alignTo(llvm::divideCeil(keyLen, splits), tile);
    splits = llvm::divideCeil(keyLen, chunk);
  }
  SplitCost cost;
  cost.rows = rowCount;
  cost.stateBytes = (dv + 2) * floatBytes;
  cost.workgroupsPerSplit = perSplit;
  cost.scratchName = "wide-head split-KV";
  FailureOr<int64_t> kept = keepSplits(op, device, splits, cost);
  if (failed(kept))
    return failure();
  if (*kept != splits) {
    splits = 1;
    chunk = keyLen;
  }
  return withTiledLaunch(op, base, device, schedule, lanes, splits, chunk,
                         perSplit * splits, rows, tile, "wide-head ");
}

// The wide-head decode's tensor-core form (WideHeadMmaKernel.h), for a
// two-byte decode on NVVM with mma-sm >= 80 when the device enables it
// (`wide-head-mma`). Its shape rule: head widths of whole 16-byte vectors
// (Dk, Ds, Dv multiples of 8: the staging's loads) and Dq a multiple of 16
// (the mma's k); W warps a 16-row m tile (wideHeadMmaWarps) keep
// Dq / (4 W) words of Q and Dv / (2 W) floats of O in registers, at most
// 64 each. Candidates (R, C), best first: (32, 32), (32, 16), (16, 32),
// (16, 16), R at most the group's packed rows rounded up to 16, whose
// workgroup memory (wideHeadMmaWords) fits.
static std::optional<FailureOr<AttentionRequestAttr>>
planWideHeadMma(AttentionOp op, AttentionRequestAttr base,
                const DeviceDescription &device) {
  constexpr int64_t wordBytes = 4, maxRegisters = 64;
  Type element = getElementTypeOrSelf(op.getQuery().getType());
  int64_t dk = base.getKeyWidth(), ds = base.getSharedWidth(),
          dq = dk + ds, dv = base.getValueWidth();
  if (device.target != DeviceTarget::NVVM || device.mmaSm < 80 ||
      !device.wideHeadMma || !(element.isBF16() || element.isF16()) ||
      dk % 8 || ds % 8 || dv % 8 || dq % 16)
    return std::nullopt;
  int64_t warps = wideHeadMmaWarps(dq, dv);
  if (dq / (4 * warps) > maxRegisters || dv / (2 * warps) > maxRegisters)
    return std::nullopt;
  // n_rep * Lq <= Hq * Lq: below 2^63 (q's element count).
  int64_t unitRows = base.getNumRep() * base.getQLen();
  static constexpr std::pair<int64_t, int64_t> candidates[] = {
      {32, 32}, {32, 16}, {16, 32}, {16, 16}};
  for (auto [rows, tile] : candidates) {
    if (rows > llvm::alignTo(unitRows, 16) ||
        mul(wideHeadMmaWords(rows, tile, dq, dv, warps), wordBytes)
                .value_or(INT64_MAX) > device.workgroupMemory)
      continue;
    return withWideHeadSplits(op, base, device, AttentionSchedule::WideHeadMma,
                              2 * rows * warps, rows, tile);
  }
  return std::nullopt;
}

// The wide-head decode (FFMA). Candidates (packed rows R, tile C), best
// first by the work between two barriers (R x C), then more rows (fewer
// re-reads of a K/V tile by the group's blocks). A candidate fits when
//   - R is at most the group's packed rows rounded up to a power of two,
//   - each thread owns at most 64 outputs of R x Dv and 32 scores of R x C
//     (threads past R x C idle in the score step),
//   - its workgroup memory with one K/V region and the S step's partial
//     dots (dialect/AttentionLayout.h tiledPrefillFloats, wideHeadSlices) fits.
// Splits: withWideHeadSplits.
std::optional<FailureOr<AttentionRequestAttr>>
poot::planWideHead(AttentionOp op, AttentionRequestAttr base,
                   const DeviceDescription &device) {
  constexpr int64_t floatBytes = 4, maxScores = 32, maxOutputs = 64;
  int64_t qLen = base.getQLen(), nRep = base.getNumRep();
  if (device.target == DeviceTarget::CPU || qLen >= kTiledPrefillMinRows ||
      nRep < kWideHeadMinHeads)
    return std::nullopt;
  if (std::optional<FailureOr<AttentionRequestAttr>> mma =
          planWideHeadMma(op, base, device))
    return mma;
  int64_t lanes = device.target == DeviceTarget::SPIRV ? 64 : 128;
  int64_t dq = base.getKeyWidth() + base.getSharedWidth(),
          dv = base.getValueWidth();
  // n_rep * Lq <= Hq * Lq: below 2^63 (q's element count).
  int64_t unitRows = nRep * qLen;
  int64_t rowCap = int64_t(llvm::bit_ceil(uint64_t(unitRows)));
  static constexpr std::pair<int64_t, int64_t> candidates[] = {
      {32, 16}, {16, 16}, {32, 8}, {16, 8}, {8, 16}, {8, 8},
      {16, 4}, {4, 16}, {8, 4},  {4, 8},  {4, 4}};
  for (auto [rows, tile] : candidates) {
    if (rows > rowCap ||
        llvm::divideCeil(mul(rows, dv).value_or(INT64_MAX), lanes) >
            maxOutputs ||
        llvm::divideCeil(rows * tile, lanes) > maxScores)
      continue;
    std::optional<int64_t> floats =
        tiledPrefillFloatsChecked(rows, tile, dq, dv, /*shareKeyValue=*/true,
                                  wideHeadSlices(lanes, rows, dq));
    if (!floats || mul(*floats, floatBytes).value_or(INT64_MAX) >
                       device.workgroupMemory)
      continue;
    return withWideHeadSplits(op, base, device, AttentionSchedule::WideHead,
                              lanes, rows, tile);
  }
  return std::nullopt;
}
