//===- TiledPrefillMmaKernel.h - tensor-core tiled prefill ---------*- C++ -*-===//
//
// The NVIDIA tensor-core prefill schedule (`tiled_prefill_mma`) for two-byte
// (bf16/f16) attention: a workgroup of 4 warps owns a block of 64 query rows
// of one (batch row, query head), 16 rows a warp, and walks the keys in tiles
// of `key_block`. Per tile:
//
//   cp.async V of this tile (K of this tile is already in flight)
//   per warp: S = Q K^T        warp-level mma.sync m16n8k16, f32 accumulators,
//                              B fragments by ldmatrix.x4
//             S = transform(S) + mask, -inf where hidden (tiles the warp
//             sees whole skip the per-score tests)
//             online softmax on the S fragments in registers (row max and
//             sum over the 4 threads of a quad: shuffle xor 1, 2)
//   cp.async K of the next tile
//             O = O * alpha + P V   (P rounded to the input type, mma.sync,
//                                    B fragments by ldmatrix.x4.trans)
//                                                                 barrier
//
// Q's fragments are loaded from global memory once per warp and stay in
// registers, as do S, P and O (the FlashAttention-2 arrangement). The
// fragment layouts are the PTX ISA's for mma.m16n8k16 (row-major A,
// column-major B): with g = lane / 4 and c = lane % 4, A register r holds
// row g + 8 (r % 2), columns 2c + 8 (r / 2) + {0, 1}; B register r holds
// rows (k) 2c + 8 r + {0, 1} of column g; the accumulator holds row
// g + 8 (i / 2), column 2c + i % 2 in its element i. The S accumulators of
// two adjacent 8-key tiles are therefore exactly the A fragment of P for 16
// keys. Workgroup memory is 32-bit words (two elements each): K rows of
// Dq/2 + 4 words and V rows of Dv/2 + 4 words, both row-major and copied
// in 16-byte chunks (cp.async.cg, zero-filled past the walk); the +4 words
// put the 8 row addresses of one ldmatrix on 32 different banks.
//
// Numerics (docs/two-byte-attention.md, "the tensor-core schedule"): scores,
// softmax, the row sums and the P V accumulation are f32; P is rounded to the
// input type for the P V product (the one rounding besides the output's).
// The causal kind ends the walk at the block's last visible key; tensor
// masks, the softcap, live lengths, paged and split keys are read through
// AttentionEmitter's addressing, transform and mask, as in the FFMA tiled
// schedule (all verified on the H200, bench/mma_h200.py).
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
