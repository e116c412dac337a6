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

#include "lib/Conversion/GPUProgram/BufferViews.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUFOLDFILLS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using mlir::poot::topLevel;
using mlir::poot::viewsOf;

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

/// The extent an index covers over `loop`'s iterations, each value of
/// [0, extent) exactly once: an induction variable from 0 in steps of 1, or
/// a disjoint `affine.linearize_index` of such variables whose basis is
/// exactly their trip counts (a folded view's flat index over (head, d)).
/// The variables used are appended to `used`; nothing for anything else.
std::optional<int64_t> coverage(Value index, scf::ParallelOp loop,
                                SmallVectorImpl<unsigned> &used) {
  auto tripOf = [&](Value v) -> std::optional<int64_t> {
    auto ivs = llvm::to_vector(loop.getInductionVars());
    auto it = llvm::find(ivs, v);
    if (it == ivs.end())
      return std::nullopt;
    unsigned d = it - ivs.begin();
    if (getConstantIntValue(loop.getLowerBound()[d]) != 0 ||
        getConstantIntValue(loop.getStep()[d]) != 1)
      return std::nullopt;
    used.push_back(d);
    return getConstantIntValue(loop.getUpperBound()[d]);
  };
  if (std::optional<int64_t> trip = tripOf(index))
    return trip;
  auto linear = index.getDefiningOp<affine::AffineLinearizeIndexOp>();
  if (!linear || !linear.getDisjoint() || !linear.hasOuterBound() ||
      !linear.getDynamicBasis().empty())
    return std::nullopt;
  int64_t extent = 1;
  for (auto [v, size] :
       llvm::zip(linear.getMultiIndex(), linear.getStaticBasis())) {
    std::optional<int64_t> trip = tripOf(v);
    if (!trip || *trip != size)
      return std::nullopt;
    extent *= size;
  }
  return extent;
}

/// Whether indices `a` over loop `la` and `b` over loop `lb` range over the
/// same elements, each once: position by position the same constant or
/// covering terms of the same extent, every induction variable of either
/// loop used exactly once.
bool sameElements(ValueRange a, scf::ParallelOp la, ValueRange b,
                  scf::ParallelOp lb) {
  if (a.size() != b.size())
    return false;
  SmallVector<unsigned> usedA, usedB;
  for (auto [x, y] : llvm::zip(a, b)) {
    std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
    if (cx || cy) {
      if (cx != cy)
        return false;
      continue;
    }
    std::optional<int64_t> ex = coverage(x, la, usedA);
    std::optional<int64_t> ey = coverage(y, lb, usedB);
    if (!ex || !ey || *ex != *ey)
      return false;
  }
  auto eachOnce = [](SmallVector<unsigned> used, unsigned dims) {
    llvm::sort(used);
    return used.size() == dims && llvm::equal(used, llvm::seq<unsigned>(0, dims));
  };
  return eachOnce(usedA, la.getNumLoops()) && eachOnce(usedB, lb.getNumLoops());
}

struct FoldFills : poot::impl::PootGPUFoldFillsBase<FoldFills> {
  /// Folds `fill` into the first later loop that uses its buffer, when
  /// that loop is a reduction over the same iteration space starting every
  /// accumulator from the filled element and storing it back.
  bool fold(scf::ParallelOp fill, memref::StoreOp fillStore, Block &block) {
    Value buffer = fillStore.getMemRef();
    // The buffer and every view of it (views could alias what we track).
    SmallVector<Value> aliases = viewsOf(buffer);
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
    if (!reduce)
      return false;
    // Inside it: only the buffer itself, over the filled elements (each
    // once: the same box, through its own induction variables or a flat
    // index over them), loaded once at the top of the body before anything
    // stores it, and stored at the top of the body.
    memref::LoadOp init;
    SmallVector<memref::StoreOp> stores;
    bool ok = true;
    for (Value alias : aliases)
      for (Operation *user : alias.getUsers()) {
        if (topLevel(user, block) != reduce)
          continue;
        if (alias != buffer || user->getBlock() != reduce.getBody()) {
          ok = false;
          continue;
        }
        if (auto load = dyn_cast<memref::LoadOp>(user)) {
          ok &= !init && sameElements(load.getIndices(), reduce,
                                     fillStore.getIndices(), fill);
          init = load;
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          ok &= store.getMemRef() == buffer &&
                sameElements(store.getIndices(), reduce, fillStore.getIndices(),
                             fill);
          stores.push_back(store);
        } else {
          ok = false;
        }
      }
    // Each iteration stores the element it loaded (not a neighbour's).
    if (!ok || !init || stores.empty() ||
        llvm::any_of(stores, [&](memref::StoreOp store) {
          return !llvm::equal(store.getIndices(), init.getIndices());
        }))
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

  /// A fill of one element (a top-level store of a constant at constant
  /// indices: a split reduction's accumulator for its final sum)
  /// moves down to right before the first top-level op that touches its
  /// buffer when that op is a host loop (the final sum):
  /// poot-gpu-host-to-parallel then runs both in one one-thread kernel,
  /// not a kernel for the store alone.
  void sinkScalarFill(memref::StoreOp fill, Block &block) {
    Value buffer = fill.getMemRef();
    if (!buffer.getDefiningOp<memref::AllocOp>() ||
        fill.getMemRefType().getNumElements() != 1 ||
        !matchPattern(fill.getValueToStore(), m_Constant()) ||
        !llvm::all_of(fill.getIndices(),
                      [](Value i) { return getConstantIntValue(i).has_value(); }))
      return;
    Operation *next = nullptr;
    for (Value alias : viewsOf(buffer))
      for (Operation *user : alias.getUsers()) {
        Operation *top = topLevel(user, block);
        if (!top || top == fill || top->isBeforeInBlock(fill) ||
            isa<ViewLikeOpInterface>(top))
          continue;
        if (!next || top->isBeforeInBlock(next))
          next = top;
      }
    if (isa_and_nonnull<scf::ForOp>(next))
      fill->moveBefore(next);
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
    for (auto store : llvm::to_vector(block.getOps<memref::StoreOp>()))
      sinkScalarFill(store, block);
  }
};

} // namespace
