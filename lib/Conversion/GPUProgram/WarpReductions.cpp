//===- WarpReductions.cpp - poot-gpu-warp-reductions -----------------------===//
//
// A kernel whose few threads each run a long reduction is latency bound: the
// final sum of a split decode matmul (1024 threads, each adding 128 partials
// of 4 columns) ran at 0.15 TB/s on an H100, 18% of a Llama-shaped BF16
// step; a norm's sum over a row ran on one thread. Giving each of the
// loop's iterations several lanes of one warp multiplies the loads in
// flight; the lanes then combine their partials with register shuffles, no
// memory round trip and no second kernel (what cuBLAS's GEMV and every
// inference engine's reductions do).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUWARPREDUCTIONS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

enum class Combiner { AddF, MaximumF, MinimumF, MaxNumF, MinNumF };

std::optional<Combiner> combinerOf(Operation *op) {
  if (isa<arith::AddFOp>(op))
    return Combiner::AddF;
  if (isa<arith::MaximumFOp>(op))
    return Combiner::MaximumF;
  if (isa<arith::MinimumFOp>(op))
    return Combiner::MinimumF;
  if (isa<arith::MaxNumFOp>(op))
    return Combiner::MaxNumF;
  if (isa<arith::MinNumFOp>(op))
    return Combiner::MinNumF;
  return std::nullopt;
}

Value combine(OpBuilder &b, Location loc, Combiner kind, Value x, Value y) {
  switch (kind) {
  case Combiner::AddF:
    return arith::AddFOp::create(b, loc, x, y);
  case Combiner::MaximumF:
    return arith::MaximumFOp::create(b, loc, x, y);
  case Combiner::MinimumF:
    return arith::MinimumFOp::create(b, loc, x, y);
  case Combiner::MaxNumF:
    return arith::MaxNumFOp::create(b, loc, x, y);
  case Combiner::MinNumF:
    return arith::MinNumFOp::create(b, loc, x, y);
  }
  llvm_unreachable("combiner");
}

/// f32 scalars and 1-D f32 vectors: what gpu.shuffle carries on every
/// target lowering (a vector one element at a time).
bool shuffleable(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.getRank() == 1 && !vector.isScalable() &&
           vector.getElementType().isF32();
  return type.isF32();
}

/// The combiner of iteration argument `i` of `loop`: the argument's one use
/// starts a chain of single-use ops of one kind, in the loop's body, that
/// ends in the yield at position `i` (the unrolled `a + x0 + x1 + ...`).
std::optional<Combiner> chainOf(scf::ForOp loop, unsigned i) {
  Value v = loop.getRegionIterArgs()[i];
  if (!shuffleable(v.getType()))
    return std::nullopt;
  Operation *yield = loop.getBody()->getTerminator();
  std::optional<Combiner> kind;
  while (v.hasOneUse()) {
    OpOperand &use = *v.use_begin();
    Operation *user = use.getOwner();
    if (user == yield)
      return use.getOperandNumber() == i ? kind : std::nullopt;
    std::optional<Combiner> k = combinerOf(user);
    if (!k || (kind && *k != *kind) || user->getBlock() != loop.getBody())
      return std::nullopt;
    kind = k;
    v = user->getResult(0);
  }
  return std::nullopt;
}

/// A reduction loop of the body, with its iteration arguments' combiners and
/// constant bounds.
struct Reduction {
  scf::ForOp loop;
  SmallVector<Combiner> kinds;
  int64_t lb, ub, step;
};

/// `value` combined over the `lanes` adjacent lanes holding one iteration's
/// partials: a butterfly of xor shuffles, every lane ending with the total.
Value butterfly(OpBuilder &b, Location loc, Value value, Combiner kind,
                int64_t lanes, int64_t warp) {
  auto reduceScalar = [&](Value v) {
    for (int64_t offset = lanes / 2; offset >= 1; offset /= 2) {
      auto shuffled = gpu::ShuffleOp::create(
          b, loc, v, static_cast<int32_t>(offset), static_cast<int32_t>(warp),
          gpu::ShuffleMode::XOR);
      v = combine(b, loc, kind, v, shuffled.getShuffleResult());
    }
    return v;
  };
  auto vector = dyn_cast<VectorType>(value.getType());
  if (!vector)
    return reduceScalar(value);
  SmallVector<Value> elements;
  for (int64_t i = 0; i < vector.getNumElements(); ++i)
    elements.push_back(reduceScalar(
        vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{i})));
  return vector::FromElementsOp::create(b, loc, vector, elements);
}

