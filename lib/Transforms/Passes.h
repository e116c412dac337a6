//===- Passes.h - poot -> poot passes -----------------------------*- C++ -*-===//
#ifndef POOT_LIB_TRANSFORMS_PASSES_H
#define POOT_LIB_TRANSFORMS_PASSES_H

#include "dialect/PootDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::poot {

#define GEN_PASS_DECL
#include "lib/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Transforms/Passes.h.inc"

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PASSES_H
