//===- AttentionLayout.h - workgroup-memory layouts of the kernels -*- C++ -*-===//
//
// Plain arithmetic over a request's sizes, read by the request's derived
// sizes (AttentionRequestAttr::getLdsFloats), the planner (which sizes
// candidates before any request exists) and the kernel emitters.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_DIALECT_ATTENTIONLAYOUT_H
#define POOT_DIALECT_ATTENTIONLAYOUT_H

#include <cstdint>

namespace mlir::poot {

/// Workgroup memory of the tiled prefill (TiledPrefillKernel.h), in floats:
/// the block's queries [R x (Dq + 1)], a key tile [C x (Dq + 1)], a value
/// tile [C x Dv], the scores [R x (C + 1)] and per row (m, l, alpha). The +1
/// strides keep the threads of a warp reading different rows of one column
/// on different banks.
struct TiledPrefillLayout {
  int64_t query, key, value, scores, max, sum, alpha, floats;
};
inline TiledPrefillLayout tiledPrefillLayout(int64_t rows, int64_t tile,
                                             int64_t queryWidth,
                                             int64_t valueWidth) {
  TiledPrefillLayout at;
  at.query = 0;
  at.key = at.query + rows * (queryWidth + 1);
  at.value = at.key + tile * (queryWidth + 1);
  at.scores = at.value + tile * valueWidth;
  at.max = at.scores + rows * (tile + 1);
  at.sum = at.max + rows;
  at.alpha = at.sum + rows;
  at.floats = at.alpha + rows;
  return at;
}
inline int64_t tiledPrefillFloats(int64_t rows, int64_t tile,
                                  int64_t queryWidth, int64_t valueWidth) {
  return tiledPrefillLayout(rows, tile, queryWidth, valueWidth).floats;
}

} // namespace mlir::poot

#endif // POOT_DIALECT_ATTENTIONLAYOUT_H
