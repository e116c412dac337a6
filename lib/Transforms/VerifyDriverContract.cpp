//===- VerifyDriverContract.cpp - whole-function slot checks ---------------===//
//
// The dialect verifies each marker on its own; the driver also needs the
// markers to agree with each other (one state out per state in, one pos).
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTVERIFYDRIVERCONTRACT
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {
struct VerifyDriverContract
    : poot::impl::PootVerifyDriverContractBase<VerifyDriverContract> {
  LogicalResult verifyFunction(func::FuncOp func) {
    llvm::StringMap<int> stateOuts;
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      if (auto slot = func.getResultAttrOfType<SlotAttr>(i, PootDialect::kSlotAttrName))
        if (slot.getKind() == SlotKind::State)
          ++stateOuts[slot.getName().getValue()];
    int posCount = 0;
    llvm::StringMap<bool> stateIns;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      auto slot = func.getArgAttrOfType<SlotAttr>(i, PootDialect::kSlotAttrName);
      if (!slot)
        continue;
      if (slot.getKind() == SlotKind::Pos)
        ++posCount;
      if (slot.getKind() != SlotKind::State)
        continue;
      StringRef name = slot.getName().getValue();
      if (!stateIns.insert({name, true}).second)
        return func.emitError() << "state '" << name << "' is an argument twice";
      if (stateOuts.lookup(name) != 1)
        return func.emitError() << "state '" << name << "' needs exactly one "
                                << "state result of the same name, found "
                                << stateOuts.lookup(name);
    }
    if (posCount > 1)
      return func.emitError() << "at most one argument may be marked pos, found "
                              << posCount;
    return success();
  }

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(verifyFunction(func)))
        return signalPassFailure();
  }
};
} // namespace
