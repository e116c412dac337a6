//===- MmaFragments.h - mma.sync fragments for the tensor-core kernels -*- C++ -*-===//
//
// What the tensor-core schedules (the prefill, TiledPrefillMmaKernel.h; the
// wide-head decode, WideHeadMmaKernel.h) share: two-byte words as mma
// operands, nvvm.mma.sync m16n8k16 with f32 accumulators, and the online
// softmax on the accumulator fragments.
//
// The fragment layouts are the PTX ISA's for mma.m16n8k16 (row-major A,
// column-major B): with g = lane / 4 and c = lane % 4, A register r holds
// row g + 8 (r % 2), columns 2c + 8 (r / 2) + {0, 1}; B register r holds
// rows (k) 2c + 8 r + {0, 1} of column g; the accumulator holds row
// g + 8 (i / 2), column 2c + i % 2 in its element i. The accumulators of
// two adjacent 8-column tiles are therefore exactly the A fragment of a
// 16-column operand (P of S = Q K^T is P V's A).
//
// Numerics (docs/two-byte-attention.md, "the tensor-core schedule"): scores,
// softmax, row sums and the P V accumulation are f32; P is rounded to the
// input type for the P V product.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_MMAFRAGMENTS_H
#define POOT_CONVERSION_ATTENTIONKERNELS_MMAFRAGMENTS_H

#include "lib/Conversion/AttentionKernels/KernelBuilder.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <array>

namespace mlir::poot {

/// Four f32 accumulators of one 16 x 8 mma tile.
using MmaAcc = std::array<Value, 4>;
/// Four 32-bit words of one 16 x 16 A fragment.
using MmaFrag = std::array<Value, 4>;

/// The online-softmax step of one tile of scores held as accumulator
/// fragments: per row half h (the thread's rows g and g + 8) the new max,
/// the old state's rescale and the thread's part of the tile's row sum.
struct FragmentSoftmax {
  std::array<Value, 2> max, rescale, sum;
};

class MmaBuilder : public KernelBuilder {
public:
  static constexpr int64_t kWarp = 32;

  /// `element` is the operands' type (f16 or bf16).
  MmaBuilder(OpBuilder &b, Location loc, Type element);

  Value i32(int64_t v);
  Value zeroElement();
  Value ult(Value x, Value y);
  Value both(Value x, Value y);
  Value minui(Value x, Value y);
  Value maxf(Value x, Value y);
  /// The element at `idx` as stored (no widening: it feeds an mma operand).
  Value raw(Value mem, Value idx);
  /// Two elements (lo in the low half) as one 32-bit word.
  Value packWord(Value lo, Value hi);
  /// Two f32 values rounded to the element type, as one word (P's A
  /// fragment: the tensor-core schedules' one rounding besides the output).
  Value roundWord(Value lo, Value hi);
  /// D = A B + C for one m16n8k16 tile (A row-major, B column-major).
  MmaAcc mma(ArrayRef<Value> a, ArrayRef<Value> bw, const MmaAcc &c);
  MmaAcc zeroAcc();
  /// The value of the lane `lane ^ offset` (within the warp).
  Value shuffleXor(Value v, int32_t offset);
  /// The sum (max) over the four threads of a quad, which hold one row of
  /// an accumulator tile between them.
  Value quadSum(Value v);
  Value quadMax(Value v);

  /// Staging through workgroup memory (sm_80+): the global address of
  /// element `at` of a two-byte buffer whose base address is `base`
  /// (bytes), the shared-memory address `byteOffset` past `base`, a 16-byte
  /// cp.async (`bytes` of them copied, the rest zero-filled; all 16 when
  /// null), and ldmatrix of `num` 8 x 8 two-byte matrices (transposed with
  /// `trans`): lanes 8 m .. 8 m + 7 give the row addresses of matrix m;
  /// word m of each lane is its fragment of matrix m (row lane / 4, columns
  /// 2 (lane % 4) + {0, 1}; transposed: rows 2 (lane % 4) + {0, 1} of
  /// column lane / 4).
  Value globalPtr(Value base, Value at);
  Value sharedPtr(Value base, Value byteOffset);
  void copyAsync(Value to, Value from, Value bytes);
  SmallVector<Value> ldmatrix(Value ptr, int64_t num, bool trans);

  /// The online step of a tile of hidden-as--inf scores `s` (C / 8 tiles
  /// of one 16-row block) from the running maxima `mOld`: replaces each
  /// score by its weight exp(s - m'), a hidden key by exactly 0.
  FragmentSoftmax softmaxStep(MutableArrayRef<MmaAcc> s,
                              std::array<Value, 2> mOld);
  /// P's A fragments of the weights `s`: k-step ks covers tiles 2 ks and
  /// 2 ks + 1, rounded to the element type.
  SmallVector<MmaFrag> pFragments(ArrayRef<MmaAcc> s);

protected:
  /// A word as the mma operand type: i32 for bf16, vector<2xf16> for f16.
  Value operand(Value word);

  Type element;
  bool bf16;
};

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_MMAFRAGMENTS_H
