//===- CheckStepTypes.cpp - poot-gpu-check-step-types ----------------------===//
//
// A whole step on a GPU becomes a list of device buffers of known byte size
// (poot-gpu-serialize-program). Values that cannot be such a buffer -- a
// dynamic shape, an `index` or `complex` element, more bytes (or, on SPIR-V,
// more elements) than one device buffer holds -- are refused here, first,
// as typed diagnostics, instead of aborting a later pass that assumes them
// away (getNumElements of a dynamic shape, getIntOrFloatBitWidth of index,
// a SPIR-V array count truncated to 32 bits).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUCHECKSTEPTYPES
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

struct CheckStepTypes
    : poot::impl::PootGPUCheckStepTypesBase<CheckStepTypes> {
  using Base::Base;

  /// Checks one value's type; `what` names it in the diagnostic, emitted at
  /// `loc`. Scalars and non-shaped values pass.
  LogicalResult check(Type type, Location loc, const llvm::Twine &what) {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || !isa<TensorType, BaseMemRefType>(type))
      return success();
    if (!shaped.hasRank() || !shaped.hasStaticShape())
      return emitError(loc) << "poot-gpu-check-step-types: " << what
                            << " is a dynamically shaped " << type
                            << "; a GPU step's buffers have static shapes";
    Type element = shaped.getElementType();
    if (!isa<IntegerType, FloatType>(element))
      return emitError(loc) << "DtypeLowering: " << what << " has element type "
                            << element
                            << ", which no GPU step buffer holds (integers "
                               "and floats only)";
    // Element count and bytes, saturating: a fuzzed shape may overflow.
    uint64_t elements = 1;
    for (int64_t size : shaped.getShape())
      elements = llvm::SaturatingMultiply(elements, uint64_t(size));
    uint64_t bytes = llvm::SaturatingMultiply(
        elements, uint64_t(std::max<unsigned>(element.getIntOrFloatBitWidth() / 8, 1)));
    bool tooManyElements = maxElements > 0 && elements > uint64_t(maxElements);
    if (bytes > uint64_t(maxBufferBytes) || tooManyElements) {
      InFlightDiagnostic diag = emitError(loc)
                                << "BufferBytes: " << what << " (" << type
                                << ") holds " << elements << " elements ("
                                << bytes << " bytes); one device buffer holds at most "
                                << static_cast<int64_t>(maxBufferBytes) << " bytes";
      if (maxElements > 0)
        diag << " and " << static_cast<int64_t>(maxElements) << " elements";
      return diag;
    }
    return success();
  }

  /// The first value of `func` refused, in order: arguments, results, then
  /// the body's values (one diagnostic: the rest usually repeat it).
  LogicalResult checkFunction(func::FuncOp func) {
    FunctionType signature = func.getFunctionType();
    for (auto [i, type] : llvm::enumerate(signature.getInputs())) {
      Location loc =
          func.isExternal() ? func.getLoc() : func.getArgument(i).getLoc();
      if (failed(check(type, loc, "the step argument #" + llvm::Twine(i))))
        return failure();
    }
    for (auto [i, type] : llvm::enumerate(signature.getResults()))
      if (failed(check(type, func.getLoc(), "the step result #" + llvm::Twine(i))))
        return failure();
    WalkResult walk = func.walk([&](Operation *op) {
      for (auto [i, result] : llvm::enumerate(op->getResults()))
        if (failed(check(result.getType(), op->getLoc(),
                         "result #" + llvm::Twine(i) + " of '" +
                             op->getName().getStringRef() + "'")))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  void runOnOperation() override {
    bool refused = false;
    for (auto func : getOperation().getOps<func::FuncOp>())
      refused |= failed(checkFunction(func));
    if (refused)
      signalPassFailure();
  }
};

} // namespace
