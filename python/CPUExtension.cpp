//===- CPUExtension.cpp - LLVM IR for the Python CPU compiler driver ------===//
//
// poot_mlir._mlir_libs._pootCPU: what the CPU compiler needs that MLIR's
// Python API lacks: an LLVM-dialect module to LLVM IR text, or straight to
// an optimized object file through LLVM's target machine in process, and
// the host CPU's name and features.
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
  m.def(
      "emit_object",
      [](MlirOperation op, const std::string &cpu, const std::string &features,
         int optLevel) {
        std::string object, error;
        if (mlirLogicalResultIsFailure(pootEmitObject(
                op, mlirStringRefCreate(cpu.data(), cpu.size()),
                mlirStringRefCreate(features.data(), features.size()), optLevel,
                appendText, &object, appendText, &error)))
          throw std::runtime_error(error.empty() ? "object emission failed"
                                                 : error);
        return nb::bytes(object.data(), object.size());
      },
      nb::arg("module"), nb::arg("cpu") = "", nb::arg("features") = "",
      nb::arg("opt_level") = 3,
      "Optimizes and compiles a builtin.module in the LLVM dialect to an "
      "object file (bytes) for the host, or for `cpu`/`features`.");
  m.def(
      "host_cpu",
      []() {
        std::string text;
        pootHostCPU(appendText, &text);
        size_t cut = text.find('\n');
        return nb::make_tuple(text.substr(0, cut), text.substr(cut + 1));
      },
      "(name, LLVM feature string) of the host CPU.");
}
