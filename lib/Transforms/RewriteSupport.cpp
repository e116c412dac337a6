//===- RewriteSupport.cpp - what the fusing rewrites share ------------------===//

#include "lib/Transforms/RewriteSupport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Threading.h"

using namespace mlir;

LogicalResult poot::verifyQuietly(Operation *op, std::string &message) {
  uint64_t thread = llvm::get_threadid();
  ScopedDiagnosticHandler capture(op->getContext(), [&](Diagnostic &d) {
    if (llvm::get_threadid() != thread)
      return failure();
    if (message.empty())
      message = d.str();
    return success();
  });
  return verify(op, /*verifyRecursively=*/false);
}

void poot::eraseDeadFrom(RewriterBase &rewriter, ArrayRef<Operation *> roots) {
  llvm::SetVector<Operation *> worklist(roots.begin(), roots.end());
  llvm::DenseSet<Operation *> erased;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (erased.contains(op) || !isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (!erased.contains(def))
          worklist.insert(def);
    erased.insert(op);
    rewriter.eraseOp(op);
  }
}
