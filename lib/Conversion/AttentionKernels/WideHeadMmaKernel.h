//===- WideHeadMmaKernel.h - tensor-core wide-head decode ----------*- C++ -*-===//
//
// The NVIDIA tensor-core form (`wide_head_mma`) of the wide-head decode
// (docs/wide-head-decode.md) for two-byte (bf16/f16) MQA / absorbed MLA.
// A workgroup owns R = q_block packed (head, query row) rows of one KV
// group and one split's chunk of keys, as `wide_head` does; its rows are
// m tiles of 16, and each m tile is served by W warps (dialect/
// AttentionLayout.h wideHeadMmaWarps; lanes = 32 (R / 16) W). The O
// accumulator of 16 rows x Dv would be Dv / 2 f32 registers a lane (256
// for Dv 512): the W warps split it, and the scores, between them:
//
//   store K as [key][word] in the K/V region (its words were loaded from
//     global memory during the previous tile's P V)         barrier
//   load this tile's V into registers (its latency overlaps S)
//   warp (m, w): partial S over k-steps w Dq/(16 W) ..., mma.sync with its
//     Q fragments held in registers for the whole walk (Dq / (4 W) words);
//     the partial accumulators to workgroup memory in fragment order
//                                                            barrier
//   store V^T [channel][key pair] into the same region (K is dead);
//   every warp of the m tile sums the W partials in one order (so all W
//     hold the same scores), applies the transform, mask and bounds, and
//     runs the online softmax on the fragments (quad shuffles), P rounded
//     to the input type                                      barrier
//   load the next tile's K into registers;
//   warp (m, w): O[:, w Dv/W ...] = O alpha + P V (Dv / (2 W) registers)
//                                                            barrier
//
// The fragment layouts, the mma helpers and the fragment softmax are
// MmaFragments.h's, shared with the tensor-core prefill
// (TiledPrefillMmaKernel.h), whose numeric contract this follows
// (docs/two-byte-attention.md, "the tensor-core schedule"). Unsplit, the
// kernel writes o / l rounded to the output type; split, the unnormalised
// (o, m, l) of each row at (row, split) of the scratch for the split
// combine (AttentionEmitter::emitSplitCombine). Key bounds (capacity, live,
// paged), the split key, tensor masks, the causal kind and the softcap are
// read through AttentionEmitter as in the other schedules.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_WIDEHEADMMAKERNEL_H
#define POOT_CONVERSION_ATTENTIONKERNELS_WIDEHEADMMAKERNEL_H

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"

namespace mlir::poot {

/// Emits the kernel body for workgroup `wg` and thread `tid`; `lds` is an
/// i32 workgroup buffer of req.getLdsFloats() words
/// (dialect/AttentionLayout.h wideHeadMmaWords). The query, key and value
/// buffers are all f16 or all bf16, their head widths multiples of 8.
void emitWideHeadMma(OpBuilder &b, Location loc, AttentionRequestAttr req,
                     const AttentionSignature &sig, double scale,
                     std::optional<double> softcap,
                     const AttentionBuffers &bufs, Value wg, Value tid,
                     Value lds);

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_WIDEHEADMMAKERNEL_H
