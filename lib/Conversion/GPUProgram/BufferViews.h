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

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_GPUPROGRAM_BUFFERVIEWS_H
