//===- TiledPrefillKernel.h - the tiled GPU prefill kernel ---------*- C++ -*-===//
//
// The GPU prefill schedule (`tiled_prefill`): a workgroup of `lanes` threads
// owns `q_block` query rows of one (batch row, query head) and walks the
// keys in tiles of `key_block`. Each tile of K and V is staged once in
// workgroup memory and read by every row of the block (the seed's streaming
// schedule re-reads it per row); the block's query rows are staged once for
// the whole walk. Per tile:
//
//   stage K, V (zero past the last key)     barrier
//   S[r][c] = transform(q_r . k_c) + mask   barrier  (-inf where hidden)
//   per row: m' = max(m, max_c S), P = exp(S - m'), l = l a + sum P,
//            a = exp(m - m')                barrier
//   o[r][d] = o[r][d] a[r] + sum_c P[r][c] V[c][d]   (o in registers)
//                                           barrier
//
// A thread owns the scores e = tid + k * lanes of the R x C tile and the
// outputs e = tid + k * lanes of the R x Dv block, so `lanes` divides both.
// The causal kind ends the walk at the block's last visible key: tiles above
// the diagonal are never loaded, and no mask tensor exists to read. Same
// score, mask, softmax and -inf / NaN semantics as AttentionEmitter (whose
// addressing, length clamp, score transform and mask it calls).
//
// The wide-head decode (`wide_head`, docs/wide-head-decode.md) is the same
// body over a KV group: the block's rows are the group's n_rep * Lq packed
// (head, query row) rows, the workgroup walks one split's chunk of keys and
// publishes the partial (o, m, l) for the split combine, and V is staged
// into K's region after the scores (one K/V region). Its S step is sliced
// over the width when the threads divide into lanes / R >= 2 slices a row
// (dialect/AttentionLayout.h wideHeadSlices): a thread keeps Dq / slices query words in
// registers for the whole walk, reads one key word per multiply-add
// (consecutive threads, consecutive words), and the slices' partial dots
// are summed through workgroup memory after a fifth barrier.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_TILEDPREFILLKERNEL_H
#define POOT_CONVERSION_ATTENTIONKERNELS_TILEDPREFILLKERNEL_H

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"

namespace mlir::poot {

/// Workgroup-memory floats of the tiled prefill for a request (the planner
/// sizes against the same count: dialect/AttentionLayout.h tiledPrefillFloats).
int64_t tiledPrefillLdsFloats(AttentionRequestAttr req);

/// Workgroups of the launch: B * Hq * ceil(Lq / q_block) for the prefill,
/// B * Hkv * splits * ceil(n_rep * Lq / q_block) for the wide-head decode
/// (wide_head and wide_head_mma).
int64_t tiledPrefillWorkgroups(AttentionRequestAttr req);

/// Emits the kernel body for workgroup `wg` and thread `tid`; `lds` holds
/// tiledPrefillLdsFloats(req) floats. Writes the normalised output rows.
void emitTiledPrefill(OpBuilder &b, Location loc, AttentionRequestAttr req,
                      const AttentionSignature &sig, double scale,
                      std::optional<double> softcap,
                      const AttentionBuffers &bufs, Value wg, Value tid,
                      Value lds);

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_TILEDPREFILLKERNEL_H
