//===- KernelSignature.h - argument list of the attention kernels --*- C++ -*-===//
//
// The one definition of the generated kernels' arguments: which buffers, in
// which order, of which flat size. The GPU kernels, the CPU loops and the
// Python launch plan (compiler/gpu.py mirrors `argumentNames`) agree on it.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_KERNELSIGNATURE_H
#define POOT_CONVERSION_ATTENTIONKERNELS_KERNELSIGNATURE_H

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"

#include "llvm/ADT/StringSwitch.h"

namespace mlir::poot {

class KernelSignature {
public:
  enum class Launch { Stream, Partials, Combine };

  KernelSignature(AttentionOp op, AttentionRequestAttr req);

  /// Flat memref types of a launch's arguments, in order:
  /// query, key, value, [key_shared], [mask], [read], [len], out|scratch;
  /// combine: scratch, out.
  SmallVector<Type> argumentTypes(MLIRContext *ctx, Launch launch) const;
  /// The same arguments' names ("query", ..., "out", "scratch").
  SmallVector<StringRef> argumentNames(Launch launch) const;
  /// Binds a launch's arguments (block arguments or values) to buffers.
  AttentionBuffers bind(ValueRange args, Launch launch) const;

  /// The op's inputs in kernel-argument order (query, key, value,
  /// [key_shared], [mask], [read], [len]) — not the op's operand order.
  static SmallVector<Value> orderedInputs(AttentionOp op);

  /// Which optional operands exist, and the mask's broadcast dims.
  AttentionSignature layout;

private:
  struct Arg {
    StringRef name;
    int64_t elements;
    /// The operand's own element type (f32/f16/bf16 or i32); the scratch
    /// of (o, m, l) partials is always f32.
    Type element;
  };
  SmallVector<Arg> args(Launch launch) const;

  SmallVector<Arg> inputs;
  int64_t outElements, scratchElements;
  Type outElement, scratchElement;
};

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_KERNELSIGNATURE_H
