//===- Targets.cpp - C API: serialize kernels for the runtimes ------------===//
#include "lib/CAPI/Targets.h"
#include "lib/Support/InputGuards.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

using namespace mlir;

MlirLogicalResult pootSerializeSPIRV(MlirOperation op,
                                     MlirStringCallback callback,
                                     void *userData) {
  auto module = dyn_cast<spirv::ModuleOp>(unwrap(op));
  if (!module) {
    unwrap(op)->emitError("expected a spirv.module to serialize");
    return mlirLogicalResultFailure();
  }
  SmallVector<uint32_t> words;
  if (failed(spirv::serialize(module, words)))
    return mlirLogicalResultFailure();
  callback(mlirStringRefCreate(reinterpret_cast<const char *>(words.data()),
                               words.size() * sizeof(uint32_t)),
           userData);
  return mlirLogicalResultSuccess();
}

bool pootFindUpstreamAbort(MlirContext context, MlirStringRef text,
                           MlirStringRef name, MlirStringCallback callback,
                           void *userData) {
  std::string found =
      poot::findUpstreamAbort(unwrap(context), unwrap(text), unwrap(name));
  if (found.empty())
    return false;
  callback(mlirStringRefCreate(found.data(), found.size()), userData);
  return true;
}
