//===- SplitReductions.cpp - poot-gpu-split-reductions ---------------------===//
//
// A decode step's matmuls have few outputs and long reductions ([1, d] x
// [d, n]: n threads, each summing d products). Mapped one thread per output
// they leave most of a GPU idle and read the weights at a fraction of its
// bandwidth. Upstream's linalg::splitReduction turns the reduction into an
// extra parallel dimension of partial sums plus a short final reduction, so
// the same op runs on ratio x more threads. This pass shapes the reductions
// so splitReduction applies, chooses the ratio, and orders the final
// reduction so that its threads run over outputs, not over splits.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/JamRows.h"
#include "lib/Conversion/GPUProgram/MmaContraction.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUSPLITREDUCTIONS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// The columns one thread owns once poot-gpu-vectorize-columns has run:
/// an op whose last output dimension it divides runs on 1/kColumns of the
/// threads, so it is split kColumns x further to fill the device.
constexpr int64_t kColumns = 4;

/// A reduction whose init is a fill (through reshapes) that other ops share
/// gets a fill of its own: bufferization would otherwise fill one buffer
/// and copy it into each reduction's output (a copy kernel per matmul), and
/// poot-gpu-fold-fills folds only a fill the reduction owns.
void ownFill(RewriterBase &rewriter, linalg::LinalgOp op) {
  OpOperand *init = op.getDpsInitOperand(0);
  SmallVector<Operation *> chain; // the init's producers, init first
  Value v = init->get();
  bool shared = false;
  while (Operation *def = v.getDefiningOp()) {
    shared |= !v.hasOneUse();
    chain.push_back(def);
    if (isa<linalg::FillOp>(def))
      break;
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
      return;
    v = def->getOperand(0);
  }
  auto fill = chain.empty() ? linalg::FillOp() : dyn_cast<linalg::FillOp>(chain.back());
  if (!fill || !shared)
    return;
  rewriter.setInsertionPoint(op);
  IRMapping mapping;
  if (auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    mapping.map(empty.getResult(), rewriter.clone(*empty)->getResult(0));
  Value copy;
  for (Operation *producer : llvm::reverse(chain))
    copy = rewriter.clone(*producer, mapping)->getResult(0);
  rewriter.modifyOpInPlace(op, [&] { init->set(copy); });
}

/// An operand read or written through constant-zero results at unit
/// dimensions ((d0, d1) -> (d0, 0): the lowering of a reduce that keeps its
/// axis, or such a value broadcast into a fused consumer), as the
/// reassociation that drops them, the collapsed shape and the map without
/// them; nothing when it has none or another constant.
struct Dropped {
  SmallVector<ReassociationIndices> groups;
  SmallVector<int64_t> shape;
  AffineMap map;
};
std::optional<Dropped> keptDims(RankedTensorType type, AffineMap map) {
  if (!type || !type.hasStaticShape() || type.getRank() != map.getNumResults())
    return std::nullopt;
  Dropped d;
  SmallVector<AffineExpr> kept;
  ReassociationIndices pending; // dropped dims before the first kept one
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
      if (constant.getValue() != 0 || type.getDimSize(i) != 1)
        return std::nullopt;
      if (d.groups.empty())
        pending.push_back(i);
      else
        d.groups.back().push_back(i);
      continue;
    }
    kept.push_back(expr);
    d.shape.push_back(type.getDimSize(i));
    d.groups.push_back(pending);
    d.groups.back().push_back(i);
    pending.clear();
  }
  // (`pending` is left over only when every result was dropped: a rank-0
  // operand, collapsed with no groups.)
  if (kept.size() == map.getNumResults())
    return std::nullopt;
  d.map = AffineMap::get(map.getNumDims(), 0, kept, map.getContext());
  return d;
}

