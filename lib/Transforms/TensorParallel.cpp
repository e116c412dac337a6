//===- TensorParallel.cpp - poot-tensor-parallel --------------------------===//
//
// Megatron-style tensor parallelism as a rewrite of the traced step: rank
// `rank`'s program of a step split over `degree` ranks. A *group* is the
// set of column-parallel projections whose outputs meet before a
// contraction (q, k, v at an attention; gate and up at the MLP's product).
// The group splits when every op it reaches has a rule (SplitRules.cpp);
// the contraction at its end (the output or down projection) then sums a
// block of k on each rank and a poot.all_reduce adds the blocks. A group
// that cannot split (the lm_head, whose logits are a result) stays whole on
// every rank, with a remark that says why.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"
#include "lib/Transforms/SplitRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

#include <set>

namespace mlir::poot {
#define GEN_PASS_DEF_POOTTENSORPARALLEL
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// A matmul whose rhs is a 2-D weight argument (through a transpose and
/// element conversions): it can be split by its output columns.
struct Projection {
  MatMulOp op;
  Value weight;
  /// The weight's dimension that holds the matmul's output columns.
  int64_t columnDim;
  /// The ops between the weight and the matmul.
  SmallVector<Operation *> chain;
};

std::optional<Projection> asProjection(func::FuncOp func, MatMulOp op) {
  Projection p{op, op.getRhs(), 1, {}};
  if (cast<RankedTensorType>(p.weight.getType()).getRank() != 2)
    return std::nullopt;
  while (Operation *def = p.weight.getDefiningOp()) {
    if (auto transpose = dyn_cast<TransposeOp>(def))
      p.columnDim = transpose.getPermutation()[p.columnDim];
    else if (!isa<ConvertOp>(def))
      return std::nullopt;
    p.chain.insert(p.chain.begin(), def);
    p.weight = def->getOperand(0);
  }
  if (!isWeightArgument(func, p.weight))
    return std::nullopt;
  return p;
}

RankedTensorType localType(Type type, const Split &split) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[split.dim] /= split.parts;
  return tensor.clone(shape);
}

