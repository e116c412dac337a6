//===- AttentionToCalls.cpp - offload attention from a CPU host step ------===//
//
// The host program of a GPU run: every primitive stays on the CPU, and each
// fused op (poot.attention, poot.block_topk, poot.selected_attention) becomes
// a call the runtime answers by launching the op's generated GPU kernels
// (runtime.hybrid). The call passes flat buffers in the kernels' own argument
// order, so the runtime binds them unchanged.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/KernelSignature.h"
#include "lib/Conversion/AttentionKernels/SelectionEmitter.h"
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
    // Every fused op in program order: the runtime numbers them the same way.
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<AttentionOp, BlockTopKOp, SelectedAttentionOp>(op))
        ops.push_back(op);
    });
    for (auto [i, op] : llvm::enumerate(ops)) {
      Attribute req = PootDialect::getPlan(op);
      if (!req) {
        op->emitError() << op->getName()
                        << " has no request: run poot-plan-attention first";
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op->getLoc();
      SmallVector<Value> args;
      auto attention = dyn_cast<AttentionOp>(op);
      for (Value operand : attention ? KernelSignature::orderedInputs(attention)
                                     : SelectionSignature::orderedInputs(op))
        args.push_back(flatReadBuffer(b, loc, operand));
      auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
      Value out = memref::AllocOp::create(
          b, loc,
          MemRefType::get({resultType.getNumElements()},
                          resultType.getElementType()));
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
      // The fused op's number in the module's record (poot-record-fused-ops).
      if (Attribute index = op->getAttr("poot.fused"))
        call->setAttr("poot.fused", index);
      op->getResult(0).replaceAllUsesWith(
          tensorFromFlat(b, loc, out, resultType));
      op->erase();
    }
  }
};
} // namespace
