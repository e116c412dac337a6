//===- Bf16AsI16.cpp - poot-spirv-bf16-as-i16 ------------------------------===//
//
// bf16 values carried as their 16 bits on SPIR-V, after upstream passes
// widened bf16 arithmetic to f32 and expanded the conversions into integer
// bit operations. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"
#include "lib/Conversion/RetypeOpPattern.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTSPIRVBF16ASI16
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

bool isBf16(Type type) { return isa<BFloat16Type>(getElementTypeOrSelf(type)); }

/// bf16 -> i16, and shaped types of bf16 -> the same shape of i16.
class BitsConverter : public TypeConverter {
public:
  explicit BitsConverter(MLIRContext *ctx) {
    Type i16 = IntegerType::get(ctx, 16);
    addConversion([](Type type) { return type; });
    addConversion([i16](BFloat16Type) -> Type { return i16; });
    addConversion([i16](MemRefType type) -> Type {
      return isBf16(type) ? MemRefType::get(type.getShape(), i16,
                                            type.getLayout(),
                                            type.getMemorySpace())
                          : type;
    });
    addConversion([i16](VectorType type) -> Type {
      return isBf16(type) ? type.clone(i16) : type;
    });
  }
};

bool typesLegal(TypeRange types) { return llvm::none_of(types, isBf16); }

/// A bitcast of i16 bits to bf16 (the one bf16 value left on the CPU, for
/// x86vector.avx512.dot, whose operands are bf16 by definition).
bool isBitsToBf16(Value value) {
  auto cast = value.getDefiningOp<arith::BitcastOp>();
  return cast && !isBf16(cast.getIn().getType());
}

bool isLegal(Operation *op) {
  // The CPU's AVX512-BF16 dot product (poot-cpu-vectorize-matmuls
  // {bf16-dot}) reads bf16 pairs: legal once its operands are the i16 bits
  // bitcast back (DotBits), and so are those bitcasts.
  if (auto dot = dyn_cast<x86vector::DotBF16Op>(op))
    return isBitsToBf16(dot.getA()) && isBitsToBf16(dot.getB());
  if (auto cast = dyn_cast<arith::BitcastOp>(op);
      cast && isBitsToBf16(cast.getResult()) && !cast->use_empty() &&
      llvm::all_of(cast->getUsers(), [](Operation *user) {
        return isa<x86vector::DotBF16Op>(user);
      }))
    return true;
  if (auto func = dyn_cast<FunctionOpInterface>(op))
    return typesLegal(func.getArgumentTypes()) &&
           typesLegal(func.getResultTypes());
  if (auto global = dyn_cast<memref::GlobalOp>(op))
    return !isBf16(global.getType());
  if (!typesLegal(op->getOperandTypes()) || !typesLegal(op->getResultTypes()))
    return false;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      if (!typesLegal(block.getArgumentTypes()))
        return false;
  return true;
}

/// Ops that only move a bf16 value's bits; every other arith/math op on
/// bf16 computes, and must have been widened before this pass.
bool movesBits(Operation *op) {
  if (!isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return true;
  return isa<arith::ConstantOp, arith::SelectOp, arith::BitcastOp>(op);
}

/// The bits of a bf16 constant (scalar or dense vector) as i16.
struct ConstantBits : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = getTypeConverter()->convertType(op.getType());
    TypedAttr value;
    if (auto f = dyn_cast<FloatAttr>(op.getValue()))
      value = IntegerAttr::get(type, f.getValue().bitcastToAPInt());
    else if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue()))
      value = dense.bitcast(getElementTypeOrSelf(type));
    else
      return rewriter.notifyMatchFailure(op, "bf16 constant of unknown form");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, value);
    return success();
  }
};

/// A bitcast between bf16 and i16 (or bf16 and bf16) disappears; one
/// between bf16 and f16 becomes f16 <-> i16.
struct BitcastBits : OpConversionPattern<arith::BitcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::BitcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = getTypeConverter()->convertType(op.getType());
    if (adaptor.getIn().getType() == type) {
      rewriter.replaceOp(op, adaptor.getIn());
      return success();
    }
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, type, adaptor.getIn());
    return success();
  }
};

/// x86vector.avx512.dot over the bits of its bf16 operands: the i16
/// vectors bitcast back to bf16 right at the dot (LLVM's vdpbf16ps takes
/// <32 x bfloat>; nothing else computes on them).
struct DotBits : OpConversionPattern<x86vector::DotBF16Op> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(x86vector::DotBF16Op op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto asBf16 = [&](Value bits, Type type) -> Value {
      if (bits.getType() == type)
        return bits;
      return arith::BitcastOp::create(rewriter, op.getLoc(), type, bits);
    };
    Value a = asBf16(adaptor.getA(), op.getA().getType());
    Value b = asBf16(adaptor.getB(), op.getB().getType());
    rewriter.replaceOpWithNewOp<x86vector::DotBF16Op>(op, op.getType(),
                                                      adaptor.getSrc(), a, b);
    return success();
  }
};

