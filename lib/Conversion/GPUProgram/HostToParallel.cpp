//===- HostToParallel.cpp - poot-gpu-host-to-parallel ----------------------===//
//
// On a GPU target the step's host function may only allocate, view and
// launch: every computation must run in a kernel. After bufferization and
// linalg-to-parallel-loops most of it already sits in scf.parallel loops;
// this pass moves the rest there (scalar index math and loads feeding a
// loop, the scatter loop over a write map, zero-rank computations), then
// flattens each top-level loop and maps it onto blocks x threads, so
// convert-parallel-loops-to-gpu turns each into one kernel launch.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUHOSTTOPARALLEL
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// Host ops that stay on the host: buffers, views, constants, launches.
bool staysOnHost(Operation *op) {
  return isa<memref::AllocOp, memref::DeallocOp, memref::GetGlobalOp,
             memref::CollapseShapeOp, memref::ExpandShapeOp, memref::CastOp,
             memref::ReinterpretCastOp, memref::CopyOp, gpu::LaunchFuncOp,
             scf::ParallelOp, func::ReturnOp, func::CallOp>(op) ||
         (op->hasTrait<OpTrait::ConstantLike>() && op->getNumRegions() == 0);
}

/// Ops whose value may be recomputed inside a kernel: scalar arithmetic and
/// loads (the buffers a step reads are not written between the host point
/// and the launch that uses the value: launches run in order).
bool sinkable(Operation *op) {
  if (op->getNumRegions() || op->getNumResults() != 1)
    return false;
  if (isa<memref::LoadOp>(op))
    return true;
  return isa<arith::ArithDialect, affine::AffineDialect>(op->getDialect()) &&
         isMemoryEffectFree(op);
}

/// Clones every sinkable host op whose uses are all inside top-level
/// scf.parallel loops into each of those loops, then erases it.
void sinkScalarsIntoLoops(Block &body) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      if (!sinkable(&op) || op.getParentOp() != body.getParentOp())
        continue;
      if (op.hasTrait<OpTrait::ConstantLike>())
        continue; // constants are cheap to keep and sunk by gpu passes
      SmallVector<scf::ParallelOp> loops;
      bool allInLoops = !op.use_empty();
      for (Operation *user : op.getUsers()) {
        Operation *top = user;
        while (top->getBlock() != &body)
          top = top->getParentOp();
        auto loop = dyn_cast<scf::ParallelOp>(top);
        if (!loop || top == user) {
          allInLoops = false;
          break;
        }
        if (!llvm::is_contained(loops, loop))
          loops.push_back(loop);
      }
      if (!allInLoops)
        continue;
      for (scf::ParallelOp loop : loops) {
        OpBuilder b(loop.getBody(), loop.getBody()->begin());
        Operation *copy = b.clone(op);
        op.getResult(0).replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
          return loop->isAncestor(use.getOwner());
        });
      }
      op.erase();
      changed = true;
    }
  }
}

