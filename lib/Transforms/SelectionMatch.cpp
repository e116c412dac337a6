//===- SelectionMatch.cpp - read the sparse indexer's block selection -----===//
//
// Reads the chains `frontend/sparse.py` emits (after canonicalization):
//
//   block top-k:  own  = p / bs                      [B, Lq, 1]
//                 cs   = select(iota_j < own, blk, -inf)
//                 _, i = top_k(cs, K)
//                 ids  = select(i < own, i, -1)
//   visibility:   kb   = iota_t / bs
//                 sel  = reduce_max(convert(ids[.., :, None] == kb), K axis) > 0
//                 vis  = (sel | kb == own) & iota_t <= p
//
// Every tensor is read with its frame (the logical axis of each dimension,
// propagated through numpy broadcasting and through reshapes that only
// insert or remove unit dimensions), so the layouts the canonicalizer leaves
// -- `[B, Lq, 1]` or a bare `[1, 1]` for one row, `[B, 1, Lq, Lk]` or
// `[1, Lq, Lk]` for the mask -- all read the same. Comparisons may be written
// either way round (`t <= p` or `p >= t`), `and`/`or`/`eq` in either operand
// order, and the "any" test as `> 0`, `!= 0` or `>= 1`.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/SelectionMatch.h"
#include "lib/Transforms/MatchSupport.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::poot;
using match::describe;
using match::isNegInf;
using match::tensorOf;
using match::typeString;

using Axis = SelectionAxis;
using Frame = SelectionFrame;

//===----------------------------------------------------------------------===//
// Small readers
//===----------------------------------------------------------------------===//

