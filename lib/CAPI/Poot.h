/*===- Poot.h - C API for the poot dialect and registrations ------*- C -*-===*/
#ifndef POOT_CAPI_POOT_H
#define POOT_CAPI_POOT_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Poot, poot);

/// Inserts the poot dialect and every upstream dialect the pipelines use.
MLIR_CAPI_EXPORTED void pootRegisterAllDialects(MlirDialectRegistry registry);

/// Registers poot passes, the upstream passes we use, and our pipelines.
MLIR_CAPI_EXPORTED void pootRegisterAllPasses(void);

#ifdef __cplusplus
}
#endif

#endif /* POOT_CAPI_POOT_H */
