//===- TensorBridge.cpp - flat buffers for the CPU forms of attention -----===//
#include "lib/Conversion/AttentionKernels/TensorBridge.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

SmallVector<ReassociationIndices> poot::flatReassociation(int64_t rank) {
  ReassociationIndices all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  return {all};
}

Value poot::flatReadBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getRank() != 1)
    tensor = tensor::CollapseShapeOp::create(b, loc, tensor,
                                             flatReassociation(type.getRank()));
  auto flat = cast<RankedTensorType>(tensor.getType());
  auto memrefType = MemRefType::get(flat.getShape(), flat.getElementType());
  return bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                           /*read_only=*/true);
}

Value poot::tensorFromFlat(OpBuilder &b, Location loc, Value flat,
                           RankedTensorType type) {
  Value tensor = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get({type.getNumElements()}, type.getElementType()),
      flat, /*restrict=*/true, /*writable=*/true);
  if (type.getRank() == 1)
    return tensor;
  return tensor::ExpandShapeOp::create(b, loc, type, tensor,
                                       flatReassociation(type.getRank()));
}
