//===- PipelinesCPU.cpp - poot-to-llvm-cpu ---------------------------------===//
//
// The CPU target: the whole step function to the LLVM dialect, for a shared
// object the runtime calls in-process. The ABI it produces (see
// docs/cpu-target.md): `_mlir_ciface_<entry>(desc *in_0, ..., desc *out_0,
// ...)`, one pointer to a memref descriptor per argument, then one per
// result as a caller-owned out-parameter; every layout is the identity
// (C-contiguous), and the step never writes an input buffer.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Pipelines.h"

#include "lib/Conversion/Passes.h"
#include "lib/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void poot::addInPlaceBufferization(OpPassManager &pm) {
  // (No empty-tensor elimination: it runs its own one-shot analysis, as
  // superlinear in a big step as bufferization itself -- 8 s of a 32-layer
  // compile -- and the state is written in place without it: the new rows'
  // small tensors are copied into the donated buffer.)
  // One destination and one constant per op again (CSE merged them): the
  // analysis is superlinear in the uses of one shared value.
  pm.addPass(createPootUntieSharedTensors());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // (A loop that scatters into a donated pool yields the pool's own buffer
  // on every path: canonicalization folds its result to the argument.)
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createPootDropAliasedResults());
}

void poot::buildPootToLLVMCPUPipeline(
    OpPassManager &pm, const PootToLLVMCPUPipelineOptions &options) {
  // 1. poot -> linalg/tensor/scf on tensors. The fused attention ops are
  //    planned for the CPU and get their CPU loops first (the same schedule
  //    as the GPU kernels), ahead of convert-poot-to-linalg (which leaves
  //    those ops alone). The entry ABI (C interface, read-only arguments,
  //    markers dropped, no value returned twice) goes last, after CSE.
  // A step that writes its state in place answers its validation first, in
  // a prologue of its own (see poot-split-validation).
  // The slot contract as a whole (state in -> state out, one pos), before
  // anything relies on it.
  pm.addPass(createPootVerifyDriverContract());
  pm.addPass(createPootSplitValidation());
  // The CPU preset with what the options describe (its max-alloc-bytes
  // bounds the arena, not the planner's scratch). Loops: only the X fold
  // of the grid is recorded, Y keeps the preset's bound.
  DeviceDescription device = kCpuLoopsDevice;
  device.workgroupMemory = options.workgroupMemory;
  device.computeUnits = options.computeUnits;
  device.maxGridX = options.maxGridX;
  device.vectorWidth = options.vectorWidth;
  device.maxSplits = options.maxSplits;
  device.batchInvariant = options.batchInvariant;
  pm.addPass(createPootPlanAttention(planAttentionOptions(device)));
  // What the manifest reports about each fused op (compiler/cpu.py reads it).
  pm.addPass(createPootRecordFusedOps());
  if (options.attention == CPUAttention::Offload)
    pm.addPass(createPootAttentionToCalls());
  else
    pm.addPass(createPootAttentionToLoops());
  // `x @ W.T` reads W [N, K] in place (no transposed copy per call): the
  // vectorized matmuls handle both layouts of the weight.
  // A tensor-parallel rank's all-reduces call the runtime's communicator.
  pm.addPass(createPootCollectivesToCalls());
  ConvertPootToLinalgOptions toLinalg;
  toLinalg.foldTransposedRhs = true;
  pm.addPass(createConvertPootToLinalg(toLinalg));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  PootCPUEntryABIOptions abi;
  abi.entry = options.entry;
  pm.addPass(createPootCPUEntryABI(abi));
  pm.addPass(createPootFuseElementwiseChains());

  // 2. Tensors -> buffers. Identity layouts at the function boundary (the
  //    runtime passes C-contiguous arrays). A donated state argument
  //    (writable, see poot-cpu-entry-abi) is updated in place: its new rows
  //    are written into it and the result that returns it leaves the ABI
  //    (recorded first, for the manifest). Every other result becomes an
  //    out-parameter the runtime allocates; a result that is a fresh static
  //    allocation is written in place of that allocation.
  addInPlaceBufferization(pm);
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  // The temporaries in one arena the runtime allocates before the step
  // runs (out of memory is then a typed error, not a crash half-way).
  PootCPUPlanArenaOptions arena;
  arena.maxBytes = options.maxAllocBytes;
  pm.addPass(createPootCPUPlanArena(arena));
  bufferization::buildBufferDeallocationPipeline(pm);
  // Deallocation tracks dynamic ownership in i1 buffers; LLVM 22 lowers no
  // sub-byte memref access, so those become bytes like the step's bools.
  pm.addPass(createPootCPUWidenBoolMemrefs());

  // 3. Loops (strided copies too: the artifact links no MLIR runtime), and
  //    the f16/bf16 arithmetic and math done in f32 with a rounding after
  //    each op (what numpy/ml_dtypes compute).
  // The linear layers as vector code for the host (tiled + vectorized on
  // buffers; the output tile's transfers hoisted out of the K loop).
  PootCPUVectorizeMatmulsOptions matmuls;
  matmuls.vectorWidth = options.vectorWidth;
  matmuls.computeUnits = options.computeUnits;
  matmuls.bf16Dot = options.bf16Dot;
  pm.addNestedPass<func::FuncOp>(createPootCPUVectorizeMatmuls(matmuls));
  pm.addNestedPass<func::FuncOp>(createPootCPUExpandStridedCopies());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  // One function per loop nest in a big step: LLVM's loop passes (and the
  // pattern-driven passes below) are superlinear in the size of a function.
  pm.addPass(createPootCPUOutlineLoops());
  // The vectorized matmuls' tiles: scf.forall (now on buffers) as
  // scf.parallel, n-D transfers unrolled to 1-D vectors.
  pm.addPass(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass());
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  math::MathExtendToSupportedTypesOptions mathExtend;
  pm.addPass(math::createMathExtendToSupportedTypes(mathExtend));
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"f16", "bf16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  // What is left of bf16 only moves bits (loads, masked vector loads,
  // constants, selects): carry it as i16, as on SPIR-V. LLVM would otherwise
  // legalize a bf16 vector element on an x86 without AVX512-BF16 by
  // promoting it to f32 and back through __truncsfbf2, which GCC 12's
  // libgcc lacks (the shared object then fails to load).
  PootSPIRVBf16AsI16Options bits;
  bits.sixteenBitInts = true;
  pm.addPass(createPootSPIRVBf16AsI16(bits));
  pm.addPass(createCanonicalizerPass());
  // Vector math (the CPU attention kernel's exp) as polynomials, and every
  // scf.parallel (the kernel's work items) as an OpenMP worksharing loop;
  // without OpenMP the parallel loops stay serial loops.
  pm.addPass(createPootCPUApproximateVectorMath());
  if (options.parallel == CPUParallel::Omp) {
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addPass(createPootCPULowerAllocaScopes());
  }

  // 4. LLVM. Math goes to LLVM intrinsics where one exists (llc turns them
  //    into libm calls: expf, tanhf, ...) and to libm calls for the rest.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Vector reductions may reassociate: a tree of shuffles, not a chain.
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.reassociateFPReductions = true;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  // x86vector.avx512.dot (the bf16 linear tiles) as its LLVM intrinsic.
  vectorToLLVM.x86Vector = options.bf16Dot;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  if (options.parallel == CPUParallel::Omp)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void poot::registerPootToLLVMCPUPipeline() {
  PassPipelineRegistration<PootToLLVMCPUPipelineOptions>(
      "poot-to-llvm-cpu",
      "Lower a poot module to the LLVM dialect for the in-process CPU "
      "runtime (destination-passing C interface)",
      buildPootToLLVMCPUPipeline);
}

void poot::registerCPUPipelineDialectInterfaces(DialectRegistry &registry) {
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  // Bufferization asks tensor ops for their reified shapes.
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  // Buffer deallocation: memref.alloc's allocation model, and ownership
  // through selects, scf loops/ifs and cf branches.
  memref::registerAllocationOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  // poot-cpu-vectorize-matmuls: linalg tiling, vector transfers on tensors
  // (bufferized, and hoisted out of loops as subsets).
  linalg::registerTilingInterfaceExternalModels(registry);
  linalg::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
  // Tiling and canonicalization ask for value bounds (affine.min of tiles).
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  linalg::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  vector::registerValueBoundsOpInterfaceExternalModels(registry);
}
