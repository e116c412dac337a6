//===- StepPipelines.cpp - poot-step-to-{spirv,nvvm,rocdl} -----------------===//
//
// A whole step function on a GPU, built from upstream MLIR: poot to linalg on
// tensors, elementwise fusion, one-shot bufferization with the donated state
// written in place, linalg to parallel loops, the loops mapped onto blocks and
// threads and outlined into kernels, beside the generated attention kernels.
// What stays on the host is a straight line of buffers and launches, which
// poot-gpu-serialize-program records for the runtime.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUPipelines.h"
#include "lib/Conversion/Pipelines.h"

#include "lib/Conversion/Passes.h"
#include "lib/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::poot::addWholeStepPasses(
    OpPassManager &pm,
    llvm::function_ref<void(OpPassManager &)> planAndGenerate,
    const WholeStepTarget &target) {
  // 0. Refused before anything relies on them: values no device buffer can
  //    hold, and a slot contract broken as a whole (state in -> state out,
  //    one pos).
  PootGPUCheckStepTypesOptions types;
  types.maxBufferBytes = target.maxBufferBytes;
  types.maxElements = target.maxElements;
  pm.addPass(createPootGPUCheckStepTypes(types));
  pm.addPass(createPootVerifyDriverContract());
  // 1. poot level: the validation prologue, the plan and the attention
  //    kernels; each attention becomes a call of flat buffers.
  pm.addPass(createPootSplitValidation());
  planAndGenerate(pm);
  pm.addPass(createPootRecordFusedOps());
  pm.addPass(createPootAttentionToCalls());
  // A tensor-parallel rank's all-reduces: commands of the program.
  PootCollectivesToCallsOptions collectives;
  collectives.program = true;
  pm.addPass(createPootCollectivesToCalls(collectives));
  // 2. Every primitive to linalg on tensors (the write-map markers are still
  //    there: a scatter through one writes distinct rows), then the entry
  //    ABI: donated state writable, other arguments read-only.
  pm.addPass(createConvertPootToLinalg());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  PootCPUEntryABIOptions abi;
  pm.addPass(createPootCPUEntryABI(abi));
  // Elementwise ops fused into their consumers, decode-GEMV prologues
  // included, payloads bounded (compile time linear in a chain's length).
  PootFuseElementwiseChainsOptions fusion;
  fusion.intoReductions = true;
  fusion.propagateReshapes = true;
  pm.addPass(createPootFuseElementwiseChains(fusion));
  // Decode matmuls: their reductions split over enough threads to fill
  // the device.
  PootGPUSplitReductionsOptions split;
  split.jamRows = target.jamRows;
  split.batchInvariant = target.batchInvariant;
  split.mmaRows = target.mmaRows;
  split.mmaStagedRows = target.mmaStagedRows;
  pm.addNestedPass<func::FuncOp>(createPootGPUSplitReductions(split));
  // 3. Buffers, the state in place (the CPU pipeline's bufferization).
  addInPlaceBufferization(pm);
  pm.addPass(createPootGPUAttentionLaunches());
  // Two-byte matmuls marked by the split (tensor cores): their kernels.
  if (target.mmaRows > 0)
    pm.addPass(createPootGPUMmaMatmuls());
  // 4. Parallel loops mapped to blocks x threads, then kernels.
  PootCPUExpandStridedCopiesOptions copies;
  copies.every = true; // copies are kernels too: the host only launches
  pm.addNestedPass<func::FuncOp>(createPootCPUExpandStridedCopies(copies));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(memref::createFoldMemRefAliasOpsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Reductions accumulate in registers, not through the output buffer.
  pm.addNestedPass<func::FuncOp>(createPootGPUPromoteAccumulators());
  // A reduction starts from its fill's value (no fill kernel).
  pm.addNestedPass<func::FuncOp>(createPootGPUFoldFills());
  // A copy that keeps every element's flat offset (a layout change in
  // unit dimensions) becomes a view of its source: no copy kernel.
  pm.addNestedPass<func::FuncOp>(createPootGPUElideLayoutCopies());
  // Elementwise consumers of a reduction (the rounding of a matmul's sums,
  // a residual add, a copy into the heads' layout) run in its kernel.
  pm.addNestedPass<func::FuncOp>(createPootGPUFuseEpilogues());
  // A batched matmul's thread computes several rows: the weight element
  // the rows share is loaded once for all of them.
  PootGPUJamRowsOptions rows;
  rows.maxRows = target.jamRows;
  pm.addNestedPass<func::FuncOp>(createPootGPUJamRows(rows));
  // Each reduction thread owns 4 columns (16-byte loads), its loop
  // unrolled: loads in flight to stream the weights.
  PootGPUVectorizeColumnsOptions columns;
  columns.vectorMemory = target.vectorMemory;
  pm.addNestedPass<func::FuncOp>(createPootGPUVectorizeColumns(columns));
  // Kernels with few threads and long reductions: lanes of a warp share
  // each reduction and combine it by shuffles.
  // (Not on a batch-invariant device: the lanes follow the loop's
  // iteration count, which follows the rows.)
  if (target.warpLanes > 0 && !target.batchInvariant) {
    PootGPUWarpReductionsOptions warps;
    warps.warpSize = target.warpLanes;
    pm.addNestedPass<func::FuncOp>(createPootGPUWarpReductions(warps));
  }
  PootGPUHostToParallelOptions grid;
  grid.maxBlocks = target.maxGridX;
  pm.addNestedPass<func::FuncOp>(createPootGPUHostToParallel(grid));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createPootGPUSerializeProgram());
  // 5. The kernels: loops a kernel still nests become plain loops, then the
  //    target's lowering.
  pm.addNestedPass<gpu::GPUModuleOp>(createParallelForToNestedForsPass());
  // Affine index math (fold-memref-alias-ops' linearize/delinearize) as
  // arith, then integer floor division/ceil and the like as plain
  // arithmetic (no target lowers arith.floordivsi directly; lower-affine
  // makes some from a delinearize).
  pm.addPass(createLowerAffinePass());
  // (Only the divisions: arith-expand would also turn maximumf into
  // compares and selects, slowing the attention kernels.)
  pm.addNestedPass<gpu::GPUModuleOp>(createPootGPUExpandIntDivisions());
}
