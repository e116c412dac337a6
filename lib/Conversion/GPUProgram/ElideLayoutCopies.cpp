//===- ElideLayoutCopies.cpp - poot-gpu-elide-layout-copies ----------------===//
//
// A copy loop that leaves every element at its flat offset is a reshape
// done the slow way: a kernel and a pass over the values. The destination
// becomes a view of the source instead (see Passes.td for the conditions).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/BufferViews.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <map>

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUELIDELAYOUTCOPIES
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// An index as a linear function of the loop's induction variables:
/// `constant + sum(coefficients[iv] * iv)`.
struct Linear {
  std::map<unsigned, int64_t> coefficients; // by induction variable
  int64_t constant = 0;

  void add(const Linear &other, int64_t scale) {
    for (auto [iv, c] : other.coefficients)
      coefficients[iv] += scale * c;
    constant += scale * other.constant;
    for (auto it = coefficients.begin(); it != coefficients.end();)
      it = it->second == 0 ? coefficients.erase(it) : std::next(it);
  }
  bool operator==(const Linear &other) const {
    return coefficients == other.coefficients && constant == other.constant;
  }
};

/// `index` as a linear function of `loop`'s induction variables: an
/// induction variable, a constant, or a disjoint `affine.linearize_index`
/// of such with a static basis; nothing otherwise.
std::optional<Linear> linearOf(Value index, scf::ParallelOp loop) {
  Linear out;
  if (std::optional<int64_t> c = getConstantIntValue(index)) {
    out.constant = *c;
    return out;
  }
  auto ivs = loop.getInductionVars();
  if (auto it = llvm::find(ivs, index); it != ivs.end()) {
    out.coefficients[it - ivs.begin()] = 1;
    return out;
  }
  auto linear = index.getDefiningOp<affine::AffineLinearizeIndexOp>();
  if (!linear || !linear.getDynamicBasis().empty())
    return std::nullopt;
  ArrayRef<int64_t> basis = linear.getStaticBasis();
  ValueRange parts = linear.getMultiIndex();
  // With an outer bound the basis has one entry per part, else one fewer.
  size_t skip = linear.hasOuterBound() ? 1 : 0;
  for (auto [i, part] : llvm::enumerate(parts)) {
    std::optional<Linear> term = linearOf(part, loop);
    if (!term)
      return std::nullopt;
    int64_t stride = 1;
    for (size_t j = i + skip; j < basis.size(); ++j)
      stride *= basis[j];
    out.add(*term, stride);
  }
  return out;
}

/// The flat element offset of `indices` into `type` (row-major, identity
/// layout), as a linear function of `loop`'s induction variables.
std::optional<Linear> flatOffset(ValueRange indices, MemRefType type,
                                 scf::ParallelOp loop) {
  Linear out;
  int64_t stride = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    std::optional<Linear> term = linearOf(indices[d], loop);
    if (!term)
      return std::nullopt;
    out.add(*term, stride);
    stride *= type.getDimSize(d);
  }
  return out;
}

/// Whether the store's indices cover every element of its buffer once:
/// each an induction variable running over exactly its dimension (from 0
/// in steps of 1), or 0 in a unit dimension, no induction variable twice,
/// every induction variable used.
bool coversBuffer(memref::StoreOp store, scf::ParallelOp loop) {
  MemRefType type = store.getMemRefType();
  SmallVector<bool> used(loop.getNumLoops(), false);
  for (auto [d, index] : llvm::enumerate(store.getIndices())) {
    if (std::optional<int64_t> c = getConstantIntValue(index)) {
      if (*c != 0 || type.getDimSize(d) != 1)
        return false;
      continue;
    }
    auto ivs = loop.getInductionVars();
    auto it = llvm::find(ivs, index);
    if (it == ivs.end())
      return false;
    unsigned i = it - ivs.begin();
    if (used[i] || getConstantIntValue(loop.getLowerBound()[i]) != 0 ||
        getConstantIntValue(loop.getStep()[i]) != 1 ||
        getConstantIntValue(loop.getUpperBound()[i]) != type.getDimSize(d))
      return false;
    used[i] = true;
  }
  return llvm::all_of(used, [](bool u) { return u; });
}

