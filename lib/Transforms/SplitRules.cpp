//===- SplitRules.cpp - how each poot op carries a tensor-parallel split -===//
//
// One rule per op kind: given the splits of its operands, the split of its
// result, or a failure that leaves the whole group replicated. Shapes are
// the unsplit ones throughout; poot-tensor-parallel rewrites the types only
// once every group is decided.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/SplitRules.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::poot;

namespace {
ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}
int64_t rankOf(Value value) { return shapeOf(value).size(); }

/// The dimension of `to` that `dim` of a row-major reshape's `from` maps
/// to when split into `parts` blocks: the dimension with the same product
/// of dimensions before it whose size `parts` divides (its blocks are then
/// the same elements). Else, a dimension at that place smaller than
/// `parts` and dividing it (fewer heads than ranks), as `-size`.
std::optional<int64_t> reshapedDim(ArrayRef<int64_t> from,
                                   ArrayRef<int64_t> to, int64_t dim,
                                   int64_t parts) {
  int64_t before = 1;
  for (int64_t d = 0; d < dim; ++d)
    before *= from[d];
  int64_t prefix = 1;
  std::optional<int64_t> smaller;
  for (auto [j, size] : llvm::enumerate(to)) {
    if (prefix == before && size > 1) {
      if (size % parts == 0)
        return static_cast<int64_t>(j);
      if (parts % size == 0 && !smaller)
        smaller = -size;
    }
    prefix *= size;
    if (prefix > before)
      break;
  }
  return smaller;
}
} // namespace

bool mlir::poot::isWeightArgument(func::FuncOp func, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return false;
  return !func.getArgAttr(arg.getArgNumber(), PootDialect::kSlotAttrName);
}

bool mlir::poot::isSplittableArgument(func::FuncOp func, Value value) {
  if (isWeightArgument(func, value))
    return true;
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return false;
  auto slot = func.getArgAttrOfType<SlotAttr>(arg.getArgNumber(),
                                              PootDialect::kSlotAttrName);
  return slot && slot.getKind() == SlotKind::State;
}

LogicalResult GroupSplit::fail(Operation *op, const Twine &why) {
  if (reason.empty())
    reason = (op ? op->getName().getStringRef().str() + ": " : std::string()) +
              why.str();
  return failure();
}

std::optional<Split> GroupSplit::splitOf(Value value) const {
  auto it = splits.find(value);
  if (it == splits.end())
    return std::nullopt;
  return it->second;
}

LogicalResult GroupSplit::assign(Value value, Split split) {
  if (otherGroups.contains(value))
    return fail(value.getDefiningOp(), "a value another group already splits");
  int64_t size = shapeOf(value)[split.dim];
  if (!split.segments.empty()) {
    int64_t whole = 0;
    for (int64_t segment : split.segments) {
      if (segment % split.parts != 0)
        return fail(value.getDefiningOp(), "a segment of size " +
                                               Twine(segment) +
                                               " does not split");
      whole += segment;
    }
    if (whole != size)
      return fail(value.getDefiningOp(),
                  "a packed projection's segments do not reach this value");
  }
  if (size % split.parts != 0) {
    if (split.parts % size == 0 && !retryAt)
      retryAt = {split.seed, size};
    return fail(value.getDefiningOp(),
                "dimension " + Twine(split.dim) + " of size " + Twine(size) +
                    " does not split into " + Twine(split.parts) + " blocks");
  }
  auto [it, inserted] = splits.try_emplace(value, split);
  if (!inserted && !it->second.sameAs(split))
    return fail(value.getDefiningOp(), "a value split two ways");
  return success();
}

LogicalResult GroupSplit::need(OpOperand &operand, Split split) {
  Value value = operand.get();
  if (std::optional<Split> have = splitOf(value)) {
    if (!have->sameAs(split))
      return fail(operand.getOwner(), "operands split two ways");
    return success();
  }
  if (shapeOf(value)[split.dim] == 1 || split.whole())
    return success(); // broadcast, or whole: every rank reads all of it
  if (isSplittableArgument(func, value))
    return assign(value, split);
  if (otherGroups.contains(value))
    return fail(operand.getOwner(), "an operand another group splits");
  if (!split.segments.empty())
    return fail(operand.getOwner(),
                "a replicated operand read as a packed projection's blocks");
  int64_t size = shapeOf(value)[split.dim];
  if (size % split.parts != 0)
    return fail(operand.getOwner(), "a replicated operand of size " +
                                        Twine(size) + " does not split");
  reads.push_back({&operand, split});
  return success();
}

