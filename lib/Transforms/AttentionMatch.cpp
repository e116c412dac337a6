//===- AttentionMatch.cpp - read a primitive attention chain --------------===//
//
// Reads the seed's chain backwards from `out = matmul(p, v)`:
//
//   p  = div(ex, reduce sum(ex, last, keepdim))
//   ex = exp(sub(s, reduce max(s, last, keepdim)))
//   s  = score transforms of matmul(q, transpose(k_exp))
//
// Every value between the score matmul and `p` must be used by the chain
// only: the fused op replaces the chain, it never duplicates it.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/AttentionMatch.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::poot;

//===----------------------------------------------------------------------===//
// Small readers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The value of a float splat constant, as a double.
static std::optional<APFloat> splatFloat(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

static double toDouble(APFloat value) {
  bool losesInfo = false;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToDouble();
}

static std::optional<double> splatDouble(Value value) {
  if (auto f = splatFloat(value))
    return toDouble(*f);
  return std::nullopt;
}

static bool isNegInf(Value value) {
  auto f = splatFloat(value);
  return f && f->isInfinity() && f->isNegative();
}

static bool isZero(Value value) {
  auto f = splatFloat(value);
  return f && f->isZero();
}

/// "poot.mul" or "argument #2" — for messages.
static std::string describe(Value value) {
  if (Operation *def = value.getDefiningOp())
    return "'" + def->getName().getStringRef().str() + "'";
  return "argument #" +
         std::to_string(cast<BlockArgument>(value).getArgNumber());
}

static std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

static bool hasUses(Value value, unsigned count) {
  return static_cast<unsigned>(
             std::distance(value.use_begin(), value.use_end())) == count;
}

static bool isLastAxisKeepdimReduce(ReduceOp reduce, ReduceKind kind,
                                    Value operand) {
  return reduce && reduce.getKind() == kind && reduce.getKeepdim() &&
         reduce.getOperand() == operand &&
         reduce.getAxis() == tensorOf(operand).getRank() - 1;
}

//===----------------------------------------------------------------------===//
// K/V sources
//===----------------------------------------------------------------------===//

/// repeat_kv read back: `reshape [B,H,L,D] -> [B,H,1,L,D]`, `broadcast ->
/// [B,H,n,L,D]`, `reshape -> [B,H*n,L,D]`; or a plain head broadcast
/// `[B,1,L,D] -> [B,n,L,D]` (MQA). Returns the source and n.
static std::optional<std::pair<Value, int64_t>> readRepeat(Value value) {
  ArrayRef<int64_t> out = tensorOf(value).getShape();
  if (out.size() != 4)
    return std::nullopt;
  if (auto broadcast = value.getDefiningOp<BroadcastOp>()) {
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
      out != ArrayRef<int64_t>{b, h * n, l, d})
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

/// `concat(per_head, broadcast(shared [B,1,Lk,s]))` on the last axis.
static std::optional<SplitKey> readSplit(Value value) {
  auto concat = value.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 2 ||
      concat.getAxis() != tensorOf(value).getRank() - 1)
    return std::nullopt;
  auto shared = readRepeat(concat.getInputs()[1]);
  if (!shared || tensorOf(shared->first).getDimSize(1) != 1)
    return std::nullopt;
  SplitKey split{concat, concat.getInputs()[0], 1, shared->first};
  if (auto perHead = readRepeat(split.perHead)) {
    split.perHead = perHead->first;
    split.perHeadRep = perHead->second;
  }
  return split;
}

/// Reads K (or V) back from the value the matmul consumes.
static void readKV(Value value, KVSource &kv, bool isKey) {
  for (int step = 0; step < 2; ++step) {
    if (!kv.liveSelect)
      if (auto kept = readZeroSelect(value)) {
        kv.liveSelect = value.getDefiningOp<SelectOp>();
        kv.liveKeepWhenTrue = kept->second;
        value = kept->first;
        continue;
      }
    if (kv.numRep == 1)
      if (auto repeat = readRepeat(value)) {
        value = repeat->first;
        kv.numRep = repeat->second;
        continue;
      }
    break;
  }
  kv.dense = value;
  if ((kv.paged = readPaged(value)))
    return;
  if (isKey)
    kv.split = readSplit(value);
}

//===----------------------------------------------------------------------===//
// Score transforms
//===----------------------------------------------------------------------===//

namespace {
struct ScoreStep {
  enum Kind { Scale, Softcap, Mask, Live } kind;
  double number = 0; // scale factor or softcap
  Value mask;
  SelectOp select;
  bool keepWhenTrue = true;
};
} // namespace

/// True when `value` is computed from a matmul through score-transform ops
/// only: the chain side of an `add`, as opposed to the mask.
static bool leadsToScores(Value value, int depth = 0) {
  Operation *def = value.getDefiningOp();
  if (!def || depth > 32)
    return false;
  if (isa<MatMulOp>(def))
    return true;
  if (isa<MulOp, DivOp, AddOp>(def))
    return llvm::any_of(def->getOperands(), [&](Value operand) {
      return !matchPattern(operand, m_Constant()) &&
             leadsToScores(operand, depth + 1);
    });
  if (auto tanh = dyn_cast<TanhOp>(def))
    return leadsToScores(tanh.getOperand(), depth + 1);
  if (auto select = dyn_cast<SelectOp>(def))
    return leadsToScores(select.getOnTrue(), depth + 1) ||
           leadsToScores(select.getOnFalse(), depth + 1);
  return false;
}

/// `c * tanh(x / c)` or `c * tanh(x * (1/c))`, either operand order:
/// returns x and c.
static std::optional<std::pair<Value, double>> readSoftcap(MulOp outer) {
  for (auto [t, c] : {std::pair(outer.getLhs(), outer.getRhs()),
                      std::pair(outer.getRhs(), outer.getLhs())}) {
    auto tanh = t.getDefiningOp<TanhOp>();
    std::optional<double> cap = splatDouble(c);
    if (!tanh || !cap || !(*cap != 0) || !tanh->hasOneUse())
      continue;
    Value inner = tanh.getOperand();
    if (!inner.hasOneUse())
      continue;
    auto close = [](double a, double b) {
      return std::abs(a - b) <= 1e-6 * std::abs(b);
    };
    if (auto div = inner.getDefiningOp<DivOp>()) {
      std::optional<double> d = splatDouble(div.getRhs());
      if (d && close(*d, *cap) && div.getLhs().getType() == inner.getType())
        return std::pair(div.getLhs(), *cap);
    }
    if (auto mul = inner.getDefiningOp<MulOp>())
      for (auto [x, a] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        std::optional<double> r = splatDouble(a);
        if (r && close(*r * *cap, 1.0) && x.getType() == inner.getType())
          return std::pair(x, *cap);
      }
  }
  return std::nullopt;
}

/// Walks from the softmax input back to the score matmul, collecting the
/// transforms outermost first.
static LogicalResult readScoreSteps(Value softmaxInput, MatMulOp &scores,
                                    SmallVectorImpl<ScoreStep> &steps,
                                    std::string &why) {
  Type scoreType = softmaxInput.getType();
  Value current = softmaxInput;
  unsigned expectedUses = 2; // the softmax reads its input twice
  while (true) {
    Operation *def = current.getDefiningOp();
    if (!def) {
      why = "the softmax input is not computed from a score matmul";
      return failure();
    }
    if (!hasUses(current, expectedUses)) {
      why = "the scores computed by " + describe(current) +
            " are also used outside the attention chain";
      return failure();
    }
    expectedUses = 1;
    if (current.getType() != scoreType) {
      why = "the score chain changes type at " + describe(current);
      return failure();
    }
    Value next;
    if (auto matmul = dyn_cast<MatMulOp>(def)) {
      scores = matmul;
      return success();
    }
    if (auto mul = dyn_cast<MulOp>(def)) {
      if (auto softcap = readSoftcap(mul)) {
        steps.push_back({ScoreStep::Softcap, std::abs(softcap->second)});
        next = softcap->first;
      } else {
        for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                            std::pair(mul.getRhs(), mul.getLhs())})
          if (auto factor = splatDouble(c)) {
            steps.push_back({ScoreStep::Scale, *factor});
            next = x;
            break;
          }
        if (!next) {
          why = "'poot.mul' in the score chain neither scales by a splat "
                "constant nor completes a softcap c * tanh(s / c)";
          return failure();
        }
      }
    } else if (auto div = dyn_cast<DivOp>(def)) {
      std::optional<double> divisor = splatDouble(div.getRhs());
      if (!divisor || *divisor == 0 || !std::isfinite(*divisor)) {
        why = "'poot.div' in the score chain does not divide by a finite "
              "nonzero splat constant";
        return failure();
      }
      steps.push_back({ScoreStep::Scale, 1.0 / *divisor});
      next = div.getLhs();
    } else if (auto add = dyn_cast<AddOp>(def)) {
      bool lhs = leadsToScores(add.getLhs()), rhs = leadsToScores(add.getRhs());
      if (lhs == rhs) {
        why = "cannot tell the scores from the mask in 'poot.add' (both or "
              "neither operand comes from the score matmul)";
        return failure();
      }
      next = lhs ? add.getLhs() : add.getRhs();
      steps.push_back({ScoreStep::Mask, 0, lhs ? add.getRhs() : add.getLhs()});
    } else if (auto select = dyn_cast<SelectOp>(def)) {
      bool keepWhenTrue = isNegInf(select.getOnFalse());
      if (keepWhenTrue)
        next = select.getOnTrue();
      else if (isNegInf(select.getOnTrue()))
        next = select.getOnFalse();
      else {
        why = "'poot.select' in the score chain does not set scores to -inf "
              "(a live-length select)";
        return failure();
      }
      steps.push_back({ScoreStep::Live, 0, Value(), select, keepWhenTrue});
    } else {
      why = describe(current) +
            " between the score matmul and the softmax is not a scale, "
            "softcap, additive mask or live-length select";
      return failure();
    }
    current = next;
  }
}

