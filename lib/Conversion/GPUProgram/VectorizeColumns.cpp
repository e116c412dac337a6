//===- VectorizeColumns.cpp - poot-gpu-vectorize-columns -------------------===//
//
// A decode matmul lowered one thread per output column reads one 4-byte
// weight per reduction step and waits for it: far too few bytes in flight
// to stream the weights at a GPU's bandwidth. This pass gives each thread
// of such a kernel `width` consecutive columns: the weight row segment is
// one `width`-wide vector load (16 bytes for f32), the accumulator a
// vector, and the reduction loop is unrolled (upstream loopUnrollByFactor)
// so several independent loads are in flight per thread. A kernel that
// reads 16-bit columns (bf16/f16 weights, f32 accumulators: the 16-bit
// contract) takes twice the columns, so its weight loads are 16 bytes too.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUVECTORIZECOLUMNS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// Whether `width` consecutive elements of the last dimension of `type`,
/// starting at a multiple of `width`, lie at a multiple of `width`
/// elements from the buffer's base: static strides and offset, the last
/// stride 1, every other stride and the offset multiples of `width`.
/// Every buffer of a whole-step program starts 256-byte aligned (its own
/// allocation, or an arena slice at a 256-byte offset:
/// poot-gpu-serialize-program), so such a group is width x element bytes
/// aligned.
bool groupsAligned(MemRefType type, int64_t width) {
  if (!type.hasStaticShape() || type.getRank() == 0 ||
      !type.getElementType().isIntOrFloat() ||
      (type.getElementTypeBitWidth() != 32 &&
       type.getElementTypeBitWidth() != 16))
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || offset % width || strides.back() != 1)
    return false;
  return llvm::all_of(ArrayRef(strides).drop_back(), [&](int64_t s) {
    return !ShapedType::isDynamic(s) && s % width == 0;
  });
}

/// The alignment of a `width`-element group of `type`'s elements.
llvm::MaybeAlign groupAlign(MemRefType type, int64_t width) {
  return llvm::MaybeAlign(width * type.getElementTypeBitWidth() / 8);
}

/// Clones one top-level loop body with its last induction variable
/// standing for `width` columns: values that depend on it become vectors.
class ColumnCloner {
public:
  ColumnCloner(Value iv, Value first, int64_t width, bool vectorMemory)
      : iv(iv), width(width), vectorMemory(vectorMemory) {
    scalar.map(iv, first);
    columns.insert(iv);
  }

  IRMapping scalar;                // uniform values, and column indices
  DenseMap<Value, Value> vector;   // values that differ per column

  LogicalResult cloneBlock(Block &block, OpBuilder &b) {
    for (Operation &op : block.without_terminator())
      if (failed(cloneOp(op, b)))
        return failure();
    return success();
  }

  /// The values the block's terminator yields, as the new loop's types. A
  /// per-column value yielded into a uniform slot fails and names the slot
  /// in `widen` (the loop is then cloned again with that slot a vector).
  FailureOr<SmallVector<Value>> yielded(Operation *terminator, OpBuilder &b,
                                        ArrayRef<bool> asVector,
                                        SmallVectorImpl<unsigned> &widen) {
    SmallVector<Value> out;
    for (auto [i, value, wide] :
         llvm::enumerate(terminator->getOperands(), asVector)) {
      if (columns.contains(value))
        return failure();
      if (wide)
        out.push_back(widened(value, b));
      else if (vector.count(value))
        widen.push_back(i);
      else
        out.push_back(scalar.lookupOrDefault(value));
    }
    if (!widen.empty())
      return failure();
    return out;
  }

private:
  Value iv;
  int64_t width;
  bool vectorMemory;
  /// The column index and indices computed from it that stay consecutive
  /// per column (a linearize whose last term is it, over a basis of whole
  /// groups). Only load/store indices may use them.
  llvm::SmallPtrSet<Value, 8> columns;

  bool varies(Value v) const { return vector.count(v) || columns.contains(v); }

  VectorType vectorOf(Type t) const { return VectorType::get({width}, t); }

  /// `v` as a vector: its per-column value, or its uniform value broadcast.
  Value widened(Value v, OpBuilder &b) {
    if (Value wide = vector.lookup(v))
      return wide;
    Value s = scalar.lookupOrDefault(v);
    return vector::BroadcastOp::create(b, s.getLoc(), vectorOf(s.getType()), s);
  }

