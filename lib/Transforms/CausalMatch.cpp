//===- CausalMatch.cpp - the causal mask as an index expression -----------===//
//
// A mask step of the score chain is causal when its condition is, as a set
// of (query row i, key t) pairs, exactly `t <= i + (Lk - Lq)` (or its
// complement, for a condition that names the hidden keys). The condition is
// read as `compare(lhs, rhs)` of two affine index expressions over the
// iotas of the score frame's last two axes and integer splats:
//
//   tril / is_causal:      compare gt, iota_t, iota_i           (hidden)
//   bottom-right aligned:  compare le, iota_t, iota_i + (Lk-Lq) (visible)
//   any spelling of the same set: sub, swapped sides, lt with +1, ...
//
// Anything else (another diagonal, a window, an iota over a leading axis, a
// non-splat offset) is not causal and stays a tensor mask.
//
// The compare may reach the mask through boolean identities on i1 splats,
// as bool masks are spelled in PyTorch: `tril(ones(bool))` is
// select(c, true, false), `~m` / logical_not is eq(m, false), and a mask
// and-ed with an all-true one is itself. readBoolView sees through them to
// (compare, negated) without rewriting the IR.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/CausalMatch.h"

#include "lib/Transforms/MatchSupport.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::match;

namespace {

/// `t * keyCoef + i * rowCoef + offset` over the score frame.
struct Affine {
  int64_t keyCoef = 0, rowCoef = 0, offset = 0;
  Affine scaled(int64_t f) const {
    return {keyCoef * f, rowCoef * f, offset * f};
  }
  Affine plus(const Affine &o) const {
    return {keyCoef + o.keyCoef, rowCoef + o.rowCoef, offset + o.offset};
  }
};

/// The operand behind views that keep the last two axes where they are:
/// broadcasts (numpy: trailing-aligned) and reshapes that only add or drop
/// leading unit axes.
Value peelViews(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<BroadcastOp>(def)) {
      value = def->getOperand(0);
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(def)) {
      ArrayRef<int64_t> from = tensorOf(reshape.getOperand()).getShape(),
                        to = reshape.getType().getShape();
      auto lead = [](ArrayRef<int64_t> s) {
        return s.size() <= 2 ? ArrayRef<int64_t>() : s.drop_back(2);
      };
      auto tail = [](ArrayRef<int64_t> s) {
        return s.size() <= 2 ? s : s.take_back(2);
      };
      bool unitLead = llvm::all_of(lead(from), [](int64_t d) { return d == 1; }) &&
                      llvm::all_of(lead(to), [](int64_t d) { return d == 1; });
      if (unitLead && tail(from) == tail(to) && from.size() >= 2 &&
          to.size() >= 2) {
        value = reshape.getOperand();
        continue;
      }
    }
    break;
  }
  return value;
}

/// How many positions (from the last axis) a reshape that only inserts or
/// drops unit axes moves every non-unit axis by: `arange(L)[:, None]` moves
/// an index vector's one axis from the key position to the row position.
/// Nullopt when it moves them by different counts or changes a size.
std::optional<int64_t> unitAxisShift(ArrayRef<int64_t> from,
                                     ArrayRef<int64_t> to) {
  auto nonUnit = [](ArrayRef<int64_t> shape) {
    SmallVector<std::pair<int64_t, int64_t>> axes; // (size, from end)
    for (int64_t d = 0, r = shape.size(); d < r; ++d)
      if (shape[d] != 1)
        axes.push_back({shape[d], r - 1 - d});
    return axes;
  };
  auto a = nonUnit(from), b = nonUnit(to);
  if (a.size() != b.size())
    return std::nullopt;
  std::optional<int64_t> delta;
  for (auto [x, y] : llvm::zip(a, b)) {
    if (x.first != y.first || (delta && *delta != y.second - x.second))
      return std::nullopt;
    delta = y.second - x.second;
  }
  return delta.value_or(0);
}

