//===- ElementwisePatterns.cpp - poot elementwise ops -> linalg.generic ---===//
//
// Binary and unary arithmetic, compare, select, convert, broadcast, iota and
// constant. Every elementwise op becomes one `linalg.generic` whose indexing
// maps carry numpy broadcasting; the scalar body follows the op's
// documented math at every element type (i1 is the 1-bit integer ring:
// add/sub are xor, mul/div are and, max/min are or/and).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/PootToLinalg/LoweringUtils.h"

#include "dialect/PootDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::poot;
using namespace mlir::poot::linalg_lowering;

namespace {

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

/// i32 floor division with `x / 0 = 0`. The divisor is made safe before
/// dividing (the division executes for every element, and x86 traps on a
/// zero divisor or on INT_MIN / -1); `x / -1` is the wrapping negation.
Value floorDivI(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  Type type = lhs.getType();
  Value zero = scalarConstant(b, loc, type, 0);
  Value one = scalarConstant(b, loc, type, 1);
  Value minusOne = scalarConstant(b, loc, type, -1);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, zero);
  Value isMinusOne =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, minusOne);
  Value unsafe = arith::OrIOp::create(b, loc, isZero, isMinusOne);
  Value divisor = arith::SelectOp::create(b, loc, unsafe, one, rhs);
  Value quotient = arith::FloorDivSIOp::create(b, loc, lhs, divisor);
  Value negated = arith::SubIOp::create(b, loc, zero, lhs);
  quotient = arith::SelectOp::create(b, loc, isMinusOne, negated, quotient);
  return arith::SelectOp::create(b, loc, isZero, zero, quotient);
}

enum class BinaryKind { Add, Sub, Mul, Div, Max, Min, And, Or };

Value binaryScalar(OpBuilder &b, Location loc, BinaryKind kind, Value lhs,
                   Value rhs) {
  Type type = lhs.getType();
  if (isa<FloatType>(type)) {
    switch (kind) {
    case BinaryKind::Add:
      return arith::AddFOp::create(b, loc, lhs, rhs);
    case BinaryKind::Sub:
      return arith::SubFOp::create(b, loc, lhs, rhs);
    case BinaryKind::Mul:
      return arith::MulFOp::create(b, loc, lhs, rhs);
    case BinaryKind::Div:
      return arith::DivFOp::create(b, loc, lhs, rhs);
    case BinaryKind::Max: // NaN propagates.
      return arith::MaximumFOp::create(b, loc, lhs, rhs);
    case BinaryKind::Min:
      return arith::MinimumFOp::create(b, loc, lhs, rhs);
    case BinaryKind::And:
    case BinaryKind::Or:
      break; // The verifier admits integers only.
    }
    llvm_unreachable("bitwise op on a float");
  }
  if (type.isInteger(1)) {
    // i1 is the 1-bit integer ring (the oracle's documented choice): + and -
    // are xor, * and // are and (x // 0 = 0); false < true, so max is `or`
    // and min is `and`.
    switch (kind) {
    case BinaryKind::Add:
    case BinaryKind::Sub:
      return arith::XOrIOp::create(b, loc, lhs, rhs);
    case BinaryKind::Max:
    case BinaryKind::Or:
      return arith::OrIOp::create(b, loc, lhs, rhs);
    case BinaryKind::Mul:
    case BinaryKind::Div:
    case BinaryKind::Min:
    case BinaryKind::And:
      return arith::AndIOp::create(b, loc, lhs, rhs);
    }
    llvm_unreachable("unknown binary kind");
  }
  switch (kind) {
  case BinaryKind::Add:
    return arith::AddIOp::create(b, loc, lhs, rhs);
  case BinaryKind::Sub:
    return arith::SubIOp::create(b, loc, lhs, rhs);
  case BinaryKind::Mul:
    return arith::MulIOp::create(b, loc, lhs, rhs);
  case BinaryKind::Div:
    return floorDivI(b, loc, lhs, rhs);
  case BinaryKind::Max:
    return arith::MaxSIOp::create(b, loc, lhs, rhs);
  case BinaryKind::Min:
    return arith::MinSIOp::create(b, loc, lhs, rhs);
  case BinaryKind::And:
    return arith::AndIOp::create(b, loc, lhs, rhs);
  case BinaryKind::Or:
    return arith::OrIOp::create(b, loc, lhs, rhs);
  }
  llvm_unreachable("unknown binary kind");
}

