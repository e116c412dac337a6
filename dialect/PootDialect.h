//===- PootDialect.h - the poot dialect ---------------------------*- C++ -*-===//
//
// One header for everything the dialect defines: the dialect, its enums and
// attributes, and its ops (primitives and fused attention ops).
//
//===----------------------------------------------------------------------===//

#ifndef POOT_DIALECT_POOTDIALECT_H
#define POOT_DIALECT_POOTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferIntRangeInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace mlir::poot {
/// True when every dimension of the shaped, static `type` is at least 1 and
/// its element count fits int64 (the rule of the dialect's tensor
/// constraints, PootBase.td): no empty tensors, and no shape whose
/// getNumElements() overflows.
inline bool isNonEmptyCountableShape(Type type) {
  int64_t count = 1;
  for (int64_t d : cast<ShapedType>(type).getShape()) {
    if (d < 1 || count > std::numeric_limits<int64_t>::max() / d)
      return false;
    count *= d;
  }
  return true;
}
} // namespace mlir::poot

#include "dialect/PootDialect.h.inc"
#include "dialect/PootEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/PootAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialect/PootOps.h.inc"

#endif // POOT_DIALECT_POOTDIALECT_H
