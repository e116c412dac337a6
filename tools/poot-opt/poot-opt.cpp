//===- poot-opt.cpp - the poot optimizer driver ----------------------------===//
//
// mlir-opt with the poot registration list: every dialect, pass and pipeline
// that Python sees, poot-opt sees.
//
//===----------------------------------------------------------------------===//

#include "lib/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::poot::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::poot::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "poot optimizer driver\n", registry));
}
