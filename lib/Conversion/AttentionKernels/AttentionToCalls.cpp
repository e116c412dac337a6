//===- AttentionToCalls.cpp - offload attention from a CPU host step ------===//
//
// The host program of a GPU run: every primitive stays on the CPU, and each
// poot.attention becomes a call the runtime answers by launching the op's
// generated GPU kernels (runtime.hybrid). The call passes flat buffers in the
// kernels' own argument order, so the runtime binds them unchanged.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/KernelSignature.h"
#include "lib/Conversion/AttentionKernels/TensorBridge.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTATTENTIONTOCALLS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {
struct AttentionToCalls
    : poot::impl::PootAttentionToCallsBase<AttentionToCalls> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AttentionOp> ops;
    module.walk([&](AttentionOp op) { ops.push_back(op); });
    for (auto [i, op] : llvm::enumerate(ops)) {
      auto req = op->getAttrOfType<AttentionRequestAttr>(
          PootDialect::kRequestAttrName);
      if (!req) {
        op.emitError("poot.attention has no poot.request: run "
                     "poot-plan-attention first");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<Value> args;
      for (Value operand : KernelSignature::orderedInputs(op))
        args.push_back(flatReadBuffer(b, loc, operand));
      auto resultType = cast<RankedTensorType>(op.getType());
      Value out = memref::AllocOp::create(
          b, loc,
          MemRefType::get({resultType.getNumElements()}, b.getF32Type()));
      args.push_back(out);

      std::string name = ("poot_offload_" + Twine(i)).str();
      OpBuilder mb(module.getBodyRegion());
      mb.setInsertionPointToEnd(module.getBody());
      auto decl = func::FuncOp::create(
          mb, loc, name, mb.getFunctionType(ValueRange(args).getTypes(), {}));
      decl.setPrivate();
      decl->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    mb.getUnitAttr());
      auto call = func::CallOp::create(b, loc, decl, args);
      call->setAttr(PootDialect::kRequestAttrName, req);
      // A whole-step GPU pipeline launches these in place of the call.
      if (Attribute kernels = op->getAttr("poot.kernels"))
        call->setAttr("poot.kernels", kernels);
      op.getResult().replaceAllUsesWith(tensorFromFlat(b, loc, out, resultType));
      op.erase();
    }
  }
};
} // namespace
