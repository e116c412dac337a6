//===- RangeProofs.cpp - IntegerRangeAnalysis seeded from poot.range ------===//

#include "lib/Transforms/RangeProofs.h"

#include "mlir/Analysis/DataFlow/ConstantPropagationAnalysis.h"
#include "mlir/Analysis/DataFlow/DeadCodeAnalysis.h"
#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::poot;
using dataflow::IntegerValueRangeLattice;

namespace {

/// Upstream integer range analysis with the two poot rules (see the header).
class DeclaredRangeAnalysis : public dataflow::IntegerRangeAnalysis {
public:
  DeclaredRangeAnalysis(DataFlowSolver &solver,
                        const llvm::DenseSet<Value> &witnessed)
      : IntegerRangeAnalysis(solver), witnessed(witnessed) {}

  /// Entry-block arguments of a function start from their `poot.range`.
  void setToEntryState(IntegerValueRangeLattice *lattice) override {
    if (std::optional<ConstantIntRanges> declared =
            declaredRange(lattice->getAnchor()))
      return propagateIfChanged(lattice,
                                lattice->join(IntegerValueRange(*declared)));
    IntegerRangeAnalysis::setToEntryState(lattice);
  }

  LogicalResult
  visitOperation(Operation *op,
                 ArrayRef<const IntegerValueRangeLattice *> operands,
                 ArrayRef<IntegerValueRangeLattice *> results) override {
    auto guard = dyn_cast<IndexGuardOp>(op);
    if (!guard || witnessed.contains(guard.getWitness()))
      return IntegerRangeAnalysis::visitOperation(op, operands, results);
    // An unwitnessed clamp proves nothing: pass the operand's range through.
    if (operands[0]->getValue().isUninitialized())
      return success();
    propagateIfChanged(results[0], results[0]->join(operands[0]->getValue()));
    setToEntryState(results[1]);
    return success();
  }

private:
  static std::optional<ConstantIntRanges> declaredRange(Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || !arg.getOwner()->isEntryBlock())
      return std::nullopt;
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (!func)
      return std::nullopt;
    auto range = func.getArgAttrOfType<RangeAttr>(arg.getArgNumber(),
                                                  PootDialect::kRangeAttrName);
    unsigned width = ConstantIntRanges::getStorageBitwidth(value.getType());
    // The verifier keeps declared bounds inside i32; a bound that does not
    // fit the value's width anyway (IR built without verifying) proves
    // nothing rather than wrapping.
    if (!range || width == 0 || width > 64 ||
        !llvm::isIntN(width, range.getMin()) ||
        !llvm::isIntN(width, range.getMax()))
      return std::nullopt;
    return ConstantIntRanges::fromSigned(
        APInt(width, range.getMin(), /*isSigned=*/true),
        APInt(width, range.getMax(), /*isSigned=*/true));
  }

  const llvm::DenseSet<Value> &witnessed;
};

/// Witness values (index_guard results) that reach a validation result of
/// `func`, directly or through `poot.and` (all of them must hold).
llvm::DenseSet<Value> collectWitnesses(func::FuncOp func) {
  llvm::DenseSet<Value> witnessed;
  func.walk([&](func::ReturnOp ret) {
    for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
      auto slot = func.getResultAttrOfType<SlotAttr>(
          index, PootDialect::kSlotAttrName);
      if (!slot || slot.getKind() != SlotKind::Validation)
        continue;
      SmallVector<Value> stack{operand};
      while (!stack.empty()) {
        Value value = stack.pop_back_val();
        if (auto guard = value.getDefiningOp<IndexGuardOp>()) {
          if (value == guard.getWitness())
            witnessed.insert(value);
        } else if (auto conj = value.getDefiningOp<AndOp>()) {
          stack.push_back(conj.getLhs());
          stack.push_back(conj.getRhs());
        }
      }
    }
  });
  return witnessed;
}

} // namespace

RangeProofs::RangeProofs(func::FuncOp func) : witnessed(collectWitnesses(func)) {
  solver.load<dataflow::DeadCodeAnalysis>();
  solver.load<dataflow::SparseConstantPropagation>();
  solver.load<DeclaredRangeAnalysis>(witnessed);
  // A failure leaves every lattice at its pessimistic state: nothing is
  // proven and every proof-dependent form is declined.
  (void)solver.initializeAndRun(func);
}

std::optional<std::pair<int64_t, int64_t>>
RangeProofs::bounds(Value value) const {
  auto *lattice = solver.lookupState<IntegerValueRangeLattice>(value);
  if (!lattice || lattice->getValue().isUninitialized())
    return std::nullopt;
  const ConstantIntRanges &range = lattice->getValue().getValue();
  if (range.smin().getBitWidth() == 0)
    return std::nullopt;
  return std::pair(range.smin().getSExtValue(), range.smax().getSExtValue());
}

bool RangeProofs::provesWithin(Value value, int64_t lo, int64_t hi) const {
  auto range = bounds(value);
  return range && range->first >= lo && range->second <= hi;
}

IndexGuardOp RangeProofs::unwitnessedGuardFeeding(Value value) const {
  llvm::SetVector<Value> seen;
  SmallVector<Value> stack{value};
  while (!stack.empty()) {
    Value next = stack.pop_back_val();
    if (!seen.insert(next) || seen.size() > 256)
      continue;
    Operation *def = next.getDefiningOp();
    if (!def)
      continue;
    if (auto guard = dyn_cast<IndexGuardOp>(def))
      if (next == guard.getClamped() && !isWitnessed(guard))
        return guard;
    for (Value operand : def->getOperands())
      stack.push_back(operand);
  }
  return {};
}