struct WarpReductions
    : poot::impl::PootGPUWarpReductionsBase<WarpReductions> {
  using Base::Base;

  /// The loop's iteration count, when every dimension runs 0..N by 1.
  static std::optional<int64_t> iterations(scf::ParallelOp loop) {
    int64_t total = 1;
    for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(),
                                         loop.getUpperBound(), loop.getStep())) {
      std::optional<int64_t> l = getConstantIntValue(lb);
      std::optional<int64_t> u = getConstantIntValue(ub);
      std::optional<int64_t> s = getConstantIntValue(step);
      if (!l || !u || !s || *l != 0 || *s != 1 || *u < 1 ||
          *u > (int64_t(1) << 40) / total)
        return std::nullopt;
      total *= *u;
    }
    return total;
  }

  /// The body's reduction loops, in order, when the body is one this pass
  /// can spread over lanes (see the pass description); else nothing.
  static std::optional<SmallVector<Reduction>> reductionsOf(scf::ParallelOp loop) {
    if (loop.getNumResults() != 0)
      return std::nullopt;
    Block *body = loop.getBody();
    SmallVector<Reduction> found;
    bool wroteBefore = false; // a store before the last reduction loop
    for (Operation &op : body->without_terminator()) {
      auto forOp = dyn_cast<scf::ForOp>(op);
      if (forOp && forOp.getNumRegionIterArgs() > 0) {
        if (wroteBefore)
          return std::nullopt;
        Reduction r{forOp, {}, 0, 0, 0};
        std::optional<int64_t> lb = getConstantIntValue(forOp.getLowerBound());
        std::optional<int64_t> ub = getConstantIntValue(forOp.getUpperBound());
        std::optional<int64_t> step = getConstantIntValue(forOp.getStep());
        if (!lb || !ub || !step || *step < 1)
          return std::nullopt;
        r.lb = *lb, r.ub = *ub, r.step = *step;
        for (unsigned i = 0; i < forOp.getNumRegionIterArgs(); ++i) {
          std::optional<Combiner> kind = chainOf(forOp, i);
          if (!kind)
            return std::nullopt;
          r.kinds.push_back(*kind);
        }
        found.push_back(r);
        continue;
      }
      if (op.getNumRegions() > 0)
        return std::nullopt;
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (!effects ? !isPure(&op) : effects.hasEffect<MemoryEffects::Write>())
        wroteBefore = true;
    }
    if (found.empty())
      return std::nullopt;
    return found;
  }

  void runOnOperation() override {
    if (warpSize < 2 || !llvm::isPowerOf2_64(warpSize) || minThreads < 1) {
      getOperation().emitError()
          << "poot-gpu-warp-reductions: warp-size must be a power of two >= 2 "
             "and min-threads >= 1, got "
          << static_cast<int64_t>(warpSize) << " and "
          << static_cast<int64_t>(minThreads);
      return signalPassFailure();
    }
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<scf::ParallelOp> loops =
        llvm::to_vector(func.getBody().front().getOps<scf::ParallelOp>());
    for (scf::ParallelOp loop : loops)
      spread(loop);
  }

  void spread(scf::ParallelOp loop) {
    std::optional<int64_t> count = iterations(loop);
    if (!count || *count >= minThreads)
      return;
    std::optional<SmallVector<Reduction>> reductions = reductionsOf(loop);
    if (!reductions)
      return;
    Block *body = loop.getBody();
    scf::ForOp last = reductions->back().loop;

    // Each result is either the init of a later reduction loop's argument of
    // the same combiner (a remainder loop continuing the sum: it stays a
    // per-lane partial) or used only after the last loop (combined there).
    DenseSet<std::pair<Operation *, unsigned>> continued; // (loop, arg)
    SmallVector<std::pair<Value, Combiner>> finals;
    for (auto [index, r] : llvm::enumerate(*reductions)) {
      for (auto [i, result] : llvm::enumerate(r.loop.getResults())) {
        Combiner kind = r.kinds[i];
        if (result.hasOneUse()) {
          OpOperand &use = *result.use_begin();
          auto next = dyn_cast<scf::ForOp>(use.getOwner());
          const Reduction *later = nullptr;
          for (size_t k = index + 1; k < reductions->size(); ++k)
            if ((*reductions)[k].loop == next)
              later = &(*reductions)[k];
          if (later) {
            bool tied = false;
            for (auto [j, operand] : llvm::enumerate(next.getInitArgsMutable()))
              if (&operand == &use && later->kinds[j] == kind) {
                continued.insert({next.getOperation(), unsigned(j)});
                tied = true;
              }
            if (!tied)
              return;
            continue;
          }
        }
        for (Operation *user : result.getUsers()) {
          Operation *top = body->findAncestorOpInBlock(*user);
          if (!top || top == last || !last->isBeforeInBlock(top))
            return;
        }
        finals.push_back({result, kind});
      }
    }

    // Lanes: enough to reach min-threads, at most the warp and (beyond what
    // makes every warp whole) the longest reduction's trip count.
    int64_t trips = 1;
    for (const Reduction &r : *reductions)
      trips = std::max<int64_t>(
          trips, r.ub > r.lb ? int64_t(llvm::divideCeil(r.ub - r.lb, r.step)) : 0);
    int64_t wanted = int64_t(llvm::PowerOf2Ceil(llvm::divideCeil(minThreads, *count)));
    int64_t lanes = std::min<int64_t>(
        {wanted, int64_t(warpSize), int64_t(llvm::bit_floor(uint64_t(trips)))});
    int64_t whole = int64_t(warpSize) >>
                    std::min<int64_t>(llvm::countr_zero(uint64_t(*count)),
                                      llvm::Log2_64(warpSize));
    lanes = std::max(lanes, whole);
    if (lanes < 2)
      return;

    // The loop again, with a last dimension of `lanes`.
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v).getResult();
    };
    SmallVector<Value> lbs(loop.getLowerBound()), ubs(loop.getUpperBound()),
        steps(loop.getStep());
    lbs.push_back(index(0));
    ubs.push_back(index(lanes));
    steps.push_back(index(1));
    auto wide = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
    wide->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
    Block *wideBody = wide.getBody();
    wideBody->getOperations().splice(wideBody->getTerminator()->getIterator(),
                                     body->getOperations(), body->begin(),
                                     body->getTerminator()->getIterator());
    for (auto [from, to] : llvm::zip(loop.getInductionVars(),
                                     wide.getInductionVars()))
      from.replaceAllUsesWith(to);
    Value lane = wide.getInductionVars().back();
    b.setInsertionPointToStart(wideBody);
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                        index(0));

    // Lane l runs iterations l, l + lanes, ... of every reduction loop; a
    // sum starts from its init on lane 0 only.
    for (Reduction &r : *reductions) {
      b.setInsertionPoint(r.loop);
      Value offset = arith::MulIOp::create(b, loc, lane, index(r.step));
      r.loop.getLowerBoundMutable().assign(
          arith::AddIOp::create(b, loc, index(r.lb), offset));
      r.loop.getStepMutable().assign(index(r.step * lanes));
      for (auto [j, init] : llvm::enumerate(r.loop.getInitArgsMutable())) {
        if (r.kinds[j] != Combiner::AddF || continued.contains({r.loop.getOperation(), unsigned(j)}))
          continue;
        Type type = init.get().getType();
        TypedAttr minusZero = b.getFloatAttr(getElementTypeOrSelf(type), -0.0);
        if (auto vector = dyn_cast<VectorType>(type))
          minusZero = DenseElementsAttr::get(vector, minusZero);
        Value identity = arith::ConstantOp::create(b, loc, minusZero);
        init.set(arith::SelectOp::create(b, loc, first, init.get(), identity));
      }
    }

    // Every lane gets the totals; lane 0 alone runs the rest.
    b.setInsertionPointAfter(last);
    for (auto [result, kind] : finals) {
      SmallVector<OpOperand *> uses = llvm::map_to_vector(
          result.getUses(), [](OpOperand &u) { return &u; });
      Value total = butterfly(b, loc, result, kind, lanes, warpSize);
      for (OpOperand *use : uses)
        use->set(total);
    }
    Operation *end = wideBody->getTerminator();
    Block::iterator from = b.getInsertionPoint();
    if (from != end->getIterator()) {
      auto guard = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      Block *then = guard.thenBlock();
      then->getOperations().splice(then->getTerminator()->getIterator(),
                                   wideBody->getOperations(),
                                   std::next(guard->getIterator()),
                                   end->getIterator());
    }
    loop.erase();
  }
};

} // namespace
