//===- CollectiveCalls.h - how a collective reaches the host program -*- C++ -*-===//
//
// poot-collectives-to-calls marks the call each `poot.all_reduce` becomes
// in a GPU host program; poot-gpu-serialize-program turns the marked call
// into the program's `all_reduce` command. The mark is named here, once.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_CONVERSION_POOTTOLINALG_COLLECTIVECALLS_H
#define POOT_LIB_CONVERSION_POOTTOLINALG_COLLECTIVECALLS_H

#include "llvm/ADT/StringRef.h"

namespace mlir::poot {

/// On a GPU host program's all-reduce call: `{site, dtype}`.
inline constexpr llvm::StringLiteral kAllReduceCallAttr = "poot.all_reduce";

} // namespace mlir::poot

#endif // POOT_LIB_CONVERSION_POOTTOLINALG_COLLECTIVECALLS_H