LogicalResult GroupSplit::seed(Value weight, Split split) {
  return assign(weight, split);
}

LogicalResult GroupSplit::walk(ArrayRef<Operation *> ops) {
  for (Operation *op : ops) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return splits.contains(v); }))
      continue; // nothing of the group reaches it (yet): replicated
    if (failed(visit(op)))
      return failure();
    handled.insert(op);
  }
  return success();
}

LogicalResult GroupSplit::checkUses() {
  for (auto &[value, split] : splits)
    for (OpOperand &use : value.getUses())
      if (!handled.contains(use.getOwner()))
        return fail(use.getOwner(), "reads a split value outside the group");
  return success();
}

/// Numpy-broadcast elementwise ops: the split operands agree on one result
/// dimension; a replicated operand that is not broadcast along it is read
/// as a block.
LogicalResult GroupSplit::elementwise(Operation *op, bool lastDimLocal) {
  Value result = op->getResult(0);
  int64_t rank = rankOf(result);
  std::optional<Split> out;
  for (Value operand : op->getOperands()) {
    std::optional<Split> split = splitOf(operand);
    if (!split)
      continue;
    Split aligned = *split;
    aligned.dim += rank - rankOf(operand);
    if (out && !out->sameAs(aligned))
      return fail(op, "operands split along different dimensions");
    out = aligned;
  }
  if (lastDimLocal && out->dim == rank - 1 && !out->whole()) {
    // A head's own dimension split (one KV head over two ranks: the
    // projection's columns are half a head each): hold it whole instead,
    // replicated on every rank, if the rest of the group allows.
    if (!retryAt && out->parts > 1)
      retryAt = {out->seed, 1};
    return fail(op, "splits the dimension the op mixes");
  }
  for (OpOperand &operand : op->getOpOperands()) {
    int64_t dim = out->dim - (rank - rankOf(operand.get()));
    if (dim < 0)
      continue; // broadcast along the split dimension
    Split split = *out;
    split.dim = dim;
    if (failed(need(operand, split)))
      return failure();
  }
  return assign(result, *out);
}

LogicalResult GroupSplit::matmul(MatMulOp op) {
  Value lhs = op.getLhs(), rhs = op.getRhs(), result = op.getResult();
  int64_t rl = rankOf(lhs), rr = rankOf(rhs), rank = rankOf(result);
  std::optional<Split> sl = splitOf(lhs), sr = splitOf(rhs);
  // Contraction split: each rank sums its block of k; the sum over ranks
  // is a poot.all_reduce after the op.
  if ((sl && sl->dim == rl - 1) || (sr && sr->dim == rr - 2)) {
    Split split = sl && sl->dim == rl - 1 ? *sl : *sr;
    if (!split.segments.empty())
      return fail(op, "a contraction over a packed projection's blocks");
    if (split.parts != degree)
      return fail(op, "a contraction over replicated blocks");
    Split left = split, right = split;
    left.dim = rl - 1;
    right.dim = rr - 2;
    if (failed(need(op.getLhsMutable(), left)) ||
        failed(need(op.getRhsMutable(), right)))
      return failure();
    partials.push_back(op);
    return success();
  }
  if (sl && sr && sl->dim >= rl - 2 && sr->dim >= rr - 2)
    return fail(op, "rows and columns both split");
  if (sl && sl->dim == rl - 2) {
    Split split = *sl;
    split.dim = rank - 2;
    return assign(result, split);
  }
  if (sr && sr->dim == rr - 1) {
    Split split = *sr;
    split.dim = rank - 1;
    return assign(result, split);
  }
  // A batch dimension: both operands split along it (or broadcast).
  Split split = sl ? *sl : *sr;
  split.dim += rank - (sl ? rl : rr);
  for (OpOperand &operand : op->getOpOperands()) {
    int64_t dim = split.dim - (rank - rankOf(operand.get()));
    if (dim < 0 || dim >= rankOf(operand.get()) - 2)
      continue;
    Split own = split;
    own.dim = dim;
    if (failed(need(operand, own)))
      return failure();
  }
  return assign(result, split);
}

