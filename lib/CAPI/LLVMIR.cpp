//===- LLVMIR.cpp - C API: the LLVM dialect to LLVM IR and objects --------===//
#include "lib/CAPI/LLVMIR.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

using namespace mlir;

namespace {
std::unique_ptr<llvm::Module> translate(Operation *op,
                                        llvm::LLVMContext &llvmContext) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  op->getContext()->appendDialectRegistry(registry);
  return translateModuleToLLVMIR(op, llvmContext);
}

std::string hostFeatures() {
  llvm::SubtargetFeatures features;
  for (const auto &entry : llvm::sys::getHostCPUFeatures())
    features.AddFeature(entry.getKey(), entry.getValue());
  return features.getString();
}

void emitError(MlirStringCallback error, void *userData,
               const std::string &message) {
  if (error)
    error(mlirStringRefCreate(message.data(), message.size()), userData);
}
} // namespace

MlirLogicalResult pootTranslateModuleToLLVMIR(MlirOperation module,
                                              MlirStringCallback callback,
                                              void *userData) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translate(unwrap(module), llvmContext);
  if (!llvmModule)
    return mlirLogicalResultFailure();
  std::string text;
  llvm::raw_string_ostream os(text);
  llvmModule->print(os, /*AAW=*/nullptr);
  os.flush();
  callback(mlirStringRefCreate(text.data(), text.size()), userData);
  return mlirLogicalResultSuccess();
}

void pootHostCPU(MlirStringCallback callback, void *userData) {
  std::string text = llvm::sys::getHostCPUName().str() + "\n" + hostFeatures();
  callback(mlirStringRefCreate(text.data(), text.size()), userData);
}

MlirLogicalResult pootEmitObject(MlirOperation module, MlirStringRef cpu,
                                 MlirStringRef features, int optLevel,
                                 MlirStringCallback callback, void *userData,
                                 MlirStringCallback error, void *errorData) {
  static std::once_flag targetsReady;
  std::call_once(targetsReady, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translate(unwrap(module), llvmContext);
  if (!llvmModule) {
    emitError(error, errorData, "translation to LLVM IR failed");
    return mlirLogicalResultFailure();
  }

  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, message);
  if (!target) {
    emitError(error, errorData, "no LLVM target for " + triple.str() + ": " + message);
    return mlirLogicalResultFailure();
  }
  std::string cpuName = cpu.length ? std::string(cpu.data, cpu.length)
                                   : llvm::sys::getHostCPUName().str();
  std::string featureString = features.length
                                  ? std::string(features.data, features.length)
                                  : hostFeatures();
  llvm::CodeGenOptLevel level = optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
                                : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                                : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpuName, featureString, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine) {
    emitError(error, errorData, "could not create a target machine for " + cpuName);
    return mlirLogicalResultFailure();
  }
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  // The middle end first (llc alone runs none of it): the O-level pipeline
  // of the new pass manager, as clang -O<n> and MLIR's ExecutionEngine do.
  if (optLevel > 0) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder builder(machine.get());
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel o = optLevel >= 3   ? llvm::OptimizationLevel::O3
                                : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                : llvm::OptimizationLevel::O1;
    llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(o);
    passes.run(*llvmModule, mam);
  }

  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    emitError(error, errorData, "the target machine cannot emit an object file");
    return mlirLogicalResultFailure();
  }
  codegen.run(*llvmModule);
  callback(mlirStringRefCreate(object.data(), object.size()), userData);
  return mlirLogicalResultSuccess();
}
