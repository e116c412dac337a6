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
  Value load(Value mem, Value idx);
  void store(Value val, Value mem, Value idx);
  Value exp(Value x);
  Value isNegInf(Value x);
  Value select(Value cond, Value x, Value y);
  /// exp(m - max), or 0 when m is -inf: a lane, warp or split that saw
  /// nothing adds exactly zero, never the NaN of exp(-inf - -inf).
  Value weight(Value m, Value max);
  /// An i32 value as an index.
  Value indexOf(Value i32);

protected:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_KERNELBUILDER_H
