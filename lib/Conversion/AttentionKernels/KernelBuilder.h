//===- KernelBuilder.h - arithmetic shorthands for the kernel emitters -*- C++ -*-===//
//
// The attention emitters (the seed's schedules and warp decode) build long
// chains of index and f32 arithmetic at one insertion point; these
// shorthands keep that code readable and identical between them.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_KERNELBUILDER_H
#define POOT_CONVERSION_ATTENTIONKERNELS_KERNELBUILDER_H

#include "mlir/IR/Builders.h"

namespace mlir::poot {

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value index(int64_t v);
  Value f32(double v);
  /// Integer (index) or float addition / multiplication, by operand type.
  Value add(Value x, Value y);
  Value mul(Value x, Value y);
  Value divui(Value x, int64_t y);
  Value remui(Value x, int64_t y);
  /// Two-byte attention (docs/two-byte-attention.md): every f16/bf16 value
  /// is widened to f32 as it is loaded, all math runs in f32, and a value
  /// is rounded (to nearest even) only when it is stored into a two-byte
  /// buffer -- the output, once.
  Value load(Value mem, Value idx);
  void store(Value val, Value mem, Value idx);
  /// An f16/bf16 scalar or vector extended to f32; anything else as is.
  Value widen(Value x);
  /// A float scalar or vector truncated to `element` (no-op when equal).
  Value narrowTo(Value x, Type element);
  Value exp(Value x);
  Value isNegInf(Value x);
  Value select(Value cond, Value x, Value y);
  /// exp(m - max), or 0 when m is -inf: a lane, warp or split that saw
  /// nothing adds exactly zero, never the NaN of exp(-inf - -inf).
  Value weight(Value m, Value max);
  /// An i32 value as an index.
  Value indexOf(Value i32);

  /// One online-softmax step of a running state whose max is `m` by a score
  /// (or a tile's max score) `s`: the new max max(m, s), the old state's
  /// factor `rescale` = weight(m, max) and the new key's `weight` =
  /// weight(s, max). A state that has seen nothing (m = -inf) or a hidden key
  /// (s = -inf) contributes exactly 0, never exp(-inf - -inf) = NaN; a NaN
  /// score propagates. Every schedule updates its (m, l, o) through this.
  struct OnlineStep {
    Value max, rescale, weight;
  };
  OnlineStep onlineStep(Value m, Value s);
  /// acc * rescale + weight * x: each o channel of the step; with a null
  /// `x`, acc * rescale + weight: the sum l.
  Value rescaleAdd(Value acc, const OnlineStep &step, Value x);

protected:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_KERNELBUILDER_H
