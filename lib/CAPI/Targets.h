/*===- Targets.h - C API: serialize kernels for the runtimes -------*- C -*-===*/
#ifndef POOT_CAPI_TARGETS_H
#define POOT_CAPI_TARGETS_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Serializes a `spirv.module` operation to a SPIR-V binary, passed to
/// `callback` as bytes. Fails (after emitting a diagnostic) on anything else.
MLIR_CAPI_EXPORTED MlirLogicalResult
pootSerializeSPIRV(MlirOperation spirvModule, MlirStringCallback callback,
                   void *userData);

/// Checks MLIR text for input MLIR 22 would abort on instead of diagnosing
/// (lib/Support/InputGuards.h). When it finds one, passes the diagnostic
/// ("<name>:<line>: ...") to `callback` and returns true.
MLIR_CAPI_EXPORTED bool pootFindUpstreamAbort(MlirContext context,
                                              MlirStringRef text,
                                              MlirStringRef name,
                                              MlirStringCallback callback,
                                              void *userData);

#ifdef __cplusplus
}
#endif

#endif /* POOT_CAPI_TARGETS_H */
