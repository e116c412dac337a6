//===- FuseAttentionPipeline.cpp - the attention rewrite as one pipeline --===//
//
// `poot-fuse-attention` is the attention rewrite the way compile runs it:
// canonicalize (the matcher's canonical form), RoPE recognition, the rewrite,
// the selection pass (the sparse indexer's chains, which the rewrite leaves
// to it), then CSE of the masks and lengths the rewrites normalized. poot-opt and
// Python (`poot_mlir.compiler.fuse_attention`) share this one definition.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void poot::buildFuseAttentionPipeline(
    OpPassManager &pm, const FuseAttentionPipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createPootRecognizeRope());
  PootAttentionRewriteOptions rewrite;
  rewrite.remarks = options.remarks;
  pm.addNestedPass<func::FuncOp>(createPootAttentionRewrite(rewrite));
  PootSelectBlocksOptions select;
  select.remarks = options.remarks;
  pm.addNestedPass<func::FuncOp>(createPootSelectBlocks(select));
  pm.addPass(createCSEPass());
}
