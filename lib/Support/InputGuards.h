//===- InputGuards.h - input MLIR 22 aborts on instead of diagnosing -------===//
//
// A few malformed inputs make an upstream parser or verifier assert (an abort
// that ends poot-opt or the Python interpreter) instead of emitting a
// diagnostic. Each is recognized here first, with the diagnostic upstream
// should have given. The one owner of these checks: poot-opt calls it on its
// input, the Python driver (compiler.pipeline.parse_module) through the
// _pootTargets extension.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_SUPPORT_INPUTGUARDS_H
#define POOT_SUPPORT_INPUTGUARDS_H

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::poot {

/// "<name>:<line>: <what is wrong>" when MLIR 22 would abort on `text`
/// (parsed in `context`, whose dialects the input uses), else the empty
/// string. Text that does not parse is left to the real parser to diagnose.
/// `lineOffset` is added to the line numbers (`text` a chunk of a file).
std::string findUpstreamAbort(MLIRContext *context, llvm::StringRef text,
                              llvm::StringRef name, unsigned lineOffset = 0);

} // namespace mlir::poot

#endif // POOT_SUPPORT_INPUTGUARDS_H
