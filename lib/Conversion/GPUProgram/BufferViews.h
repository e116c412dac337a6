//===- BufferViews.h - which buffer a memref views, and aliasing -*- C++ -*-===//
//
// The whole-step GPU passes that move work between kernels (an elementwise
// consumer into its producer's kernel, a matmul's fill into its
// accumulators) ask the same two questions of memref values after
// bufferization: which allocation or argument does this value view, and
// may two values share elements. One answer for all of them, here.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_GPUPROGRAM_BUFFERVIEWS_H
#define POOT_LIB_CONVERSION_GPUPROGRAM_BUFFERVIEWS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::poot {

/// The allocation or argument `v` views (through every view-like op).
inline Value viewedBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Whether two memrefs may share elements: only distinct allocations (or an
/// allocation and an argument) are known apart -- a step's arguments may be
/// views of one donated buffer.
inline bool mayAlias(Value a, Value b) {
  Value x = viewedBuffer(a), y = viewedBuffer(b);
  if (x == y)
    return true;
  return !x.getDefiningOp<memref::AllocOp>() &&
         !y.getDefiningOp<memref::AllocOp>();
}

/// `buffer` and every view of it, through views of views.
inline SmallVector<Value> viewsOf(Value buffer) {
  SmallVector<Value> views{buffer};
  for (unsigned i = 0; i < views.size(); ++i)
    for (Operation *user : views[i].getUsers())
      if (isa<ViewLikeOpInterface>(user))
        llvm::append_range(views, user->getResults());
  return views;
}

/// The ancestor of `op` that lies in `block` (a step's top level), or null.
inline Operation *topLevel(Operation *op, Block &block) {
  while (op && op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_BUFFERVIEWS_H
