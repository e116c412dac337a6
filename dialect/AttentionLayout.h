//===- AttentionLayout.h - workgroup-memory layouts of the kernels -*- C++ -*-===//
//
// Plain arithmetic over a request's sizes, read by the request's derived
// sizes (AttentionRequestAttr::getLdsFloats), the planner (which sizes
// candidates before any request exists) and the kernel emitters.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_DIALECT_ATTENTIONLAYOUT_H
#define POOT_DIALECT_ATTENTIONLAYOUT_H

#include <algorithm>
#include <cstdint>

namespace mlir::poot {

/// Workgroup memory of the tiled prefill (TiledPrefillKernel.h), in floats:
/// the block's queries [R x (Dq + 1)], a key tile [C x (Dq + 1)], a value
/// tile [C x Dv], the scores [R x (C + 1)] and per row (m, l, alpha). The +1
/// strides keep the threads of a warp reading different rows of one column
/// on different banks. With `shareKeyValue` (the wide-head decode) the value
/// tile reuses the key tile's region, staged after the scores are computed:
/// max(C (Dq + 1), C Dv) floats for both. With `slices` > 1 (the wide-head
/// S step, wideHeadSlices) a region of slices x (R C + 1) floats holds the
/// partial dot products.
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

/// The tensor-core prefill (TiledPrefillMmaKernel.h): 4 warps of 16 query
/// rows each, and its workgroup memory in 32-bit words (two two-byte
/// elements each): a key tile [C x (Dq/2 + 4)] and a value tile
/// [C x (Dv/2 + 4)], rows of 16-byte chunks. The +4 word strides put the 8
/// row addresses of one ldmatrix on 32 different banks.
constexpr int64_t kMmaPrefillWarps = 4, kMmaPrefillRows = 16 * kMmaPrefillWarps;
inline int64_t tiledPrefillMmaWords(int64_t tile, int64_t queryWidth,
                                    int64_t valueWidth) {
  return tile * (queryWidth / 2 + 4) + tile * (valueWidth / 2 + 4);
}

/// The tensor-core wide-head decode (WideHeadMmaKernel.h): `q_block` = R
/// packed rows in m tiles of 16, each served by `warps` warps that split
/// S = Q K^T over the key's width (Dq / (16 warps) k-steps each) and
/// O += P V over the value's channels (Dv / (8 warps) n-tiles each). The
/// warps of one m tile: the most of 4, 2, 1 that divide both widths.
inline int64_t wideHeadMmaWarps(int64_t queryWidth, int64_t valueWidth) {
  for (int64_t warps : {4, 2})
    if (queryWidth % (16 * warps) == 0 && valueWidth % (8 * warps) == 0)
      return warps;
  return 1;
}
/// Its workgroup memory in 32-bit words: one region that holds the key tile
/// [C x (Dq/2 + 4)] (two elements a word) and, once the scores are
/// computed, the transposed value tile [Dv x (C/2 + 4)]; then, with more
/// than one warp a tile, the warps' partial scores (R x C f32 words per
/// warp, in fragment order: word (tile, element) of lane L at
/// ((warp * R / 16 + m) * C / 8 + tile) * 128 + element * 32 + L).
inline int64_t wideHeadMmaRegionWords(int64_t tile, int64_t queryWidth,
                                      int64_t valueWidth) {
  return std::max(tile * (queryWidth / 2 + 4), valueWidth * (tile / 2 + 4));
}
inline int64_t wideHeadMmaWords(int64_t rows, int64_t tile, int64_t queryWidth,
                                int64_t valueWidth, int64_t warps) {
  return wideHeadMmaRegionWords(tile, queryWidth, valueWidth) +
         (warps > 1 ? warps * rows * tile : 0);
}

} // namespace mlir::poot

#endif // POOT_DIALECT_ATTENTIONLAYOUT_H
