//===- OpInference.h - one rule for type inference and verification -*- C++ -*-===//
//
// A poot op's result-type rule is written once, as a function that takes an
// optional location. Type inference calls it silently (a builder asking for
// a type just gets failure()), and the op's verify() calls it with the op's
// location, so every violated rule is reported once, by the verifier, with a
// message naming the rule. (Emitting from inference as well would report each
// problem twice, followed by a generic "failed to infer returned types".)
//
//===----------------------------------------------------------------------===//

#ifndef POOT_DIALECT_OPINFERENCE_H
#define POOT_DIALECT_OPINFERENCE_H

#define POOT_INFER_VIA(OP, FN)                                                 \
  ::llvm::LogicalResult OP::inferReturnTypes(                                  \
      ::mlir::MLIRContext *ctx, std::optional<::mlir::Location>,               \
      Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {      \
    return FN(ctx, std::nullopt, adaptor, inferred);                           \
  }                                                                            \
  [[maybe_unused]] static ::llvm::LogicalResult verifyInferred##OP(OP op) {    \
    ::llvm::SmallVector<::mlir::Type> types;                                   \
    return FN(op.getContext(), op.getLoc(), OP::Adaptor(op), types);           \
  }

#endif // POOT_DIALECT_OPINFERENCE_H
