//===- FoldFills.cpp - poot-gpu-fold-fills ---------------------------------===//
//
// Every reduction of a whole step starts from a filled buffer: linalg.fill
// lowers to a kernel of its own that writes the neutral value, and the
// reduction's kernel then loads it back as each accumulator's start. When
// the reduction covers exactly the filled elements, the fill is one launch
// and one pass over the buffer too many: the reduction can start from the
// fill's value, and the fill goes.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUFOLDFILLS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// A fill: a top-level loop whose body is one store of a value defined
/// outside it, at indices that are its induction variables or constants.
memref::StoreOp fillStore(scf::ParallelOp loop) {
  Block *body = loop.getBody();
  if (!llvm::hasSingleElement(body->without_terminator()))
    return {};
  auto store = dyn_cast<memref::StoreOp>(body->front());
  if (!store || !loop.isDefinedOutsideOfLoop(store.getValueToStore()) ||
      !loop.isDefinedOutsideOfLoop(store.getMemRef()))
    return {};
  for (Value index : store.getIndices())
    if (!getConstantIntValue(index) &&
        !llvm::is_contained(loop.getInductionVars(), index))
      return {};
  return store;
}

/// Whether `a` (in loop `la`) and `b` (in loop `lb`) name the same element
/// in corresponding iterations: the same constants, or corresponding
/// induction variables.
bool sameIndices(ValueRange a, scf::ParallelOp la, ValueRange b,
                 scf::ParallelOp lb) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b)) {
    std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
    if (cx || cy) {
      if (cx != cy)
        return false;
      continue;
    }
    auto ix = llvm::find(la.getInductionVars(), x);
    auto iy = llvm::find(lb.getInductionVars(), y);
    if (ix == la.getInductionVars().end() || iy == lb.getInductionVars().end() ||
        ix - la.getInductionVars().begin() != iy - lb.getInductionVars().begin())
      return false;
  }
  return true;
}

bool sameSpace(scf::ParallelOp a, scf::ParallelOp b) {
  auto constants = [](ValueRange vs) {
    SmallVector<std::optional<int64_t>> out;
    for (Value v : vs)
      out.push_back(getConstantIntValue(v));
    return out;
  };
  for (auto [x, y] : {std::pair{a.getLowerBound(), b.getLowerBound()},
                      std::pair{a.getUpperBound(), b.getUpperBound()},
                      std::pair{a.getStep(), b.getStep()}}) {
    auto cx = constants(x), cy = constants(y);
    if (cx != cy || llvm::is_contained(cx, std::nullopt))
      return false;
  }
  return true;
}

/// The top-level ancestor of `op` in `block`.
Operation *topLevel(Operation *op, Block &block) {
  while (op && op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

struct FoldFills : poot::impl::PootGPUFoldFillsBase<FoldFills> {
  /// Folds `fill` into the first later loop that uses its buffer, when
  /// that loop is a reduction over the same iteration space starting every
  /// accumulator from the filled element and storing it back.
  bool fold(scf::ParallelOp fill, memref::StoreOp fillStore, Block &block) {
    Value buffer = fillStore.getMemRef();
    // The buffer and every view of it (views could alias what we track).
    SmallVector<Value> aliases{buffer};
    for (unsigned i = 0; i < aliases.size(); ++i)
      for (Operation *user : aliases[i].getUsers())
        if (isa<ViewLikeOpInterface>(user))
          for (Value r : user->getResults())
            aliases.push_back(r);
    // The first other top-level user of any of them must be the reduction.
    Operation *next = nullptr;
    for (Value alias : aliases)
      for (Operation *user : alias.getUsers()) {
        Operation *top = topLevel(user, block);
        if (top == fill || !top || top->isBeforeInBlock(fill))
          continue;
        if (!next || top->isBeforeInBlock(next))
          next = top;
      }
    auto reduce = dyn_cast_or_null<scf::ParallelOp>(next);
    if (!reduce || !sameSpace(fill, reduce))
      return false;
    // Inside it: only the buffer itself, at the filled indices, loaded
    // once at the top of the body before anything stores it, and stored
    // at the top of the body.
    memref::LoadOp init;
    bool stored = false, ok = true;
    for (Value alias : aliases)
      for (Operation *user : alias.getUsers()) {
        if (topLevel(user, block) != reduce)
          continue;
        if (alias != buffer || user->getBlock() != reduce.getBody()) {
          ok = false;
          continue;
        }
        if (auto load = dyn_cast<memref::LoadOp>(user)) {
          ok &= !init && sameIndices(load.getIndices(), reduce,
                                     fillStore.getIndices(), fill);
          init = load;
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          ok &= store.getMemRef() == buffer &&
                sameIndices(store.getIndices(), reduce, fillStore.getIndices(),
                            fill);
          stored = true;
        } else {
          ok = false;
        }
      }
    if (!ok || !init || !stored)
      return false;
    for (Operation &op : *reduce.getBody()) {
      if (&op == init.getOperation())
        break;
      if (auto store = dyn_cast<memref::StoreOp>(op))
        if (store.getMemRef() == buffer)
          return false;
    }
    init.getResult().replaceAllUsesWith(fillStore.getValueToStore());
    init.erase();
    fill.erase();
    return true;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &block = func.getBody().front();
    SmallVector<scf::ParallelOp> loops =
        llvm::to_vector(block.getOps<scf::ParallelOp>());
    for (scf::ParallelOp loop : loops)
      if (memref::StoreOp store = fillStore(loop))
        (void)fold(loop, store, block);
  }
};

} // namespace