/// splitReduction reads only permutation maps, so the unit dimensions leave
/// every operand that has them: the op reads and writes collapsed tensors
/// (tensor.collapse_shape), and a collapsed result is expanded back to the
/// original type. Returns the new op, or null.
linalg::GenericOp dropKeptDims(RewriterBase &rewriter, linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return {};
  Location loc = op.getLoc();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<Value> operands;
  std::optional<Dropped> result;
  bool changed = false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    std::optional<Dropped> d =
        keptDims(type, op.getMatchingIndexingMap(&operand));
    if (!d) {
      operands.push_back(operand.get());
      continue;
    }
    changed = true;
    operands.push_back(tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get(d->shape, type.getElementType()),
        operand.get(), d->groups));
    maps[operand.getOperandNumber()] = d->map;
    if (op.isDpsInit(&operand))
      result = d;
  }
  if (!changed)
    return {};
  Value init = operands.back();
  operands.pop_back();
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, operands, ValueRange{init},
      maps, op.getIteratorTypesArray());
  rewriter.inlineRegionBefore(op.getRegion(), generic.getRegion(),
                              generic.getRegion().begin());
  Value out = generic.getResult(0);
  if (result)
    out = tensor::ExpandShapeOp::create(rewriter, loc, op.getResult(0).getType(),
                                        out, result->groups);
  rewriter.replaceOp(op, out);
  return generic;
}

/// Adjacent reduction loops that every operand reads as one run of
/// dimensions (the output projection's heads x head_dim) fold into one
/// reduction loop (upstream collapseOpIterationDims).
linalg::LinalgOp foldReductionLoops(RewriterBase &rewriter,
                                    linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op.getOperation()))
    return op; // collapseOpIterationDims takes generics (and copies)
  SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
  ReassociationIndices run;
  for (auto [i, kind] : llvm::enumerate(kinds)) {
    if (kind != utils::IteratorType::reduction)
      continue;
    if (!run.empty() && run.back() != int64_t(i) - 1)
      return op; // reductions that are not adjacent: left as they are
    run.push_back(i);
  }
  if (run.size() < 2 ||
      !linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), {run}))
    return op;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::CollapseResult> folded =
      linalg::collapseOpIterationDims(op, {run}, rewriter);
  if (failed(folded))
    return op;
  rewriter.replaceOp(op, folded->results);
  return folded->collapsedOp;
}

/// Reduction loops innermost: convert-linalg-to-parallel-loops makes
/// parallel loops only of the leading parallel dimensions, so a combine op
/// whose split dimension comes first would run as one serial thread.
void reductionsInnermost(RewriterBase &rewriter, linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return;
  SmallVector<unsigned> order;
  SmallVector<utils::IteratorType> kinds = generic.getIteratorTypesArray();
  for (auto [i, kind] : llvm::enumerate(kinds))
    if (kind == utils::IteratorType::parallel)
      order.push_back(i);
  for (auto [i, kind] : llvm::enumerate(kinds))
    if (kind == utils::IteratorType::reduction)
      order.push_back(i);
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
    return;
  rewriter.setInsertionPoint(generic);
  (void)linalg::interchangeGenericOp(rewriter, generic, order);
}

/// Upstream splitReduction rewrites the indexing maps but not the body's
/// `linalg.index` ops (a gather fused into a matmul, a LoRA table picked by
/// slot, reads them): with the split dimension inserted at loop 0, every
/// original loop `d` is now loop `d + 1`, and the original reduction loop
/// `r` is `split * chunk + inner` (loop 0 times the chunk, plus loop r + 1).
void remapIndices(RewriterBase &rewriter, linalg::LinalgOp split,
                  unsigned reductionDim, int64_t chunk) {
  SmallVector<linalg::IndexOp> indices;
  split.getBlock()->walk([&](linalg::IndexOp op) { indices.push_back(op); });
  for (linalg::IndexOp index : indices) {
    rewriter.setInsertionPoint(index);
    Location loc = index.getLoc();
    uint64_t dim = index.getDim();
    Value shifted = linalg::IndexOp::create(rewriter, loc, dim + 1);
    if (dim == reductionDim) {
      Value outer = linalg::IndexOp::create(rewriter, loc, 0);
      Value size = arith::ConstantIndexOp::create(rewriter, loc, chunk);
      Value base = arith::MulIOp::create(rewriter, loc, outer, size);
      shifted = arith::AddIOp::create(rewriter, loc, base, shifted);
    }
    rewriter.replaceOp(index, shifted);
  }
}

