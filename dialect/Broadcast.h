//===- Broadcast.h - numpy broadcasting rules for poot ops --------*- C++ -*-===//
#ifndef POOT_DIALECT_BROADCAST_H
#define POOT_DIALECT_BROADCAST_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace mlir::poot {

/// The numpy broadcast of two static shapes (trailing alignment, each pair
/// equal or one of them 1), or nullopt when they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// True when `from` broadcasts to exactly `to` (numpy broadcast_to).
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

} // namespace mlir::poot

#endif // POOT_DIALECT_BROADCAST_H
