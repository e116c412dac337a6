//===- InitAll.h - the one registration list ----------------------*- C++ -*-===//
//
// poot-opt, the C API and the Python package register exactly what these
// functions register, so a pipeline that parses in one parses in all.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_LIB_INITALL_H
#define POOT_LIB_INITALL_H

namespace mlir {
class DialectRegistry;
namespace poot {

/// The poot dialect and every upstream dialect our pipelines produce.
void registerAllDialects(DialectRegistry &registry);

/// poot passes, the upstream passes our pipelines use, and the pipelines.
void registerAllPasses();

} // namespace poot
} // namespace mlir

#endif // POOT_LIB_INITALL_H
