//===- LLVMIR.cpp - C API: translate the LLVM dialect to LLVM IR ----------===//
#include "lib/CAPI/LLVMIR.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

MlirLogicalResult pootTranslateModuleToLLVMIR(MlirOperation module,
                                              MlirStringCallback callback,
                                              void *userData) {
  Operation *op = unwrap(module);
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  op->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(op, llvmContext);
  if (!llvmModule)
    return mlirLogicalResultFailure();
  std::string text;
  llvm::raw_string_ostream os(text);
  llvmModule->print(os, /*AAW=*/nullptr);
  os.flush();
  callback(mlirStringRefCreate(text.data(), text.size()), userData);
  return mlirLogicalResultSuccess();
}
