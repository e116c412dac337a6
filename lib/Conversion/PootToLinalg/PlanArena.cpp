//===- PlanArena.cpp - poot-cpu-plan-arena ---------------------------------===//
//
// A CPU step's temporaries were each a `malloc` inside the compiled code,
// whose failure the code did not check: out of memory, a step ended the
// process, maybe after writing part of its state. Here every temporary of
// static size becomes a view into one arena argument that the runtime
// allocates before the step runs (a failure there is a typed error, and
// nothing has run), placed by first fit over live ranges (ArenaPlacement.h,
// the GPU program's placement) so the arena is about the peak of the live
// bytes, not their sum. Temporaries the arena cannot take (dynamic sizes,
// inside a parallel loop whose iterations would share one slot, or escaping
// into a region's results) stay allocations.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/ArenaPlacement.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUPLANARENA
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

// Cache-line aligned: the vectorized loops' loads and stores.
constexpr int64_t kAlignment = 64;

/// The bytes of an allocation the arena can hold: static shape, identity
/// layout, default memory space, whole-byte elements; else nullopt.
std::optional<int64_t> arenaBytes(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace() || !alloc.getDynamicSizes().empty() ||
      !alloc.getSymbolOperands().empty())
    return std::nullopt;
  Type element = type.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  return type.getNumElements() * (element.getIntOrFloatBitWidth() / 8);
}

/// Whether every region between `op` and the function body runs its body
/// once per execution of `op`'s ancestors in order (sequential loops and
/// branches): a slot reused by the next iteration is then dead already.
bool onlySequentialAncestors(Operation *op, func::FuncOp func) {
  for (Operation *parent = op->getParentOp(); parent != func;
       parent = parent->getParentOp())
    if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp, scf::ExecuteRegionOp>(parent))
      return false;
  return true;
}

/// Whether the buffer used by `use` may outlive it: returned, yielded, or
/// carried into a region as a value of its own (a loop's iter_args, a
/// while's operands). Operations that only read or write it do not count
/// (linalg ops, copies, calls, a loop's bounds).
bool escapes(OpOperand &use) {
  Operation *user = use.getOwner();
  if (isa<RegionBranchTerminatorOpInterface, func::ReturnOp>(user))
    return true;
  if (auto loop = dyn_cast<scf::ForOp>(user))
    return use.getOperandNumber() >= loop.getNumControlOperands();
  return isa<RegionBranchOpInterface>(user) && !isa<scf::IfOp>(user);
}

/// The position, in the function body, of the top-level op holding `op`.
int64_t positionIn(Operation *op, Block &body,
                   const DenseMap<Operation *, int64_t> &positions) {
  Operation *top = body.findAncestorOpInBlock(*op);
  return positions.lookup(top);
}

struct PlanArena : poot::impl::PootCPUPlanArenaBase<PlanArena> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection tables;
    SymbolUserMap users(tables, module);
    Builder b(&getContext());
    SmallVector<NamedAttribute> arenas;
    for (auto func : module.getOps<func::FuncOp>()) {
      // Entry points only: a function something calls keeps its signature.
      if (func.isExternal() || !users.getUsers(func).empty() ||
          !func.getBody().hasOneBlock())
        continue;
      FailureOr<int64_t> bytes = plan(func);
      if (failed(bytes))
        return signalPassFailure();
      if (*bytes > 0)
        arenas.push_back(b.getNamedAttr(func.getSymName(), b.getI64IntegerAttr(*bytes)));
    }
    if (!arenas.empty())
      module->setAttr("poot.arena_bytes", b.getDictionaryAttr(arenas));
  }

  /// Moves `func`'s temporaries into an arena argument (appended last);
  /// returns the arena's size (0: none added).
  FailureOr<int64_t> plan(func::FuncOp func) {
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> positions;
    for (auto [i, op] : llvm::enumerate(body))
      positions[&op] = static_cast<int64_t>(i);

    SmallVector<memref::AllocOp> allocs;
    SmallVector<poot::ArenaSlot> slots;
    func.walk([&](memref::AllocOp alloc) {
      std::optional<int64_t> bytes = arenaBytes(alloc);
      if (!bytes || !onlySequentialAncestors(alloc, func))
        return;
      // The live range: every use of the buffer and of its views; a buffer
      // that flows anywhere else (a region's result, a return) stays.
      poot::ArenaSlot slot{*bytes, positionIn(alloc, body, positions), 0, 0};
      slot.last = slot.first;
      SmallVector<Value> worklist{alloc.getResult()};
      while (!worklist.empty()) {
        Value value = worklist.pop_back_val();
        for (OpOperand &use : value.getUses()) {
          Operation *user = use.getOwner();
          if (escapes(use))
            return;
          if (auto view = dyn_cast<ViewLikeOpInterface>(user))
            if (view.getViewSource() == value)
              llvm::append_range(worklist, user->getResults());
          if (isa<memref::CastOp>(user))
            llvm::append_range(worklist, user->getResults());
          slot.last = std::max(slot.last, positionIn(user, body, positions));
        }
      }
      allocs.push_back(alloc);
      slots.push_back(slot);
    });
    if (allocs.empty())
      return 0;

    int64_t bytes = poot::placeFirstFit(slots, kAlignment);
    if (maxBytes > 0 && bytes > maxBytes) {
      func.emitError("BufferBytes: the temporaries of @")
          << func.getSymName() << " need " << bytes
          << " bytes at their peak; the device's max-alloc-bytes is "
          << static_cast<int64_t>(maxBytes);
      return failure();
    }
    auto arenaType = MemRefType::get({bytes}, IntegerType::get(&getContext(), 8));
    // (No marker on the argument: the module's poot.arena_bytes names the
    // functions whose last argument is their arena.)
    if (failed(func.insertArgument(func.getNumArguments(), arenaType, {},
                                   func.getLoc())))
      return failure();
    Value arena = body.getArgument(body.getNumArguments() - 1);
    OpBuilder builder(&getContext());
    for (auto [alloc, slot] : llvm::zip(allocs, slots)) {
      builder.setInsertionPoint(alloc);
      Value offset = arith::ConstantIndexOp::create(builder, alloc.getLoc(), slot.offset);
      Value view = memref::ViewOp::create(builder, alloc.getLoc(), alloc.getType(), arena,
                                          offset, ValueRange{});
      // Whatever freed the malloc'd buffer goes: the arena is the runtime's.
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
    return bytes;
  }
};

} // namespace