static std::optional<int64_t> splatInt(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(attr);
  if (!splat || !isa<IntegerType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APInt>().getSExtValue();
}

static bool isI32(Value value) {
  return tensorOf(value).getElementType().isInteger(32);
}

/// `compare(d, a, b)` read as `compare(d', b, a)`.
static CompareDirection flipped(CompareDirection direction) {
  switch (direction) {
  case CompareDirection::LT: return CompareDirection::GT;
  case CompareDirection::GT: return CompareDirection::LT;
  case CompareDirection::LE: return CompareDirection::GE;
  case CompareDirection::GE: return CompareDirection::LE;
  default: return direction;
  }
}

//===----------------------------------------------------------------------===//
// Frames
//===----------------------------------------------------------------------===//

static Frame makeFrame(ArrayRef<int64_t> shape, ArrayRef<Axis> axes) {
  Frame frame;
  for (auto [extent, axis] : llvm::zip(shape, axes))
    frame.push_back(extent == 1 ? Axis::Unit : axis);
  return frame;
}

/// The frame of an operand of a broadcasting op whose result has
/// `resultFrame` (numpy: trailing dimensions align).
static Frame alignedFrame(Value operand, const Frame &resultFrame) {
  ArrayRef<int64_t> shape = tensorOf(operand).getShape();
  int64_t m = resultFrame.size(), n = shape.size();
  Frame frame(n, Axis::Unit);
  for (int64_t d = 0; d < n; ++d)
    if (shape[d] != 1 && d + m - n >= 0)
      frame[d] = resultFrame[d + m - n];
  return frame;
}

/// The operand frame of a reshape that only inserts or removes unit
/// dimensions; nullopt for a reshape that moves data across axes.
static std::optional<Frame> reshapeFrame(ArrayRef<int64_t> operandShape,
                                         ArrayRef<int64_t> resultShape,
                                         const Frame &resultFrame) {
  SmallVector<std::pair<int64_t, Axis>> wide;
  for (auto [extent, axis] : llvm::zip(resultShape, resultFrame))
    if (extent != 1)
      wide.push_back({extent, axis});
  Frame frame;
  size_t next = 0;
  for (int64_t extent : operandShape) {
    if (extent == 1) {
      frame.push_back(Axis::Unit);
      continue;
    }
    if (next >= wide.size() || wide[next].first != extent)
      return std::nullopt;
    frame.push_back(wide[next++].second);
  }
  if (next != wide.size())
    return std::nullopt;
  return frame;
}

/// `value` behind reshapes that only move unit dimensions and explicit
/// broadcasts, with its frame.
static std::pair<Value, Frame> peel(Value value, Frame frame) {
  while (true) {
    if (auto reshape = value.getDefiningOp<ReshapeOp>()) {
      std::optional<Frame> inner =
          reshapeFrame(tensorOf(reshape.getOperand()).getShape(),
                       reshape.getType().getShape(), frame);
      if (!inner)
        break;
      value = reshape.getOperand();
      frame = *inner;
      continue;
    }
    if (auto broadcast = value.getDefiningOp<BroadcastOp>()) {
      frame = alignedFrame(broadcast.getOperand(), frame);
      value = broadcast.getOperand();
      continue;
    }
    break;
  }
  return {value, frame};
}

/// True when the frame's non-unit axes are among `allowed`, in that order,
/// each at most once.
static bool onlyAxes(const Frame &frame, ArrayRef<Axis> allowed) {
  size_t next = 0;
  for (Axis axis : frame) {
    if (axis == Axis::Unit)
      continue;
    while (next < allowed.size() && allowed[next] != axis)
      ++next;
    if (next == allowed.size())
      return false;
    ++next;
  }
  return true;
}

static bool hasAxis(const Frame &frame, Axis axis) {
  return llvm::is_contained(frame, axis);
}

/// Two reads of the same tensor: one value (or two identical iotas, which
/// CSE has not merged yet) laid over the same axes.
static bool sameRows(const RowTensor &a, const RowTensor &b) {
  if (a.frame != b.frame)
    return false;
  if (a.root == b.root)
    return true;
  auto ia = a.root.getDefiningOp<IotaOp>(), ib = b.root.getDefiningOp<IotaOp>();
  return ia && ib && ia.getType() == ib.getType() && ia.getDim() == ib.getDim();
}

//===----------------------------------------------------------------------===//
// The pieces of the selection
//===----------------------------------------------------------------------===//

namespace {
/// A value `p / bs` per (batch row, query row): the own block.
struct OwnBlock {
  RowTensor positions;
  int64_t blockSize;
};
} // namespace

/// A tensor over (batch row, query row) only: the query positions.
static std::optional<RowTensor> readRows(Value value, Frame frame,
                                         std::string &why) {
  auto [root, rootFrame] = peel(value, frame);
  if (!isI32(root)) {
    why = "the query positions " + typeString(root.getType()) + " are not i32";
    return std::nullopt;
  }
  if (!onlyAxes(rootFrame, {Axis::Batch, Axis::Row})) {
    why = "the query positions " + describe(root) + " " +
          typeString(root.getType()) +
          " are not one value per (batch row, query row)";
    return std::nullopt;
  }
  return RowTensor{root, rootFrame};
}

/// `div(p, bs)` with a splat `bs >= 1`: the own block of each row.
static std::optional<OwnBlock> readOwnBlock(Value value, Frame frame,
                                            std::string &why) {
  auto [inner, innerFrame] = peel(value, frame);
  auto div = inner.getDefiningOp<DivOp>();
  std::optional<int64_t> bs = div ? splatInt(div.getRhs()) : std::nullopt;
  if (!bs || *bs < 1) {
    why = "the own block is " + describe(inner) +
          ", not q_pos / block_size (a poot.div by a positive splat i32)";
    return std::nullopt;
  }
  std::optional<RowTensor> rows =
      readRows(div.getLhs(), alignedFrame(div.getLhs(), innerFrame), why);
  if (!rows)
    return std::nullopt;
  return OwnBlock{*rows, *bs};
}

/// An i32 iota counting the `extent` positions of `axis`.
static bool readIota(Value value, const Frame &frame, Axis axis,
                     int64_t extent) {
  auto [inner, innerFrame] = peel(value, frame);
  auto iota = inner.getDefiningOp<IotaOp>();
  if (!iota || !isI32(inner))
    return false;
  int64_t dim = iota.getDim();
  if (extent == 1)
    return iota.getType().getDimSize(dim) == 1;
  return innerFrame[dim] == axis && iota.getType().getDimSize(dim) == extent;
}

/// `div(iota_t, bs)`: the block of each key.
static std::optional<int64_t> readKeyBlocks(Value value, const Frame &frame,
                                            int64_t keys) {
  auto [inner, innerFrame] = peel(value, frame);
  auto div = inner.getDefiningOp<DivOp>();
  std::optional<int64_t> bs = div ? splatInt(div.getRhs()) : std::nullopt;
  if (!bs || *bs < 1 ||
      !readIota(div.getLhs(), alignedFrame(div.getLhs(), innerFrame), Axis::Key,
                keys))
    return std::nullopt;
  return bs;
}

/// A compare read with `lhsIs` holding for its left side (swapping the
/// operands and flipping the direction when it holds for the right side).
static std::optional<std::tuple<CompareDirection, Value, Value>>
orientCompare(CompareOp compare, function_ref<bool(Value)> lhsIs) {
  if (lhsIs(compare.getLhs()))
    return std::tuple(compare.getDirection(), compare.getLhs(), compare.getRhs());
  if (lhsIs(compare.getRhs()))
    return std::tuple(flipped(compare.getDirection()), compare.getRhs(),
                      compare.getLhs());
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Block top-k
//===----------------------------------------------------------------------===//

/// The candidate test `j < p / bs` (or its complement when the select keeps
/// the scores where it is false).
static std::optional<OwnBlock> readCandidates(Value cond, const Frame &frame,
                                              bool keepWhenTrue, int64_t blocks,
                                              std::string &why) {
  auto [inner, innerFrame] = peel(cond, frame);
  auto compare = inner.getDefiningOp<CompareOp>();
  Frame cmpFrame = innerFrame;
  auto isBlockIota = [&](Value v) {
    return readIota(v, alignedFrame(v, cmpFrame), Axis::Block, blocks);
  };
  auto oriented = compare ? orientCompare(compare, isBlockIota) : std::nullopt;
  if (!oriented) {
    why = "the top-k's -inf select does not test the block ids (an iota over "
          "the " +
          std::to_string(blocks) + " blocks) against the own block";
    return std::nullopt;
  }
  auto [direction, iota, other] = *oriented;
  CompareDirection wanted =
      keepWhenTrue ? CompareDirection::LT : CompareDirection::GE;
  if (direction != wanted) {
    why = "the top-k keeps blocks j by '" +
          stringifyCompareDirection(compare.getDirection()).str() +
          "', not j < q_pos / block_size (the complete blocks before the own)";
    return std::nullopt;
  }
  return readOwnBlock(other, alignedFrame(other, cmpFrame), why);
}

/// `select(ids < own, ids, -1)` (or `select(ids >= own, -1, ids)`).
static bool readFixup(SelectOp fixup, Value ids, const OwnBlock &own,
                      std::string &why) {
  bool keepWhenTrue;
  if (fixup.getOnTrue() == ids && splatInt(fixup.getOnFalse()) == -1)
    keepWhenTrue = true;
  else if (fixup.getOnFalse() == ids && splatInt(fixup.getOnTrue()) == -1)
    keepWhenTrue = false;
  else {
    why = "the top-k block ids are used by a poot.select that is not the -1 "
          "fix-up select(ids < own, ids, -1)";
    return false;
  }
  if (fixup.getType() != ids.getType()) {
    why = "the -1 fix-up broadcasts the block ids to " +
          typeString(fixup.getType());
    return false;
  }
  Frame frame = makeFrame(tensorOf(ids).getShape(),
                          {Axis::Batch, Axis::Row, Axis::Slot});
  auto [cond, condFrame] = peel(fixup.getCond(), alignedFrame(fixup.getCond(), frame));
  auto compare = cond.getDefiningOp<CompareOp>();
  auto oriented = compare ? orientCompare(compare, [&](Value v) { return v == ids; })
                          : std::nullopt;
  CompareDirection wanted =
      keepWhenTrue ? CompareDirection::LT : CompareDirection::GE;
  if (!oriented || std::get<0>(*oriented) != wanted) {
    why = "the -1 fix-up does not keep exactly the ids before the own block "
          "(ids < q_pos / block_size)";
    return false;
  }
  Value other = std::get<2>(*oriented);
  std::optional<OwnBlock> fixOwn =
      readOwnBlock(other, alignedFrame(other, condFrame), why);
  if (!fixOwn)
    return false;
  if (fixOwn->blockSize != own.blockSize ||
      !sameRows(fixOwn->positions, own.positions)) {
    why = "the -1 fix-up compares against another own block than the "
          "candidate test (other positions or block size)";
    return false;
  }
  return true;
}

SelectionStatus mlir::poot::matchBlockTopK(TopKOp topk, BlockTopKChain &chain,
                                           std::string &why) {
  auto select = topk.getOperand().getDefiningOp<SelectOp>();
  if (!select)
    return SelectionStatus::NotCandidate;
  bool keepWhenTrue;
  Value blocks;
  if (isNegInf(select.getOnFalse())) {
    keepWhenTrue = true;
    blocks = select.getOnTrue();
  } else if (isNegInf(select.getOnTrue())) {
    keepWhenTrue = false;
    blocks = select.getOnFalse();
  } else {
    return SelectionStatus::NotCandidate;
  }
  chain.topk = topk;
  auto fail = [&](std::string reason) {
    why = std::move(reason);
    return SelectionStatus::Declined;
  };

  auto type = tensorOf(topk.getOperand());
  if (type.getRank() != 3)
    return fail("the top-k runs over " + typeString(type) +
                ", not block scores [B, Lq, NB]");
  if (!type.getElementType().isF32())
    return fail("element type " + typeString(type.getElementType()) +
                " is not f32: the generated block top-k kernel is F32 only, "
                "so the selection stays primitive");
  if (blocks.getType() != type)
    return fail("the block scores " + typeString(blocks.getType()) +
                " are broadcast to the top-k's " + typeString(type));
  Frame frame = makeFrame(type.getShape(), {Axis::Batch, Axis::Row, Axis::Block});
  std::optional<OwnBlock> own =
      readCandidates(select.getCond(), alignedFrame(select.getCond(), frame),
                     keepWhenTrue, type.getDimSize(2), why);
  if (!own)
    return SelectionStatus::Declined;
  if (!topk.getValues().use_empty())
    return fail("the top-k values are used: poot.block_topk yields the block "
                "ids only");

  // Every use of the raw indices must be a -1 fix-up (or its compare).
  Value ids = topk.getIndices();
  for (Operation *user : ids.getUsers())
    if (auto fixup = dyn_cast<SelectOp>(user)) {
      if (!readFixup(fixup, ids, *own, why))
        return SelectionStatus::Declined;
      if (!llvm::is_contained(chain.fixups, fixup))
        chain.fixups.push_back(fixup);
    }
  for (Operation *user : ids.getUsers()) {
    if (isa<SelectOp>(user))
      continue;
    bool onlyFixups = isa<CompareOp, ReshapeOp, BroadcastOp>(user) &&
                      llvm::all_of(user->getUsers(), [&](Operation *u) {
                        return llvm::is_contained(chain.fixups, u);
                      });
    if (!onlyFixups)
      return fail("the top-k block ids are also used before their -1 fix-up "
                  "(by '" +
                  user->getName().getStringRef().str() +
                  "'); poot.block_topk yields the fixed-up ids only");
  }
  if (chain.fixups.empty())
    return fail("the top-k block ids are never fixed up to -1 past the own "
                "block (select(ids < q_pos / block_size, ids, -1))");
  chain.scores = blocks;
  chain.positions = own->positions;
  chain.blockSize = own->blockSize;
  return SelectionStatus::Matched;
}

//===----------------------------------------------------------------------===//
// The visibility mask
//===----------------------------------------------------------------------===//

namespace {
struct SelectedKeys {
  Value ids;
  Frame idsFrame;
  int64_t slots;
  int64_t blockSize;
};
} // namespace

/// `t <= p`: the causal bound.
static std::optional<RowTensor> readCausal(Value value, const Frame &frame,
                                           int64_t keys, std::string &why) {
  auto [inner, innerFrame] = peel(value, frame);
  auto compare = inner.getDefiningOp<CompareOp>();
  auto isKeyIota = [&](Value v) {
    return readIota(v, alignedFrame(v, innerFrame), Axis::Key, keys);
  };
  auto oriented = compare ? orientCompare(compare, isKeyIota) : std::nullopt;
  if (!oriented || std::get<0>(*oriented) != CompareDirection::LE) {
    why = "no causal bound t <= q_pos (a poot.compare le of an iota over the " +
          std::to_string(keys) + " keys and the positions)";
    return std::nullopt;
  }
  Value other = std::get<2>(*oriented);
  return readRows(other, alignedFrame(other, innerFrame), why);
}

/// `t / bs == p / bs`: the row's own block.
static std::optional<OwnBlock> readOwnKeys(Value value, const Frame &frame,
                                           int64_t keys, std::string &why) {
  auto [inner, innerFrame] = peel(value, frame);
  auto compare = inner.getDefiningOp<CompareOp>();
  std::optional<int64_t> keyBlock;
  auto isKeyBlocks = [&](Value v) {
    keyBlock = readKeyBlocks(v, alignedFrame(v, innerFrame), keys);
    return keyBlock.has_value();
  };
  auto oriented = compare && compare.getDirection() == CompareDirection::EQ
                      ? orientCompare(compare, isKeyBlocks)
                      : std::nullopt;
  if (!oriented) {
    why = "no own-block test t / block_size == q_pos / block_size";
    return std::nullopt;
  }
  Value other = std::get<2>(*oriented);
  std::optional<OwnBlock> own =
      readOwnBlock(other, alignedFrame(other, innerFrame), why);
  if (!own)
    return std::nullopt;
  if (own->blockSize != *keyBlock) {
    why = "the own-block test divides keys by " + std::to_string(*keyBlock) +
          " but positions by " + std::to_string(own->blockSize);
    return std::nullopt;
  }
  return own;
}

/// `reduce_max(convert(ids == t / bs), K axis) > 0`: the key's block is listed.
static std::optional<SelectedKeys> readSelectedKeys(Value value,
                                                    const Frame &frame,
                                                    int64_t keys,
                                                    std::string &why) {
  auto [inner, innerFrame] = peel(value, frame);
  auto compare = inner.getDefiningOp<CompareOp>();
  auto isReduce = [&](Value v) {
    return static_cast<bool>(
        peel(v, alignedFrame(v, innerFrame)).first.getDefiningOp<ReduceOp>());
  };
  auto oriented = compare ? orientCompare(compare, isReduce) : std::nullopt;
  auto fail = [&](std::string reason) -> std::optional<SelectedKeys> {
    why = std::move(reason);
    return std::nullopt;
  };
  if (!oriented)
    return fail("no 'listed' test: any over the K selected ids of "
                "(ids == t / block_size), written reduce max(convert(...)) > 0");
  auto [direction, reduced, bound] = *oriented;
  std::optional<int64_t> c = splatInt(bound);
  bool any = c && ((direction == CompareDirection::GT && *c == 0) ||
                   (direction == CompareDirection::NE && *c == 0) ||
                   (direction == CompareDirection::GE && *c == 1));
  if (!any)
    return fail("the 'listed' test is not reduce max(...) > 0 (or != 0, >= 1)");
  auto [redValue, redFrame] = peel(reduced, alignedFrame(reduced, innerFrame));
  auto reduce = redValue.getDefiningOp<ReduceOp>();
  if (reduce.getKind() != ReduceKind::Max)
    return fail("the 'listed' test reduces with '" +
                stringifyReduceKind(reduce.getKind()).str() + "', not max");
  int64_t axis = reduce.getAxis();
  Frame operandFrame = redFrame;
  ArrayRef<int64_t> operandShape = tensorOf(reduce.getOperand()).getShape();
  int64_t slots = operandShape[axis];
  Axis slot = slots == 1 ? Axis::Unit : Axis::Slot;
  if (reduce.getKeepdim())
    operandFrame[axis] = slot;
  else
    operandFrame.insert(operandFrame.begin() + axis, slot);

  auto [hitValue, hitFrame] = peel(reduce.getOperand(), operandFrame);
  if (auto convert = hitValue.getDefiningOp<ConvertOp>())
    std::tie(hitValue, hitFrame) = peel(convert.getOperand(), hitFrame);
  auto hit = hitValue.getDefiningOp<CompareOp>();
  std::optional<int64_t> bs;
  auto isKeyBlocks = [&](Value v) {
    bs = readKeyBlocks(v, alignedFrame(v, hitFrame), keys);
    return bs.has_value();
  };
  auto hitOriented = hit && hit.getDirection() == CompareDirection::EQ
                         ? orientCompare(hit, isKeyBlocks)
                         : std::nullopt;
  if (!hitOriented)
    return fail("the 'listed' test does not compare the block ids with the "
                "key blocks t / block_size (poot.compare eq)");
  Value idsSide = std::get<2>(*hitOriented);
  auto [ids, idsFrame] = peel(idsSide, alignedFrame(idsSide, hitFrame));
  if (!isI32(ids) ||
      !onlyAxes(idsFrame, {Axis::Batch, Axis::Row, Axis::Slot}))
    return fail("the block ids " + describe(ids) + " " +
                typeString(ids.getType()) +
                " are not i32 [B, Lq, K] (one list per batch and query row)");
  return SelectedKeys{ids, idsFrame, slots, *bs};
}

FailureOr<SelectionMask>
mlir::poot::matchSelectionMask(Value cond, bool keepWhenTrue,
                               ArrayRef<int64_t> scoreShape, std::string &why) {
  if (!keepWhenTrue) {
    why = "the score select hides the keys where its condition holds; the "
          "block-selected form reads select(visible, s, -inf)";
    return failure();
  }
  if (scoreShape.size() != 4) {
    why = "the scores are not [B, Hq, Lq, Lk]";
    return failure();
  }
  int64_t keys = scoreShape[3];
  Frame scores = makeFrame(scoreShape, {Axis::Batch, Axis::Head, Axis::Row, Axis::Key});
  auto [mask, frame] = peel(cond, alignedFrame(cond, scores));
  if (hasAxis(frame, Axis::Head)) {
    why = "the score mask differs per head; a block selection is one per "
          "(batch row, query row)";
    return failure();
  }
  auto conj = mask.getDefiningOp<AndOp>();
  if (!conj) {
    why = "the score select's condition is " + describe(mask) +
          ", not the block-selection visibility (selected | own block) & "
          "t <= q_pos";
    return failure();
  }
  std::optional<RowTensor> causal;
  Value blocks;
  std::string causalWhy;
  for (auto [c, other] : {std::pair(conj.getLhs(), conj.getRhs()),
                          std::pair(conj.getRhs(), conj.getLhs())}) {
    causal = readCausal(c, alignedFrame(c, frame), keys, causalWhy);
    if (causal) {
      blocks = other;
      break;
    }
  }
  if (!causal) {
    why = "the visibility mask: " + causalWhy;
    return failure();
  }
  auto [disj, disjFrame] = peel(blocks, alignedFrame(blocks, frame));
  auto either = disj.getDefiningOp<OrOp>();
  if (!either) {
    why = "the visibility's block test is " + describe(disj) +
          ", not (listed block) | (own block)";
    return failure();
  }
  std::optional<SelectedKeys> listed;
  std::optional<OwnBlock> own;
  std::string listedWhy, ownWhy;
  for (auto [l, o] : {std::pair(either.getLhs(), either.getRhs()),
                      std::pair(either.getRhs(), either.getLhs())}) {
    std::string attemptWhy;
    listed = readSelectedKeys(l, alignedFrame(l, disjFrame), keys, attemptWhy);
    if (!listed) {
      // Keep the most specific reason: an operand that is a 'listed' test
      // with a wrong piece says more than one that is none at all.
      if (listedWhy.empty() || listedWhy.rfind("no 'listed' test", 0) == 0)
        listedWhy = attemptWhy;
      continue;
    }
    own = readOwnKeys(o, alignedFrame(o, disjFrame), keys, ownWhy);
    break;
  }
  if (!listed) {
    why = "the visibility mask: " + listedWhy;
    return failure();
  }
  if (!own) {
    why = "the visibility mask: " + ownWhy;
    return failure();
  }
  if (listed->blockSize != own->blockSize) {
    why = "the listed and the own block tests use block sizes " +
          std::to_string(listed->blockSize) + " and " +
          std::to_string(own->blockSize);
    return failure();
  }
  if (!sameRows(*causal, own->positions)) {
    why = "the causal bound and the own block read different query positions";
    return failure();
  }
  return SelectionMask{listed->ids, listed->idsFrame, listed->slots,
                       own->positions, own->blockSize};
}

FailureOr<SelectionMask>
mlir::poot::matchSelectionMask(const AttentionChain &chain, std::string &why) {
  const ScoreChain &transform = chain.transform;
  if (chain.live || chain.key.liveSelect || chain.value.liveSelect) {
    why = "the chain also bounds a live length (attention_live's selects of "
          "K, V and the scores); poot.selected_attention has no live form: "
          "its rows visit only keys t <= q_pos";
    return failure();
  }
  if (chain.folded) {
    why = "the chain computes head-folded [B*H, L, D] scores; the selected "
          "form reads [B, H, L, D]";
    return failure();
  }
  bool additive = llvm::any_of(transform.masks, [](const MaskStep &step) {
    return step.kind == MaskStep::Add;
  });
  if (additive) {
    why = "an additive mask is added to the scores beside the block "
          "selection; poot.selected_attention has no mask operand (its "
          "visible keys are exactly the selected blocks)";
    return failure();
  }
  if (transform.masks.size() != 1 ||
      transform.masks.front().kind != MaskStep::Select ||
      !isNegInf(transform.masks.front().fill)) {
    why = "the scores are masked by other than one -inf select; "
          "poot.selected_attention has no mask operand (its visible keys "
          "are exactly the selected blocks)";
    return failure();
  }
  const MaskStep &select = transform.masks.front();
  MatMulOp scores = chain.scores; // op handles are cheap, non-const copies
  return matchSelectionMask(select.value, select.keepWhenTrue,
                            tensorOf(scores.getResult()).getShape(), why);
}

bool mlir::poot::isBlockSelectionCandidate(const AttentionChain &chain) {
  std::string why;
  return succeeded(matchSelectionMask(chain, why));
}

//===----------------------------------------------------------------------===//
// Building the fused ops' operands
//===----------------------------------------------------------------------===//

/// `root` reshaped to the extents of the axes it has, then broadcast to the
/// full `extents` of `axes`.
static Value materialize(OpBuilder &b, Location loc, Value root,
                         const Frame &frame, ArrayRef<Axis> axes,
                         ArrayRef<int64_t> extents,
                         SmallVectorImpl<Operation *> &created) {
  Type element = tensorOf(root).getElementType();
  SmallVector<int64_t> present;
  for (auto [axis, extent] : llvm::zip(axes, extents))
    present.push_back(hasAxis(frame, axis) ? extent : 1);
  Value value = root;
  auto presentType = RankedTensorType::get(present, element);
  if (value.getType() != presentType) {
    auto reshape = ReshapeOp::create(b, loc, presentType, value);
    created.push_back(reshape);
    value = reshape;
  }
  auto fullType = RankedTensorType::get(extents, element);
  if (value.getType() != fullType) {
    auto broadcast = BroadcastOp::create(b, loc, fullType, value);
    created.push_back(broadcast);
    value = broadcast;
  }
  return value;
}

Value mlir::poot::materializeRows(OpBuilder &b, Location loc,
                                  const RowTensor &rows, int64_t batch,
                                  int64_t queryRows,
                                  SmallVectorImpl<Operation *> &created) {
  return materialize(b, loc, rows.root, rows.frame, {Axis::Batch, Axis::Row},
                     {batch, queryRows}, created);
}

Value mlir::poot::materializeIds(OpBuilder &b, Location loc,
                                 const SelectionMask &mask, int64_t batch,
                                 int64_t queryRows,
                                 SmallVectorImpl<Operation *> &created) {
  return materialize(b, loc, mask.ids, mask.idsFrame,
                     {Axis::Batch, Axis::Row, Axis::Slot},
                     {batch, queryRows, mask.slots}, created);
}
