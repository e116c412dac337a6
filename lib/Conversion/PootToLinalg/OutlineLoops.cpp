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
        // Wrap the nest in an scf.execute_region, whose one-block region
        // upstream's outlineSingleBlockRegion turns into a function.
        rewriter.setInsertionPoint(nest);
        auto region = scf::ExecuteRegionOp::create(rewriter, nest->getLoc(),
                                                   nest->getResultTypes());
        Block *body = rewriter.createBlock(&region.getRegion());
        rewriter.setInsertionPointToStart(body);
        rewriter.replaceAllUsesWith(nest->getResults(), region.getResults());
        nest->moveBefore(body, body->end());
        rewriter.setInsertionPointToEnd(body);
        scf::YieldOp::create(rewriter, nest->getLoc(), nest->getResults());

        // Constants used inside are cloned in, not passed as arguments.
        SetVector<Value> captured;
        getUsedValuesDefinedAbove(region.getRegion(), captured);
        rewriter.setInsertionPointToStart(body);
        for (Value value : captured) {
          Operation *def = value.getDefiningOp();
          if (!def || !def->hasTrait<OpTrait::ConstantLike>())
            continue;
          Operation *clone = rewriter.clone(*def);
          replaceAllUsesInRegionWith(value, clone->getResult(0),
                                     region.getRegion());
        }

        std::string name =
            (func.getSymName() + "_loop" + std::to_string(counter++)).str();
        rewriter.setInsertionPoint(region);
        func::CallOp call;
        FailureOr<func::FuncOp> outlined = outlineSingleBlockRegion(
            rewriter, nest->getLoc(), region.getRegion(), name, &call);
        if (failed(outlined)) {
          region.emitError("poot-cpu-outline-loops: could not outline");
          return signalPassFailure();
        }
        outlined->setPrivate();
        outlined->getOperation()->setAttr(
            "passthrough", ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));
        std::string key = structuralKey(*outlined);
        auto [it, inserted] = seen.try_emplace(key, *outlined);
        if (!inserted) {
          call.setCallee(it->second.getSymName());
          rewriter.eraseOp(*outlined);
        }
        // The region now holds only the call: inline it in place.
        Block *callBlock = &region.getRegion().front();
        Operation *yield = callBlock->getTerminator();
        SmallVector<Value> results(yield->getOperands());
        rewriter.inlineBlockBefore(callBlock, region);
        rewriter.replaceOp(region, results);
        rewriter.eraseOp(yield);
      }
    }
  }
};

} // namespace
