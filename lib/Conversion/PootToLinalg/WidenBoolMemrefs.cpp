//===- WidenBoolMemrefs.cpp - poot-cpu-widen-bool-memrefs -----------------===//
//
// LLVM 22's memref-to-llvm lowering asserts on i1 loads and stores. The step's
// bools are bytes from the start; this pass catches the i1 buffers that buffer
// deallocation introduces (ownership flags) and stores them as bytes too.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"
#include "lib/Conversion/RetypeOpPattern.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUWIDENBOOLMEMREFS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

struct LoadLowering : OpConversionPattern<memref::LoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(memref::LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getType().isInteger(1))
      return failure();
    Location loc = op.getLoc();
    Value byte = memref::LoadOp::create(rewriter, loc, adaptor.getMemref(),
                                        adaptor.getIndices());
    Value zero = arith::ConstantIntOp::create(rewriter, loc, rewriter.getI8Type(), 0);
    rewriter.replaceOpWithNewOp<arith::CmpIOp>(op, arith::CmpIPredicate::ne,
                                               byte, zero);
    return success();
  }
};

struct StoreLowering : OpConversionPattern<memref::StoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(memref::StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getValueToStore().getType().isInteger(1))
      return failure();
    Value byte = arith::ExtUIOp::create(rewriter, op.getLoc(),
                                        rewriter.getI8Type(),
                                        adaptor.getValue());
    rewriter.replaceOpWithNewOp<memref::StoreOp>(op, byte, adaptor.getMemref(),
                                                 adaptor.getIndices());
    return success();
  }
};

struct PootCPUWidenBoolMemrefs
    : poot::impl::PootCPUWidenBoolMemrefsBase<PootCPUWidenBoolMemrefs> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion([](MemRefType type) -> Type {
      if (!type.getElementType().isInteger(1))
        return type;
      return MemRefType::get(type.getShape(), IntegerType::get(type.getContext(), 8),
                             type.getLayout(), type.getMemorySpace());
    });

    ConversionTarget target(*ctx);
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return converter.isSignatureLegal(func.getFunctionType()) &&
             converter.isLegal(&func.getBody());
    });
    target.addDynamicallyLegalOp<memref::StoreOp>([&](memref::StoreOp op) {
      return converter.isLegal(op.getMemRefType());
    });

    RewritePatternSet patterns(ctx);
    patterns.add<LoadLowering, StoreLowering>(converter, ctx);
    // Any other memref op (alloc, dealloc, cast, subview, copy, ...).
    patterns.add<RetypeOpPattern>(converter, ctx, [](Operation *op) {
      return op->getDialect()->getNamespace() ==
                 memref::MemRefDialect::getDialectNamespace() &&
             !isa<memref::LoadOp, memref::StoreOp>(op);
    });
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
