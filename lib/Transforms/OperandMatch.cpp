//===- OperandMatch.cpp - Q, K and V behind the attention matmuls ---------===//
//
// Reads the operands back to what poot.attention takes: the query behind
// splat scales (folded into the op's scale), the key behind its transpose
// (or stored transposed), and K/V behind scales, live-length zero selects,
// GQA repeats, head folds, paged gathers and split-key concats.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/AttentionMatchDetail.h"
#include "lib/Transforms/MatchSupport.h"

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::match;

//===----------------------------------------------------------------------===//
// K/V sources
//===----------------------------------------------------------------------===//

/// repeat_kv read back: `reshape [B,H,L,D] -> [B,H,1,L,D]`, `broadcast ->
/// [B,H,n,L,D]`, `reshape -> [B,H*n,L,D]` -- or, heads folded into the
/// batch in the same reshape, `-> [B*H*n,L,D]` (torch's core-ATen
/// decomposition: `unsqueeze`, `expand`, `clone`, `view`, then the `view`
/// of a bmm operand, which canonicalization composes) -- or a plain head
/// broadcast `[B,1,L,D] -> [B,n,L,D]` (MQA). Returns the source and n. The
/// last two axes are any pair (a key stored transposed repeats as
/// [.., D, L]).
static std::optional<std::pair<Value, int64_t>> readRepeat(Value value) {
  ArrayRef<int64_t> out = tensorOf(value).getShape();
  if (out.size() != 4 && out.size() != 3)
    return std::nullopt;
  if (auto broadcast = value.getDefiningOp<BroadcastOp>()) {
    if (out.size() != 4)
      return std::nullopt;
    ArrayRef<int64_t> in = tensorOf(broadcast.getOperand()).getShape();
    if (in.size() == 4 && in[0] == out[0] && in[1] == 1 && in[2] == out[2] &&
        in[3] == out[3])
      return std::pair(broadcast.getOperand(), out[1]);
    return std::nullopt;
  }
  auto merge = value.getDefiningOp<ReshapeOp>();
  auto broadcast = merge ? merge.getOperand().getDefiningOp<BroadcastOp>()
                         : BroadcastOp();
  auto split = broadcast ? broadcast.getOperand().getDefiningOp<ReshapeOp>()
                         : ReshapeOp();
  if (!split)
    return std::nullopt;
  Value source = split.getOperand();
  ArrayRef<int64_t> in = tensorOf(source).getShape();
  ArrayRef<int64_t> mid = tensorOf(split).getShape();
  ArrayRef<int64_t> wide = broadcast.getType().getShape();
  if (in.size() != 4 || mid.size() != 5 || wide.size() != 5)
    return std::nullopt;
  int64_t b = in[0], h = in[1], l = in[2], d = in[3], n = wide[2];
  if (mid != ArrayRef<int64_t>{b, h, 1, l, d} ||
      wide != ArrayRef<int64_t>{b, h, n, l, d} ||
      (out != ArrayRef<int64_t>{b, h * n, l, d} &&
       out != ArrayRef<int64_t>{b * h * n, l, d}))
    return std::nullopt;
  return std::pair(source, n);
}

/// The select that zeroes K/V rows past the live length: which operand it
/// keeps, and whether it keeps it when the condition holds.
static std::optional<std::pair<Value, bool>> readZeroSelect(Value value) {
  auto select = value.getDefiningOp<SelectOp>();
  if (!select)
    return std::nullopt;
  if (isZero(select.getOnFalse()) &&
      select.getOnTrue().getType() == select.getType())
    return std::pair(select.getOnTrue(), true);
  if (isZero(select.getOnTrue()) &&
      select.getOnFalse().getType() == select.getType())
    return std::pair(select.getOnFalse(), false);
  return std::nullopt;
}

/// `transpose(gather(pool [S,Hkv,D], read [B,Lk], axis 0), [0, 2, 1, 3])`.
static std::optional<PagedView> readPagedGather(Value source,
                                                ArrayRef<int64_t> perm) {
  auto gather = source.getDefiningOp<GatherOp>();
  if (!gather || gather.getAxis() != 0 ||
      perm != ArrayRef<int64_t>{0, 2, 1, 3} ||
      tensorOf(gather.getOperand()).getRank() != 3 ||
      tensorOf(gather.getIndices()).getRank() != 2)
    return std::nullopt;
  return PagedView{gather, gather.getOperand(), gather.getIndices()};
}

static std::optional<PagedView> readPaged(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose)
    return std::nullopt;
  return readPagedGather(transpose.getOperand(), transpose.getPermutation());
}

