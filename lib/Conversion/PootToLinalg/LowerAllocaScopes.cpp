//===- LowerAllocaScopes.cpp - poot-cpu-lower-alloca-scopes ---------------===//
//
// convert-scf-to-openmp wraps every parallel loop body in a
// memref.alloca_scope (the body's allocas die with each iteration). The
// scope is lowered only by finalize-memref-to-llvm, and only while its
// region is one block, but the CPU pipeline lowers the loops inside it to
// control flow first. Lowered here instead, while the body is one block:
// llvm.intr.stacksave before it, llvm.intr.stackrestore after it, the body
// inlined in between (what the memref-to-llvm lowering emits).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPULOWERALLOCASCOPES
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {
struct PootCPULowerAllocaScopes
    : poot::impl::PootCPULowerAllocaScopesBase<PootCPULowerAllocaScopes> {
  void runOnOperation() override {
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation()->walk([&](memref::AllocaScopeOp op) { scopes.push_back(op); });
    IRRewriter rewriter(&getContext());
    // Innermost first (post-order walk), so an inner scope is gone before
    // its parent is inlined.
    for (memref::AllocaScopeOp scope : scopes) {
      Region &body = scope.getBodyRegion();
      if (!body.hasOneBlock()) {
        scope.emitError("poot-cpu-lower-alloca-scopes: the scope's region "
                        "has more than one block");
        return signalPassFailure();
      }
      Location loc = scope.getLoc();
      rewriter.setInsertionPoint(scope);
      auto ptr = LLVM::LLVMPointerType::get(&getContext());
      Value saved = LLVM::StackSaveOp::create(rewriter, loc, ptr);
      Block *block = &body.front();
      Operation *terminator = block->getTerminator();
      ValueRange results = terminator->getOperands();
      SmallVector<Value> yielded(results.begin(), results.end());
      rewriter.inlineBlockBefore(block, scope);
      rewriter.setInsertionPoint(scope);
      LLVM::StackRestoreOp::create(rewriter, loc, saved);
      rewriter.replaceOp(scope, yielded);
      rewriter.eraseOp(terminator);
    }
  }
};
} // namespace
