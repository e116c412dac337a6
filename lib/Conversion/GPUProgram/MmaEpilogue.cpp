//===- MmaEpilogue.cpp - elementwise consumers run in an mma kernel -------===//
//
// See MmaEpilogue.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/MmaEpilogue.h"
#include "lib/Conversion/GPUProgram/BufferViews.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

/// Whether `access` numbers the iterations of `ranges` in row-major order
/// from 0 (the last loop fastest): iteration L reads element L.
bool rowMajor(const LinearAccess &access, ArrayRef<int64_t> ranges) {
  if (access.offset != 0)
    return false;
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(ranges.size()) - 1; d >= 0; --d) {
    if (access.coefficients[d] != stride)
      return false;
    stride *= ranges[d];
  }
  return true;
}

/// A value the kernel can have: the payload's own, or a constant (cloned).
bool inPayloadOrConstant(Value v, Region &payload) {
  return v.getParentRegion() == &payload || v.getDefiningOp<arith::ConstantOp>();
}

/// Scalar and pure, blind to its init, nothing from outside but constants.
bool scalarPayload(linalg::GenericOp g) {
  Region &region = g.getRegion();
  Block &body = region.front();
  for (BlockArgument init : body.getArguments().drop_front(g.getNumDpsInputs()))
    if (!init.use_empty())
      return false;
  for (Operation &inner : body) {
    if (&inner != body.getTerminator() &&
        (inner.getNumRegions() || !isPure(&inner) || isa<linalg::IndexOp>(inner)))
      return false;
    for (Value v : inner.getOperands())
      if (!inPayloadOrConstant(v, region))
        return false;
  }
  return true;
}

/// The ops that use `buffer`: the views of it (views of views too, each
/// after the one it views) and every other user of it or of those views.
struct BufferUses {
  SmallVector<Operation *> views, others;
};
BufferUses usesThroughViews(Value buffer) {
  BufferUses uses;
  SmallVector<Value> work{buffer};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (view && view.getViewSource() == v) {
        uses.views.push_back(user);
        work.push_back(user->getResult(0));
      } else {
        uses.others.push_back(user);
      }
    }
  }
  return uses;
}

/// Whether every use of `buffer` (through views) is one of `allowed` or a
/// deallocation.
bool onlyUsedBy(Value buffer, ArrayRef<Operation *> allowed) {
  return llvm::all_of(usesThroughViews(buffer).others, [&](Operation *user) {
    return llvm::is_contained(allowed, user) || isa<memref::DeallocOp>(user);
  });
}

} // namespace

std::optional<MmaEpilogue>
mlir::poot::matchMmaEpilogue(linalg::LinalgOp op, Value out,
                             int64_t sumsCount, ArrayRef<Value> reads,
                             ArrayRef<Operation *> stale) {
  MmaEpilogue e;
  // Fills of other buffers (the next matmul's sums) stay where they are.
  SmallVector<linalg::FillOp> fills;
  Operation *next = op->getNextNode();
  for (; next && !isa<linalg::GenericOp>(next); next = next->getNextNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(next);
        fill && fill.hasPureBufferSemantics()) {
      fills.push_back(fill);
      continue;
    }
    if (next->getNumRegions() > 0 ||
        next->hasTrait<OpTrait::IsTerminator>() ||
        !(isPure(next) || isa<memref::AllocOp, ViewLikeOpInterface>(next)))
      return std::nullopt;
    e.between.push_back(next);
  }
  auto g = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!g || !g.hasPureBufferSemantics() || g.getNumDpsInits() != 1 ||
      g.getNumReductionLoops() != 0 || !scalarPayload(g))
    return std::nullopt;
  e.op = g;
  e.ranges = g.getStaticLoopRanges();
  int64_t count = 1;
  for (int64_t r : e.ranges) {
    if (ShapedType::isDynamic(r))
      return std::nullopt;
    count *= r;
  }
  // The sums fill their whole allocation, and the consumer visits each once.
  Value sums = viewedBuffer(out);
  auto sumsType = dyn_cast<MemRefType>(sums.getType());
  if (!sums.getDefiningOp<memref::AllocOp>() || !sumsType ||
      !sumsType.hasStaticShape() || sumsType.getNumElements() != sumsCount ||
      count != sumsCount)
    return std::nullopt;

  OpOperand *init = g.getDpsInitOperand(0);
  Value result = init->get();
  std::optional<LinearAccess> resultAccess = linearAccess(g, init);
  if (!resultAccess || mayAlias(result, out))
    return std::nullopt;
  for (Value read : reads)
    if (mayAlias(result, read))
      return std::nullopt;
  e.resultAccess = *resultAccess;

  for (OpOperand *in : g.getDpsInputOperands()) {
    std::optional<LinearAccess> access = linearAccess(g, in);
    if (!access)
      return std::nullopt;
    if (viewedBuffer(in->get()) == sums) {
      if (e.sums || !rowMajor(*access, e.ranges))
        return std::nullopt;
      e.sums = in;
      continue;
    }
    // A read of the result's buffer (a residual added in place) must be
    // of the very element the same iteration writes.
    if (mayAlias(in->get(), result) &&
        (viewedBuffer(in->get()) != viewedBuffer(result) ||
         access->coefficients != e.resultAccess.coefficients ||
         access->offset != e.resultAccess.offset))
      return std::nullopt;
    e.inputs.push_back(in);
    e.inputAccess.push_back(*access);
  }
  if (!e.sums)
    return std::nullopt;
  // The kernel now writes the result where the fills ran after it.
  for (linalg::FillOp fill : fills) {
    Value filled = fill.getOutputs()[0];
    if (mayAlias(filled, out) || mayAlias(filled, result) ||
        llvm::any_of(reads, [&](Value r) { return mayAlias(filled, r); }) ||
        llvm::any_of(e.inputs, [&](OpOperand *in) { return mayAlias(filled, in->get()); }))
      return std::nullopt;
  }
  // Nothing else reads the sums (the fill the kernel folds aside).
  SmallVector<Operation *> users{op, g};
  users.append(stale.begin(), stale.end());
  for (Operation *user : sums.getUsers())
    if (isa<linalg::FillOp>(user))
      users.push_back(user);
  for (Operation *user : out.getUsers())
    if (isa<linalg::FillOp>(user))
      users.push_back(user);
  if (!onlyUsedBy(sums, users))
    return std::nullopt;
  return e;
}

void mlir::poot::eraseIfUnused(Value buffer) {
  Value base = viewedBuffer(buffer);
  auto alloc = base.getDefiningOp<memref::AllocOp>();
  if (!alloc || !onlyUsedBy(base, {}))
    return;
  // The deallocations, then the views, each before the view it reads.
  BufferUses uses = usesThroughViews(base);
  for (Operation *user : uses.others)
    user->erase();
  for (Operation *view : llvm::reverse(uses.views))
    view->erase();
  alloc->erase();
}