/// `concat(per_head, broadcast(shared [B,1,Lk,s]))` on the last axis; with
/// one key head the shared part needs no broadcast (canonicalization folds
/// the identity broadcast `attention_mla` emits for Hkv = 1).
static std::optional<SplitKey> readSplit(Value value) {
  auto concat = value.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 2 ||
      concat.getAxis() != tensorOf(value).getRank() - 1 ||
      tensorOf(value).getRank() != 4)
    return std::nullopt;
  Value perHead = concat.getInputs()[0], sharedPart = concat.getInputs()[1];
  Value shared;
  if (auto repeat = readRepeat(sharedPart);
      repeat && tensorOf(repeat->first).getDimSize(1) == 1)
    shared = repeat->first;
  else if (tensorOf(sharedPart).getDimSize(1) == 1)
    shared = sharedPart;
  if (!shared)
    return std::nullopt;
  SplitKey split{concat, perHead, 1, shared};
  if (auto repeat = readRepeat(split.perHead)) {
    split.perHead = repeat->first;
    split.perHeadRep = repeat->second;
  }
  return split;
}

/// The f16/bf16 value a `poot.convert` widens to f32 (`k.float()`): two-byte
/// attention reads it as it is and widens it itself.
static std::optional<Value> readWiden(Value value) {
  auto convert = value.getDefiningOp<ConvertOp>();
  if (!convert)
    return std::nullopt;
  Type from = tensorOf(convert.getOperand()).getElementType();
  if (!tensorOf(value).getElementType().isF32() ||
      !(from.isF16() || from.isBF16()))
    return std::nullopt;
  return convert.getOperand();
}

/// Reads K (or V) back from the value the matmul consumes: zero selects,
/// repeats and (for the key, when `factor` is given) splat scales in any
/// order, and a reshape that folded [B, H, L, D] heads into the batch.
static void readKV(Value value, KVSource &kv, bool isKey, double *factor) {
  bool unfolded = false;
  for (int step = 0; step < 8; ++step) {
    int64_t rank = tensorOf(value).getRank();
    if (rank == 4 && !kv.liveSelect)
      if (auto kept = readZeroSelect(value)) {
        kv.liveSelect = value.getDefiningOp<SelectOp>();
        kv.liveKeepWhenTrue = kept->second;
        value = kept->first;
        continue;
      }
    if ((rank == 4 || (rank == 3 && !unfolded)) && kv.numRep == 1)
      if (auto repeat = readRepeat(value)) {
        value = repeat->first;
        kv.numRep = repeat->second;
        unfolded |= rank == 3;
        continue;
      }
    // A key "stored transposed" that is the transpose of a [.., Lk, Dk]
    // key after all, under a head fold or a scale the matmul read first
    // (core ATen: `view(mul(permute(k), c))`): read the key itself.
    if (kv.transposed && rank == 4 && !kv.liveSelect)
      if (auto transpose = value.getDefiningOp<TransposeOp>();
          transpose && transpose.getPermutation() ==
                           ArrayRef<int64_t>{0, 1, 3, 2}) {
        value = transpose.getOperand();
        kv.transposed = false;
        kv.liveAxisFromEnd = 1;
        continue;
      }
    if (auto narrow = readWiden(value)) {
      value = *narrow;
      continue;
    }
    if (factor)
      if (auto scale = readScale(value)) {
        *factor *= scale->second;
        value = scale->first;
        continue;
      }
    if (rank == 3 && !unfolded)
      if (auto reshape = value.getDefiningOp<ReshapeOp>();
          reshape && isBatchFold(reshape.getOperand().getType(),
                                 reshape.getType())) {
        value = reshape.getOperand();
        unfolded = true;
        continue;
      }
    break;
  }
  kv.dense = value;
  if (tensorOf(value).getRank() != 4 || kv.transposed)
    return;
  if ((kv.paged = readPaged(value)))
    return;
  if (isKey)
    kv.split = readSplit(value);
}

LogicalResult match::readKey(MatMulOp scores, KVSource &key, double &factor,
                             Decline &decline) {
  Value rhs = scores.getRhs();
  while (true) {
    if (auto scale = readScale(rhs)) {
      factor *= scale->second;
      rhs = scale->first;
    } else if (auto narrow = readWiden(rhs)) {
      rhs = *narrow;
    } else {
      break;
    }
  }
  int64_t rank = tensorOf(rhs).getRank();
  if (rank != 4 && rank != 3) {
    decline.why = "the key is rank " + std::to_string(rank) +
                  "; poot.attention reads [B, Hkv, Lk, Dk]";
    decline.at = rhs.getDefiningOp() ? rhs.getDefiningOp() : scores;
    return failure();
  }
  auto transpose = rhs.getDefiningOp<TransposeOp>();
  if (!transpose) {
    // A key stored transposed, [.., Dk, Lk]: the rewrite transposes it.
    key.transposed = true;
    key.liveAxisFromEnd = 0;
    readKV(rhs, key, /*isKey=*/true, &factor);
    return success();
  }
  SmallVector<int64_t> perm(transpose.getPermutation());
  std::swap(perm[rank - 2], perm[rank - 1]);
  if (llvm::equal(perm, llvm::seq<int64_t>(0, rank))) {
    readKV(transpose.getOperand(), key, /*isKey=*/true, &factor);
    return success();
  }
  if (rank != 4) {
    decline.why = "the head-folded key's transpose is not [N, Lk, Dk] -> "
                  "[N, Dk, Lk]";
    decline.at = transpose;
    return failure();
  }
  // Some other layout whose transposes composed, e.g. keys cached
  // [B, Lk, H, D]: the key is transpose(source, perm).
  key.viewSource = transpose.getOperand();
  key.viewPerm = perm;
  key.paged = readPagedGather(transpose.getOperand(), perm);
  return success();
}

