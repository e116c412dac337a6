//===- KernelSignature.cpp - argument list of the attention kernels -------===//
#include "lib/Conversion/AttentionKernels/KernelSignature.h"

using namespace mlir;
using namespace mlir::poot;

static int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

static Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

KernelSignature::KernelSignature(AttentionOp op, AttentionRequestAttr req) {
  inputs.push_back({"query", elementsOf(op.getQuery()), elementOf(op.getQuery())});
  inputs.push_back({"key", elementsOf(op.getKey()), elementOf(op.getKey())});
  inputs.push_back({"value", elementsOf(op.getValue()), elementOf(op.getValue())});
  if (Value shared = op.getKeyShared()) {
    layout.keyShared = true;
    inputs.push_back({"key_shared", elementsOf(shared), elementOf(shared)});
  }
  if (Value mask = op.getMask()) {
    layout.mask = true;
    auto type = cast<RankedTensorType>(mask.getType());
    layout.maskBatch = type.getDimSize(0);
    layout.maskHeads = type.getDimSize(1);
    layout.maskRows = type.getDimSize(2);
    inputs.push_back({"mask", elementsOf(mask), elementOf(mask)});
  }
  if (Value read = op.getRead()) {
    layout.read = true;
    inputs.push_back({"read", elementsOf(read), elementOf(read)});
  }
  if (Value length = op.getLength()) {
    layout.length = true;
    inputs.push_back({"len", elementsOf(length), elementOf(length)});
  }
  outElements = elementsOf(op.getResult());
  outElement = elementOf(op.getResult());
  scratchElement = Float32Type::get(op.getContext());
  int64_t rows = req.getBatch() * req.getQHeads() * req.getQLen();
  scratchElements = rows * req.getSplits() * (req.getValueWidth() + 2);
}

SmallVector<KernelSignature::Arg> KernelSignature::args(Launch launch) const {
  Arg out{"out", outElements, outElement};
  Arg scratch{"scratch", scratchElements, scratchElement};
  if (launch == Launch::Combine)
    return {scratch, out};
  SmallVector<Arg> all(inputs);
  all.push_back(launch == Launch::Partials ? scratch : out);
  return all;
}

SmallVector<Type> KernelSignature::argumentTypes(MLIRContext *ctx,
                                                 Launch launch) const {
  SmallVector<Type> types;
  for (const Arg &arg : args(launch))
    types.push_back(MemRefType::get({arg.elements}, arg.element));
  return types;
}

SmallVector<StringRef> KernelSignature::argumentNames(Launch launch) const {
  SmallVector<StringRef> names;
  for (const Arg &arg : args(launch))
    names.push_back(arg.name);
  return names;
}

AttentionBuffers KernelSignature::bind(ValueRange values, Launch launch) const {
  AttentionBuffers bufs;
  for (auto [arg, value] : llvm::zip(args(launch), values)) {
    Value *slot = llvm::StringSwitch<Value *>(arg.name)
                      .Case("query", &bufs.query)
                      .Case("key", &bufs.key)
                      .Case("value", &bufs.value)
                      .Case("key_shared", &bufs.keyShared)
                      .Case("mask", &bufs.mask)
                      .Case("read", &bufs.read)
                      .Case("len", &bufs.length)
                      .Case("out", &bufs.out)
                      .Case("scratch", &bufs.scratch)
                      .Default(nullptr);
    *slot = value;
  }
  return bufs;
}

SmallVector<Value> KernelSignature::orderedInputs(AttentionOp op) {
  SmallVector<Value> values{op.getQuery(), op.getKey(), op.getValue()};
  for (Value optional :
       {op.getKeyShared(), op.getMask(), op.getRead(), op.getLength()})
    if (optional)
      values.push_back(optional);
  return values;
}
