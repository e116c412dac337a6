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

#include "dialect/PootDialect.h.inc"
#include "dialect/PootEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/PootAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialect/PootOps.h.inc"

#endif // POOT_DIALECT_POOTDIALECT_H