/// The affine index expression `value` computes over the score frame
/// [.., Lq, Lk], or nullopt when it is not one. `shift`: how many positions
/// further from the last axis `value`'s axes sit in the frame (it is an
/// index vector a reshape lays over the frame afterwards).
std::optional<Affine> readAffine(Value value, int64_t lq, int64_t lk,
                                 int depth = 0, int64_t shift = 0) {
  if (depth > 16)
    return std::nullopt;
  value = peelViews(value);
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.getElementType().isSignlessInteger() ||
      type.getElementType().isInteger(1))
    return std::nullopt;
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto iota = dyn_cast<IotaOp>(def)) {
    int64_t dim = iota.getDim(), rank = type.getRank();
    int64_t fromEnd = rank - 1 - dim + shift, size = type.getDimSize(dim);
    if (size == 1)
      return Affine{};
    if (fromEnd == 0 && size == lk)
      return Affine{1, 0, 0};
    if (fromEnd == 1 && size == lq)
      return Affine{0, 1, 0};
    return std::nullopt;
  }
  DenseIntElementsAttr dense;
  if (matchPattern(value, m_Constant(&dense))) {
    if (!dense.isSplat())
      return std::nullopt;
    return Affine{0, 0, dense.getSplatValue<APInt>().getSExtValue()};
  }
  if (auto convert = dyn_cast<ConvertOp>(def)) {
    auto from = tensorOf(convert.getOperand()).getElementType();
    // Integer widening or narrowing of small indices keeps their values.
    if (!from.isSignlessInteger() || from.getIntOrFloatBitWidth() < 32)
      return std::nullopt;
    return readAffine(convert.getOperand(), lq, lk, depth + 1, shift);
  }
  if (auto reshape = dyn_cast<ReshapeOp>(def)) {
    std::optional<int64_t> delta =
        unitAxisShift(tensorOf(reshape.getOperand()).getShape(),
                      reshape.getType().getShape());
    if (!delta)
      return std::nullopt;
    return readAffine(reshape.getOperand(), lq, lk, depth + 1,
                      shift + *delta);
  }
  if (isa<AddOp, SubOp>(def)) {
    auto lhs = readAffine(def->getOperand(0), lq, lk, depth + 1, shift);
    auto rhs = readAffine(def->getOperand(1), lq, lk, depth + 1, shift);
    if (!lhs || !rhs)
      return std::nullopt;
    return lhs->plus(rhs->scaled(isa<SubOp>(def) ? -1 : 1));
  }
  return std::nullopt;
}

/// The value of an i1 splat constant.
std::optional<bool> splatBool(Value value) {
  DenseIntElementsAttr dense;
  if (!matchPattern(peelViews(value), m_Constant(&dense)) || !dense.isSplat() ||
      !dense.getElementType().isInteger(1))
    return std::nullopt;
  return dense.getSplatValue<APInt>().getBoolValue();
}

/// One boolean identity on i1 splats at `def`: the condition it passes
/// through and whether it negates it. select(c, true, false) = c,
/// select(c, false, true) = !c, eq(x, false) = ne(x, true) = !x,
/// eq(x, true) = ne(x, false) = x, and(x, true) = or(x, false) = x (either
/// side). Nullopt for anything else: a select with non-constant or equal
/// arms, and(x, false), a compare of two non-constant conditions, ...
std::optional<std::pair<Value, bool>> throughIdentity(Operation *def) {
  if (auto compare = dyn_cast<CompareOp>(def)) {
    CompareDirection dir = compare.getDirection();
    if (!tensorOf(compare.getLhs()).getElementType().isInteger(1) ||
        (dir != CompareDirection::EQ && dir != CompareDirection::NE))
      return std::nullopt;
    Value x = compare.getLhs();
    std::optional<bool> c = splatBool(compare.getRhs());
    if (!c) {
      x = compare.getRhs();
      c = splatBool(compare.getLhs());
    }
    if (!c)
      return std::nullopt;
    // x == true and x != false are x; x == false and x != true are !x.
    bool keeps = (dir == CompareDirection::EQ) == *c;
    return std::pair{x, !keeps};
  }
  if (auto select = dyn_cast<SelectOp>(def)) {
    std::optional<bool> onTrue = splatBool(select.getOnTrue()),
                        onFalse = splatBool(select.getOnFalse());
    if (!onTrue || !onFalse || *onTrue == *onFalse)
      return std::nullopt;
    return std::pair{select.getCond(), !*onTrue};
  }
  if (isa<AndOp, OrOp>(def)) {
    // The neutral element: true for and, false for or.
    bool neutral = isa<AndOp>(def);
    Value lhs = def->getOperand(0), rhs = def->getOperand(1);
    if (splatBool(rhs) == neutral)
      return std::pair{lhs, false};
    if (splatBool(lhs) == neutral)
      return std::pair{rhs, false};
  }
  return std::nullopt;
}

/// An integer compare (not one of conditions).
CompareOp integerCompare(Operation *def) {
  auto compare = dyn_cast<CompareOp>(def);
  if (!compare || tensorOf(compare.getLhs()).getElementType().isInteger(1))
    return {};
  return compare;
}

