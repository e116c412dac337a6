//===- SiteInitialize.cpp - register poot into every Python Context -------===//
//
// poot_mlir._mlir_libs imports `_site_initialize_N` modules at start-up and
// appends what `register_dialects` inserts to every new Context's registry,
// so users never call a registration function themselves.
//
//===----------------------------------------------------------------------===//

#include "lib/CAPI/Poot.h"
#include "mlir/Bindings/Python/Nanobind.h"
#include "mlir/Bindings/Python/NanobindAdaptors.h"

NB_MODULE(_site_initialize_0, m) {
  m.doc() = "Registers the poot dialect, upstream dialects and passes.";
  m.def("register_dialects", [](MlirDialectRegistry registry) {
    pootRegisterAllDialects(registry);
  });
  pootRegisterAllPasses();
}
