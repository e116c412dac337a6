//===- Passes.h - poot -> poot passes -----------------------------*- C++ -*-===//
#ifndef POOT_LIB_TRANSFORMS_PASSES_H
#define POOT_LIB_TRANSFORMS_PASSES_H

#include "dialect/PootDialect.h"
#include "lib/Transforms/DeviceDescription.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::poot {

#define GEN_PASS_DECL
#include "lib/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Transforms/Passes.h.inc"

/// poot-plan-attention's options for `device`: how a pipeline plans for the
/// device it was given (field by field, in one place).
PootPlanAttentionOptions planAttentionOptions(const DeviceDescription &device);

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// Options of `poot-fuse-attention`.
struct FuseAttentionPipelineOptions
    : public PassPipelineOptions<FuseAttentionPipelineOptions> {
  PassOptions::Option<bool> remarks{
      *this, "remarks",
      llvm::cl::desc("Remark on every attention or selection candidate the passes decline"),
      llvm::cl::init(false)};
};

/// canonicalize, poot-recognize-rope, poot-attention-rewrite,
/// poot-select-blocks, cse: the tracer's attention chains become
/// poot.attention (and the sparse indexer's poot.block_topk +
/// poot.selected_attention), nothing else changes.
void buildFuseAttentionPipeline(OpPassManager &pm,
                                const FuseAttentionPipelineOptions &options);

} // namespace mlir::poot

#endif // POOT_LIB_TRANSFORMS_PASSES_H
