//===- OutlineLoops.cpp - poot-cpu-outline-loops --------------------------===//
//
// After bufferization and convert-linalg-to-loops a whole decoder step is one
// function holding hundreds of loop nests, and LLVM's loop passes over one
// function are superlinear in its loops (measured: IndVarSimplify took 73% of
// O3 on an 8-layer step and grew ~5x per doubling of the layers). Each
// top-level loop nest becomes its own private function, called in place and
// kept out of line (LLVM's `noinline`), so every function LLVM optimizes is
// one loop nest and compile time is linear in the layer count. Constants the
// nest uses are cloned into it (loop bounds stay constants). The layers of a
// decoder are the same code on other buffers: a nest whose function would be
// identical to an earlier one (same printed body and type) calls that one, so
// each distinct nest is compiled once. The function left holding the calls
// is glue, compiled without optimization (optnone): its one huge block is
// where LLVM's instruction selector was superlinear.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUOUTLINELOOPS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

bool isLoopNest(Operation *op) {
  return isa<scf::ForOp, scf::ParallelOp, scf::ForallOp>(op);
}

/// The function's type and body as printed with local SSA names: equal for
/// two functions that differ in nothing but their name.
std::string structuralKey(func::FuncOp func) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << func.getFunctionType() << "\n";
  OpPrintingFlags flags;
  flags.useLocalScope().printGenericOpForm();
  for (Operation &op : func.getBody().front())
    op.print(os, flags);
  return key;
}

struct PootCPUOutlineLoops
    : poot::impl::PootCPUOutlineLoopsBase<PootCPUOutlineLoops> {
  using PootCPUOutlineLoopsBase::PootCPUOutlineLoopsBase;

  /// Moves loop nest `nest` into a new private function `name` before
  /// `func`, and calls it in its place (`call`; the call's results are the
  /// nest's). The constants (and constant
  /// globals' addresses) it uses are cloned in; every other value it uses
  /// from outside becomes an argument. Operands are remapped by walking the
  /// nest, never a value's use list: one index constant, one arena view or
  /// one argument serves every nest of a big step, and scanning its uses
  /// once per nest (as upstream's outlineSingleBlockRegion does) made this
  /// pass quadratic in the nests (1 s of a 3,000-op chain's 2.7 s compile).
  func::FuncOp outline(IRRewriter &rewriter, Operation *nest, func::FuncOp func,
                       StringRef name, func::CallOp &call) {
    SetVector<Value> captured;
    for (Region &region : nest->getRegions())
      getUsedValuesDefinedAbove(region, captured);
    // A loop's own bounds are operands too.
    for (Value operand : nest->getOperands())
      captured.insert(operand);

    MLIRContext *ctx = nest->getContext();
    SmallVector<Value> arguments;
    SmallVector<Operation *> cloned;
    for (Value value : captured) {
      Operation *def = value.getDefiningOp();
      if (def && (def->hasTrait<OpTrait::ConstantLike>() ||
                  isa<memref::GetGlobalOp>(def)))
        cloned.push_back(def);
      else
        arguments.push_back(value);
    }
    auto type = FunctionType::get(ctx, ValueRange(arguments).getTypes(),
                                  nest->getResultTypes());
    rewriter.setInsertionPoint(func);
    auto outlined = func::FuncOp::create(rewriter, nest->getLoc(), name, type);
    Block *entry = outlined.addEntryBlock();
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(arguments, entry->getArguments()))
      mapping.map(value, argument);
    rewriter.setInsertionPointToStart(entry);
    for (Operation *def : cloned)
      mapping.map(def->getResult(0), rewriter.clone(*def)->getResult(0));

    rewriter.setInsertionPoint(nest);
    call = func::CallOp::create(rewriter, nest->getLoc(), outlined, arguments);
    rewriter.replaceAllUsesWith(nest->getResults(), call.getResults());
    nest->moveBefore(entry, entry->end());
    rewriter.setInsertionPointToEnd(entry);
    func::ReturnOp::create(rewriter, nest->getLoc(), nest->getResults());
    nest->walk([&](Operation *op) {
      for (OpOperand &operand : op->getOpOperands())
        if (Value to = mapping.lookupOrNull(operand.get()))
          operand.set(to);
    });
    outlined.setPrivate();
    outlined->setAttr("passthrough",
                      ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));
    return outlined;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal())
        continue;
      SmallVector<Operation *> nests;
      for (Block &block : func.getBody())
        for (Operation &op : block)
          if (isLoopNest(&op))
            nests.push_back(&op);
      if ((int64_t)nests.size() < minLoops)
        continue;
      // What stays is glue: calls and descriptor plumbing in one huge block,
      // where the SelectionDAG instruction selector is superlinear (15 s of
      // 16 s for a 16-layer step) and nothing is left to optimize: optnone
      // gives it the fast instruction selector.
      func->setAttr("passthrough",
                    ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline"),
                                         StringAttr::get(ctx, "optnone")}));
      int64_t counter = 0;
      llvm::StringMap<func::FuncOp> seen;
      for (Operation *nest : nests) {
        std::string name =
            (func.getSymName() + "_loop" + std::to_string(counter++)).str();
        func::CallOp call;
        func::FuncOp outlined = outline(rewriter, nest, func, name, call);
        auto [it, inserted] = seen.try_emplace(structuralKey(outlined), outlined);
        if (!inserted) {
          call.setCallee(it->second.getSymName());
          rewriter.eraseOp(outlined);
        }
      }
    }
  }
};

} // namespace