/// Heads split: each rank attends with its query heads over its KV heads.
/// With fewer KV heads than ranks (parts < degree), each KV head is held by
/// `degree / parts` ranks and each rank's query heads are all its group's.
LogicalResult GroupSplit::attention(AttentionOp op) {
  if (op.getRequest())
    return fail(op, "already planned: split before poot-plan-attention");
  std::optional<Split> q = splitOf(op.getQuery());
  if (!q || q->dim != 1 || q->parts != degree)
    return fail(op, "the query is not split by heads over every rank");
  if (op.isSplitKey() && splitOf(op.getKeyShared()))
    return fail(op, "the shared key part is split");
  if ((op.getRead() && splitOf(op.getRead())) ||
      (op.getLength() && splitOf(op.getLength())))
    return fail(op, "a split read map or length");
  // A KV projection split inside its heads (fewer KV heads than ranks, so
  // the blocks are parts of a head): hold it whole on every rank instead.
  for (Value kv : {op.getKey(), op.getValue()}) {
    std::optional<Split> split = splitOf(kv);
    if (split && split->dim != 1 && !split->whole()) {
      if (!retryAt && split->parts > 1)
        retryAt = {split->seed, 1};
      return fail(op, "splits inside a KV head");
    }
  }
  std::optional<Split> k = splitOf(op.getKey());
  int64_t kvHeads = shapeOf(op.getKey())[1];
  Split kv = k ? *k : Split{1, std::min(degree, kvHeads), q->seed};
  kv.dim = 1;
  if (kv.parts != degree && !(degree % kv.parts == 0 && kvHeads == kv.parts))
    return fail(op, Twine(kvHeads) + " KV heads do not split over " +
                        Twine(degree) + " ranks");
  if (failed(need(op.getKeyMutable(), kv)) ||
      failed(need(op.getValueMutable(), kv)))
    return failure();
  if (Value mask = op.getMask(); mask && shapeOf(mask)[1] != 1) {
    Split split = *q;
    if (failed(need(op.getMaskMutable()[0], split)))
      return failure();
  }
  return assign(op.getResult(), *q);
}

LogicalResult GroupSplit::atReturn(func::ReturnOp op) {
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<Split> split = splitOf(operand.get());
    if (!split)
      continue;
    unsigned index = operand.getOperandNumber();
    auto slot = func.getResultAttrOfType<SlotAttr>(index,
                                                   PootDialect::kSlotAttrName);
    if (!slot || slot.getKind() != SlotKind::State)
      return fail(op, "result #" + Twine(index) +
                          " would be split (only a state may be)");
    results[index] = *split;
  }
  return success();
}

