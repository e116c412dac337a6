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
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

/// Inputs an upstream parser aborts on instead of diagnosing, refused here
/// with a diagnostic first. MLIR 22's SPIR-V type parser reads an
/// `!spirv.array` count as int64 and builds the type with a 32-bit count:
/// 2^32 truncates to 0 and `ArrayType::get` asserts (found by the issue-28
/// fuzz campaign). The Python twin of this check is
/// `compiler.pipeline._refuse_parser_aborts`.
static bool refuseParserAborts(llvm::StringRef text, llvm::StringRef name) {
  llvm::Regex arrayCount("!spirv\\.array<[[:space:]]*([0-9]+)");
  unsigned line = 1;
  for (llvm::StringRef rest = text; !rest.empty();) {
    auto [current, next] = rest.split('\n');
    llvm::SmallVector<llvm::StringRef, 2> match;
    for (llvm::StringRef tail = current; arrayCount.match(tail, &match);
         tail = tail.drop_front(tail.find(match[0]) + match[0].size())) {
      uint64_t count = 0;
      if (match[1].getAsInteger(10, count) || count > 0xFFFFFFFFull) {
        llvm::WithColor::error(llvm::errs())
            << name << ":" << line << ": '!spirv.array' with " << match[1]
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
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(mlir::MlirOptMain(
        argc, argv, inputFilename, outputFilename, registry));
  // What MlirOptMain(argc, argv, ...) does (which sets up LLVM's signal
  // handlers itself, hence not before the branch above), with the input
  // checked (a file or standard input: the fuzzer pipes mutants in) before
  // it is parsed.
  llvm::InitLLVM init(argc, argv);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (refuseParserAborts(input->getBuffer(), input->getBufferIdentifier()))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