/// The compare `cond` (i1) equals or negates elementwise, seen through
/// throughIdentity's identities, any nesting of them (double negation
/// included), and views that keep the last two axes. Nullopt for anything
/// else.
std::optional<BoolView> readBoolViewAt(Value cond, int depth) {
  if (depth > 16)
    return std::nullopt;
  Operation *def = peelViews(cond).getDefiningOp();
  if (!def)
    return std::nullopt;
  if (CompareOp compare = integerCompare(def))
    return BoolView{compare, false};
  std::optional<std::pair<Value, bool>> inner = throughIdentity(def);
  if (!inner)
    return std::nullopt;
  std::optional<BoolView> view = readBoolViewAt(inner->first, depth + 1);
  if (view)
    view->negated ^= inner->second;
  return view;
}

CompareDirection flip(CompareDirection d) {
  switch (d) {
  case CompareDirection::LT:
    return CompareDirection::GT;
  case CompareDirection::LE:
    return CompareDirection::GE;
  case CompareDirection::GT:
    return CompareDirection::LT;
  case CompareDirection::GE:
    return CompareDirection::LE;
  default:
    return d;
  }
}

} // namespace

std::optional<BoolView> match::readBoolView(Value cond) {
  return readBoolViewAt(cond, 0);
}

namespace {

/// A set of (query row i, key t) pairs that depends on d = t - i only: the
/// keys lo <= d <= hi (a bound at kOpen is absent), or, complemented, the
/// keys outside them.
struct Band {
  static constexpr int64_t kOpen = int64_t(1) << 60;
  int64_t lo = -kOpen, hi = kOpen;
  bool complement = false;