  /// The indices of lane `j` of a group: the last one plus j.
  SmallVector<Value> laneIndices(ArrayRef<Value> indices, int64_t j,
                                 OpBuilder &b) {
    SmallVector<Value> out(indices);
    if (j != 0)
      out.back() = arith::AddIOp::create(
          b, out.back().getLoc(), out.back(),
          arith::ConstantIndexOp::create(b, out.back().getLoc(), j));
    return out;
  }

  /// The indices of a per-column access: the last is a column index, the
  /// others uniform; mapped to the group's first column.
  FailureOr<SmallVector<Value>> groupIndices(ValueRange indices,
                                             MemRefType type) {
    if (indices.empty() || !columns.contains(indices.back()) ||
        !groupsAligned(type, width))
      return failure();
    SmallVector<Value> out;
    for (Value index : indices) {
      if (index != indices.back() && varies(index))
        return failure();
      out.push_back(scalar.lookupOrDefault(index));
    }
    return out;
  }

  LogicalResult cloneOp(Operation &op, OpBuilder &b) {
    bool anyVaries = llvm::any_of(op.getOperands(), [&](Value v) { return varies(v); });
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return cloneFor(loop, b);
    if (op.getNumRegions() != 0) {
      // Another region op is cloned only when nothing in it varies.
      bool inside = false;
      op.walk([&](Operation *nested) {
        for (Value v : nested->getOperands())
          inside |= varies(v);
      });
      if (inside)
        return failure();
      b.clone(op, scalar);
      return success();
    }
    if (auto lin = dyn_cast<affine::AffineLinearizeIndexOp>(op)) {
      ValueRange terms = lin.getMultiIndex();
      if (!terms.empty() && columns.contains(terms.back())) {
        ArrayRef<int64_t> basis = lin.getStaticBasis();
        if (basis.empty() || ShapedType::isDynamic(basis.back()) ||
            basis.back() % width ||
            llvm::any_of(terms.drop_back(), [&](Value v) { return varies(v); }))
          return failure();
        columns.insert(lin.getResult());
        b.clone(op, scalar);
        return success();
      }
    }
    if (!anyVaries) {
      b.clone(op, scalar);
      return success();
    }
    Location loc = op.getLoc();
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      FailureOr<SmallVector<Value>> indices =
          groupIndices(load.getIndices(), load.getMemRefType());
      if (failed(indices) || varies(load.getMemRef()))
        return failure();
      auto type = load.getMemRefType();
      Value base = scalar.lookupOrDefault(load.getMemRef());
      if (vectorMemory) {
        vector[load.getResult()] = vector::LoadOp::create(
            b, loc, vectorOf(type.getElementType()), base, *indices,
            /*nontemporal=*/false, groupAlign(type, width));
        return success();
      }
      SmallVector<Value> lanes;
      for (int64_t j = 0; j < width; ++j)
        lanes.push_back(memref::LoadOp::create(b, loc, base, laneIndices(*indices, j, b)));
      vector[load.getResult()] = vector::FromElementsOp::create(
          b, loc, vectorOf(type.getElementType()), lanes);
      return success();
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      FailureOr<SmallVector<Value>> indices =
          groupIndices(store.getIndices(), store.getMemRefType());
      if (failed(indices) || varies(store.getMemRef()) ||
          columns.contains(store.getValueToStore()))
        return failure();
      Value value = widened(store.getValueToStore(), b);
      Value base = scalar.lookupOrDefault(store.getMemRef());
      if (vectorMemory) {
        vector::StoreOp::create(b, loc, value, base, *indices,
                                /*nontemporal=*/false,
                                groupAlign(store.getMemRefType(), width));
        return success();
      }
      for (int64_t j = 0; j < width; ++j)
        memref::StoreOp::create(b, loc,
                                vector::ExtractOp::create(b, loc, value, j),
                                base, laneIndices(*indices, j, b));
      return success();
    }
    // Elementwise arithmetic on per-column values: the same op on vectors.
    if (!op.hasTrait<OpTrait::Elementwise>() ||
        !op.hasTrait<OpTrait::Vectorizable>() || !isMemoryEffectFree(&op) ||
        op.getNumResults() != 1 ||
        llvm::any_of(op.getOperands(), [&](Value v) {
          return columns.contains(v) || !v.getType().isIntOrFloat();
        }) ||
        !op.getResult(0).getType().isIntOrFloat())
      return failure();
    // A clone keeps the op's properties (predicates, fastmath flags).
    IRMapping lanes;
    for (Value v : op.getOperands())
      lanes.map(v, widened(v, b));
    Operation *wide = b.clone(op, lanes);
    wide->getResult(0).setType(vectorOf(op.getResult(0).getType()));
    vector[op.getResult(0)] = wide->getResult(0);
    return success();
  }

  /// A loop with uniform bounds; an iteration argument whose initial value
  /// varies, or that is yielded a per-column value, is carried as a vector.
  LogicalResult cloneFor(scf::ForOp loop, OpBuilder &b) {
    for (Value bound : {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
      if (varies(bound))
        return failure();
    SmallVector<bool> wide;
    for (Value init : loop.getInitArgs()) {
      if (columns.contains(init))
        return failure();
      wide.push_back(vector.count(init) != 0);
    }
    // Each retry widens at least one more slot: at most one per argument.
    for (unsigned attempt = 0; attempt <= wide.size(); ++attempt) {
      SmallVector<Value> inits;
      for (auto [init, w] : llvm::zip(loop.getInitArgs(), wide))
        inits.push_back(w ? widened(init, b) : scalar.lookupOrDefault(init));
      bool ok = true;
      SmallVector<unsigned> widen;
      auto copy = scf::ForOp::create(
          b, loop.getLoc(), scalar.lookupOrDefault(loop.getLowerBound()),
          scalar.lookupOrDefault(loop.getUpperBound()),
          scalar.lookupOrDefault(loop.getStep()), inits,
          [&](OpBuilder &nb, Location, Value newIv, ValueRange iterArgs) {
            scalar.map(loop.getInductionVar(), newIv);
            for (auto [old, now, w] :
                 llvm::zip(loop.getRegionIterArgs(), iterArgs, wide)) {
              if (w) {
                vector[old] = now;
              } else {
                vector.erase(old);
                scalar.map(old, now);
              }
            }
            FailureOr<SmallVector<Value>> results;
            if (succeeded(cloneBlock(*loop.getBody(), nb)))
              results = yielded(loop.getBody()->getTerminator(), nb, wide, widen);
            ok = succeeded(results);
            scf::YieldOp::create(nb, loop.getLoc(),
                                 ok ? ValueRange(*results) : ValueRange(iterArgs));
          });
      if (ok) {
        for (auto [old, now, w] :
             llvm::zip(loop.getResults(), copy.getResults(), wide)) {
          if (w)
            vector[old] = now;
          else
            scalar.map(old, now);
        }
        return success();
      }
      copy.erase();
      if (widen.empty())
        return failure();
      for (unsigned i : widen)
        wide[i] = true;
    }
    return failure();
  }
};

/// Whether the loop body holds a reduction (an scf.for carrying a value):
/// the kernels whose threads wait on a serial chain of loads.
bool hasReduction(scf::ParallelOp loop) {
  bool found = false;
  loop.getBody()->walk([&](scf::ForOp inner) {
    found |= inner.getNumRegionIterArgs() > 0;
  });
  return found;
}

struct VectorizeColumns
    : poot::impl::PootGPUVectorizeColumnsBase<VectorizeColumns> {
  using Base::Base;

  /// The columns a thread of `loop` takes: `width` (16 bytes of 32-bit
  /// columns), twice that when every per-column load inside its reduction
  /// loops (one whose last index follows the column index) reads 16-bit
  /// elements: 16 bytes of bf16/f16 weights, the f32 accumulators then two
  /// 16-byte stores. Uniform loads (the activation x[k], f32 or not) do
  /// not count.
  int64_t widthFor(scf::ParallelOp loop) {
    // Without vector memory (SPIR-V) the groups stay `width`: SPIR-V
    // vectors longer than 4 need the Vector16 capability.
    if (!vectorMemory)
      return width;
    Value column = loop.getInductionVars().back();
    bool narrow = false, wide = false;
    loop.getBody()->walk([&](memref::LoadOp load) {
      if (load.getIndices().empty() || !load->getParentOfType<scf::ForOp>() ||
          !followsColumn(load.getIndices().back(), column))
        return;
      unsigned bits = load.getMemRefType().getElementTypeBitWidth();
      narrow |= bits == 16;
      wide |= bits != 16;
    });
    return narrow && !wide ? 2 * width : width;
  }

  /// Whether `index` is computed from `column` (through index arithmetic).
  static bool followsColumn(Value index, Value column, int depth = 0) {
    if (index == column)
      return true;
    Operation *def = index.getDefiningOp();
    if (!def || depth > 8)
      return false;
    return llvm::any_of(def->getOperands(), [&](Value v) {
      return followsColumn(v, column, depth + 1);
    });
  }

  /// The loop with its last dimension in groups of `width` columns, or
  /// failure (nothing changed).
  LogicalResult vectorize(scf::ParallelOp &loop, int64_t width) {
    unsigned last = loop.getNumLoops() - 1;
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()[last]);
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()[last]);
    std::optional<int64_t> step = getConstantIntValue(loop.getStep()[last]);
    if (!lb || !ub || !step || *lb != 0 || *step != 1 || *ub % width ||
        *ub < width)
      return failure();
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    SmallVector<Value> ubs = llvm::to_vector(loop.getUpperBound());
    ubs[last] = arith::ConstantIndexOp::create(b, loc, *ub / width);
    auto grouped = scf::ParallelOp::create(b, loc, loop.getLowerBound(), ubs,
                                           loop.getStep());
    OpBuilder ib = OpBuilder::atBlockBegin(grouped.getBody());
    Value first = arith::MulIOp::create(
        ib, loc, grouped.getInductionVars()[last],
        arith::ConstantIndexOp::create(ib, loc, width));
    ColumnCloner cloner(loop.getInductionVars()[last], first, width,
                        vectorMemory);
    for (unsigned d = 0; d < last; ++d)
      cloner.scalar.map(loop.getInductionVars()[d], grouped.getInductionVars()[d]);
    ib.setInsertionPoint(grouped.getBody()->getTerminator());
    if (failed(cloner.cloneBlock(*loop.getBody(), ib))) {
      grouped.erase();
      return failure();
    }
    loop.erase();
    loop = grouped;
    return success();
  }

  /// Independent loads in flight: the innermost reduction loops of `loop`
  /// unrolled by `unroll` (upstream loopUnrollByFactor; a trip count it
  /// does not divide leaves an epilogue loop).
  void unrollReductions(scf::ParallelOp loop) {
    SmallVector<scf::ForOp> inner;
    loop.getBody()->walk([&](scf::ForOp f) {
      if (f.getNumRegionIterArgs() > 0 &&
          f.getBody()->getOps<scf::ForOp>().empty())
        inner.push_back(f);
    });
    for (scf::ForOp f : inner) {
      std::optional<int64_t> lb = getConstantIntValue(f.getLowerBound());
      std::optional<int64_t> ub = getConstantIntValue(f.getUpperBound());
      std::optional<int64_t> step = getConstantIntValue(f.getStep());
      if (lb && ub && step && *step > 0 &&
          (*ub - *lb) / *step / 2 >= int64_t(unroll)) // (no overflow)
        (void)loopUnrollByFactor(f, unroll);
    }
  }

  void runOnOperation() override {
    if (width < 2 || !llvm::isPowerOf2_64(width) || unroll < 1) {
      getOperation().emitError()
          << "poot-gpu-vectorize-columns: width must be a power of two >= 2 "
             "and unroll >= 1, got "
          << static_cast<int64_t>(width) << " and " << static_cast<int64_t>(unroll);
      return signalPassFailure();
    }
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<scf::ParallelOp> loops =
        llvm::to_vector(func.getBody().front().getOps<scf::ParallelOp>());
    for (scf::ParallelOp loop : loops) {
      if (!hasReduction(loop))
        continue;
      int64_t columns = widthFor(loop);
      if (failed(vectorize(loop, columns)) && columns != width)
        (void)vectorize(loop, width);
      if (unroll > 1)
        unrollReductions(loop);
    }
  }
};

} // namespace