/// Folds the steps (in program order) into the op's fixed score transform:
/// scale, then softcap, then the masks, then the live bound.
static LogicalResult foldScoreSteps(ArrayRef<ScoreStep> outermostFirst,
                                    ScoreChain &transform,
                                    std::string &why) {
  for (const ScoreStep &step : llvm::reverse(outermostFirst)) {
    switch (step.kind) {
    case ScoreStep::Scale:
      if (transform.softcap) {
        why = "a scale applied after the softcap is not the op's score "
              "transform (scale, softcap, mask)";
        return failure();
      }
      if (transform.liveSelect && !(step.number > 0)) {
        why = "a non-positive scale after the live-length select would turn "
              "its -inf into another value";
        return failure();
      }
      transform.scale *= step.number;
      for (auto &mask : transform.masks)
        mask.second *= step.number;
      break;
    case ScoreStep::Softcap:
      if (transform.softcap) {
        why = "two softcaps in one score chain";
        return failure();
      }
      if (!transform.masks.empty()) {
        why = "a mask added before the softcap is not the op's score "
              "transform (the softcap comes before the mask)";
        return failure();
      }
      if (transform.liveSelect) {
        why = "the live-length select comes before the softcap, which would "
              "turn its -inf into -softcap";
        return failure();
      }
      transform.softcap = step.number;
      break;
    case ScoreStep::Mask:
      transform.masks.push_back({step.mask, 1.0});
      break;
    case ScoreStep::Live:
      if (transform.liveSelect) {
        why = "two live-length selects in one score chain";
        return failure();
      }
      transform.liveSelect = step.select;
      transform.liveKeepWhenTrue = step.keepWhenTrue;
      break;
    }
  }
  if (!std::isfinite(transform.scale)) {
    why = "the product of the score scales is not finite";
    return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

MatchStatus mlir::poot::matchAttentionChain(MatMulOp output,
                                            AttentionChain &chain,
                                            std::string &why) {
  // The softmax: p = ex / sum(ex), ex = exp(s - max(s)).
  Value p = output.getLhs();
  auto div = p.getDefiningOp<DivOp>();
  if (!div)
    return MatchStatus::NotCandidate;
  Value ex = div.getLhs();
  auto sum = div.getRhs().getDefiningOp<ReduceOp>();
  auto exp = ex.getDefiningOp<ExpOp>();
  if (!exp || !isLastAxisKeepdimReduce(sum, ReduceKind::Sum, ex))
    return MatchStatus::NotCandidate;
  auto sub = exp.getOperand().getDefiningOp<SubOp>();
  if (!sub)
    return MatchStatus::NotCandidate;
  Value s = sub.getLhs();
  auto max = sub.getRhs().getDefiningOp<ReduceOp>();
  if (!isLastAxisKeepdimReduce(max, ReduceKind::Max, s))
    return MatchStatus::NotCandidate;

  chain.output = output;
  auto fail = [&](std::string reason) {
    why = std::move(reason);
    return MatchStatus::Declined;
  };

  Type element = tensorOf(p).getElementType();
  if (!element.isF32())
    return fail("element type " + typeString(element) +
                " is not f32: the generated attention kernel is F32 only, "
                "so the chain stays primitive");
  if (!p.hasOneUse() || !hasUses(ex, 2) || !sum->hasOneUse() ||
      !sub->hasOneUse() || !max->hasOneUse())
    return fail("a softmax intermediate is also used outside the attention "
                "chain");
  if (tensorOf(p).getRank() != 4 || s.getType() != p.getType())
    return fail("the softmax runs over " + typeString(s.getType()) +
                ", not the [B, Hq, Lq, Lk] scores of one attention");

  // The score transform, back to the score matmul.
  SmallVector<ScoreStep> steps;
  if (failed(readScoreSteps(s, chain.scores, steps, why)) ||
      failed(foldScoreSteps(steps, chain.transform, why)))
    return MatchStatus::Declined;
  chain.query = chain.scores.getLhs();

  // K: the score matmul reads transpose(k_exp), last two axes swapped.
  auto keyT = chain.scores.getRhs().getDefiningOp<TransposeOp>();
  if (!keyT)
    return fail("the score matmul's right operand is not a transposed key "
                "(poot.transpose swapping the last two axes)");
  SmallVector<int64_t> perm(keyT.getPermutation());
  if (perm.size() != 4)
    return fail("the key is rank " + std::to_string(perm.size()) +
                "; poot.attention reads [B, Hkv, Lk, Dk]");
  std::swap(perm[2], perm[3]);
  if (llvm::equal(perm, llvm::seq<int64_t>(0, 4))) {
    readKV(keyT.getOperand(), chain.key, /*isKey=*/true);
  } else {
    chain.key.viewSource = keyT.getOperand();
    chain.key.viewPerm = perm;
    chain.key.paged = readPagedGather(keyT.getOperand(), perm);
  }

  // V: read directly by the output matmul.
  readKV(output.getRhs(), chain.value, /*isKey=*/false);
  return MatchStatus::Matched;
}

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
