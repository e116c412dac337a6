//===- TiledPrefillMmaKernel.h - tensor-core tiled prefill ---------*- C++ -*-===//
//
// The NVIDIA tensor-core prefill schedule (`tiled_prefill_mma`) for two-byte
// (bf16/f16) attention: a workgroup of 4 warps owns a block of 64 query rows
// of one (batch row, query head), 16 rows a warp, and walks the keys in tiles
// of `key_block`. Per tile:
//
//   stage K as [key][d] and V as [d][key] in workgroup memory    barrier
//   per warp: S = Q K^T        warp-level mma.sync m16n8k16, f32 accumulators
//             S = transform(S) + mask, -inf where hidden
//             online softmax on the S fragments in registers (row max and
//             sum over the 4 threads of a quad: shuffle xor 1, 2)
//             O = O * alpha + P V   (P rounded to the input type, mma.sync)
//                                                                 barrier
//
// Q's fragments are loaded from global memory once per warp and stay in
// registers, as do S, P and O (the FlashAttention-2 arrangement). The
// fragment layouts, the mma helpers and the fragment softmax are
// MmaFragments.h's (shared with the wide-head decode's tensor-core form):
// the S accumulators of two adjacent 8-key tiles are exactly the A fragment
// of P for 16 keys. Workgroup memory is 32-bit words (two elements each):
// K rows of Dq/2 + 4 words and V^T rows of C/2 + 4 words, so that the 32
// lanes reading one B fragment (word 4 g + c of a row block) hit 32
// different banks.
//
// Numerics (docs/two-byte-attention.md, "the tensor-core schedule"): scores,
// softmax, the row sums and the P V accumulation are f32; P is rounded to the
// input type for the P V product (the one rounding besides the output's).
// The causal kind ends the walk at the block's last visible key; tensor
// masks, the softcap, live lengths, paged and split keys are read as in the
// FFMA tiled schedule (AttentionEmitter's addressing, transform and mask);
// the planner does not send paged or split keys here yet (PlanPrefill.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_TILEDPREFILLMMAKERNEL_H
#define POOT_CONVERSION_ATTENTIONKERNELS_TILEDPREFILLMMAKERNEL_H

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"

namespace mlir::poot {

/// Emits the kernel body for workgroup `wg` and thread `tid` (128 threads);
/// `lds` is an i32 workgroup buffer of req.getLdsFloats() 32-bit words
/// (dialect/AttentionLayout.h tiledPrefillMmaWords).
/// The query, key and value buffers are all f16 or all bf16.
void emitTiledPrefillMma(OpBuilder &b, Location loc, AttentionRequestAttr req,
                         const AttentionSignature &sig, double scale,
                         std::optional<double> softcap,
                         const AttentionBuffers &bufs, Value wg, Value tid,
                         Value lds);

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_TILEDPREFILLMMAKERNEL_H
