//===- SplitValidation.cpp - poot-split-validation -------------------------===//
//
// State is written in place, so "a failed step publishes nothing" needs the
// validation answer before the first write. The validation outputs depend
// on the step's inputs only, so a clone of the step that keeps just those
// outputs (and the ops they use) answers it first, cheaply.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "dialect/PootDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTSPLITVALIDATION
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

bool hasResultSlot(func::FuncOp func, unsigned i, SlotKind kind) {
  auto slot = func.getResultAttrOfType<SlotAttr>(i, PootDialect::kSlotAttrName);
  return slot && slot.getKind() == kind;
}

struct SplitValidation
    : poot::impl::PootSplitValidationBase<SplitValidation> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal() &&
          !func->hasAttr("poot.validation_of"))
        steps.push_back(func);

    for (func::FuncOp func : steps) {
      SmallVector<unsigned> kept;
      bool writesState = false;
      for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
        if (hasResultSlot(func, i, SlotKind::Validation))
          kept.push_back(i);
        writesState |= hasResultSlot(func, i, SlotKind::State);
      }
      if (kept.empty() || !writesState)
        continue;
      std::string name = (func.getSymName() + "_validate").str();
      if (symbols.lookup(name)) {
        func.emitError() << "poot-split-validation: @" << name
                         << " already exists";
        return signalPassFailure();
      }

      auto clone = cast<func::FuncOp>(func->clone());
      clone.setSymName(name);
      clone->setAttr("poot.validation_of", func.getSymNameAttr());
      auto ret = cast<func::ReturnOp>(clone.getBody().front().getTerminator());
      SmallVector<Value> operands;
      SmallVector<Type> types;
      SmallVector<DictionaryAttr> resultAttrs;
      for (unsigned i : kept) {
        operands.push_back(ret.getOperand(i));
        types.push_back(func.getResultTypes()[i]);
        resultAttrs.push_back(func.getResultAttrDict(i));
      }
      OpBuilder b(ret);
      func::ReturnOp::create(b, ret.getLoc(), operands);
      ret.erase();
      clone.setType(
          FunctionType::get(&getContext(), func.getArgumentTypes(), types));
      clone.setAllResultAttrs(resultAttrs);
      // Everything the validation results do not use is dead.
      IRRewriter rewriter(&getContext());
      (void)runRegionDCE(rewriter, clone.getBody());
      symbols.insert(clone, std::next(Block::iterator(func)));
    }
  }
};

} // namespace