/// A matmul that reads a `linalg.transpose` of its weight (torch's [N, K]
/// Linear weight as [K, N]) reads the weight itself through the permuted
/// map instead, when that makes it a tensor-core matmul: the transpose (a
/// copy of the whole weight every step) is then dead. Returns the op that
/// stands (a generic when folded).
linalg::LinalgOp readTransposedInputs(RewriterBase &rewriter,
                                      linalg::LinalgOp op, int64_t minRows) {
  if (llvm::none_of(op.getDpsInputOperands(), [](OpOperand *in) {
        return in->get().getDefiningOp<linalg::TransposeOp>();
      }))
    return op;
  rewriter.setInsertionPoint(op);
  auto clone = cast<linalg::LinalgOp>(rewriter.clone(*op));
  linalg::GenericOp generic;
  if (auto g = dyn_cast<linalg::GenericOp>(clone.getOperation())) {
    generic = g;
  } else {
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, clone);
    if (failed(generalized)) {
      rewriter.eraseOp(clone);
      return op;
    }
    generic = *generalized;
  }
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  for (OpOperand *in : generic.getDpsInputOperands()) {
    auto transpose = in->get().getDefiningOp<linalg::TransposeOp>();
    if (!transpose)
      continue;
    // The transpose's output index j is its input's index perm[j].
    AffineMap map = maps[in->getOperandNumber()];
    ArrayRef<int64_t> perm = transpose.getPermutation();
    SmallVector<AffineExpr> read(perm.size());
    for (auto [j, p] : llvm::enumerate(perm))
      read[p] = map.getResult(j);
    maps[in->getOperandNumber()] =
        AffineMap::get(map.getNumDims(), 0, read, map.getContext());
    rewriter.modifyOpInPlace(generic, [&] { in->set(transpose.getInput()); });
  }
  rewriter.modifyOpInPlace(generic, [&] {
    generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
  if (!matchMmaContraction(generic, minRows)) {
    rewriter.eraseOp(generic);
    return op;
  }
  SmallVector<linalg::TransposeOp> transposes;
  for (Value operand : op->getOperands())
    if (auto transpose = operand.getDefiningOp<linalg::TransposeOp>();
        transpose && !llvm::is_contained(transposes, transpose))
      transposes.push_back(transpose);
  rewriter.replaceOp(op, generic->getResults());
  // A transpose nothing reads any more would still be bufferized (and run).
  for (linalg::TransposeOp transpose : transposes)
    if (transpose->use_empty())
      rewriter.eraseOp(transpose);
  return generic;
}

/// Whether `op` combines with a max or a min of its output (the payload
/// yields `max(out, x)` or `min(out, x)`): a result independent of the
/// order its terms are combined in.
bool orderFreeCombiner(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || !op.getBlock() ||
      op.getBlock()->getTerminator()->getNumOperands() != 1)
    return false;
  Operation *combiner =
      op.getBlock()->getTerminator()->getOperand(0).getDefiningOp();
  if (!isa_and_nonnull<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
                       arith::MinNumFOp, arith::MaxSIOp, arith::MinSIOp,
                       arith::MaxUIOp, arith::MinUIOp>(combiner))
    return false;
  Value out = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  return llvm::is_contained(combiner->getOperands(), out);
}

/// Whether upstream splitReduction can read `op`: it takes every indexing
/// map as a permutation of loop dimensions (and asserts so), so constant or
/// compound indices keep an op whole.
bool splittableMaps(linalg::LinalgOp op) {
  return llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
    return map.isProjectedPermutation(/*allowZeroInResults=*/false);
  });
}

/// Whether `map` (an input's) reads along one of the reduction loops.
bool readsAlongReduction(linalg::LinalgOp op, AffineMap map) {
  for (auto [r, kind] : llvm::enumerate(op.getIteratorTypesArray()))
    if (kind == utils::IteratorType::reduction && map.isFunctionOfDim(r))
      return true;
  return false;
}

/// The weight: the largest static input indexed by a reduction loop (the
/// operand a matmul's rows share), and its bytes; {null, 0} when none.
std::pair<OpOperand *, int64_t> weightOf(linalg::LinalgOp op) {
  OpOperand *weight = nullptr;
  int64_t weightBytes = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<ShapedType>(input->get().getType());
    if (!type || !type.hasStaticShape() || !readsAlongReduction(op, map) ||
        !type.getElementType().isIntOrFloat())
      continue;
    int64_t bytes =
        type.getNumElements() * (type.getElementTypeBitWidth() / 8);
    if (bytes > weightBytes) {
      weight = input;
      weightBytes = bytes;
    }
  }
  return {weight, weightBytes};
}

