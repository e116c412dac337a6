//===- OrderedCompares.cpp - poot-spirv-ordered-compares -------------------===//
//
// naga (wgpu's shader translator) reads each SPIR-V float comparison as a
// WGSL operator and writes it back as an ordered comparison, so an unordered
// one (true when an operand is NaN) comes out false on NaN. The attention's
// "this key is not masked" test (score != -inf, unordered) then skipped a
// NaN score and wgpu returned finite outputs where every other runtime
// returns NaN. Here an unordered comparison is spelled as the ordered one or
// an explicit NaN test, which means the same under either reading.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTSPIRVORDEREDCOMPARES
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// `unordered(a, b)` as `ordered(a, b) || isnan(a) || isnan(b)`.
template <typename Unordered, typename Ordered>
void spellOrdered(Operation *root) {
  SmallVector<Unordered> found;
  root->walk([&](Unordered op) { found.push_back(op); });
  for (Unordered op : found) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    Type type = op.getType();
    Value ordered = Ordered::create(b, loc, lhs, rhs);
    Value nanLhs = spirv::IsNanOp::create(b, loc, type, lhs);
    Value nanRhs = spirv::IsNanOp::create(b, loc, type, rhs);
    Value eitherNan = spirv::LogicalOrOp::create(b, loc, nanLhs, nanRhs);
    op.replaceAllUsesWith(spirv::LogicalOrOp::create(b, loc, ordered, eitherNan).getResult());
    op.erase();
  }
}

struct OrderedCompares
    : poot::impl::PootSPIRVOrderedComparesBase<OrderedCompares> {
  void runOnOperation() override {
    Operation *root = getOperation();
    spellOrdered<spirv::FUnordEqualOp, spirv::FOrdEqualOp>(root);
    spellOrdered<spirv::FUnordNotEqualOp, spirv::FOrdNotEqualOp>(root);
    spellOrdered<spirv::FUnordLessThanOp, spirv::FOrdLessThanOp>(root);
    spellOrdered<spirv::FUnordLessThanEqualOp, spirv::FOrdLessThanEqualOp>(root);
    spellOrdered<spirv::FUnordGreaterThanOp, spirv::FOrdGreaterThanOp>(root);
    spellOrdered<spirv::FUnordGreaterThanEqualOp, spirv::FOrdGreaterThanEqualOp>(root);
  }
};

} // namespace
