//===- MatchSupport.cpp - small readers the attention matcher shares ------===//

#include "lib/Transforms/MatchSupport.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::poot;

std::optional<APFloat> match::splatFloat(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

std::optional<double> match::splatDouble(Value value) {
  std::optional<APFloat> f = splatFloat(value);
  if (!f)
    return std::nullopt;
  bool losesInfo = false;
  APFloat wide = *f;
  wide.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
               &losesInfo);
  return wide.convertToDouble();
}

bool match::isNegInf(Value value) {
  auto f = splatFloat(value);
  return f && f->isInfinity() && f->isNegative();
}

bool match::isZero(Value value) {
  auto f = splatFloat(value);
  return f && f->isZero();
}

bool match::isLowestFinite(Value value) {
  auto f = splatFloat(value);
  if (!f)
    return false;
  APFloat lowest =
      APFloat::getLargest(f->getSemantics(), /*Negative=*/true);
  return f->bitwiseIsEqual(lowest);
}

std::string match::describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

std::string match::describe(Value value) {
  if (Operation *def = value.getDefiningOp())
    return describe(def);
  return "argument #" +
         std::to_string(cast<BlockArgument>(value).getArgNumber());
}

std::string match::typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

std::string match::number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

bool match::hasUses(Value value, unsigned count) {
  return static_cast<unsigned>(
             std::distance(value.use_begin(), value.use_end())) == count;
}

unsigned match::usersAmong(Value value, ArrayRef<Operation *> ops) {
  unsigned count = 0;
  for (Operation *user : value.getUsers())
    count += llvm::is_contained(ops, user);
  return count;
}

bool match::isBatchFold(Type a, Type b) {
  auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
  if (!ta || !tb || ta.getElementType() != tb.getElementType())
    return false;
  if (ta.getRank() == 4 && tb.getRank() == 3)
    std::swap(ta, tb);
  if (ta.getRank() != 3 || tb.getRank() != 4)
    return false;
  ArrayRef<int64_t> three = ta.getShape(), four = tb.getShape();
  return three[0] == four[0] * four[1] && three[1] == four[2] &&
         three[2] == four[3];
}

ReduceOp match::readReduceView(Value value,
                               SmallVectorImpl<Operation *> &views) {
  for (int step = 0; step < 4; ++step) {
    Operation *def = value.getDefiningOp();
    if (auto reduce = dyn_cast_or_null<ReduceOp>(def))
      return reduce;
    if (!isa_and_nonnull<ReshapeOp, BroadcastOp>(def))
      return {};
    views.push_back(def);
    value = def->getOperand(0);
  }
  return {};
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t total = 1;
  for (int64_t d : dims)
    total *= d;
  return total;
}

bool match::rowsAlign(Value divisor, ReduceOp reduce, Value dividend) {
  ArrayRef<int64_t> want = tensorOf(dividend).getShape();
  ArrayRef<int64_t> have = tensorOf(divisor).getShape();
  ArrayRef<int64_t> rows = tensorOf(reduce.getOperand()).getShape();
  int64_t rank = want.size();
  if (rank < 2 || static_cast<int64_t>(have.size()) != rank ||
      reduce.getAxis() != static_cast<int64_t>(rows.size()) - 1 ||
      rows.size() < 2)
    return false;
  if (have.drop_back(2) != want.drop_back(2) ||
      have[rank - 2] != want[rank - 2])
    return false;
  if (have[rank - 1] != 1 && have[rank - 1] != want[rank - 1])
    return false;
  // The reduced rows [lead', X] are the dividend's [lead, X] up to a fold.
  return rows[rows.size() - 2] == want[rank - 2] &&
         product(rows.drop_back(2)) == product(want.drop_back(2));
}

std::optional<std::pair<Value, double>> match::readScale(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto mul = dyn_cast_or_null<MulOp>(def)) {
    for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())})
      if (auto factor = splatDouble(c))
        if (x.getType() == value.getType() && !splatFloat(x))
          return std::pair(x, *factor);
    return std::nullopt;
  }
  if (auto div = dyn_cast_or_null<DivOp>(def)) {
    std::optional<double> divisor = splatDouble(div.getRhs());
    if (divisor && *divisor != 0 && std::isfinite(*divisor) &&
        div.getLhs().getType() == value.getType())
      return std::pair(div.getLhs(), 1.0 / *divisor);
  }
  return std::nullopt;
}
