//===- DropAliasedResults.cpp - poot-drop-aliased-results ------------------===//
//
// After bufferization a state written in place is returned as its argument's
// own buffer. Such a result leaves the calling convention (the caller
// already holds that buffer), and the module records which results left,
// so the artifact's manifest can tell the runtime.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTDROPALIASEDRESULTS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// The entry-block argument `value` is, through casts; else nullptr.
BlockArgument argumentBehind(Value value, Block &entry) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  auto arg = dyn_cast<BlockArgument>(value);
  return arg && arg.getOwner() == &entry ? arg : BlockArgument();
}

struct DropAliasedResults
    : poot::impl::PootDropAliasedResultsBase<DropAliasedResults> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    SmallVector<NamedAttribute> entries;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // A function with callers keeps its results (a call site would need
      // rewriting); the step and its prologue have none.
      if (!SymbolTable::symbolKnownUseEmpty(func, module))
        continue;
      Block &entry = func.getBody().front();
      Operation *ret = entry.getTerminator();
      SmallVector<int64_t> aliases;
      llvm::BitVector dropped(ret->getNumOperands());
      for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
        BlockArgument arg = argumentBehind(v, entry);
        aliases.push_back(arg ? int64_t(arg.getArgNumber()) : -1);
        if (arg)
          dropped.set(i);
      }
      ret->eraseOperands(dropped);
      if (failed(func.eraseResults(dropped))) {
        func.emitError() << "poot-drop-aliased-results: cannot drop results";
        return signalPassFailure();
      }
      entries.push_back(
          b.getNamedAttr(func.getSymName(), b.getDenseI64ArrayAttr(aliases)));
    }
    module->setAttr("poot.result_aliases", b.getDictionaryAttr(entries));
  }
};

} // namespace
