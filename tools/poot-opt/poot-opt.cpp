//===- poot-opt.cpp - the poot optimizer driver ----------------------------===//
//
// mlir-opt with the poot registration list: every dialect, pass and pipeline
// that Python sees, poot-opt sees.
//
//===----------------------------------------------------------------------===//

#include "lib/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

/// Inputs an upstream parser aborts on instead of diagnosing, refused here
/// with a diagnostic first. MLIR 22's SPIR-V type parser reads an
/// `!spirv.array` count as int64 and builds the type with a 32-bit count:
/// 2^32 truncates to 0 and `ArrayType::get` asserts (found by the issue-28
/// fuzz campaign). The Python twin of this check is
/// `compiler.pipeline._refuse_parser_aborts`. Standard input is not checked
/// (it can be read only once).
static bool refuseParserAborts(llvm::StringRef inputFilename) {
  if (inputFilename == "-")
    return false;
  auto file = llvm::MemoryBuffer::getFile(inputFilename);
  if (!file)
    return false; // MlirOptMain reports it
  llvm::Regex arrayCount("!spirv\\.array<[[:space:]]*([0-9]+)");
  llvm::StringRef text = (*file)->getBuffer();
  unsigned line = 1;
  for (llvm::StringRef rest = text; !rest.empty();) {
    auto [current, next] = rest.split('\n');
    llvm::SmallVector<llvm::StringRef, 2> match;
    for (llvm::StringRef tail = current; arrayCount.match(tail, &match);
         tail = tail.drop_front(tail.find(match[0]) + match[0].size())) {
      uint64_t count = 0;
      if (match[1].getAsInteger(10, count) || count > 0xFFFFFFFFull) {
        llvm::WithColor::error(llvm::errs())
            << inputFilename << ":" << line << ": '!spirv.array' with "
            << match[1]
            << " elements: a SPIR-V array holds at most 4294967295 (MLIR 22's "
               "SPIR-V type parser would truncate the count and abort)\n";
        return true;
      }
    }
    rest = next;
    ++line;
  }
  return false;
}

int main(int argc, char **argv) {
  // --version: poot_mlir's version first, then LLVM's.
  llvm::cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { os << "poot_mlir " POOT_VERSION "\n"; });
  mlir::poot::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::poot::registerAllDialects(registry);
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "poot optimizer driver\n", registry);
  if (refuseParserAborts(inputFilename))
    return 1;
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
