//===- TargetsExtension.cpp - kernel serialization for the Python driver --===//
//
// poot_mlir._mlir_libs._pootTargets: the few operations the Python compiler
// needs that MLIR's Python API lacks (SPIR-V serialization, the check for
// input MLIR would abort on).
//
//===----------------------------------------------------------------------===//

#include "lib/CAPI/Targets.h"
#include "lib/Transforms/DeviceDescription.h"
#include "mlir/Bindings/Python/Nanobind.h"
#include "mlir/Bindings/Python/NanobindAdaptors.h"
#include "nanobind/stl/map.h"
#include "nanobind/stl/optional.h"
#include "nanobind/stl/string.h"

#include <optional>
#include <string>

namespace nb = nanobind;

namespace {
void appendBytes(MlirStringRef chunk, void *userData) {
  static_cast<std::string *>(userData)->append(chunk.data, chunk.length);
}
} // namespace

NB_MODULE(_pootTargets, m) {
  m.doc() = "Kernel serialization for the poot_mlir compiler driver.";
  m.def(
      "serialize_spirv",
      [](MlirOperation op) {
        std::string bytes;
        if (mlirLogicalResultIsFailure(
                pootSerializeSPIRV(op, appendBytes, &bytes)))
          throw std::runtime_error("SPIR-V serialization failed");
        return nb::bytes(bytes.data(), bytes.size());
      },
      nb::arg("spirv_module"),
      "Serializes a spirv.module operation to a SPIR-V binary.");
  m.def(
      "find_upstream_abort",
      [](MlirContext context, const std::string &text,
         const std::string &name) -> std::optional<std::string> {
        std::string found;
        if (!pootFindUpstreamAbort(
                context, mlirStringRefCreate(text.data(), text.size()),
                mlirStringRefCreate(name.data(), name.size()), appendBytes,
                &found))
          return std::nullopt;
        return found;
      },
      nb::arg("context"), nb::arg("text"), nb::arg("name"),
      "The diagnostic for MLIR text MLIR 22 would abort on instead of "
      "diagnosing (\"<name>:<line>: ...\"), else None.");
  m.def(
      "device_defaults",
      [] {
        const mlir::poot::DeviceDescription &d = mlir::poot::kDefaultDevice;
        return std::map<std::string, int64_t>{
            {"workgroup_memory", d.workgroupMemory},
            {"max_grid_x", d.maxGridX},
            {"max_grid_y", d.maxGridY},
            {"compute_units", d.computeUnits},
            {"vector_width", d.vectorWidth},
            {"max_buffer_bytes", d.maxBufferBytes},
            {"max_alloc_bytes", d.maxAllocBytes},
            {"max_splits", d.maxSplits},
            {"wide_head_mma", d.wideHeadMma},
            {"max_unroll", d.maxUnroll},
            {"max_keys_per_load", d.maxKeysPerLoad},
            {"jam_rows", d.jamRows},
            {"mma_matmul_rows", d.mmaMatmulRows},
            {"mma_staged_rows", d.mmaStagedRows},
            {"batch_invariant", d.batchInvariant}};
      },
      "The one set of device defaults (lib/Transforms/DeviceDescription.h "
      "kDefaultDevice) by compiler.devices.Device field name.");
}
