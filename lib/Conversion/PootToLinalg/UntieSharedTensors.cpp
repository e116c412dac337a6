//===- UntieSharedTensors.cpp - poot-untie-shared-tensors ------------------===//
//
// One-shot bufferization's analysis is superlinear in how many ops share one
// tensor value: CSE merges every `tensor.empty` of one type (so a chain of
// elementwise ops all name one destination) and every equal tensor constant
// (so every `x * 0.5` reads one `dense<0.5>`), and the in-place check of each
// write then walks all of those uses. A 1,000-op elementwise chain took 90 s,
// 10,000 ops over 200 s. Neither value has an identity worth sharing: an
// empty tensor has no contents, and constants of equal value bufferize to one
// global anyway. So each use gets its own op again.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTUNTIESHAREDTENSORS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// Gives every use of `op` but the first a clone of `op`, right before its
/// user (any operands of `op` dominate the original, so they dominate the
/// user too). A use list runs newest first, so its last use is the oldest:
/// in parsed or traced IR, the first in program order.
void untie(Operation *op, OpBuilder &b) {
  SmallVector<OpOperand *> uses =
      llvm::map_to_vector(op->getUses(), [](OpOperand &use) { return &use; });
  uses.pop_back();
  for (OpOperand *use : uses) {
    b.setInsertionPoint(use->getOwner());
    use->set(b.clone(*op)->getResult(0));
  }
}

struct UntieSharedTensors
    : poot::impl::PootUntieSharedTensorsBase<UntieSharedTensors> {
  void runOnOperation() override {
    SmallVector<Operation *> shared;
    getOperation()->walk([&](Operation *op) {
      bool tensorConstant =
          isa<arith::ConstantOp>(op) && isa<RankedTensorType>(op->getResult(0).getType());
      if ((isa<tensor::EmptyOp>(op) || tensorConstant) && !op->hasOneUse() &&
          !op->use_empty())
        shared.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : shared)
      untie(op, b);
  }
};

} // namespace
