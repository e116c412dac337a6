//===- PlanCommon.h - what every planner shares -------------------*- C++ -*-===//
//
// The device description the planners read (the options of
// poot-plan-attention) and the launch-grid fold every schedule uses.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_PLANCOMMON_H
#define POOT_LIB_TRANSFORMS_PLANCOMMON_H

#include "lib/Transforms/DeviceTarget.h"

#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <optional>

namespace mlir::poot {

/// A device as the planner sees it (poot-plan-attention's options).
struct DeviceLimits {
  DeviceTarget target;
  int64_t workgroupMemory, maxGridX, maxGridY, computeUnits, maxBufferBytes,
      maxAllocBytes, maxSplits;
};

struct Grid {
  int64_t x = 0, y = 0;
};

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
/// state modest in registers, its warps' states in workgroup memory.
/// Overflowing sizes are far past every limit: false keeps the seed's
/// schedules (which refuse them with a typed reason).
inline bool warpDecodeFits(int64_t nRep, int64_t keyWidth, int64_t sharedWidth,
                           int64_t valueWidth, int64_t workgroupMemory) {
  constexpr int64_t warp = 32, warps = 4, maxRegisters = 128, floatBytes = 4;
  if (keyWidth % warp || sharedWidth % warp || valueWidth % warp)
    return false;
  std::optional<int64_t> registers =
      mul(nRep, keyWidth / warp + sharedWidth / warp + valueWidth / warp + 2);
  std::optional<int64_t> ldsBytes =
      mul(mul(mul(warps, nRep), valueWidth + 2), floatBytes);
  return registers && ldsBytes && *registers <= maxRegisters &&
         *ldsBytes <= workgroupMemory;
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

/// Workgroup memory of the tiled prefill (TiledPrefillKernel.h), in floats:
/// the block's queries [R x (Dq + 1)], a key tile [C x (Dq + 1)], a value
/// tile [C x Dv], the scores [R x (C + 1)] and per row (m, l, alpha). The +1
/// strides keep the threads of a warp reading different rows of one column
/// on different banks. With `shareKeyValue` (the wide-head decode) the value
/// tile reuses the key tile's region, staged after the scores are computed:
/// max(C (Dq + 1), C Dv) floats for both.
/// With `slices` > 1 (the wide-head S step, wideHeadSlices) a region of
/// slices x (R C + 1) floats holds the partial dot products.
struct TiledPrefillLayout {
  int64_t query, key, value, scores, max, sum, alpha, partial, floats;
};
inline TiledPrefillLayout tiledPrefillLayout(int64_t rows, int64_t tile,
                                             int64_t queryWidth,
                                             int64_t valueWidth,
                                             bool shareKeyValue = false,
                                             int64_t slices = 1) {
  TiledPrefillLayout at;
  at.query = 0;
  at.key = at.query + rows * (queryWidth + 1);
  if (shareKeyValue) {
    at.value = at.key;
    at.scores = at.key + tile * std::max(queryWidth + 1, valueWidth);
  } else {
    at.value = at.key + tile * (queryWidth + 1);
    at.scores = at.value + tile * valueWidth;
  }
  at.max = at.scores + rows * (tile + 1);
  at.sum = at.max + rows;
  at.alpha = at.sum + rows;
  at.partial = at.alpha + rows;
  at.floats = at.partial + (slices > 1 ? slices * (rows * tile + 1) : 0);
  return at;
}
/// The same count, or nullopt when it overflows (then nothing fits).
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
inline int64_t tiledPrefillFloats(int64_t rows, int64_t tile,
                                  int64_t queryWidth, int64_t valueWidth,
                                  bool shareKeyValue = false,
                                  int64_t slices = 1) {
  return tiledPrefillLayout(rows, tile, queryWidth, valueWidth, shareKeyValue,
                            slices)
      .floats;
}

/// Width slices of the wide-head S step (TiledPrefillKernel.cpp): the
/// `lanes / rows` threads of a packed row each keep Dq / slices of its query
/// words in registers for the whole walk (words d = s, s + slices, ...) and
/// read each key word once per multiply-add; their partial dots meet in
/// workgroup memory. 1 (the scalar S step: a thread per score) unless
/// `lanes` is a multiple of `rows` giving >= 2 slices that divide Dq with at
/// most 96 words a thread.
inline int64_t wideHeadSlices(int64_t lanes, int64_t rows,
                              int64_t queryWidth) {
  constexpr int64_t maxWords = 96;
  if (rows < 1 || lanes % rows)
    return 1;
  int64_t slices = lanes / rows;
  if (slices < 2 || queryWidth % slices || queryWidth / slices > maxWords)
    return 1;
  return slices;
}

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PLANCOMMON_H
