//===- CPUEntryABI.cpp - poot-cpu-entry-abi --------------------------------===//
//
// The CPU runtime binds caller-owned buffers and calls `_mlir_ciface_<entry>`
// with one descriptor pointer per argument and per (out-parameter) result.
// This pass states that contract on the function before bufferization, and
// runs right before it (after the last CSE), so that it sees the return
// operands bufferization will see.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUENTRYABI
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// `attrs` without the `poot.*` entries.
DictionaryAttr withoutPootMarkers(DictionaryAttr attrs) {
  if (!attrs)
    return attrs;
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute attr : attrs)
    if (!attr.getName().getValue().starts_with("poot."))
      kept.push_back(attr);
  return DictionaryAttr::get(attrs.getContext(), kept);
}

/// Gives every repeated tensor operand of each return its own copy. Every
/// result is its own out-parameter, but upstream buffer-results-to-out-params
/// (LLVM 22.1.8, fixed later upstream) hoists a returned allocation once per
/// return *operand*: an allocation returned twice is erased twice, a
/// segfault. CSE makes such returns out of ordinary programs (two layers'
/// identical index guards return one witness twice). `alloc_tensor copy`
/// has no memory-effect model, so no later CSE merges the copies again.
void copyRepeatedResults(func::FuncOp func) {
  func.walk([](func::ReturnOp ret) {
    llvm::SmallDenseSet<Value> seen;
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type || seen.insert(operand.get()).second)
        continue;
      operand.set(bufferization::AllocTensorOp::create(
          b, ret.getLoc(), type, ValueRange{}, operand.get()));
    }
  });
}

struct PootCPUEntryABI : poot::impl::PootCPUEntryABIBase<PootCPUEntryABI> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Every function with a body, entry or not: the out-parameter pass
    // rewrites them all.
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        copyRepeatedResults(func);
    bool found = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (entry.empty() ? !func.isPublic() : func.getSymName() != entry)
        continue;
      found = true;
      OpBuilder b(func);
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    b.getUnitAttr());
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
        func.setArgAttrs(i, withoutPootMarkers(func.getArgAttrDict(i)));
        // The runtime's buffers are inputs only: a write (a state update,
        // a scatter into a pool) goes to a copy.
        if (isa<TensorType>(func.getArgument(i).getType()))
          func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
      }
      for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
        func.setResultAttrs(i, withoutPootMarkers(func.getResultAttrDict(i)));
    }
    if (!found && !entry.empty()) {
      module.emitError() << "poot-cpu-entry-abi: no function named '" << entry
                         << "' with a body";
      signalPassFailure();
    }
  }
};

} // namespace
