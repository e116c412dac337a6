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

#include "dialect/PootDialect.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
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

/// The state names `func` returns.
llvm::StringSet<> stateResultNames(func::FuncOp func) {
  llvm::StringSet<> names;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (auto slot = func.getResultAttrOfType<poot::SlotAttr>(
            i, poot::PootDialect::kSlotAttrName))
      if (slot.getKind() == poot::SlotKind::State)
        names.insert(slot.getName().getValue());
  return names;
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
      // The step itself, and its validation prologue (poot-split-validation).
      auto prologueOf = func->getAttrOfType<StringAttr>("poot.validation_of");
      bool selected = entry.empty()
                          ? func.isPublic()
                          : func.getSymName() == entry ||
                                (prologueOf && prologueOf.getValue() == entry);
      if (!selected)
        continue;
      found = true;
      OpBuilder b(func);
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    b.getUnitAttr());
      llvm::StringSet<> donated = stateResultNames(func);
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
        // A state argument whose state the step returns is donated: the
        // step writes its new rows into that buffer and returns it (the
        // runtime checked validation first, so a failed step writes
        // nothing). Every other buffer is an input only: a write to it goes
        // to a copy.
        auto slot = func.getArgAttrOfType<poot::SlotAttr>(
            i, poot::PootDialect::kSlotAttrName);
        bool writable = slot && slot.getKind() == poot::SlotKind::State &&
                        donated.contains(slot.getName().getValue());
        func.setArgAttrs(i, withoutPootMarkers(func.getArgAttrDict(i)));
        if (isa<TensorType>(func.getArgument(i).getType()))
          func.setArgAttr(i, "bufferization.writable",
                          b.getBoolAttr(writable));
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