/// The scatter over a write map, once parallel over its rows, copies each
/// row's elements one thread at a time (the row copy is a loop nested in
/// the row's iteration, under its bounds check). The nested loop joins the
/// outer one: `parallel i { x = f(i); if c(x) { parallel j { g(x, i, j) } } }`
/// -> `parallel (i, j) { x = f(i); if c(x) { g(x, i, j) } }`, every element
/// a thread. Only when the nested loop is the one loop, reached through
/// result-less `scf.if`s, its bounds are defined outside, and everything
/// else in the outer body is side-effect free or a load of a buffer the
/// nested loop does not store to (recomputed per element). Returns whether
/// it changed anything.
bool collapseNestedCopy(scf::ParallelOp outer) {
  SmallVector<scf::ParallelOp> nested;
  outer.getBody()->walk([&](scf::ParallelOp p) { nested.push_back(p); });
  if (nested.size() != 1 || outer.getNumResults() != 0)
    return false;
  scf::ParallelOp inner = nested[0];
  if (inner.getNumResults() != 0 ||
      llvm::any_of(inner->getOperands(), [&](Value bound) {
        return outer->isAncestor(bound.getParentBlock()->getParentOp());
      }))
    return false;
  DenseSet<Value> stored;
  inner.getBody()->walk([&](memref::StoreOp st) { stored.insert(st.getMemRef()); });
  // The outer part: result-less ifs on the way to the nested loop, and
  // recomputable ops.
  for (Operation *p = inner->getParentOp(); p != outer; p = p->getParentOp()) {
    auto guard = dyn_cast<scf::IfOp>(p);
    if (!guard || guard.getNumResults() != 0 || !guard.getElseRegion().empty())
      return false;
  }
  WalkResult outerOk = outer.getBody()->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == inner.getOperation())
      return WalkResult::skip();
    if (isa<scf::YieldOp, scf::ReduceOp>(op) ||
        (isa<scf::IfOp>(op) && op->isAncestor(inner)))
      return WalkResult::advance();
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return stored.contains(load.getMemRef()) ? WalkResult::interrupt()
                                               : WalkResult::advance();
    return isMemoryEffectFree(op) && op->getNumRegions() == 0
               ? WalkResult::advance()
               : WalkResult::interrupt();
  });
  if (outerOk.wasInterrupted())
    return false;

  OpBuilder b(outer);
  auto concat = [](ValueRange x, ValueRange y) {
    SmallVector<Value> all(x);
    llvm::append_range(all, y);
    return all;
  };
  auto joined = scf::ParallelOp::create(
      b, outer.getLoc(),
      concat(outer.getLowerBound(), inner.getLowerBound()),
      concat(outer.getUpperBound(), inner.getUpperBound()),
      concat(outer.getStep(), inner.getStep()));
  IRMapping map;
  Block *joinedBody = joined.getBody();
  unsigned outerLoops = outer.getNumLoops();
  for (unsigned i = 0; i < outerLoops; ++i)
    map.map(outer.getBody()->getArgument(i), joinedBody->getArgument(i));
  for (unsigned i = 0; i < inner.getNumLoops(); ++i)
    map.map(inner.getBody()->getArgument(i),
            joinedBody->getArgument(outerLoops + i));
  std::function<void(Block &, OpBuilder &)> cloneInto = [&](Block &from,
                                                            OpBuilder &to) {
    for (Operation &op : from.without_terminator()) {
      if (&op == inner.getOperation()) {
        for (Operation &element : inner.getBody()->without_terminator())
          to.clone(element, map);
      } else if (auto guard = dyn_cast<scf::IfOp>(op);
                 guard && guard->isAncestor(inner)) {
        auto copy = scf::IfOp::create(to, guard.getLoc(),
                                      map.lookupOrDefault(guard.getCondition()),
                                      /*withElseRegion=*/false);
        OpBuilder then(copy.getThenRegion().front().getTerminator());
        cloneInto(guard.getThenRegion().front(), then);
      } else {
        to.clone(op, map);
      }
    }
  };
  OpBuilder body(joined.getBody()->getTerminator());
  cloneInto(*outer.getBody(), body);
  outer.erase();
  return true;
}

/// A host `scf.if` that only guards loops (a write map's one-row scatter,
/// whose bounds check the unrolled loop left on the host) becomes loops
/// that each test the condition: `if c { x = f(); parallel i { g(x, i) } }`
/// -> `parallel i { if c { x = f(); g(x, i) } }`. The condition's scalars
/// are then used only inside loops and sink into them, so nothing is
/// computed on the host. Returns false (and changes nothing) unless the
/// then-block is sinkable scalars plus loops whose bounds the host already
/// has, and there is no else-block.
bool interchangeGuardWithLoops(scf::IfOp guard) {
  if (guard.getNumResults() != 0 || !guard.getElseRegion().empty())
    return false;
  Block &then = guard.getThenRegion().front();
  SmallVector<Operation *> scalars;
  SmallVector<scf::ParallelOp> loops;
  for (Operation &op : then.without_terminator()) {
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      if (loop.getNumResults() != 0 ||
          llvm::any_of(loop->getOperands(), [&](Value bound) {
            return guard->isAncestor(bound.getParentBlock()->getParentOp());
          }))
        return false;
      loops.push_back(loop);
    } else if (sinkable(&op)) {
      scalars.push_back(&op);
    } else {
      return false;
    }
  }
  if (loops.empty())
    return false;
  OpBuilder b(guard);
  for (scf::ParallelOp loop : loops) {
    auto par = scf::ParallelOp::create(b, loop.getLoc(), loop.getLowerBound(),
                                       loop.getUpperBound(), loop.getStep());
    OpBuilder pb(par.getBody()->getTerminator());
    auto inner = scf::IfOp::create(pb, guard.getLoc(), guard.getCondition(),
                                   /*withElseRegion=*/false);
    OpBuilder ib(inner.getThenRegion().front().getTerminator());
    IRMapping mapping;
    mapping.map(loop.getInductionVars(), par.getInductionVars());
    for (Operation *op : scalars)
      ib.clone(*op, mapping);
    for (Operation &op : loop.getBody()->without_terminator())
      ib.clone(op, mapping);
  }
  guard.erase();
  return true;
}

