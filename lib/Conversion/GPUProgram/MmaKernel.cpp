//===- MmaKernel.cpp - what the tensor-core matmul kernels share ----------===//
#include "lib/Conversion/GPUProgram/MmaKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::poot;

MmaKernelBase::MmaKernelBase(OpBuilder &b, Location loc, const MmaPlan &plan,
                             gpu::GPUFuncOp func)
    : MmaBuilder(b, loc, plan.mm.element), plan(plan), mm(plan.mm) {
  outMem = func.getArgument(0);
  weightMem = func.getArgument(1);
  lhsMem = func.getArgument(2);
  for (unsigned i = 3; i < func.getNumArguments(); ++i)
    epilogueInputs.push_back(func.getArgument(i));
}

Value MmaKernelBase::offset(const LinearAccess &access,
                            const LoopValues &loops, Value base) {
  for (auto [d, v] : loops)
    if (int64_t coefficient = access.coefficients[d])
      base = add(base, coefficient == 1 ? v : mul(v, index(coefficient)));
  return base;
}

MmaKernelBase::LoopValues MmaKernelBase::decompose(Value linear,
                                                   ArrayRef<unsigned> dims) {
  LoopValues loops;
  for (unsigned d : llvm::reverse(dims)) {
    loops.push_back({d, remui(linear, mm.ranges[d])});
    linear = divui(linear, mm.ranges[d]);
  }
  return loops;
}

MmaKernelBase::LoopValues MmaKernelBase::rowLoops(Value row) {
  return decompose(minui(row, index(plan.rows - 1)), mm.rows);
}

MmaKernelBase::LoopValues MmaKernelBase::batchLoops(Value bz) {
  return decompose(bz, mm.batch);
}

void MmaKernelBase::storeSum(Value linear, Value sum) {
  if (!plan.epilogue) {
    memref::StoreOp::create(b, loc, sum, outMem, ValueRange{linear});
    return;
  }
  const MmaEpilogue &e = *plan.epilogue;
  // The consumer's iteration that reads this sum: `linear` in row-major
  // order over its loops.
  SmallVector<Value> at(e.ranges.size());
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(e.ranges.size()) - 1; d >= 0; --d) {
    at[d] = remui(rest, e.ranges[d]);
    rest = divui(rest, e.ranges[d]);
  }
  auto address = [&](const LinearAccess &access) {
    Value v = index(access.offset);
    for (auto [d, coefficient] : llvm::enumerate(access.coefficients))
      if (coefficient)
        v = add(v, coefficient == 1 ? at[d] : mul(at[d], index(coefficient)));
    return v;
  };
  linalg::GenericOp consumer = e.op;
  Region &payload = consumer.getRegion();
  Block &body = payload.front();
  IRMapping map;
  map.map(body.getArgument(e.sums->getOperandNumber()), sum);
  for (auto [i, in] : llvm::enumerate(e.inputs))
    map.map(body.getArgument(in->getOperandNumber()),
            memref::LoadOp::create(b, loc, epilogueInputs[i],
                                   ValueRange{address(e.inputAccess[i])}));
  for (Operation &inner : body) {
    // Constants from outside the payload: cloned into the kernel.
    for (Value v : inner.getOperands())
      if (!map.contains(v) && v.getParentRegion() != &payload)
        map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
    if (&inner != body.getTerminator())
      b.clone(inner, map);
  }
  Value result = map.lookupOrDefault(body.getTerminator()->getOperand(0));
  memref::StoreOp::create(b, loc, result, outMem,
                          ValueRange{address(e.resultAccess)});
}
