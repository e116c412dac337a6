//===- RewriteSupport.h - what the fusing rewrites share ---------*- C++ -*-===//
//
// The attention rewrite (AttentionRewrite.cpp) and the selection pass
// (SelectBlocks.cpp) replace a matched chain by one fused op the same way:
// the op is verified quietly (its verifier is the typing rule), a chain is
// replaced only by an op that verifies, and whatever it used exclusively is
// erased with it. These are those steps.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_TRANSFORMS_REWRITESUPPORT_H
#define POOT_LIB_TRANSFORMS_REWRITESUPPORT_H

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace mlir::poot {

/// Records erased ops so a pass never touches a candidate that an earlier
/// rewrite removed.
struct EraseTracker : RewriterBase::Listener {
  llvm::DenseSet<Operation *> erased;
  void notifyOperationErased(Operation *op) override { erased.insert(op); }
};

/// Verifies `op` alone, capturing (not reporting) its first diagnostic in
/// `message`. Only this thread's diagnostics: functions are rewritten in
/// parallel, and another function's remarks must reach their own handler.
LogicalResult verifyQuietly(Operation *op, std::string &message);

/// Erases `roots` and, transitively, every op they used that is left dead.
void eraseDeadFrom(RewriterBase &rewriter, ArrayRef<Operation *> roots);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_REWRITESUPPORT_H