LogicalResult GroupSplit::visit(Operation *op) {
  if (op->getParentRegion() != &func.getBody())
    return fail(op, "inside a region");
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ConvertOp, ExpOp, LogOp, TanhOp, LogisticOp, SqrtOp, RsqrtOp,
            SinOp, CosOp, NegOp, AbsOp>([&](Operation *op) {
        return assign(op->getResult(0), *splitOf(op->getOperand(0)));
      })
      .Case<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, AndOp, OrOp, CompareOp,
            SelectOp>([&](Operation *op) {
        return elementwise(op, /*lastDimLocal=*/false);
      })
      .Case([&](RopeOp op) { return elementwise(op, /*lastDimLocal=*/true); })
      .Case([&](ReshapeOp op) {
        Split split = *splitOf(op.getOperand());
        if (!split.segments.empty())
          return fail(op, "reshapes a packed projection before its segments "
                          "are sliced apart");
        std::optional<int64_t> dim =
            reshapedDim(shapeOf(op.getOperand()), shapeOf(op.getResult()),
                        split.dim, split.parts);
        if (!dim)
          return fail(op, "the split dimension does not survive the reshape");
        if (*dim < 0) {
          if (!retryAt)
            retryAt = {split.seed, -*dim};
          return fail(op, "fewer blocks than ranks after the reshape");
        }
        split.dim = *dim;
        return assign(op.getResult(), split);
      })
      .Case([&](BroadcastOp op) {
        Split split = *splitOf(op.getOperand());
        split.dim += rankOf(op.getResult()) - rankOf(op.getOperand());
        if (shapeOf(op.getResult())[split.dim] !=
            shapeOf(op.getOperand())[split.dim - (rankOf(op.getResult()) -
                                                  rankOf(op.getOperand()))])
          return fail(op, "broadcasts along the split dimension");
        return assign(op.getResult(), split);
      })
      .Case([&](TransposeOp op) {
        Split split = *splitOf(op.getOperand());
        auto perm = op.getPermutation();
        split.dim = llvm::find(perm, split.dim) - perm.begin();
        return assign(op.getResult(), split);
      })
      .Case([&](SliceOp op) { return slice(op); })
      .Case([&](ConcatOp op) {
        std::optional<Split> out;
        for (Value input : op.getInputs())
          if (std::optional<Split> split = splitOf(input))
            out = split;
        if (out->dim == static_cast<int64_t>(op.getAxis()))
          return fail(op, "concatenates along the split dimension");
        for (OpOperand &operand : op->getOpOperands())
          if (failed(need(operand, *out)))
            return failure();
        return assign(op.getResult(), *out);
      })
      .Case([&](ReduceOp op) {
        Split split = *splitOf(op.getOperand());
        int64_t axis = op.getAxis();
        if (split.dim == axis)
          return fail(op, "reduces over the split dimension");
        if (!op.getKeepdim() && split.dim > axis)
          --split.dim;
        return assign(op.getResult(), split);
      })
      .Case([&](DynamicUpdateSliceOp op) {
        std::optional<Split> split = splitOf(op.getOperand());
        if (!split)
          split = splitOf(op.getUpdate());
        if (!split || splitOf(op.getStart()) ||
            split->dim == static_cast<int64_t>(op.getAxis()))
          return fail(op, "writes along the split dimension");
        if (failed(need(op.getOperandMutable(), *split)) ||
            failed(need(op.getUpdateMutable(), *split)))
          return failure();
        return assign(op.getResult(), *split);
      })
      .Case([&](GatherOp op) {
        std::optional<Split> split = splitOf(op.getOperand());
        int64_t axis = op.getAxis();
        if (!split || splitOf(op.getIndices()) || split->dim == axis)
          return fail(op, "gathers along the split dimension or by split ids");
        if (split->dim > axis)
          split->dim += rankOf(op.getIndices()) - 1;
        return assign(op.getResult(), *split);
      })
      .Case([&](ScatterUpdateOp op) {
        std::optional<Split> split = splitOf(op.getOperand());
        if (!split)
          split = splitOf(op.getUpdates());
        if (!split || splitOf(op.getIndices()) || split->dim == 0)
          return fail(op, "scatters along the split dimension or by split ids");
        if (failed(need(op.getOperandMutable(), *split)) ||
            failed(need(op.getUpdatesMutable(), *split)))
          return failure();
        return assign(op.getResult(), *split);
      })
      .Case([&](MatMulOp op) { return matmul(op); })
      .Case([&](AttentionOp op) { return attention(op); })
      .Case([&](func::ReturnOp op) { return atReturn(op); })
      .Default([&](Operation *op) {
        return fail(op, "no tensor-parallel rule for this op");
      });
}

/// A slice keeps the split of a dimension it takes whole. Along the split
/// dimension it may take one segment of a packed projection (q of
/// `[q | k | v]`): the rank takes its block of that segment. A cut that is
/// not yet a segment bound asks for a retry with segments bounded there.
LogicalResult GroupSplit::slice(SliceOp op) {
  Split split = *splitOf(op.getOperand());
  int64_t d = split.dim, size = shapeOf(op.getOperand())[d];
  int64_t start = op.getStart()[d], limit = op.getLimit()[d];
  if (start == 0 && limit == size && op.getStrides()[d] == 1)
    return assign(op.getResult(), split);
  if (op.getStrides()[d] != 1)
    return fail(op, "a strided slice of the split dimension");
  SmallVector<int64_t> bounds{0};
  for (int64_t segment : split.segments)
    bounds.push_back(bounds.back() + segment);
  if (split.segments.empty())
    bounds.push_back(size);
  auto at = llvm::find(bounds, start);
  if (at == bounds.end() || std::next(at) == bounds.end() ||
      *std::next(at) != limit) {
    SmallVector<int64_t, 2> cuts;
    for (int64_t cut : {start, limit})
      if (!llvm::is_contained(bounds, cut))
        cuts.push_back(cut);
    if (!cuts.empty() && !cutsAt)
      cutsAt = {split.seed, cuts};
    return fail(op, "slices the split dimension across segment bounds");
  }
  segmentCuts.push_back({op, d, start / split.parts, limit / split.parts});
  Split piece{d, split.parts, split.seed, {}};
  return assign(op.getResult(), piece);
}
