//===- PlanCommon.h - what every planner shares -------------------*- C++ -*-===//
//
// The device description the planners read (the options of
// poot-plan-attention) and the launch-grid fold every schedule uses.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_PLANCOMMON_H
#define POOT_LIB_TRANSFORMS_PLANCOMMON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace mlir::poot {

/// A device as the planner sees it (poot-plan-attention's options).
struct DeviceLimits {
  llvm::StringRef target;
  int64_t workgroupMemory, maxGridX, maxGridY, computeUnits, maxBufferBytes,
      maxAllocBytes;
};

struct Grid {
  int64_t x = 0, y = 0;
};

/// Folds `count` workgroups onto (x, y); nullopt when even that does not fit.
inline std::optional<Grid> foldGrid(int64_t count, int64_t maxX, int64_t maxY) {
  Grid grid;
  grid.x = std::min(count, maxX);
  grid.y = llvm::divideCeil(count, grid.x);
  if (grid.y > maxY)
    return std::nullopt;
  return grid;
}

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PLANCOMMON_H
