//===- Passes.td - poot -> other dialects ------------------*- tablegen -*-===//
//
// One record per conversion (poot to linalg, poot to gpu, ...) and the small
// target-ABI passes the per-target pipelines run. The pipelines themselves
// are built in C++ (see Pipelines.h) and registered once in lib/InitAll.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_PASSES_TD
#define POOT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// PootToLinalg
//===----------------------------------------------------------------------===//

def ConvertPootToLinalg : Pass<"convert-poot-to-linalg"> {
  let summary = "Lower primitive poot ops to linalg/tensor/arith/math/scf on tensors";
  let description = [{
    Rewrites every primitive poot op into upstream ops on tensors, following
    the math each op documents (numpy broadcasting, the clamps of
    `dynamic_update_slice` and `gather`, `scatter_update` skipping indices
    outside `[0, S)`, i32 floor division with `x / 0 = 0`, `top_k` ties to
    the lower index, NaN-propagating max/min):

    - elementwise ops, `compare`, `select`, `convert`, `broadcast`, `iota`
      and the clamp of `index_guard` become `linalg.generic` with
      broadcasting indexing maps (a size-1 operand dimension reads index 0);
    - `reduce` and `matmul` become `linalg.generic` reductions (matmul batch
      dimensions broadcast like elementwise operands); `index_guard`'s
      witness is an all-reduction with `arith.andi`;
    - `transpose` becomes `linalg.transpose`, `reshape` a
      `tensor.collapse_shape` + `tensor.expand_shape` pair, `slice` a strided
      `tensor.extract_slice`, `concat` and `dynamic_update_slice`
      `tensor.insert_slice` (the latter at the clamped runtime offset);
    - `gather` reads with `tensor.extract` at the clipped index inside a
      `linalg.generic`; `scatter_update` and `top_k` are `scf.for` loops;
    - `constant` becomes `arith.constant`.

    Bool tensors are stored as bytes: `tensor<...xi1>` becomes
    `tensor<...xi8>` holding 0 or 1 (numpy's bool layout; LLVM 22 lowers no
    sub-byte memref access), function signatures included. A stored byte
    reads as `!= 0`. The `poot.*` markers of bool arguments and results are
    dropped, since their type rules (a validation result is `tensor<i1>`) no
    longer hold.

    The fused attention ops (`poot.attention`, `poot.selected_attention`,
    `poot.block_topk`) stay legal: their CPU form is produced by their own
    pass, which runs before this one.

    Before:
    ```mlir
    %m = poot.reduce max %s axis = 1 keepdim : tensor<4x16xf32> -> tensor<4x1xf32>
    %x = poot.sub %s, %m : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
    ```
    After:
    ```mlir
    %init = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<4x1xf32>) -> tensor<4x1xf32>
    %m = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0)],
                         iterator_types = ["parallel", "reduction"]}
        ins(%s : tensor<4x16xf32>) outs(%init : tensor<4x1xf32>) {
      ^bb0(%in: f32, %acc: f32):
        %0 = arith.maximumf %acc, %in : f32
        linalg.yield %0 : f32
    } -> tensor<4x1xf32>
    %x = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0),
                                          (d0, d1) -> (d0, d1)], ...}
        ins(%s, %m : tensor<4x16xf32>, tensor<4x1xf32>) outs(%e1 : tensor<4x16xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %0 = arith.subf %a, %b : f32
        linalg.yield %0 : f32
    } -> tensor<4x16xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def PootCPUEntryABI : Pass<"poot-cpu-entry-abi", "::mlir::ModuleOp"> {
  let summary = "Prepare the step function for the CPU runtime's calling convention";
  let description = [{
    Runs first in the CPU pipeline (after the attention lowering, before
    `convert-poot-to-linalg`). On the entry function (`entry`, or every
    public function when empty) it
    - marks every tensor argument `bufferization.writable = false`, so the
      compiled step never writes into a buffer the runtime bound (a failed
      validation must leave the caller's state exactly as it was);
    - sets `llvm.emit_c_interface`, so `convert-func-to-llvm` emits
      `_mlir_ciface_<name>` taking one pointer per memref descriptor;
    - drops the `poot.*` argument/result markers: the compiler has copied
      them into the artifact manifest, and LLVM IR has no place for them.

    Before:
    ```mlir
    func.func @step(%k: tensor<4x8xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">})
        -> (tensor<4x8xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">})
    ```
    After:
    ```mlir
    func.func @step(%k: tensor<4x8xf32> {bufferization.writable = false})
        -> tensor<4x8xf32> attributes {llvm.emit_c_interface}
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The entry function's name (empty: every public function)">,
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def PootCPUWidenBoolMemrefs
    : Pass<"poot-cpu-widen-bool-memrefs", "::mlir::ModuleOp"> {
  let summary = "Store every remaining i1 memref as bytes";
  let description = [{
    Runs after buffer deallocation. The step's own bools are bytes already
    (`convert-poot-to-linalg`), but buffer deallocation adds ownership
    flags in `memref<?xi1>` buffers (the `dealloc_helper` that
    `bufferization-lower-deallocations` emits for dynamic ownership), and
    LLVM 22's memref-to-llvm lowering asserts on sub-byte loads and stores.
    This pass gives every memref of i1 the element type i8: loads compare
    the byte with zero, stores zero-extend, and allocations, casts, views,
    function signatures and calls change type.

    Before:
    ```mlir
    %m = memref.alloc() : memref<2xi1>
    memref.store %flag, %m[%c0] : memref<2xi1>
    %f = memref.load %m[%c1] : memref<2xi1>
    ```
    After:
    ```mlir
    %m = memref.alloc() : memref<2xi8>
    %b = arith.extui %flag : i1 to i8
    memref.store %b, %m[%c0] : memref<2xi8>
    %l = memref.load %m[%c1] : memref<2xi8>
    %f = arith.cmpi ne, %l, %c0_i8 : i8
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def PootCPUExpandStridedCopies
    : Pass<"poot-cpu-expand-strided-copies", "::mlir::func::FuncOp"> {
  let summary = "Turn memref.copy between strided views into linalg.copy";
  let description = [{
    Runs after bufferization. A `memref.copy` whose source or target is not
    an identity-layout memref (a slot written through `tensor.insert_slice`
    at a runtime offset, a strided slice) would lower to a call of
    `memrefCopy` from MLIR's C runner utilities, which the CPU artifact does
    not link. As `linalg.copy` it becomes plain loops; copies between
    identity layouts stay `memref.copy` (a `memcpy`).

    Before:
    ```mlir
    memref.copy %u, %view : memref<1x2x1x4xf32> to memref<1x2x1x4xf32, strided<[64, 32, 4, 1], offset: ?>>
    ```
    After:
    ```mlir
    linalg.copy ins(%u : memref<1x2x1x4xf32>) outs(%view : memref<1x2x1x4xf32, strided<[64, 32, 4, 1], offset: ?>>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

//===----------------------------------------------------------------------===//
// Attention kernels (the one generator)
//===----------------------------------------------------------------------===//

def PootGenerateAttentionKernels
    : Pass<"poot-generate-attention-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate the GPU kernels of every planned poot.attention";
  let description = [{
    For each `poot.attention` carrying a `#poot.attention_request`
    (`poot-plan-attention`), emits a `gpu.module` holding the schedule's
    kernels and records their symbols on the op as `poot.kernels`; the op
    itself stays (the host program launches the kernels). One emitter
    (AttentionEmitter) serves every target, phase and head width:

    - streaming: one kernel, one workgroup of `lanes` threads per
      (batch row, query head, query row), the workgroup id folded over
      (x, y); each lane streams keys t = lane, lane + lanes, ... keeping
      (o[Dv], m, l) in workgroup memory; one barrier; every lane folds the
      lanes' states over a slice of the output channels;
    - split-KV: `partials` (one workgroup per (row, split), writing the
      unnormalised (o, m, l) to the scratch at `(row * splits + split) *
      (Dv + 2)`) and `combine` (one workgroup per row).

    Kernel arguments are flat 1-D memrefs in this order: query, key, value,
    [key_shared], [mask], [read], [len], then `out` (streaming, combine) or
    `scratch` (partials); combine takes (scratch, out).

    The block-selected ops get their kernels from the same generator
    (SelectionEmitter): `poot.block_topk` one `topk` kernel (a workgroup per
    (batch row, query row); min(K, NB) rounds, each a lane scan of the
    blocks ranking after the previous winner, then the lanes' bests folded
    by a tree over workgroup memory (keys f32, ids i32), a barrier after each
    phase; arguments scores, q_pos, out) in
    `gpu.module @poot_block_topk_<i>`; `poot.selected_attention` the
    streaming or split-KV kernels of the seed's schedule over its
    `(K + 1) * block_size` visited positions per row (AttentionEmitter's lane
    state, update and combines), or for an NVIDIA decode the warp-decode
    kernel (`warp`) with its warps striding over those positions; arguments
    query, key, value, block_ids, q_pos, then out or scratch; in
    `gpu.module @poot_selected_attention_<i>`.

    `target` chooses how workgroup memory is declared: `spirv` (memref.alloc in memory space 3 and
    `spirv.entry_point_abi`), `nvvm` / `rocdl` (a workgroup attribution and
    a known block size).

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {poot.request = #poot.attention_request<...>, scale = 0.125 : f64} : ...
    ```
    After:
    ```mlir
    %o = poot.attention %q, %k, %v {poot.kernels = [@poot_attention_0::@stream], ...} : ...
    gpu.module @poot_attention_0 {
      gpu.func @stream(%q: memref<2048xf32>, ..., %out: memref<2048xf32>) kernel { ... }
    }
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"spirv\"",
           "How kernels declare workgroup memory: spirv, nvvm or rocdl">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::spirv::SPIRVDialect",
  ];
}

def PootAttentionToLoops : Pass<"poot-attention-to-loops", "::mlir::ModuleOp"> {
  let summary = "The CPU form of the generated attention kernel";
  let description = [{
    Replaces each planned `poot.attention` (and `poot.block_topk`,
    `poot.selected_attention`: SelectionToLoops.cpp) with the same schedule
    as loops:
    for each workgroup, every lane's first phase runs, then every lane's
    second (the barrier becomes the phase boundary), with the workgroup
    memory and the split-KV scratch as memref allocations. It therefore runs
    the same lanes, splits and combine order as the GPU kernels, and its
    numerics match them. Operands are read through `bufferization.to_buffer`
    and the result is returned with `bufferization.to_tensor`, so the CPU
    pipeline's one-shot bufferization takes it from there.

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {poot.request = #poot.attention_request<...>, scale = 0.125 : f64} : ...
    ```
    After:
    ```mlir
    %qb = bufferization.to_buffer %q : ... ; %out = memref.alloc() : memref<2048xf32>
    scf.for %wg = ... { scf.for %lane = ... { <scan> } scf.for %lane = ... { <combine> } }
    %o = bufferization.to_tensor %out restrict writable : ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def PootAttentionToCalls : Pass<"poot-attention-to-calls", "::mlir::ModuleOp"> {
  let summary = "Offload each poot.attention of a CPU step to an external kernel launcher";
  let description = [{
    For a step whose attention runs on another device (the CPU host program
    of a Vulkan or CUDA run), replaces each planned fused op
    (`poot.attention`, `poot.block_topk`, `poot.selected_attention`, numbered
    in program order) with a call to a private external function
    `@poot_offload_<i>` taking the op's operands and a caller-allocated
    output as flat 1-D buffers, in the generated kernels' argument order
    (query, key, value, [key_shared], [mask], [read], [len], out; scores,
    q_pos, out; query, key, value, block_ids, q_pos, out). The declaration carries
    `llvm.emit_c_interface`, so the compiled step calls
    `_mlir_ciface_poot_offload_<i>(descriptors...)`, which the runtime
    provides (it launches the attention's GPU kernels). The op's
    `poot.request` is copied to the call as `poot.request`.

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {poot.request = #poot.attention_request<...>, scale = 0.125 : f64} : ...
    ```
    After:
    ```mlir
    %qb = bufferization.to_buffer %qflat read_only : ... ; %out = memref.alloc() : memref<512xf32>
    func.call @poot_offload_0(%qb, %kb, %vb, %out) : (...) -> ()
    %o = tensor.expand_shape (bufferization.to_tensor %out restrict writable) ...
    func.func private @poot_offload_0(memref<512xf32>, ...) attributes {llvm.emit_c_interface}
    ```
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
  ];
}

#endif // POOT_CONVERSION_PASSES_TD
