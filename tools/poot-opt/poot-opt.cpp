//===- poot-opt.cpp - the poot optimizer driver ----------------------------===//
//
// mlir-opt with the poot registration list: every dialect, pass and pipeline
// that Python sees, poot-opt sees.
//
//===----------------------------------------------------------------------===//

#include "lib/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  // --version: poot_mlir's version first, then LLVM's.
  llvm::cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { os << "poot_mlir " POOT_VERSION "\n"; });
  mlir::poot::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::poot::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "poot optimizer driver\n", registry));
}