template <typename OpTy> constexpr BinaryKind binaryKindOf();
template <> constexpr BinaryKind binaryKindOf<AddOp>() { return BinaryKind::Add; }
template <> constexpr BinaryKind binaryKindOf<SubOp>() { return BinaryKind::Sub; }
template <> constexpr BinaryKind binaryKindOf<MulOp>() { return BinaryKind::Mul; }
template <> constexpr BinaryKind binaryKindOf<DivOp>() { return BinaryKind::Div; }
template <> constexpr BinaryKind binaryKindOf<MaxOp>() { return BinaryKind::Max; }
template <> constexpr BinaryKind binaryKindOf<MinOp>() { return BinaryKind::Min; }
template <> constexpr BinaryKind binaryKindOf<AndOp>() { return BinaryKind::And; }
template <> constexpr BinaryKind binaryKindOf<OrOp>() { return BinaryKind::Or; }

enum class UnaryKind { Exp, Log, Tanh, Logistic, Sqrt, Rsqrt, Sin, Cos, Neg, Abs };

Value unaryScalar(OpBuilder &b, Location loc, UnaryKind kind, Value x) {
  Type type = x.getType();
  bool isFloat = isa<FloatType>(type);
  switch (kind) {
  case UnaryKind::Exp:
    return math::ExpOp::create(b, loc, x);
  case UnaryKind::Log:
    return math::LogOp::create(b, loc, x);
  case UnaryKind::Tanh:
    return math::TanhOp::create(b, loc, x);
  case UnaryKind::Logistic: {
    // 1 / (1 + e^-x): e^-x = inf gives exactly 0, e^-x = 0 exactly 1.
    Value one = scalarConstant(b, loc, type, 1.0);
    Value negX = arith::NegFOp::create(b, loc, x);
    Value e = math::ExpOp::create(b, loc, negX);
    Value denom = arith::AddFOp::create(b, loc, one, e);
    return arith::DivFOp::create(b, loc, one, denom);
  }
  case UnaryKind::Sqrt:
    return math::SqrtOp::create(b, loc, x);
  case UnaryKind::Rsqrt:
    return math::RsqrtOp::create(b, loc, x);
  case UnaryKind::Sin:
    return math::SinOp::create(b, loc, x);
  case UnaryKind::Cos:
    return math::CosOp::create(b, loc, x);
  case UnaryKind::Neg:
    if (isFloat)
      return arith::NegFOp::create(b, loc, x);
    return arith::SubIOp::create(b, loc, scalarConstant(b, loc, type, 0), x);
  case UnaryKind::Abs:
    if (isFloat)
      return math::AbsFOp::create(b, loc, x);
    return math::AbsIOp::create(b, loc, x);
  }
  llvm_unreachable("unknown unary kind");
}

template <typename OpTy> constexpr UnaryKind unaryKindOf();
template <> constexpr UnaryKind unaryKindOf<ExpOp>() { return UnaryKind::Exp; }
template <> constexpr UnaryKind unaryKindOf<LogOp>() { return UnaryKind::Log; }
template <> constexpr UnaryKind unaryKindOf<TanhOp>() { return UnaryKind::Tanh; }
template <> constexpr UnaryKind unaryKindOf<LogisticOp>() { return UnaryKind::Logistic; }
template <> constexpr UnaryKind unaryKindOf<SqrtOp>() { return UnaryKind::Sqrt; }
template <> constexpr UnaryKind unaryKindOf<RsqrtOp>() { return UnaryKind::Rsqrt; }
template <> constexpr UnaryKind unaryKindOf<SinOp>() { return UnaryKind::Sin; }
template <> constexpr UnaryKind unaryKindOf<CosOp>() { return UnaryKind::Cos; }
template <> constexpr UnaryKind unaryKindOf<NegOp>() { return UnaryKind::Neg; }
template <> constexpr UnaryKind unaryKindOf<AbsOp>() { return UnaryKind::Abs; }

