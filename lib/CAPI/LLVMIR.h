/*===- LLVMIR.h - C API: translate the LLVM dialect to LLVM IR ------*- C -*-===*/
#ifndef POOT_CAPI_LLVMIR_H
#define POOT_CAPI_LLVMIR_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Translates `module` (a builtin.module in the LLVM dialect, e.g. the output
/// of `poot-to-llvm-cpu`) to LLVM IR and passes its textual form to
/// `callback`. The builtin and LLVM dialect translations are registered into
/// the module's context first. Fails (after emitting a diagnostic) when the
/// module holds anything LLVM IR cannot express.
MLIR_CAPI_EXPORTED MlirLogicalResult
pootTranslateModuleToLLVMIR(MlirOperation module, MlirStringCallback callback,
                            void *userData);

#ifdef __cplusplus
}
#endif

#endif /* POOT_CAPI_LLVMIR_H */
