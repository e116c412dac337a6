//===- ArenaPlacement.h - temporaries placed in one arena -------*- C++ -*-===//
//
// A step's temporaries live in one arena: each gets a byte offset by first
// fit, in allocation order, over its live range (the positions of its
// allocation and its last use), so temporaries whose lives do not overlap
// share bytes and the arena is about the peak of the live bytes. The one
// owner of this placement: the GPU program (poot-gpu-serialize-program) and
// the CPU step (poot-cpu-plan-arena) both use it.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ARENAPLACEMENT_H
#define POOT_CONVERSION_ARENAPLACEMENT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace mlir::poot {

/// One temporary: its size and live range in; its offset out.
struct ArenaSlot {
  int64_t bytes = 0;
  int64_t first = 0; // position of the allocation
  int64_t last = 0;  // position of the last use (inclusive)
  int64_t offset = 0;
};

/// `bytes` rounded up to a multiple of `alignment`.
inline int64_t alignedBytes(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// Place every slot (in the order given) at the lowest `alignment`-aligned
/// offset free over its whole live range; returns the arena's size.
inline int64_t placeFirstFit(llvm::MutableArrayRef<ArenaSlot> slots,
                             int64_t alignment) {
  int64_t arena = 0;
  llvm::SmallVector<const ArenaSlot *> placed;
  for (ArenaSlot &slot : slots) {
    int64_t size = alignedBytes(slot.bytes, alignment);
    llvm::SmallVector<std::pair<int64_t, int64_t>> busy;
    for (const ArenaSlot *other : placed)
      if (other->first <= slot.last && slot.first <= other->last)
        busy.push_back(
            {other->offset, other->offset + alignedBytes(other->bytes, alignment)});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + size <= lo)
        break;
      offset = std::max(offset, hi);
    }
    slot.offset = offset;
    arena = std::max(arena, offset + size);
    placed.push_back(&slot);
  }
  return arena;
}

} // namespace mlir::poot

#endif // POOT_CONVERSION_ARENAPLACEMENT_H