/// The loops that are a matmul's rows: parallel, not the last parallel
/// loop (the columns), and not indexed by the weight (weightOf): the loops
/// poot-gpu-jam-rows reads as rows on the lowered kernel. All false when
/// the op has no weight.
SmallVector<bool> weightFreeRowLoops(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
  SmallVector<bool> rows(kinds.size(), false);
  OpOperand *weight = weightOf(op).first;
  if (!weight)
    return rows;
  AffineMap weightMap = op.getMatchingIndexingMap(weight);
  int64_t lastParallel = -1;
  for (auto [d, kind] : llvm::enumerate(kinds))
    if (kind == utils::IteratorType::parallel)
      lastParallel = d;
  for (auto [d, kind] : llvm::enumerate(kinds))
    rows[d] = kind == utils::IteratorType::parallel &&
              int64_t(d) != lastParallel && !weightMap.isFunctionOfDim(d);
  return rows;
}

/// The rows poot-gpu-jam-rows will give one thread of `op`'s kernel, and
/// the bytes of the operand those rows share: of the weight-free row loops
/// with a static range, the one with the most rows a thread. {1, 0} when
/// none.
std::pair<int64_t, int64_t> jammedRowsOf(linalg::LinalgOp op,
                                         int64_t maxRows) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t best = 1;
  for (auto [d, isRow] : llvm::enumerate(weightFreeRowLoops(op)))
    if (isRow && !ShapedType::isDynamic(ranges[d]))
      best = std::max(best, poot::jammedRows(ranges[d], maxRows));
  return {best, best > 1 ? weightOf(op).second : 0};
}

/// The loops of `op` that are rows -- the batch-like dimensions one row's
/// work does not span -- for a batch-invariant split: where every input
/// read along the reduction indexes every parallel loop (each output
/// reduces data of its own: a norm's sum of squares), every parallel loop;
/// else the weight-free row loops (a matmul's rows).
SmallVector<bool> rowLoopsOf(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
  auto isParallel = [&](int64_t d) {
    return kinds[d] == utils::IteratorType::parallel;
  };
  bool shared = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!readsAlongReduction(op, map))
      continue;
    for (int64_t d = 0, e = kinds.size(); d < e; ++d)
      shared |= isParallel(d) && !map.isFunctionOfDim(d);
  }
  if (shared)
    return weightFreeRowLoops(op);
  SmallVector<bool> rows(kinds.size(), false);
  for (int64_t d = 0, e = kinds.size(); d < e; ++d)
    rows[d] = isParallel(d);
  return rows;
}

/// The split ratio for a reduction of `reduction` products over `threads`
/// threads: the largest power of two that brings the threads to
/// `minThreads` and keeps chunks of >= `chunkFloor` products, at most
/// `cap` (rounded down to a power of two; a cap below 2 allows no split),
/// halved until it divides the reduction. 0: leave the op whole.
int64_t splitRatio(int64_t threads, int64_t reduction, int64_t chunkFloor,
                   int64_t minThreads, std::optional<int64_t> cap) {
  if (threads <= 0 || threads >= minThreads || reduction / chunkFloor < 2)
    return 0;
  int64_t ratio = int64_t(1)
                  << llvm::Log2_64(std::min<int64_t>(minThreads / threads,
                                                     reduction / chunkFloor));
  if (cap)
    ratio = *cap < 2 ? 1 : std::min(ratio, int64_t(1) << llvm::Log2_64(*cap));
  while (ratio > 1 && reduction % ratio)
    ratio /= 2;
  return ratio > 1 ? ratio : 0;
}