/// A bf16 global (a constant buffer) holds the same bytes as i16.
struct GlobalBits : OpConversionPattern<memref::GlobalOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(memref::GlobalOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    Attribute initial = op.getInitialValueAttr();
    if (auto dense = dyn_cast_or_null<DenseElementsAttr>(initial))
      initial = dense.bitcast(type.getElementType());
    else if (initial && !isa<UnitAttr>(initial))
      return rewriter.notifyMatchFailure(op, "bf16 global of unknown form");
    rewriter.modifyOpInPlace(op, [&] {
      op.setType(type);
      if (initial)
        op.setInitialValueAttr(initial);
    });
    return success();
  }
};

/// The f32 form of a bf16 scalar or vector type; other types unchanged.
Type widened(Type type) {
  if (!isBf16(type))
    return type;
  Type f32 = Float32Type::get(type.getContext());
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(f32);
  return f32;
}

/// Every arith op computing on bf16 computes in f32 on extended operands
/// and rounds its result back to bf16: one rounding per op, as the oracle
/// (and ml_dtypes) rounds. (Upstream's arith-emulate-unsupported-floats
/// keeps a chain of ops in f32 and rounds once at its end.)
void widenArithmetic(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    bool touches = !typesLegal(op->getOperandTypes()) ||
                   !typesLegal(op->getResultTypes());
    if (touches && isa<arith::ArithDialect>(op->getDialect()) &&
        !isa<arith::ConstantOp, arith::SelectOp, arith::BitcastOp,
             arith::ExtFOp, arith::TruncFOp>(op) &&
        op->getNumRegions() == 0)
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    IRMapping map;
    for (Value operand : op->getOperands())
      if (isBf16(operand.getType()))
        map.map(operand, b.create<arith::ExtFOp>(op->getLoc(),
                                                 widened(operand.getType()),
                                                 operand));
    Operation *wide = b.clone(*op, map);
    for (OpResult result : wide->getResults())
      result.setType(widened(result.getType()));
    for (auto [old, now] : llvm::zip(op->getResults(), wide->getResults())) {
      Value back = now;
      if (old.getType() != now.getType())
        back = b.create<arith::TruncFOp>(op->getLoc(), old.getType(), now);
      old.replaceAllUsesWith(back);
    }
    op->erase();
  }
}

struct Bf16AsI16 : poot::impl::PootSPIRVBf16AsI16Base<Bf16AsI16> {
  using PootSPIRVBf16AsI16Base::PootSPIRVBf16AsI16Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (!sixteenBitInts) {
      WalkResult found = module.walk([](Operation *op) {
        if (!typesLegal(op->getOperandTypes()) ||
            !typesLegal(op->getResultTypes())) {
          op->emitError("DtypeLowering: bf16 is carried as i16 on SPIR-V, "
                        "and this client (wgpu: naga) has no 16-bit "
                        "integers; compile for raw Vulkan, or use f16/f32");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (found.wasInterrupted())
        return signalPassFailure();
    }
    // 1. bf16 arithmetic in f32, rounded per op; 2. the bf16 <-> f32
    // conversions as integer bit operations (upstream's patterns).
    widenArithmetic(module);
    {
      RewritePatternSet expand(ctx);
      arith::populateExpandBFloat16Patterns(expand);
      if (failed(applyPatternsGreedily(module, std::move(expand))))
        return signalPassFailure();
    }
    // Arithmetic left on bf16 would be silently mis-lowered: refuse it.
    WalkResult computes = module.walk([](Operation *op) {
      bool touches = !typesLegal(op->getOperandTypes()) ||
                     !typesLegal(op->getResultTypes());
      if (touches && !movesBits(op)) {
        op->emitOpError("computes on bf16, which the SPIR-V kernels carry as "
                        "bits only (a bf16 math function must be "
                        "extended to f32 first: "
                        "math-extend-to-supported-types)");
        return WalkResult::interrupt();
      }
      if (auto func = dyn_cast<gpu::GPUFuncOp>(op)) {
        SmallVector<BlockArgument> attributions(
            func.getWorkgroupAttributions());
        llvm::append_range(attributions, func.getPrivateAttributions());
        for (BlockArgument arg : attributions)
          if (isBf16(arg.getType())) {
            func.emitOpError("has a bf16 workgroup/private buffer, which "
                             "poot-spirv-bf16-as-i16 does not retype");
            return WalkResult::interrupt();
          }
      }
      return WalkResult::advance();
    });
    if (computes.wasInterrupted())
      return signalPassFailure();

    // 3. What is left of bf16 moves bits: carry them as i16.
    BitsConverter converter(ctx);
    ConversionTarget target(*ctx);
    target.markUnknownOpDynamicallyLegal(isLegal);
    RewritePatternSet patterns(ctx);
    patterns.add<ConstantBits, BitcastBits, GlobalBits, DotBits>(converter,
                                                                 ctx);
    // Any other op that moves bf16 bits (loads, stores, views, allocations,
    // launches, selects, terminators): the same op over i16.
    patterns.add<poot::RetypeOpPattern>(converter, ctx, [](Operation *op) {
      return !isa<FunctionOpInterface, x86vector::DotBF16Op>(op) &&
             movesBits(op);
    });
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateFunctionOpInterfaceTypeConversionPattern<gpu::GPUFuncOp>(
        patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversions(converter, patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
