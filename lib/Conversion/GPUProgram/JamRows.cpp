//===- JamRows.cpp - poot-gpu-jam-rows -------------------------------------===//
//
// A batched decode matmul ([B, K] x [K, N], B the serving batch) lowered one
// thread per (row, column) loads every weight element once per row: B rows
// cost about B single-row steps, where the weights (the step's bytes) should
// be read once for all of them. This pass moves up to `max-rows` rows into
// one thread: the row dimension becomes an scf.for that upstream
// loopUnrollJamByFactor unrolls and jams into the reduction loop (one
// accumulator per row), and CSE leaves one load of each shared weight
// element.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/JamRows.h"
#include "lib/Conversion/GPUProgram/LoopSpaces.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUJAMROWS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// The operations whose results depend on `iv` (its forward slice).
llvm::SetVector<Operation *> dependents(Value iv) {
  llvm::SetVector<Operation *> slice;
  ForwardSliceOptions options;
  getForwardSlice(iv, &slice, options);
  return slice;
}

bool dependsOn(Value v, Value iv, const llvm::SetVector<Operation *> &slice) {
  if (v == iv)
    return true;
  Operation *def = v.getDefiningOp();
  return def && slice.contains(def);
}

/// The bytes of a memref with a static shape (0 otherwise).
int64_t bytesOf(Value memref) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return 0;
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// Whether the rows of dimension `dim` share the streamed operand: the
/// largest buffer a reduction loop loads along its induction variable (the
/// weight of a matmul) is loaded at indices that do not depend on the row.
/// (A dimension the activation alone does not index, such as the heads of
/// a projection, shares only the small operand: jamming it would save no
/// weight bytes and take threads away.) Fails when a nested loop's bounds
/// depend on the row (the rows could not run in one loop together).
bool rowsShareTheWeight(scf::ParallelOp loop, unsigned dim) {
  Value row = loop.getInductionVars()[dim];
  llvm::SetVector<Operation *> rowSlice = dependents(row);
  bool boundsVary = false;
  loop.getBody()->walk([&](scf::ForOp inner) {
    for (Value bound :
         {inner.getLowerBound(), inner.getUpperBound(), inner.getStep()})
      boundsVary |= dependsOn(bound, row, rowSlice);
  });
  if (boundsVary)
    return false;
  bool shared = false;
  for (scf::ForOp reduction : poot::reductionLoops(loop)) {
    Value k = reduction.getInductionVar();
    llvm::SetVector<Operation *> kSlice = dependents(k);
    // The streamed loads, and whether each depends on the row.
    int64_t largest = 0;
    bool largestPerRow = false;
    reduction.getBody()->walk([&](memref::LoadOp load) {
      bool alongK = false, perRow = false;
      for (Value index : load.getIndices()) {
        alongK |= dependsOn(index, k, kSlice);
        perRow |= dependsOn(index, row, rowSlice);
      }
      int64_t bytes = bytesOf(load.getMemRef());
      if (!alongK || bytes < largest)
        return;
      largestPerRow = (bytes == largest && largestPerRow) || perRow;
      largest = bytes;
    });
    if (largest == 0 || largestPerRow)
      return false;
    shared = true;
  }
  return shared;
}

struct JamRows : poot::impl::PootGPUJamRowsBase<JamRows> {
  using Base::Base;

  /// The dimension to jam and its rows a thread, or nothing. The last
  /// dimension is the columns (poot-gpu-vectorize-columns' vectors); of
  /// the others, the one with the most rows a thread wins.
  std::optional<std::pair<unsigned, int64_t>> chooseRows(scf::ParallelOp loop) {
    if (loop.getNumResults() != 0 || poot::reductionLoops(loop).empty())
      return std::nullopt;
    std::optional<std::pair<unsigned, int64_t>> best;
    unsigned dims = loop.getNumLoops();
    for (unsigned d = 0; d + 1 < dims; ++d) {
      std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()[d]);
      std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()[d]);
      std::optional<int64_t> step = getConstantIntValue(loop.getStep()[d]);
      if (lb != 0 || step != 1 || !ub || *ub < 2)
        continue;
      int64_t rows = poot::jammedRows(*ub, maxRows);
      if (rows < 2 || (best && best->second >= rows) ||
          !rowsShareTheWeight(loop, d))
        continue;
      best = std::pair{d, rows};
    }
    return best;
  }

  /// Rebuilds `loop` with dimension `dim` over groups of `rows`, the rows of
  /// a group an inner scf.for, and unroll-jams that loop.
  void jam(IRRewriter &rewriter, scf::ParallelOp loop, unsigned dim,
           int64_t rows) {
    Location loc = loop.getLoc();
    rewriter.setInsertionPoint(loop);
    int64_t total = *getConstantIntValue(loop.getUpperBound()[dim]);
    SmallVector<Value> ubs(loop.getUpperBound());
    ubs[dim] = arith::ConstantIndexOp::create(rewriter, loc, total / rows);
    scf::ForOp rowLoop;
    scf::ParallelOp::create(
        rewriter, loc, loop.getLowerBound(), ubs, loop.getStep(),
        [&](OpBuilder &b, Location l, ValueRange ivs) {
          Value size = arith::ConstantIndexOp::create(b, l, rows);
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          Value first = arith::MulIOp::create(b, l, ivs[dim], size);
          rowLoop = scf::ForOp::create(b, l, zero, size, one);
          OpBuilder inner = OpBuilder::atBlockBegin(rowLoop.getBody());
          Value row = arith::AddIOp::create(inner, l, first,
                                            rowLoop.getInductionVar());
          IRMapping mapping;
          for (auto [i, iv] : llvm::enumerate(loop.getInductionVars()))
            mapping.map(iv, i == dim ? row : ivs[i]);
          inner.setInsertionPoint(rowLoop.getBody()->getTerminator());
          for (Operation &op : loop.getBody()->without_terminator())
            inner.clone(op, mapping);
        });
    rewriter.eraseOp(loop);
    // Jam the rows: each reduction loop carries `rows` accumulators. (On
    // failure the row loop stays, a correct serial loop per thread.)
    (void)loopUnrollJamByFactor(rowLoop, rows);
  }

  void runOnOperation() override {
    // (A thread's registers hold its rows' accumulators: far fewer than 64;
    // the bound also keeps the divisor search and the jammed body small.)
    if (maxRows < 1 || maxRows > poot::kMaxJamRows) {
      getOperation().emitError()
          << "poot-gpu-jam-rows: max-rows must be in [1, 64], got "
          << static_cast<int64_t>(maxRows);
      return signalPassFailure();
    }
    func::FuncOp func = getOperation();
    if (func.isExternal() || maxRows < 2)
      return;
    SmallVector<scf::ParallelOp> kernels;
    func.walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        kernels.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    bool changed = false;
    for (scf::ParallelOp loop : kernels) {
      std::optional<std::pair<unsigned, int64_t>> choice = chooseRows(loop);
      if (!choice)
        continue;
      jam(rewriter, loop, choice->first, choice->second);
      changed = true;
    }
    if (!changed)
      return;
    // The rows' copies of a shared load (and of its conversion and index
    // math) become one.
    DominanceInfo dominance(func);
    eliminateCommonSubExpressions(rewriter, dominance, func);
  }
};

} // namespace