/// A one-iteration scf.parallel around the ops [first, last] of `body`.
scf::ParallelOp wrapInSingleIteration(Operation *first, Operation *last) {
  OpBuilder b(first);
  Location loc = first->getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{one},
                                      ValueRange{one});
  Block *inner = loop.getBody();
  SmallVector<Operation *> ops;
  for (Operation *op = first;; op = op->getNextNode()) {
    ops.push_back(op);
    if (op == last)
      break;
  }
  for (Operation *op : ops)
    op->moveBefore(inner->getTerminator());
  return loop;
}

/// Flattens a top-level loop (zero lower bounds, unit steps, constant upper
/// bounds) to one dimension and maps it onto blocks of `threads` threads,
/// at most `maxBlocks` of them: past that, each thread strides over the
/// rest in an scf.for (block b also runs blocks b + maxBlocks, ...).
LogicalResult mapLoop(scf::ParallelOp loop, int64_t threads, int64_t maxBlocks) {
  SmallVector<int64_t> extents;
  for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(),
                                       loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb);
    std::optional<int64_t> u = getConstantIntValue(ub);
    std::optional<int64_t> s = getConstantIntValue(step);
    if (!l || !u || !s || *l != 0 || *s != 1)
      return loop.emitError("poot-gpu-host-to-parallel: a loop with a "
                            "non-constant or offset range cannot be mapped");
    extents.push_back(*u);
  }
  int64_t total = 1;
  for (int64_t e : extents)
    total *= e;
  int64_t blockThreads = std::min<int64_t>(threads, std::max<int64_t>(total, 1));
  int64_t blocks = (total + blockThreads - 1) / blockThreads;
  int64_t gridBlocks = std::min(blocks, maxBlocks);
  int64_t strides = gridBlocks > 0 ? (blocks + gridBlocks - 1) / gridBlocks : 1;

  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value zero = c(0), one = c(1);
  auto outer = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                       ValueRange{c(gridBlocks)}, ValueRange{one});
  OpBuilder ob(outer.getBody(), outer.getBody()->begin());
  auto inner = scf::ParallelOp::create(
      ob, loc, ValueRange{arith::ConstantIndexOp::create(ob, loc, 0)},
      ValueRange{arith::ConstantIndexOp::create(ob, loc, blockThreads)},
      ValueRange{arith::ConstantIndexOp::create(ob, loc, 1)});
  OpBuilder ib(inner.getBody(), inner.getBody()->begin());
  Value block = outer.getInductionVars()[0];
  if (strides > 1) {
    auto walk = scf::ForOp::create(
        ib, loc, arith::ConstantIndexOp::create(ib, loc, 0),
        arith::ConstantIndexOp::create(ib, loc, strides),
        arith::ConstantIndexOp::create(ib, loc, 1));
    ib.setInsertionPointToStart(walk.getBody());
    block = arith::AddIOp::create(
        ib, loc, block,
        arith::MulIOp::create(ib, loc, walk.getInductionVar(),
                              arith::ConstantIndexOp::create(ib, loc, gridBlocks)));
  }
  Value linear = arith::AddIOp::create(
      ib, loc,
      arith::MulIOp::create(ib, loc, block,
                            arith::ConstantIndexOp::create(ib, loc, blockThreads)),
      inner.getInductionVars()[0]);
  Value inRange = arith::CmpIOp::create(
      ib, loc, arith::CmpIPredicate::ult, linear,
      arith::ConstantIndexOp::create(ib, loc, total));
  auto guard = scf::IfOp::create(ib, loc, inRange, /*withElse=*/false);
  OpBuilder gb = OpBuilder::atBlockBegin(&guard.getThenRegion().front());
  // Delinearize: the last dimension varies fastest (coalesced accesses).
  IRMapping mapping;
  Value rest = linear;
  for (int64_t d = int64_t(extents.size()) - 1; d >= 0; --d) {
    Value extent = arith::ConstantIndexOp::create(gb, loc, extents[d]);
    Value iv = d == 0 ? rest : arith::RemUIOp::create(gb, loc, rest, extent);
    if (d != 0)
      rest = arith::DivUIOp::create(gb, loc, rest, extent);
    mapping.map(loop.getInductionVars()[d], iv);
  }
  for (Operation &op : loop.getBody()->without_terminator())
    gb.clone(op, mapping);

  MLIRContext *ctx = loop.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
  auto dim = [&](gpu::Processor p) {
    return gpu::ParallelLoopDimMappingAttr::get(ctx, p, id, id);
  };
  if (failed(gpu::setMappingAttr(outer, {dim(gpu::Processor::BlockX)})) ||
      failed(gpu::setMappingAttr(inner, {dim(gpu::Processor::ThreadX)})))
    return loop.emitError("poot-gpu-host-to-parallel: cannot map the loop");
  loop.erase();
  return success();
}