  bool isEmptyInterval() const { return !complement && lo > hi; }
};

/// `band` as an interval where it is one: the complement of a half-line is
/// the other half-line.
Band normalized(Band band) {
  if (!band.complement)
    return band;
  if (band.lo <= -Band::kOpen && band.hi < Band::kOpen)
    return Band{band.hi + 1, Band::kOpen, false};
  if (band.hi >= Band::kOpen && band.lo > -Band::kOpen)
    return Band{-Band::kOpen, band.lo - 1, false};
  return band;
}

Band negated(Band band) {
  band.complement = !band.complement;
  return normalized(band);
}

/// The pairs in both bands, when that is again a band.
std::optional<Band> meet(Band a, Band b) {
  a = normalized(a);
  b = normalized(b);
  if (a.complement && b.complement) {
    // Outside both = outside their union, when the union is one interval.
    if (std::max(a.lo, b.lo) > std::min(a.hi, b.hi) + 1)
      return std::nullopt;
    return Band{std::min(a.lo, b.lo), std::max(a.hi, b.hi), true};
  }
  if (a.complement)
    std::swap(a, b);
  if (!b.complement)
    return Band{std::max(a.lo, b.lo), std::min(a.hi, b.hi), false};
  // An interval without the keys of a bounded one: an interval when that
  // one misses it or covers one of its ends.
  if (b.hi < a.lo || b.lo > a.hi)
    return a;
  if (b.lo <= a.lo)
    return Band{b.hi + 1, a.hi, false};
  if (b.hi >= a.hi)
    return Band{a.lo, b.lo - 1, false};
  return std::nullopt;
}

std::optional<Band> join(Band a, Band b) {
  std::optional<Band> outside = meet(negated(a), negated(b));
  return outside ? std::optional<Band>(negated(*outside)) : std::nullopt;
}

/// The band an integer compare names: `lhs - rhs` must be `+-(t - i) + k`.
std::optional<Band> bandOfCompare(CompareOp compare, int64_t lq, int64_t lk) {
  auto lhs = readAffine(compare.getLhs(), lq, lk);
  auto rhs = readAffine(compare.getRhs(), lq, lk);
  if (!lhs || !rhs)
    return std::nullopt;
  // lhs - rhs = a*t + c*i + e; normalise to (t - i) <dir> k.
  Affine diff = lhs->plus(rhs->scaled(-1));
  // One query row (i = 0, its iota a size-1 constant): only t's side counts.
  if (lq == 1)
    diff.rowCoef = -diff.keyCoef;
  CompareDirection dir = compare.getDirection();
  int64_t k;
  if (diff.keyCoef == 1 && diff.rowCoef == -1) {
    k = -diff.offset;
  } else if (diff.keyCoef == -1 && diff.rowCoef == 1) {
    dir = flip(dir);
    k = diff.offset;
  } else {
    return std::nullopt;
  }
  // Offsets are index arithmetic on small iotas; a constant near the
  // sentinel is no band we can name.
  if (k <= -Band::kOpen / 2 || k >= Band::kOpen / 2)
    return std::nullopt;
  switch (dir) {
  case CompareDirection::LE:
    return Band{-Band::kOpen, k, false};
  case CompareDirection::LT:
    return Band{-Band::kOpen, k - 1, false};
  case CompareDirection::GE:
    return Band{k, Band::kOpen, false};
  case CompareDirection::GT:
    return Band{k + 1, Band::kOpen, false};
  case CompareDirection::EQ:
    return Band{k, k, false};
  case CompareDirection::NE:
    return Band{k, k, true};
  }
  return std::nullopt;
}

/// The band an i1 condition over the score frame is: a compare of index
/// expressions, behind the identities readBoolView sees through, and `and`
/// / `or` of two such conditions, any nesting.
std::optional<Band> readBand(Value cond, int64_t lq, int64_t lk, int depth) {
  if (depth > 16)
    return std::nullopt;
  Operation *def = peelViews(cond).getDefiningOp();
  if (!def)
    return std::nullopt;
  if (CompareOp compare = integerCompare(def)) {
    std::optional<Band> band = bandOfCompare(compare, lq, lk);
    return band ? std::optional<Band>(normalized(*band)) : std::nullopt;
  }
  if (std::optional<std::pair<Value, bool>> inner = throughIdentity(def)) {
    std::optional<Band> band = readBand(inner->first, lq, lk, depth + 1);
    return band && inner->second ? std::optional<Band>(negated(*band)) : band;
  }
  if (isa<AndOp, OrOp>(def)) {
    std::optional<Band> lhs = readBand(def->getOperand(0), lq, lk, depth + 1);
    std::optional<Band> rhs = readBand(def->getOperand(1), lq, lk, depth + 1);
    if (!lhs || !rhs)
      return std::nullopt;
    return isa<AndOp>(def) ? meet(*lhs, *rhs) : join(*lhs, *rhs);
  }
  return std::nullopt;
}

/// The keys one mask step leaves visible, as a band.
std::optional<Band> visibleBandOf(const MaskStep &step, int64_t lq,
                                  int64_t lk) {
  switch (step.kind) {
  case MaskStep::Select: {
    // select(cond, s, fill) keeps the keys cond names; select(cond, fill, s)
    // hides them. The fill is -inf or the lowest finite.
    std::optional<Band> band = readBand(step.value, lq, lk, 0);
    if (!band)
      return std::nullopt;
    return step.keepWhenTrue ? normalized(*band) : negated(*band);
  }
  case MaskStep::Add: {
    // s + select(cond, fill, 0) (cond hidden) or s + select(cond, 0, fill).
    auto select = peelViews(step.value).getDefiningOp<SelectOp>();
    if (!select)
      return std::nullopt;
    auto isFill = [](Value v) { return isNegInf(v) || isLowestFinite(v); };
    Value onTrue = peelViews(select.getOnTrue()),
          onFalse = peelViews(select.getOnFalse());
    bool hiddenOnTrue = isFill(onTrue) && isZero(onFalse);
    bool hiddenOnFalse = isZero(onTrue) && isFill(onFalse);
    if (!hiddenOnTrue && !hiddenOnFalse)
      return std::nullopt;
    std::optional<Band> band = readBand(select.getCond(), lq, lk, 0);
    if (!band)
      return std::nullopt;
    return hiddenOnFalse ? normalized(*band) : negated(*band);
  }
  case MaskStep::Scale:
    // A later scale of a lowest-finite fill is finite again.
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

std::optional<int64_t> match::causalWindowOf(ArrayRef<MaskStep> steps,
                                             int64_t lq, int64_t lk) {
  if (steps.empty() || lk < lq)
    return std::nullopt;
  // The visible keys are those every step leaves visible.
  Band visible;
  for (const MaskStep &step : steps) {
    std::optional<Band> band = visibleBandOf(step, lq, lk);
    if (!band)
      return std::nullopt;
    std::optional<Band> both = meet(visible, *band);
    if (!both)
      return std::nullopt;
    visible = normalized(*both);
  }
  if (visible.complement || visible.isEmptyInterval())
    return std::nullopt;
  // Upper end: the diagonal d = Lk - Lq. Row 0 reaches d = Lk - 1, so for
  // Lq > 1 any other bound changes row 0's keys; one query row sees d <=
  // Lk - 1 = D whatever bound at or past it.
  int64_t diagonal = lk - lq;
  if (!(visible.hi == diagonal || (lq == 1 && visible.hi >= diagonal)))
    return std::nullopt;
  // Lower end: no row's keys start past 0 when lo <= -(Lq - 1) (row i
  // reaches d = -i): plain causal. Past the diagonal no key is left.
  if (visible.lo <= -(lq - 1))
    return 0;
  if (visible.lo > diagonal)
    return std::nullopt;
  // lo = D - W + 1.
  return diagonal - visible.lo + 1;
}
