//===- JamRows.h - rows a batched decode matmul's thread computes -*- C++ -*-===//
//
// poot-gpu-jam-rows gives one thread R rows of a matmul whose weight the
// rows share; poot-gpu-split-reductions, which runs before it on linalg,
// must count that kernel's threads the same way. The group size is decided
// here, for both.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPROGRAM_JAMROWS_H
#define POOT_LIB_CONVERSION_GPUPROGRAM_JAMROWS_H

#include <cstdint>

namespace mlir::poot {

/// The most rows a thread may be given (`max-rows`, `jam-rows`).
inline constexpr int64_t kMaxJamRows = 64;

/// The rows one thread computes of a dimension of `rows` iterations: the
/// largest divisor of `rows` that is at most `maxRows` (so the groups tile
/// the dimension exactly, no remainder rows); 1 when none above 1 exists.
inline int64_t jammedRows(int64_t rows, int64_t maxRows) {
  for (int64_t r = maxRows < rows ? maxRows : rows; r >= 2; --r)
    if (rows % r == 0)
      return r;
  return 1;
}

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_JAMROWS_H