struct TensorParallel
    : poot::impl::PootTensorParallelBase<TensorParallel> {
  using Base::Base;

  int64_t blockOf(const Split &split) const {
    return rank / (degree / split.parts);
  }

  ShardAttr shardAttr(const Split &split) {
    return ShardAttr::get(&getContext(), split.dim, blockOf(split),
                          split.parts, split.segments);
  }

  /// The segments a seed's weight splits into, from the cuts slices made
  /// in its output columns (none: one segment).
  static SmallVector<int64_t, 4> segmentsOf(const Projection &seed,
                                            const std::set<int64_t> &cuts) {
    if (cuts.empty())
      return {};
    int64_t size = cast<RankedTensorType>(seed.weight.getType())
                       .getDimSize(seed.columnDim);
    SmallVector<int64_t, 4> segments;
    int64_t from = 0;
    for (int64_t cut : cuts) {
      if (cut <= from || cut >= size)
        continue;
      segments.push_back(cut - from);
      from = cut;
    }
    segments.push_back(size - from);
    return segments;
  }

  void runOnOperation() override {
    if (degree < 1 || rank < 0 || rank >= degree) {
      getOperation().emitError() << "poot-tensor-parallel needs 0 <= rank < "
                                    "degree, got rank "
                                 << int64_t(rank) << " of " << int64_t(degree);
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func.isPrivate())
        continue;
      func->setAttr(PootDialect::kTensorParallelAttrName,
                    TensorParallelAttr::get(&getContext(), rank, degree));
      if (degree > 1 && failed(split(func)))
        return signalPassFailure();
    }
  }

  LogicalResult split(func::FuncOp func) {
    Block &body = func.getBody().front();
    DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = i;

    // Groups: the projections whose reach (forward, up to a contraction
    // they enter as its lhs) shares an op. A projection whose input is
    // already in some reach is that group's closing contraction instead.
    SmallVector<Projection> seeds;
    SmallVector<SetVector<Operation *>> reach;
    DenseMap<Operation *, unsigned> reachedBy;
    // The reach without its closing contractions: a split value flows out
    // of these, so a matmul reading one closes a group; one reading a
    // closing contraction's (summed) result starts a group of its own.
    DenseSet<Operation *> interior;
    llvm::EquivalenceClasses<unsigned> groups;
    for (Operation &op : body) {
      auto matmul = dyn_cast<MatMulOp>(op);
      if (!matmul)
        continue;
      std::optional<Projection> projection = asProjection(func, matmul);
      if (!projection)
        continue;
      Operation *input = matmul.getLhs().getDefiningOp();
      if (input && interior.contains(input))
        continue;
      unsigned id = seeds.size();
      seeds.push_back(*projection);
      groups.insert(id);
      SetVector<Operation *> ops(projection->chain.begin(),
                                 projection->chain.end());
      ops.insert(matmul);
      interior.insert(matmul);
      SmallVector<Value> work{matmul.getResult()};
      while (!work.empty()) {
        Value value = work.pop_back_val();
        for (OpOperand &use : value.getUses()) {
          Operation *user = use.getOwner();
          if (isa<func::ReturnOp>(user) || user->getBlock() != &body)
            continue;
          if (!ops.insert(user))
            continue;
          if (isa<MatMulOp>(user) && use.getOperandNumber() == 0)
            continue; // the closing contraction: its result is replicated
          interior.insert(user);
          llvm::append_range(work, user->getResults());
        }
      }
      for (Operation *op : ops) {
        auto [it, inserted] = reachedBy.try_emplace(op, id);
        if (!inserted)
          groups.unionSets(id, it->second);
      }
      // The step's results: a state the group writes is returned.
      ops.insert(body.getTerminator());
      reach.push_back(std::move(ops));
    }

    DenseMap<Value, Split> committed;
    SmallVector<std::pair<OpOperand *, Split>> reads;
    SmallVector<Operation *> partials;
    SmallVector<SegmentSlice> segmentSlices;
    DenseMap<unsigned, Split> results;
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      if (!(*it)->isLeader())
        continue;
      SmallVector<unsigned> members(groups.member_begin(**it),
                                    groups.member_end());
      SetVector<Operation *> opSet;
      for (unsigned m : members)
        opSet.insert(reach[m].begin(), reach[m].end());
      SmallVector<Operation *> ops(opSet.begin(), opSet.end());
      llvm::sort(ops, [&](Operation *a, Operation *b) {
        return position[a] < position[b];
      });
      DenseMap<unsigned, int64_t> parts;
      DenseMap<unsigned, std::set<int64_t>> cuts; // packed projections
      for (unsigned m : members)
        parts[m] = degree;
      std::optional<GroupSplit> done;
      std::string why;
      // Each retry narrows one seed's parts or adds a packed projection's
      // segment bound; a handful suffices (q, k, v of one packed weight).
      for (int attempt = 0; attempt < 16 && !done; ++attempt) {
        GroupSplit group(func, degree, committed);
        bool ok = true;
        for (unsigned m : members)
          ok = ok && succeeded(group.seed(
                         seeds[m].weight,
                         Split{seeds[m].columnDim, parts[m], m,
                               segmentsOf(seeds[m], cuts[m])}));
        ok = ok && succeeded(group.walk(ops)) && succeeded(group.checkUses());
        if (ok) {
          done.emplace(std::move(group));
          break;
        }
        why = group.why().str();
        if (auto packed = group.retryCuts();
            packed && parts.contains(packed->first)) {
          std::set<int64_t> &bounds = cuts[packed->first];
          size_t before = bounds.size();
          bounds.insert(packed->second.begin(), packed->second.end());
          if (bounds.size() > before)
            continue;
        }
        auto retry = group.retry();
        if (!retry || !parts.contains(retry->first) ||
            parts[retry->first] <= retry->second)
          break;
        parts[retry->first] = retry->second;
      }
      if (!done) {
        seeds[members.front()].op.emitRemark()
            << "stays whole on every rank: " << why;
        continue;
      }
      for (auto &[value, split] : done->values())
        committed[value] = split;
      llvm::append_range(reads, done->blockReads());
      llvm::append_range(segmentSlices, done->segmentSlices());
      llvm::append_range(partials, done->partialSums());
      for (auto &[index, split] : done->resultSplits())
        results[index] = split;
    }
    if (committed.empty())
      func.emitWarning() << "nothing splits over " << int64_t(degree)
                         << " ranks: every rank runs the whole step";
    rewrite(func, committed, reads, segmentSlices, partials, results);
    return success();
  }

  void rewrite(func::FuncOp func, const DenseMap<Value, Split> &values,
               ArrayRef<std::pair<OpOperand *, Split>> reads,
               ArrayRef<SegmentSlice> segmentSlices,
               ArrayRef<Operation *> partials,
               const DenseMap<unsigned, Split> &results) {
    MLIRContext *ctx = &getContext();
    // A replicated operand read as this rank's block.
    for (auto [operand, split] : reads) {
      Value whole = operand->get();
      auto type = cast<RankedTensorType>(whole.getType());
      SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
          step(type.getRank(), 1);
      int64_t n = type.getDimSize(split.dim) / split.parts;
      start[split.dim] = blockOf(split) * n;
      limit[split.dim] = start[split.dim] + n;
      OpBuilder b(operand->getOwner());
      auto block = SliceOp::create(b, whole.getLoc(), localType(type, split),
                                   whole, start, limit, step);
      operand->set(block);
    }
    for (auto [key, split] : values) {
      if (split.whole())
        continue; // held whole by every rank (a replicated KV head)
      Value value = key;
      value.setType(localType(value.getType(), split));
      if (auto slice = value.getDefiningOp<SliceOp>()) {
        SmallVector<int64_t> limit(slice.getLimit());
        limit[split.dim] /= split.parts;
        slice.setLimit(limit);
      }
      if (auto arg = dyn_cast<BlockArgument>(value))
        func.setArgAttr(arg.getArgNumber(), PootDialect::kShardAttrName,
                        shardAttr(split));
    }
    // One segment of a packed projection: the rank's block of it.
    for (const SegmentSlice &cut : segmentSlices) {
      auto slice = cast<SliceOp>(cut.slice);
      SmallVector<int64_t> start(slice.getStart()), limit(slice.getLimit());
      start[cut.dim] = cut.start;
      limit[cut.dim] = cut.limit;
      slice.setStart(start);
      slice.setLimit(limit);
    }
    for (auto &[index, split] : results)
      if (!split.whole())
        func.setResultAttr(index, PootDialect::kShardAttrName,
                           shardAttr(split));
    // Each rank summed its block of k: the sum over ranks is the product.
    for (Operation *op : partials) {
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      Value partial = op->getResult(0);
      auto sum = AllReduceOp::create(b, op->getLoc(), partial);
      partial.replaceAllUsesExcept(sum, sum);
    }
    Block &body = func.getBody().front();
    func.setType(FunctionType::get(ctx, body.getArgumentTypes(),
                                   body.getTerminator()->getOperandTypes()));
  }
};

} // namespace