void match::readValue(Value rhs, KVSource &value) {
  readKV(rhs, value, /*isKey=*/false, /*factor=*/nullptr);
}

QuerySource match::readQuery(Value lhs, double &factor) {
  // Splat scales, possibly under reshapes/transposes/broadcasts of the
  // scaled value (`q_proj(x) * scaling` before the heads are split): the
  // data movement commutes with the scale, and the rewrite rebuilds it over
  // the unscaled value.
  QuerySource query{lhs, {}};
  SmallVector<Operation *> path;
  Value value = lhs;
  for (int step = 0; step < 16; ++step) {
    if (auto scale = readScale(value)) {
      factor *= scale->second;
      value = scale->first;
      query.base = value;
      query.movement = path;
      continue;
    }
    // `q.float()`: the rewrite rebuilds the data movement above it over the
    // two-byte query (rebuildQuery keeps the base's element type).
    if (auto narrow = readWiden(value)) {
      value = *narrow;
      query.base = value;
      query.movement = path;
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (!isa_and_nonnull<ReshapeOp, TransposeOp, BroadcastOp>(def))
      break;
    path.push_back(def);
    value = def->getOperand(0);
  }
  return query;
}

//===----------------------------------------------------------------------===//
// Live bound
//===----------------------------------------------------------------------===//

std::optional<LiveBound> mlir::poot::matchLiveBound(Value cond,
                                                    bool keepWhenTrue,
                                                    int64_t keyAxisFromEnd,
                                                    int64_t keyLength,
                                                    std::string &why) {
  auto compare = cond.getDefiningOp<CompareOp>();
  if (!compare) {
    why = "the live select's condition is not a poot.compare";
    return std::nullopt;
  }
  CompareDirection direction = compare.getDirection();
  Value iotaSide = compare.getLhs(), other = compare.getRhs();
  if (!iotaSide.getDefiningOp<IotaOp>()) {
    std::swap(iotaSide, other);
    switch (direction) {
    case CompareDirection::LT: direction = CompareDirection::GT; break;
    case CompareDirection::GT: direction = CompareDirection::LT; break;
    case CompareDirection::LE: direction = CompareDirection::GE; break;
    case CompareDirection::GE: direction = CompareDirection::LE; break;
    default: break;
    }
  }
  auto iota = iotaSide.getDefiningOp<IotaOp>();
  if (!iota) {
    why = "the live select's condition compares no iota of key positions";
    return std::nullopt;
  }
  // Kept rows must be exactly t < len.
  CompareDirection wanted =
      keepWhenTrue ? CompareDirection::LT : CompareDirection::GE;
  if (direction != wanted) {
    why = "the live select keeps keys by '" +
          stringifyCompareDirection(compare.getDirection()).str() +
          "', not t < len";
    return std::nullopt;
  }
  auto iotaType = iota.getType();
  int64_t axis = iotaType.getRank() - 1 - keyAxisFromEnd;
  if (!iotaType.getElementType().isInteger(32) || iota.getDim() != axis ||
      iotaType.getDimSize(axis) != keyLength) {
    why = "the live condition's iota does not count the " +
          std::to_string(keyLength) + " key positions";
    return std::nullopt;
  }
  // len broadcasts over everything but the batch: [B|1, 1, 1, 1].
  auto lenType = tensorOf(other);
  ArrayRef<int64_t> shape = lenType.getShape();
  for (int64_t d = 0, r = shape.size(); d < r; ++d)
    if (shape[d] != 1 && (r - d != 4)) {
      why = "the live length " + typeString(lenType) +
            " is not one value per batch row";
      return std::nullopt;
    }
  if (shape.size() > 4) {
    why = "the live length has rank above 4";
    return std::nullopt;
  }
  Value root = other;
  while (true) {
    if (auto reshape = root.getDefiningOp<ReshapeOp>())
      root = reshape.getOperand();
    else if (auto broadcast = root.getDefiningOp<BroadcastOp>())
      root = broadcast.getOperand();
    else
      break;
  }
  return LiveBound{other, root};
}
