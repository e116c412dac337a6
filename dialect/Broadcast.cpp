//===- Broadcast.cpp - numpy broadcasting rules for poot ops --------------===//
#include "dialect/Broadcast.h"

#include <algorithm>

using namespace mlir;

std::optional<llvm::SmallVector<int64_t>>
poot::broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Walk from the trailing dimension; a missing dimension acts as 1.
    int64_t a = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t b = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (a != b && a != 1 && b != 1)
      return std::nullopt;
    out[rank - 1 - i] = a == 1 ? b : a;
  }
  return out;
}

bool poot::broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t a = from[from.size() - 1 - i];
    int64_t b = to[to.size() - 1 - i];
    if (a != b && a != 1)
      return false;
  }
  return true;
}
