//===- CollectivesToCalls.cpp - poot-collectives-to-calls ------------------===//
//
// Collectives are answered by the runtime that runs the step, with the
// communicator it was given (runtime/collectives.py). Each `poot.all_reduce`
// sums a buffer of its own in place:
// - a CPU step (in-process) calls, through a function pointer the shared
//   object exports (`poot_all_reduce_hook`), the runtime's callback. A
//   pointer the runtime stores after loading, not an undefined symbol: the
//   object must load with no communicator at all (a world of one), and
//   ctypes cannot define a global symbol for it;
// - a GPU step's host program (`program`) calls a declaration that
//   poot-gpu-serialize-program records as an `all_reduce` command between
//   the launches.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"
#include "lib/Conversion/PootToLinalg/CollectiveCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCOLLECTIVESTOCALLS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

constexpr StringLiteral kHookSymbol = "poot_all_reduce_hook";
constexpr StringLiteral kCallSymbol = "poot_all_reduce";

/// The element-type code the hook receives (runtime/collectives.py reads
/// the same numbers).
std::optional<int32_t> dtypeCode(Type type) {
  if (type.isF32())
    return 0;
  if (type.isF16())
    return 1;
  if (type.isBF16())
    return 2;
  if (type.isF64())
    return 3;
  return std::nullopt;
}

/// `func.func private @poot_all_reduce(data, count, dtype, site)`: load the
/// hook and call it when the runtime set one; a null hook is a world of one
/// rank, where the sum is the operand itself.
func::FuncOp defineCall(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = b.getI32Type();
  auto i64 = b.getI64Type();
  // Exported (external linkage), null until the runtime stores its
  // callback. A defined global: an initializer region returning null (a
  // global with no initializer is only a declaration, an undefined symbol
  // the loader refuses).
  auto hookGlobal = LLVM::GlobalOp::create(b, loc, ptr, /*isConstant=*/false,
                                           LLVM::Linkage::External, kHookSymbol,
                                           Attribute());
  {
    OpBuilder::InsertionGuard guard(b);
    b.createBlock(&hookGlobal.getInitializerRegion());
    LLVM::ReturnOp::create(b, loc, LLVM::ZeroOp::create(b, loc, ptr));
  }

  auto type = b.getFunctionType({b.getIndexType(), i64, i32, i64}, {});
  auto func = func::FuncOp::create(b, loc, kCallSymbol, type);
  func.setPrivate();
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value slot = LLVM::AddressOfOp::create(b, loc, ptr, kHookSymbol);
  Value hook = LLVM::LoadOp::create(b, loc, ptr, slot);
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  Value set = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, hook, null);
  auto ifSet = scf::IfOp::create(b, loc, set, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifSet.thenBlock());
  Value address = arith::IndexCastOp::create(b, loc, i64, entry->getArgument(0));
  Value data = LLVM::IntToPtrOp::create(b, loc, ptr, address);
  auto hookType = LLVM::LLVMFunctionType::get(i32, {ptr, i64, i32, i64});
  LLVM::CallOp::create(b, loc, hookType,
                       ValueRange{hook, data, entry->getArgument(1),
                                  entry->getArgument(2), entry->getArgument(3)});
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, loc);
  return func;
}

struct CollectivesToCalls
    : poot::impl::PootCollectivesToCallsBase<CollectivesToCalls> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AllReduceOp> reduces;
    module.walk([&](AllReduceOp op) { reduces.push_back(op); });
    if (reduces.empty())
      return;
    if (SymbolTable::lookupSymbolIn(module, kHookSymbol) ||
        SymbolTable::lookupSymbolIn(module, kCallSymbol) ||
        SymbolTable::lookupSymbolIn(module, (kCallSymbol + "_0").str())) {
      module.emitError() << "the symbols '" << kHookSymbol << "' and '"
                         << kCallSymbol << "' are reserved for collectives";
      return signalPassFailure();
    }
    func::FuncOp call = program ? func::FuncOp() : defineCall(module);
    for (auto [site, op] : llvm::enumerate(reduces)) {
      auto type = cast<RankedTensorType>(op.getType());
      std::optional<int32_t> code = dtypeCode(type.getElementType());
      if (!code) {
        op.emitError() << "no collective for element type "
                       << type.getElementType();
        return signalPassFailure();
      }
      // The operand into a buffer of its own, summed in place there: the
      // operand's own buffer may be a weight or a value read again later.
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto bufferType =
          MemRefType::get(type.getShape(), type.getElementType());
      Value buffer = memref::AllocOp::create(b, loc, bufferType);
      bufferization::MaterializeInDestinationOp::create(
          b, loc, TypeRange{}, op.getOperand(), buffer, /*restrict=*/true,
          /*writable=*/true);
      if (program) {
        // One declaration per site (each its own buffer type); the program
        // command reads the site and the element type from the call.
        OpBuilder mb(module.getBodyRegion());
        mb.setInsertionPointToEnd(module.getBody());
        auto decl = func::FuncOp::create(
            mb, loc, (kCallSymbol + "_" + Twine(site)).str(),
            mb.getFunctionType({bufferType}, {}));
        decl.setPrivate();
        auto command = func::CallOp::create(b, loc, decl, ValueRange{buffer});
        command->setAttr(kAllReduceCallAttr,
                         b.getDictionaryAttr(
                             {b.getNamedAttr("site", b.getI64IntegerAttr(site)),
                              b.getNamedAttr("dtype", b.getI32IntegerAttr(*code))}));
      } else {
        Value data =
            memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
        Value count = arith::ConstantIntOp::create(
            b, loc, type.getNumElements(), /*width=*/64);
        Value dtype = arith::ConstantIntOp::create(b, loc, *code, /*width=*/32);
        Value index = arith::ConstantIntOp::create(b, loc, site, /*width=*/64);
        func::CallOp::create(b, loc, call,
                             ValueRange{data, count, dtype, index});
      }
      Value sum = bufferization::ToTensorOp::create(
          b, loc, type, buffer, /*restrict=*/true, /*writable=*/true);
      op.replaceAllUsesWith(sum);
      op.erase();
    }
  }
};

} // namespace