struct HostToParallel
    : poot::impl::PootGPUHostToParallelBase<HostToParallel> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (maxBlocks < 1) {
      func.emitError() << "poot-gpu-host-to-parallel: max-blocks must be >= 1, "
                          "got "
                       << static_cast<int64_t>(maxBlocks);
      return signalPassFailure();
    }
    if (threadsPerBlock < 1) {
      func.emitError() << "poot-gpu-host-to-parallel: threads must be >= 1, "
                          "got "
                       << static_cast<int64_t>(threadsPerBlock);
      return signalPassFailure();
    }
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();

    // 1. A loop the host would run (the scatter over a write map's tokens):
    //    its iterations write distinct rows when it says so, else it runs
    //    as one thread.
    for (auto loop : llvm::make_early_inc_range(body.getOps<scf::ForOp>())) {
      if (loop.getNumResults() != 0) {
        loop.emitError("poot-gpu-host-to-parallel: a host loop that carries "
                       "values cannot run on the device");
        return signalPassFailure();
      }
      if (loop->hasAttr("poot.distinct_iterations")) {
        OpBuilder b(loop);
        auto par = scf::ParallelOp::create(
            b, loop.getLoc(), ValueRange{loop.getLowerBound()},
            ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()});
        IRMapping mapping;
        mapping.map(loop.getInductionVar(), par.getInductionVars()[0]);
        OpBuilder pb(par.getBody()->getTerminator());
        for (Operation &op : loop.getBody()->without_terminator())
          pb.clone(op, mapping);
        loop.erase();
        collapseNestedCopy(par);
      } else {
        // With the one-element fills right before it that it reads
        // (poot-gpu-fold-fills put a final sum's accumulator fill there):
        // one kernel, not one more for each store.
        Operation *first = loop;
        while (auto fill = dyn_cast_or_null<memref::StoreOp>(first->getPrevNode())) {
          if (fill.getMemRefType().getNumElements() != 1 ||
              !matchPattern(fill.getValueToStore(), m_Constant()) ||
              !llvm::any_of(fill.getMemRef().getUsers(), [&](Operation *user) {
                return loop->isAncestor(user);
              }))
            break;
          first = fill;
        }
        wrapInSingleIteration(first, loop);
      }
    }

    // 2. Scalars the loops need (a clamped position, a loaded length).
    for (auto guard : llvm::make_early_inc_range(body.getOps<scf::IfOp>()))
      interchangeGuardWithLoops(guard);
    sinkScalarsIntoLoops(body);

    // 3. Whatever computes on the host still (zero-rank math, scf.if) runs
    //    as a one-thread kernel; its values must not escape to the host.
    Operation *first = nullptr, *last = nullptr;
    auto flush = [&]() -> LogicalResult {
      if (!first)
        return success();
      for (Operation *op = first;; op = op->getNextNode()) {
        for (Value result : op->getResults())
          for (Operation *user : result.getUsers()) {
            Operation *top = user;
            while (top->getBlock() != &body)
              top = top->getParentOp();
            if (top->isBeforeInBlock(first) || last->isBeforeInBlock(top))
              return op->emitError("poot-gpu-host-to-parallel: a value the "
                                   "host would compute is used by the host");
          }
        if (op == last)
          break;
      }
      wrapInSingleIteration(first, last);
      first = last = nullptr;
      return success();
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (staysOnHost(&op)) {
        if (failed(flush()))
          return signalPassFailure();
        continue;
      }
      if (!first)
        first = &op;
      last = &op;
    }
    if (failed(flush()))
      return signalPassFailure();
    sinkScalarsIntoLoops(body);

    // 4. One launch per top-level loop: blocks x threads, one dimension.
    for (auto loop : llvm::make_early_inc_range(body.getOps<scf::ParallelOp>()))
      if (failed(mapLoop(loop, threadsPerBlock, maxBlocks)))
        return signalPassFailure();
  }
};

} // namespace
