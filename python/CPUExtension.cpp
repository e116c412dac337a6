//===- CPUExtension.cpp - LLVM IR for the Python CPU compiler driver ------===//
//
// poot_mlir._mlir_libs._pootCPU: the one operation the CPU compiler needs
// that MLIR's Python API lacks, translating an LLVM-dialect module to LLVM
// IR text (llc then makes the object file).
//
//===----------------------------------------------------------------------===//

#include "lib/CAPI/LLVMIR.h"
#include "mlir/Bindings/Python/Nanobind.h"
#include "mlir/Bindings/Python/NanobindAdaptors.h"

#include <string>

namespace nb = nanobind;

namespace {
void appendText(MlirStringRef chunk, void *userData) {
  static_cast<std::string *>(userData)->append(chunk.data, chunk.length);
}
} // namespace

NB_MODULE(_pootCPU, m) {
  m.doc() = "LLVM IR translation for the poot_mlir CPU compiler driver.";
  m.def(
      "translate_to_llvm_ir",
      [](MlirOperation op) {
        std::string text;
        if (mlirLogicalResultIsFailure(
                pootTranslateModuleToLLVMIR(op, appendText, &text)))
          throw std::runtime_error(
              "translation to LLVM IR failed (see the diagnostics)");
        return text;
      },
      nb::arg("module"),
      "Translates a builtin.module in the LLVM dialect to LLVM IR text.");
}