/// A static, identity-layout memref type.
bool plain(MemRefType type) {
  return type.hasStaticShape() && type.getLayout().isIdentity();
}

/// Whether any user of `buffer` (or of a view of it) other than `except`
/// lies after `op` in `block`.
bool usedAfter(Value buffer, Operation *op, Operation *except, Block &block) {
  for (Value view : poot::viewsOf(buffer))
    for (Operation *user : view.getUsers()) {
      Operation *top = poot::topLevel(user, block);
      if (!top)
        return true;
      if (top != except && op->isBeforeInBlock(top))
        return true;
    }
  return false;
}

/// `v` reshaped to `type` (same element type and count, identity layouts):
/// collapsed to one dimension, then expanded.
Value reshape(OpBuilder &b, Location loc, Value v, MemRefType type) {
  auto from = cast<MemRefType>(v.getType());
  if (from == type)
    return v;
  if (from.getRank() != 1) {
    ReassociationIndices all;
    for (int64_t d = 0; d < from.getRank(); ++d)
      all.push_back(d);
    v = memref::CollapseShapeOp::create(b, loc, v,
                                        ArrayRef<ReassociationIndices>{all});
  }
  if (type.getRank() == 1)
    return v;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::ExpandShapeOp::create(b, loc, type.getShape(), v,
                                       ArrayRef<ReassociationIndices>{all});
}

struct ElideLayoutCopies
    : poot::impl::PootGPUElideLayoutCopiesBase<ElideLayoutCopies> {
  /// Elides `loop` when it is such a copy; whether it did.
  bool elide(scf::ParallelOp loop, Block &block) {
    Block *body = loop.getBody();
    memref::LoadOp load;
    memref::StoreOp store;
    for (Operation &op : body->without_terminator()) {
      if (auto l = dyn_cast<memref::LoadOp>(op)) {
        if (load)
          return false;
        load = l;
      } else if (auto s = dyn_cast<memref::StoreOp>(op)) {
        if (store)
          return false;
        store = s;
      } else if (!isa<affine::AffineLinearizeIndexOp, arith::ConstantOp>(op)) {
        return false;
      }
    }
    if (!load || !store || store.getValueToStore() != load.getResult())
      return false;
    Value src = load.getMemRef(), dst = store.getMemRef();
    MemRefType srcType = load.getMemRefType(), dstType = store.getMemRefType();
    auto dstAlloc = dst.getDefiningOp<memref::AllocOp>();
    // The source an allocation too: a step argument may be donated state
    // or a view of another argument, which the destination must not alias.
    if (!dstAlloc || !src.getDefiningOp<memref::AllocOp>() || src == dst ||
        dstAlloc->getBlock() != &block || !plain(srcType) || !plain(dstType) ||
        srcType.getElementType() != dstType.getElementType() ||
        srcType.getNumElements() != dstType.getNumElements() ||
        !coversBuffer(store, loop))
      return false;
    std::optional<Linear> from = flatOffset(load.getIndices(), srcType, loop);
    std::optional<Linear> to = flatOffset(store.getIndices(), dstType, loop);
    if (!from || !to || !(*from == *to))
      return false;
    // They may share memory only if the source is done with once copied
    // and the destination was not touched before.
    if (usedAfter(src, loop, loop, block) ||
        llvm::any_of(dst.getUsers(), [&](Operation *user) {
          Operation *top = poot::topLevel(user, block);
          return top != loop && (!top || top->isBeforeInBlock(loop) ||
                                 isa<func::ReturnOp, memref::DeallocOp>(top));
        }))
      return false;
    OpBuilder b(loop);
    Value view = reshape(b, loop.getLoc(), src, dstType);
    loop.erase();
    dstAlloc.getResult().replaceAllUsesWith(view);
    dstAlloc.erase();
    return true;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &block = func.getBody().front();
    for (auto loop : llvm::to_vector(block.getOps<scf::ParallelOp>()))
      (void)elide(loop, block);
  }
};

} // namespace
