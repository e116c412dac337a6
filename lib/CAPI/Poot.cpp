//===- Poot.cpp - C API for the poot dialect and registrations ------------===//
#include "lib/CAPI/Poot.h"

#include "dialect/PootDialect.h"
#include "lib/InitAll.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Poot, poot, mlir::poot::PootDialect)

void pootRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::poot::registerAllDialects(*unwrap(registry));
}

void pootRegisterAllPasses(void) { mlir::poot::registerAllPasses(); }
