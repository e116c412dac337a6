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

/// The host's CPU name and its LLVM feature string ("+avx2,-amx-tile,..."),
/// separated by a newline, passed to `callback`.
MLIR_CAPI_EXPORTED void pootHostCPU(MlirStringCallback callback,
                                    void *userData);

/// Translates `module` (LLVM dialect; OpenMP ops allowed) to LLVM IR in
/// process, optimizes it with LLVM's O`optLevel` pipeline and emits a
/// position-independent object file for the host triple with the target
/// machine of `cpu` and `features` (empty: the host's), passing its bytes to
/// `callback`. On failure `error` gets a message.
MLIR_CAPI_EXPORTED MlirLogicalResult
pootEmitObject(MlirOperation module, MlirStringRef cpu, MlirStringRef features,
               int optLevel, MlirStringCallback callback, void *userData,
               MlirStringCallback error, void *errorData);

#ifdef __cplusplus
}
#endif

#endif /* POOT_CAPI_LLVMIR_H */