struct SplitReductions
    : poot::impl::PootGPUSplitReductionsBase<SplitReductions> {
  using Base::Base;

  /// The split ratio for `op`: 0 (leave it) unless it has one reduction
  /// loop, static f32 shapes and fewer threads than `minThreads` (its
  /// parallel iterations, over kColumns when the last output dimension
  /// holds whole column groups); then the largest power of two dividing
  /// the reduction that brings the threads to `minThreads` and keeps
  /// chunks of >= minChunk products.
  int64_t ratioFor(linalg::LinalgOp op) {
    if (op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1 ||
        !op.hasPureTensorSemantics())
      return 0;
    if (!splittableMaps(op))
      return 0;
    // Sums split in f32 only (a split changes their order); a max or min
    // gives the same bits in any order, at any type (an argmax's max over
    // bf16 logits and its first-index min over i32).
    auto init = dyn_cast<RankedTensorType>(op.getDpsInits()[0].getType());
    if (!init || (!init.getElementType().isF32() && !orderFreeCombiner(op)))
      return 0;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t parallel = 1, reduction = 0;
    for (auto [range, kind] : llvm::zip(ranges, op.getIteratorTypesArray())) {
      if (ShapedType::isDynamic(range))
        return 0;
      if (kind == utils::IteratorType::reduction)
        reduction = range;
      else
        parallel *= range;
    }
    // 16-bit inputs (bf16/f16 weights, f32 accumulators): twice the
    // columns a thread, so its weight loads stay 16 bytes.
    int64_t columns = kColumns;
    if (llvm::all_of(op.getDpsInputs(), [](Value v) {
          auto t = dyn_cast<ShapedType>(v.getType());
          return t && t.getElementType().isIntOrFloat() &&
                 t.getElementTypeBitWidth() == 16;
        }))
      columns = 2 * kColumns;
    // An empty op (a zero-sized dimension) has nothing to split; a
    // `min-chunk` below 1 is read as 1.
    int64_t chunkFloor = std::max<int64_t>(minChunk, 1);
    if (batchInvariant)
      return perRowRatio(op, ranges, reduction, columns, chunkFloor);
    int64_t threads = parallel;
    if (init.getRank() > 0 && init.getShape().back() % columns == 0)
      threads = parallel / columns;
    // Rows poot-gpu-jam-rows puts in one thread: fewer threads, and every
    // split writes partial sums for all the rows (B rows x N columns x
    // ratio), which must stay small beside the weight they share.
    auto [rows, sharedBytes] = jammedRowsOf(op, jamRows);
    threads /= rows;
    // Partial sums (4 bytes each, written then read) at most a quarter of
    // the shared input's bytes.
    std::optional<int64_t> cap;
    if (rows > 1)
      cap = sharedBytes / (16 * parallel);
    return splitRatio(threads, reduction, chunkFloor, minThreads, cap);
  }

  /// The batch-invariant ratio: the same rule counting one row's threads
  /// (the rows, rowLoopsOf, as 1), with no cap on the partials (it follows
  /// the rows), so a row's chunks and their order are the same at any
  /// batch.
  int64_t perRowRatio(linalg::LinalgOp op, ArrayRef<int64_t> ranges,
                      int64_t reduction, int64_t columns,
                      int64_t chunkFloor) {
    SmallVector<bool> rows = rowLoopsOf(op);
    SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
    int64_t threads = 1;
    for (auto [d, kind] : llvm::enumerate(kinds))
      if (kind == utils::IteratorType::parallel && !rows[d])
        threads *= ranges[d];
    // Columns a thread owns, when the output's last dimension is one of a
    // row's own loops and holds whole column groups.
    AffineMap initMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (initMap.getNumResults() > 0) {
      auto last = dyn_cast<AffineDimExpr>(initMap.getResults().back());
      if (last && !rows[last.getPosition()] &&
          ranges[last.getPosition()] % columns == 0)
        threads /= columns;
    }
    return splitRatio(threads, reduction, chunkFloor, minThreads,
                      std::nullopt);
  }

  /// The split ratio of a tensor-core matmul (poot-gpu-mma-matmuls): its
  /// threads are 4 warps of 32 for each workgroup tile of rows x columns
  /// (mmaWorkgroupShape); the
  /// partials are kept to a quarter of the weight's bytes, and each chunk a
  /// whole number of the kernel's reduction chunks (4 warps x 64). 1:
  /// leave it whole.
  int64_t mmaRatioFor(linalg::LinalgOp op, const MmaContraction &mm) {
    if (!splittableMaps(op))
      return 1;
    int64_t rows = mm.rowCount(), reduction = mm.reductionCount();
    MmaWorkgroupShape shape =
        mmaWorkgroupShape(rows, mm.columnCount(), mmaStagedRows);
    int64_t warps = mm.columnCount() / shape.columns() * kMmaWarpsPerColumns *
                    llvm::divideCeil(rows, shape.rows()) * mm.batchCount();
    int64_t ratio =
        splitRatio(warps * 32, reduction, kMmaReductionChunk, minThreads,
                   /*cap=*/reduction / (8 * rows));
    while (ratio > 1 &&
           (reduction % ratio || (reduction / ratio) % kMmaReductionChunk))
      ratio /= 2;
    return std::max<int64_t>(ratio, 1);
  }

  /// Splits `op` by `ratio` (upstream splitReduction, the split loop
  /// first); returns the partials' op, or null when it did not apply.
  linalg::LinalgOp split(IRRewriter &rewriter, linalg::LinalgOp op,
                         int64_t ratio) {
    rewriter.setInsertionPoint(op);
    // The partials' split dimension goes first: threads that differ in
    // the output's last index stay adjacent (coalesced weight reads).
    // An op whose combiner splitReduction cannot recognize stays whole.
    SmallVector<unsigned> reductionDims;
    op.getReductionDims(reductionDims);
    int64_t chunk = op.getStaticLoopRanges()[reductionDims[0]] / ratio;
    FailureOr<linalg::SplitReductionResult> result = linalg::splitReduction(
        rewriter, op, [&](linalg::LinalgOp) {
          return linalg::SplitReductionOptions{ratio, 0,
                                               /*innerParallel=*/false};
        });
    if (failed(result))
      return {};
    remapIndices(rewriter, result->splitLinalgOp, reductionDims[0], chunk);
    reductionsInnermost(rewriter, result->resultCombiningLinalgOp);
    return result->splitLinalgOp;
  }

  void runOnOperation() override {
    if (jamRows < 1 || jamRows > poot::kMaxJamRows) {
      getOperation().emitError()
          << "poot-gpu-split-reductions: jam-rows must be in [1, 64], got "
          << static_cast<int64_t>(jamRows);
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // Shape every reduction first: keepdim outputs dropped, adjacent
    // reduction loops folded.
    SmallVector<linalg::LinalgOp> reductions;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() > 0 && op.hasPureTensorSemantics())
        reductions.push_back(op);
    });
    SmallVector<linalg::LinalgOp> candidates;
    SmallVector<std::pair<linalg::LinalgOp, MmaContraction>, 0> mmaCandidates;
    bool tensorCores = mmaRows > 0 && !batchInvariant;
    for (linalg::LinalgOp op : reductions) {
      if (op.getNumDpsInits() == 1)
        ownFill(rewriter, op);
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
        rewriter.setInsertionPoint(generic);
        if (linalg::GenericOp dropped = dropKeptDims(rewriter, generic))
          op = dropped;
      }
      op = foldReductionLoops(rewriter, op);
      if (tensorCores && op.hasPureTensorSemantics())
        op = readTransposedInputs(rewriter, op, mmaRows);
      std::optional<MmaContraction> mm;
      if (tensorCores && op.hasPureTensorSemantics())
        mm = matchMmaContraction(op, mmaRows);
      if (mm)
        mmaCandidates.push_back({op, *mm});
      else if (ratioFor(op) > 1)
        candidates.push_back(op);
    }
    for (linalg::LinalgOp op : candidates)
      (void)split(rewriter, op, ratioFor(op));
    // Tensor-core matmuls: split by their own kernel's count, then marked
    // for poot-gpu-mma-matmuls (the partials' op, when split).
    for (auto &[op, mm] : mmaCandidates) {
      int64_t ratio = mmaRatioFor(op, mm);
      linalg::LinalgOp marked = op;
      if (ratio > 1)
        if (linalg::LinalgOp partials = split(rewriter, op, ratio))
          marked = partials;
      bool staged =
          mmaWorkgroupShape(mm.rowCount(), mm.columnCount(), mmaStagedRows)
              .staged;
      marked->setAttr(kMmaMatmulAttr,
                      rewriter.getStringAttr(staged ? kMmaStagedKernel
                                                    : kMmaDirectKernel));
    }
  }
};

} // namespace
