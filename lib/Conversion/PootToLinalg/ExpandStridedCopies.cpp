//===- ExpandStridedCopies.cpp - poot-cpu-expand-strided-copies -----------===//
//
// The CPU artifact links libc and libm only; a strided memref.copy would call
// MLIR's runtime `memrefCopy`. Turning it into linalg.copy gives loops.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUEXPANDSTRIDEDCOPIES
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {
struct PootCPUExpandStridedCopies
    : poot::impl::PootCPUExpandStridedCopiesBase<PootCPUExpandStridedCopies> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<memref::CopyOp> strided;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = cast<MemRefType>(copy.getSource().getType());
      auto target = cast<MemRefType>(copy.getTarget().getType());
      if (every || !source.getLayout().isIdentity() ||
          !target.getLayout().isIdentity())
        strided.push_back(copy);
    });
    for (memref::CopyOp copy : strided) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
