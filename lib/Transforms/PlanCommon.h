//===- PlanCommon.h - what every planner shares -------------------*- C++ -*-===//
//
// The launch-grid fold and the fit rules the planners share. The device
// they plan for is DeviceDescription.h.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_PLANCOMMON_H
#define POOT_LIB_TRANSFORMS_PLANCOMMON_H

#include "dialect/AttentionLayout.h"
#include "dialect/PootDialect.h"
#include "lib/Transforms/DeviceDescription.h"

#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <optional>

namespace mlir::poot {

struct Grid {
  int64_t x = 0, y = 0;
};

/// The batch a schedule chooses its split over keys for: the op's, or 1
/// when the device is batch-invariant (DeviceDescription::batchInvariant:
/// a row's split count and chunks, hence its summation order, are the same
/// at any batch).
inline int64_t splitBatch(const DeviceDescription &device, int64_t batch) {
  return device.batchInvariant ? 1 : batch;
}

/// `a * b`, or nullopt when the product overflows int64 (shapes are
/// arbitrary static sizes; a count that does not fit is refused, not wrapped).
inline std::optional<int64_t> mul(std::optional<int64_t> a, int64_t b) {
  return a ? llvm::checkedMul(*a, b) : std::nullopt;
}

/// Folds `count` workgroups onto (x, y); nullopt when even that does not fit.
/// The options are checked (>= 1) before any op is planned.
inline std::optional<Grid> foldGrid(int64_t count, int64_t maxX, int64_t maxY) {
  assert(count >= 1 && maxX >= 1 && "checked by the caller");
  Grid grid;
  grid.x = std::min(count, maxX);
  grid.y = llvm::divideCeil(count, grid.x);
  if (grid.y > maxY)
    return std::nullopt;
  return grid;
}

/// The warp-decode schedule's shape rule (WarpDecodeKernel.h: a workgroup of
/// 4 warps per KV group): head widths of whole warps, the group's running
/// state modest in registers, its warps' states in workgroup memory. With
/// `keysPerLoad` keys a load (half-warp rows: 2) a lane holds keysPerLoad
/// times the channels and the workgroup folds keysPerLoad times the states.
/// Overflowing sizes are far past every limit: false keeps the seed's
/// schedules (which refuse them with a typed reason).
inline bool warpDecodeFits(int64_t nRep, int64_t keyWidth, int64_t sharedWidth,
                           int64_t valueWidth, int64_t workgroupMemory,
                           int64_t keysPerLoad = 1) {
  constexpr int64_t warp = AttentionRequestAttr::kWarpSize,
                    maxRegisters = 128, floatBytes = 4;
  if (keyWidth % warp || sharedWidth % warp || valueWidth % warp)
    return false;
  std::optional<int64_t> registers = mul(
      nRep, keysPerLoad * (keyWidth / warp + sharedWidth / warp +
                           valueWidth / warp) +
                2);
  if (!registers || *registers > maxRegisters)
    return false;
  // n_rep <= 64 and Dv <= 4096 here: the count cannot overflow.
  return AttentionRequestAttr::warpDecodeLdsFloats(nRep, valueWidth,
                                                   keysPerLoad) *
             floatBytes <=
         workgroupMemory;
}

/// Loads a warp of the warp-decode schedule issues per step (the request's
/// `unroll`, each of `keysPerLoad` keys): 4 (or the max-unroll option, if
/// smaller) while the loaded rows (unroll x the lane's elements of K and V)
/// and the group's state stay within 160 registers, else 2 or 1. More bytes
/// in flight per warp is what the 2.2 TB/s B=1 decode lacks (bench/NOTES.md,
/// runs 2-6). Called after warpDecodeFits (so no count overflows).
inline int64_t warpDecodeUnroll(int64_t nRep, int64_t keyWidth,
                                int64_t sharedWidth, int64_t valueWidth,
                                int64_t maxUnroll, int64_t keysPerLoad = 1) {
  constexpr int64_t warp = AttentionRequestAttr::kWarpSize, budget = 160;
  int64_t row = keysPerLoad * (keyWidth + sharedWidth + valueWidth) / warp;
  int64_t state = nRep * (row + 2);
  int64_t unroll = std::clamp<int64_t>(maxUnroll, 1, 4);
  while (unroll > 1 && state + unroll * row > budget)
    unroll /= 2;
  return unroll;
}

/// Splits of a warp-decode launch over `positions` keys per group: enough
/// workgroups to keep loads in flight (about 32 per compute unit, measured
/// on the H200: bench/NOTES.md), chunks of at least 128 positions, and at
/// most 128 partials per row so the combine launch stays light.
inline int64_t warpDecodeSplits(int64_t groups, int64_t positions,
                                int64_t computeUnits) {
  constexpr int64_t workgroupsPerUnit = 32, minChunk = 128, maxSplits = 128;
  return std::max<int64_t>(
      1, std::min<int64_t>(
             {(int64_t)llvm::divideCeil(
                  mul(workgroupsPerUnit, computeUnits).value_or(INT64_MAX),
                  groups),
              positions / minChunk, maxSplits}));
}

// The tiled prefill layouts (tiledPrefillLayout, tiledPrefillFloats,
// tiledPrefillMmaWords) are in dialect/AttentionLayout.h, next to the
// request that derives from them.

/// tiledPrefillFloats, or nullopt when it overflows (then nothing fits).
inline std::optional<int64_t>
tiledPrefillFloatsChecked(int64_t rows, int64_t tile, int64_t queryWidth,
                          int64_t valueWidth, bool shareKeyValue = false,
                          int64_t slices = 1) {
  std::optional<int64_t> q = mul(rows, queryWidth + 1),
                         k = mul(tile, queryWidth + 1),
                         v = mul(tile, valueWidth);
  if (!q || !k || !v)
    return std::nullopt;
  std::optional<int64_t> sum =
      shareKeyValue ? llvm::checkedAdd(*q, std::max(*k, *v))
                    : llvm::checkedAdd(*q, *k);
  if (sum && !shareKeyValue)
    sum = llvm::checkedAdd(*sum, *v);
  if (sum)
    sum = llvm::checkedAdd(*sum, rows * (tile + 1) + 3 * rows);
  // rows and tile are small candidates, slices <= the thread count.
  if (sum && slices > 1)
    sum = llvm::checkedAdd(*sum, slices * (rows * tile + 1));
  return sum;
}


} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PLANCOMMON_H
