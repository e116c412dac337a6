//===- TensorBridge.h - flat buffers for the CPU forms of attention -*- C++ -*-===//
//
// The CPU forms of poot.attention (loops, or a call to an offloaded kernel)
// work on flat 1-D buffers inside a tensor-level function. These helpers
// bridge both ways so the CPU pipeline's one-shot bufferization takes over.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_TENSORBRIDGE_H
#define POOT_CONVERSION_ATTENTIONKERNELS_TENSORBRIDGE_H

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Builders.h"

namespace mlir::poot {

/// All dims of a rank-n shape in one reassociation group.
SmallVector<ReassociationIndices> flatReassociation(int64_t rank);

/// A read-only 1-D buffer view of a tensor operand.
Value flatReadBuffer(OpBuilder &b, Location loc, Value tensor);

/// The tensor of `type` whose row-major contents are the 1-D buffer `flat`
/// (restrict, writable: nothing else aliases it).
Value tensorFromFlat(OpBuilder &b, Location loc, Value flat,
                     RankedTensorType type);

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_TENSORBRIDGE_H