Value compareScalar(OpBuilder &b, Location loc, CompareDirection direction,
                    Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType())) {
    // Ordered predicates: a comparison with NaN is false, except `ne`.
    arith::CmpFPredicate pred;
    switch (direction) {
    case CompareDirection::EQ: pred = arith::CmpFPredicate::OEQ; break;
    case CompareDirection::NE: pred = arith::CmpFPredicate::UNE; break;
    case CompareDirection::LT: pred = arith::CmpFPredicate::OLT; break;
    case CompareDirection::LE: pred = arith::CmpFPredicate::OLE; break;
    case CompareDirection::GT: pred = arith::CmpFPredicate::OGT; break;
    case CompareDirection::GE: pred = arith::CmpFPredicate::OGE; break;
    }
    return arith::CmpFOp::create(b, loc, pred, lhs, rhs);
  }
  // i1 orders false < true (unsigned); i32 is signed.
  bool isBool = lhs.getType().isInteger(1);
  arith::CmpIPredicate pred;
  switch (direction) {
  case CompareDirection::EQ: pred = arith::CmpIPredicate::eq; break;
  case CompareDirection::NE: pred = arith::CmpIPredicate::ne; break;
  case CompareDirection::LT:
    pred = isBool ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
    break;
  case CompareDirection::LE:
    pred = isBool ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
    break;
  case CompareDirection::GT:
    pred = isBool ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
    break;
  case CompareDirection::GE:
    pred = isBool ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
    break;
  }
  return arith::CmpIOp::create(b, loc, pred, lhs, rhs);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct BinaryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), storageType(op.getType()),
        ValueRange{adaptor.getLhs(), adaptor.getRhs()},
        [](OpBuilder &b, Location loc, ValueRange args) {
          return binaryScalar(b, loc, binaryKindOf<OpTy>(), args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

template <typename OpTy>
struct UnaryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), storageType(op.getType()), ValueRange{adaptor.getOperand()},
        [](OpBuilder &b, Location loc, ValueRange args) {
          return unaryScalar(b, loc, unaryKindOf<OpTy>(), args[0]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CompareLowering : OpConversionPattern<CompareOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CompareOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    CompareDirection direction = op.getDirection();
    Value result = buildElementwise(
        rewriter, op.getLoc(), storageType(op.getType()),
        ValueRange{adaptor.getLhs(), adaptor.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return compareScalar(b, loc, direction, args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SelectLowering : OpConversionPattern<SelectOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SelectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), storageType(op.getType()),
        ValueRange{adaptor.getCond(), adaptor.getOnTrue(), adaptor.getOnFalse()},
        [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConvertLowering : OpConversionPattern<ConvertOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvertOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getOperand().getType() == op.getType()) {
      rewriter.replaceOp(op, adaptor.getOperand());
      return success();
    }
    RankedTensorType resultType = storageType(op.getType());
    Type to = op.getType().getElementType();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, ValueRange{adaptor.getOperand()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return convertScalar(b, loc, args[0], to);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct BroadcastLowering : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getOperand().getType() == op.getType()) {
      rewriter.replaceOp(op, adaptor.getOperand());
      return success();
    }
    RankedTensorType resultType = storageType(op.getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, ValueRange{adaptor.getOperand()},
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct IotaLowering : OpConversionPattern<IotaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(IotaOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = storageType(op.getType());
    int64_t dim = op.getDim();
    Type elementType = resultType.getElementType();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, ValueRange{},
        [&](OpBuilder &b, Location loc, ValueRange) {
          Value index = linalg::IndexOp::create(b, loc, dim);
          Value i32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
          return convertScalar(b, loc, i32, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = storageType(op.getType());
    Attribute value = op.getValue();
    if (type != op.getType()) {
      // Bools are stored as bytes: widen the constant's elements to i8.
      auto dense = dyn_cast<DenseIntElementsAttr>(value);
      if (!dense)
        return rewriter.notifyMatchFailure(op, "i1 constant is not a dense attribute");
      value = dense.mapValues(type.getElementType(),
                              [](const APInt &bit) { return bit.zext(8); });
    }
    auto typed = dyn_cast<TypedAttr>(value);
    if (!typed)
      return rewriter.notifyMatchFailure(op, "constant value is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, typed);
    return success();
  }
};

} // namespace

void linalg_lowering::populateElementwisePatterns(const TypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<BinaryLowering<AddOp>, BinaryLowering<SubOp>,
               BinaryLowering<MulOp>, BinaryLowering<DivOp>,
               BinaryLowering<MaxOp>, BinaryLowering<MinOp>,
               BinaryLowering<AndOp>, BinaryLowering<OrOp>>(converter, ctx);
  patterns.add<UnaryLowering<ExpOp>, UnaryLowering<LogOp>,
               UnaryLowering<TanhOp>, UnaryLowering<LogisticOp>,
               UnaryLowering<SqrtOp>, UnaryLowering<RsqrtOp>,
               UnaryLowering<SinOp>, UnaryLowering<CosOp>,
               UnaryLowering<NegOp>, UnaryLowering<AbsOp>>(converter, ctx);
  patterns.add<CompareLowering, SelectLowering, ConvertLowering,
               BroadcastLowering, IotaLowering, ConstantLowering>(converter, ctx);
}
