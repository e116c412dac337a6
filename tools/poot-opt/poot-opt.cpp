//===- poot-opt.cpp - the poot optimizer driver ----------------------------===//
//
// mlir-opt with the poot registration list: every dialect, pass and pipeline
// that Python sees, poot-opt sees.
//
//===----------------------------------------------------------------------===//

#include "lib/InitAll.h"
#include "lib/Support/InputGuards.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

/// Input MLIR 22 aborts on instead of diagnosing (lib/Support/InputGuards.h),
/// refused with a diagnostic first. With --split-input-file every chunk is
/// checked on its own, as MlirOptMain will parse it.
static bool refuseUpstreamAborts(const mlir::DialectRegistry &registry,
                                 llvm::StringRef text, llvm::StringRef name,
                                 llvm::StringRef splitMarker) {
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects();
  llvm::SmallVector<llvm::StringRef> chunks;
  if (splitMarker.empty())
    chunks.push_back(text);
  else
    text.split(chunks, splitMarker);
  unsigned lineOffset = 0;
  for (llvm::StringRef chunk : chunks) {
    std::string found =
        mlir::poot::findUpstreamAbort(&context, chunk, name, lineOffset);
    lineOffset += chunk.count('\n');
    if (found.empty())
      continue;
    llvm::WithColor::error(llvm::errs()) << found << "\n";
    return true;
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
  if (refuseUpstreamAborts(registry, input->getBuffer(),
                           input->getBufferIdentifier(),
                           config.inputSplitMarker()))
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
