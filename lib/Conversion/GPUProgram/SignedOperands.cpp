//===- SignedOperands.cpp - poot-spirv-signed-operands ---------------------===//
//
// naga reads an integer's signedness from its type, not from the
// instruction: signed instructions get signed-typed operands and results
// (bitcasts of the same bits). See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTSPIRVSIGNEDOPERANDS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

/// The signed variant of an integer (or integer vector) type that is not
/// signed already; null otherwise.
Type signedVariant(Type type) {
  auto element = dyn_cast<IntegerType>(getElementTypeOrSelf(type));
  if (!element || element.isSigned() || element.getWidth() == 1)
    return {};
  Type s = IntegerType::get(type.getContext(), element.getWidth(),
                            IntegerType::Signed);
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(s);
  return s;
}

/// Instructions that read their integer operands, or make their integer
/// result, as signed.
bool readsSigned(Operation *op) {
  return isa<spirv::SDivOp, spirv::SRemOp, spirv::SModOp, spirv::SNegateOp,
             spirv::ConvertFToSOp, spirv::ConvertSToFOp, spirv::SConvertOp,
             spirv::ShiftRightArithmeticOp, spirv::SLessThanOp,
             spirv::SLessThanEqualOp, spirv::SGreaterThanOp,
             spirv::SGreaterThanEqualOp, spirv::GLSAbsOp, spirv::GLSSignOp,
             spirv::GLSMinOp, spirv::GLSMaxOp, spirv::GLSClampOp,
             spirv::GLFindSMsbOp>(op);
}

struct SignedOperands
    : poot::impl::PootSPIRVSignedOperandsBase<SignedOperands> {
  void runOnOperation() override {
    SmallVector<Operation *> found;
    getOperation().walk([&](Operation *op) {
      if (readsSigned(op))
        found.push_back(op);
    });
    for (Operation *op : found) {
      OpBuilder b(op);
      // A shift's amount is read as unsigned (WGSL wants it u32).
      unsigned count = isa<spirv::ShiftRightArithmeticOp>(op)
                           ? 1
                           : op->getNumOperands();
      for (unsigned i = 0; i < count; ++i) {
        Value operand = op->getOperand(i);
        if (Type s = signedVariant(operand.getType()))
          op->setOperand(
              i, spirv::BitcastOp::create(b, op->getLoc(), s, operand));
      }
      b.setInsertionPointAfter(op);
      for (Value result : op->getResults()) {
        Type original = result.getType();
        Type s = signedVariant(original);
        if (!s)
          continue;
        result.setType(s);
        auto back = spirv::BitcastOp::create(b, op->getLoc(), original, result);
        result.replaceAllUsesExcept(back.getResult(), back);
      }
    }
  }
};

} // namespace
