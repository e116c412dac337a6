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

    With `fold-transposed-rhs` (the CPU pipeline sets it), a matmul whose
    2-D rhs is `poot.transpose %w perm = [1, 0]` (a torch Linear's
    `x @ W.T`, W stored `[N, K]`) becomes a `linalg.matmul` reading `%w`
    through the transposed map `(m, n, k) -> (n, k)`: no transposed copy of
    the weight per call, and the CPU's `poot-cpu-vectorize-matmuls` turns
    it into dot products along W's contiguous rows. The transpose itself
    is still lowered for any other user (and is dead code otherwise).
    Before:
    ```mlir
    %wt = poot.transpose %w perm = [1, 0] : tensor<96x64xf32> -> tensor<64x96xf32>
    %y = poot.matmul %x, %wt : (tensor<1x64xf32>, tensor<64x96xf32>) -> tensor<1x96xf32>
    ```
    After:
    ```mlir
    %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                        affine_map<(m, n, k) -> (n, k)>,
                                        affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %w : tensor<1x64xf32>, tensor<96x64xf32>)
        outs(%zero : tensor<1x96xf32>) -> tensor<1x96xf32>
    ```
    (Off by default: the GPU whole-step pipeline keeps the form its passes
    were written and measured against.)
  }];
  let options = [
    Option<"foldTransposedRhs", "fold-transposed-rhs", "bool",
           /*default=*/"false",
           "Read a matmul's 2-D rhs that is a [1, 0] transpose through a "
           "transposed indexing map (no transposed copy)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def PootCollectivesToCalls
    : Pass<"poot-collectives-to-calls", "::mlir::ModuleOp"> {
  let summary = "Answer each poot.all_reduce through the runtime's communicator";
  let description = [{
    Collectives are the runtime's: each `poot.all_reduce` (in program order,
    `site` 0, 1, ...) copies its operand into a buffer of its own, has the
    runtime sum it in place over the ranks, and reads the sum back.

    CPU steps (default): the pass defines `poot_all_reduce(data, count,
    dtype, site)` once; it loads the exported pointer `poot_all_reduce_hook`
    and, when the runtime stored a callback there, calls
    `int32_t hook(void *data, int64_t count, int32_t dtype, int64_t site)`
    (dtype 0 f32, 1 f16, 2 bf16, 3 f64). A null hook is a world of one rank:
    the buffer is already the sum.

    GPU steps (`program`): a call of a declaration `poot_all_reduce_<site>`
    with the buffer, marked `poot.all_reduce = {site, dtype}`, which
    poot-gpu-serialize-program records as an `all_reduce` command of the
    step's program between its launches.

    Before:
    ```mlir
    %s = poot.all_reduce %p : tensor<1x8xf32>
    ```
    After (CPU):
    ```mlir
    %buf = memref.alloc() : memref<1x8xf32>
    bufferization.materialize_in_destination %p in restrict writable %buf
    %data = memref.extract_aligned_pointer_as_index %buf : memref<1x8xf32> -> index
    func.call @poot_all_reduce(%data, %c8, %c0, %c0) : (index, i64, i32, i64) -> ()
    %s = bufferization.to_tensor %buf restrict writable : memref<1x8xf32> to tensor<1x8xf32>
    ```
    After (GPU program):
    ```mlir
    %buf = memref.alloc() : memref<1x8xf32>
    bufferization.materialize_in_destination %p in restrict writable %buf
    func.call @poot_all_reduce_0(%buf) {poot.all_reduce = {dtype = 0 : i32, site = 0 : i64}}
    %s = bufferization.to_tensor %buf restrict writable : memref<1x8xf32> to tensor<1x8xf32>
    ```
  }];
  let options = [
    Option<"program", "program", "bool", /*default=*/"false",
           "A GPU step's host program: a call recorded as a program command "
           "(poot-gpu-serialize-program) instead of the CPU runtime's hook">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def PootCPUEntryABI : Pass<"poot-cpu-entry-abi", "::mlir::ModuleOp"> {
  let summary = "Prepare the step function for the CPU runtime's calling convention";
  let description = [{
    Runs last before bufferization in the CPU pipeline (after
    `convert-poot-to-linalg`, canonicalization and CSE). On the entry
    function (`entry`, or every public function when empty) it
    - donates each state argument whose state the function returns
      (`bufferization.writable = true`: its new rows are written in place,
      and `poot-drop-aliased-results` later drops the result that returns
      it) and marks every other tensor argument
      `bufferization.writable = false`, so the step never writes a buffer
      the runtime bound as an input. A failed validation must leave the
      state as it was: the runtime runs the validation prologue
      (`poot-split-validation`, also given the C interface here) first;
    - sets `llvm.emit_c_interface`, so `convert-func-to-llvm` emits
      `_mlir_ciface_<name>` taking one pointer per memref descriptor;
    - drops the `poot.*` argument/result markers: the compiler has copied
      them into the artifact manifest, and LLVM IR has no place for them.

    In every function with a body (entry or not: the out-parameter pass
    rewrites them all) it returns a `bufferization.alloc_tensor copy(...)`
    of every value returned more than once (after the first), so each
    result is a distinct buffer: upstream `buffer-results-to-out-params` of
    LLVM 22.1.8 erases a returned allocation once per return operand and
    crashes on a value returned twice (CSE makes such returns, e.g. the
    witnesses of two identical `index_guard`s).

    Before:
    ```mlir
    func.func @step(%k: tensor<4x8xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">})
        -> (tensor<4x8xf32> {poot.name = "k", poot.slot = #poot.slot<state "k">})
    ```
    After:
    ```mlir
    func.func @step(%k: tensor<4x8xf32> {bufferization.writable = true})
        -> tensor<4x8xf32> attributes {llvm.emit_c_interface}
    ```
    A repeated result, before: `return %y, %y : tensor<4xf32>, tensor<4xf32>`;
    after:
    ```mlir
    %0 = bufferization.alloc_tensor() copy(%y) : tensor<4xf32>
    return %y, %0 : tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The entry function's name (empty: every public function)">,
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def PootCPUVectorizeMatmuls
    : Pass<"poot-cpu-vectorize-matmuls", "::mlir::func::FuncOp"> {
  let summary = "Tile and vectorize the step's matmuls for the host's vectors";
  let description = [{
    Runs on buffers, after bufferization (tiled tensor IR made one-shot
    bufferization of a 16-layer decoder step 3.8 s -> 10.7 s). Two layouts
    of the weight (the rhs), both with static shapes:

    **[K, N]** (`linalg.matmul` with the default maps: the step's linear
    layers with a weight stored `[in, out]`; f32 accumulators, f32/bf16/f16
    operands) is tiled (`linalg::tileLinalgOp`) and each tile vectorized
    (`linalg::vectorize`) to one `vector.contract` TM x TN x TK (16-bit
    operands widened to f32), which the LLVM lowering turns into outer
    products (FMAs of a broadcast lhs element with a contiguous row of the
    rhs). TM: the largest divisor of M <= 4; TN: 4, 2 or 1 host vectors, the
    widest dividing N. The output tile is re-read from L1 each K step
    (upstream's `hoistRedundantVectorTransfers` takes no transfer of a
    subview), except in batched decode (below). The loops:
    - M <= `max-stream-rows` (decode): the weight streamed row by row. An
      `scf.parallel` over column chunks (a divisor of N, N / chunk a
      multiple of `compute-units` where possible, the M x chunk output
      <= 32 KiB: it stays in L1), then an `scf.for` over K in steps of TK
      (the largest divisor of K <= 8: TK rows of W are read side by side,
      and 8 streams read faster than 16 or 4 on the 2-core EPYC), then the
      chunk's tiles (N outer, M inner). Each K step reads TK contiguous runs
      of the chunk's columns once, shared by all M rows. With M > TM
      (batched decode: compute-bound, 8 FLOP per weight byte at M = 16) the
      K loop is in bands of up to 16 * TK rows (the chunk's band of W stays
      in L2) with the tiles inside, and each tile's own K loop keeps its
      output tile in registers: the tile's subviews are folded into the
      transfers' indices (`populateFoldMemRefAliasOpPatterns`), the index
      arithmetic moved out (`moveLoopInvariantCode`, CSE) and the output's
      read/write pair hoisted (`linalg::hoistRedundantVectorTransfers`,
      which refuses transfers of views); on 16 x 4096 x 4096, A/B in one
      process on a loaded machine: 1.0-1.45x at one thread, 1.1-1.4x at
      two. (Before: output
      tiles over the whole of K, each walking W down a 256-byte-wide column
      strip, a new page per row, and with M > TM every row tile read the
      whole weight again: 4096 x 4096, one row, 6.8 -> 19.5 GB/s.)
    - more rows (prefill): an `scf.parallel` over TN-column strips; in each,
      K bands of up to 16 * TK rows (TK the largest divisor of K <= 16: the
      band's pieces of W stay in L1 while the strip's TM x TN row tiles pass
      over them), and each tile's K loop keeps its output tile in registers
      (hoisted as above). 512 x 2048 x 2048 at two threads: 40 -> 170
      GFLOP/s f32, 69 -> 129 bf16. (Before: tiles over the whole of K, each
      reading its K x TN strip of W from L3 once per row tile.)
    - more than 4 rows, bf16 x bf16 with `bf16-dot` (AVX512-BF16, 16
      lanes), K even and N a multiple of 16: pair tiles on
      `x86vector.avx512.dot` (vdpbf16ps) in strips as above (TN columns
      for prefill; 128 columns, while every thread keeps a strip, in
      batched decode) and K bands of up to 32 KiB of pairs. Per
      strip and band, the band's weight rows are interleaved once into a
      stack buffer (`memref.alloca` in a `memref.alloca_scope`) of pairs:
      lane i of each 32-element vector holds (W[k, j+i], W[k+1, j+i]);
      every 4-row tile (and the M remainder) keeps its TM x TN / 16 f32
      output vectors in registers through the band while each step
      broadcasts the pair x[i, k..k+1] as one 32-bit word and runs one
      vdpbf16ps per output vector (32 exact products added in f32; bf16
      subnormal inputs read as 0). 512 x 2048 x 2048 at two threads: 156
      (widened) -> 829 GFLOP/s, 1.15x torch (interleaving in the inner loop
      instead: 366); 16 x 4096 x 8192: 9.6 -> 3.5 ms, 1.8x torch.

    **[N, K]** (a torch Linear's `x @ W.T`: a `linalg.matmul` with maps
    `(m, k), (n, k), (m, n)`, as `convert-poot-to-linalg{fold-transposed-rhs}`
    makes it, or a `linalg.generic` multiply-add with those maps; f32
    output, f32/bf16/f16 operands with contiguous rows): each output is a dot
    product of two contiguous rows. Register tiles of TM rows x TN columns
    x TU consecutive vectors of K keep TM*TN*TU vector accumulators through
    an `scf.for` over K (`vector.load`s of the weight and lhs rows, 16-bit
    ones widened to f32 in registers by `arith.extf`; `vector.fma`s); the TU
    partial sums are added, a one-vector loop and a scalar loop take K's
    remainders, then one `vector.reduction <add>` per output, added to the
    output. TM = min(M, 4). With TM <= 2 lhs rows of at most 8 KiB together,
    TN = 1 and TU = 8 (one weight row at a time: a thread's rows of W are
    one sequential stream); else TU = 1 and TN = clamp(A / TM, 2, 8), A = 16
    accumulators with 16-lane vectors, 8 otherwise (TN weight rows share
    each lhs load). An `scf.parallel` (or `scf.for`, below
    `min-parallel-work`) over the full column tiles holds, per tile, an
    `scf.for` over the row tiles; the N and M remainders are narrower /
    shorter tiles. Upstream's `vector.contract` lowerings for this form
    reduce horizontally at every K step (dot) or transpose the weight tile
    (outer products), hence the tile is written with vector ops directly.
    (Before: the form was left to `convert-linalg-to-loops`, scalar loops;
    and without the fold the weight was first copied transposed, a strided
    gather of all of it per call: 512 x 32000, one row, 0.7 -> 25+ GB/s.)

    Nothing happens with `vector-width=0`.

    Before ([K, N], one row):
    ```mlir
    linalg.matmul ins(%x, %w : memref<1x512xf32>, memref<512x1024xf32>)
                  outs(%y : memref<1x1024xf32>)
    ```
    After (`vector-width=16 compute-units=2`):
    ```mlir
    scf.parallel (%j) = (%c0) to (%c1024) step (%c512) {
      scf.for %kk = %c0 to %c512 step %c16 {
        scf.for %jj = %c0 to %c512 step %c64 {
          %l = vector.transfer_read ... : vector<1x16xf32>
          %r = vector.transfer_read ... : vector<16x64xf32>
          %a = vector.transfer_read %ytile[...] : vector<1x64xf32>
          %c = vector.contract ... %l, %r, %a : vector<1x16xf32>, vector<16x64xf32> into vector<1x64xf32>
          vector.transfer_write %c, %ytile[...]
        }
      }
    }
    ```
    Before ([N, K], one row, K = 4096: 16 KiB lhs row):
    ```mlir
    linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %w : memref<1x4096xf32>, memref<1024x4096xf32>)
        outs(%y : memref<1x1024xf32>)
    ```
    After (`vector-width=16`):
    ```mlir
    scf.parallel (%j) = (%c0) to (%c1024) step (%c8) {
      %s:8 = scf.for %k = %c0 to %c4096 step %c16 iter_args(%a0 = %zero, ...) {
        %x0 = vector.load %x[%c0, %k] : memref<1x4096xf32>, vector<16xf32>
        %w0 = vector.load %w[%j, %k] : memref<1024x4096xf32>, vector<16xf32>
        ...                                   // 8 weight rows
        %f0 = vector.fma %x0, %w0, %a0 : vector<16xf32>
        ...
        scf.yield %f0, ..., %f7 : vector<16xf32>, ...
      }
      %r0 = vector.reduction <add>, %s#0 : vector<16xf32> into f32
      %y0 = memref.load %y[%c0, %j] ; %n0 = arith.addf %y0, %r0 ; memref.store %n0, %y[%c0, %j]
      ...
    }
    ```
    With K = 512 (2 KiB) instead: `step (%c1)` over N, and the K loop steps
    by 128 with 8 accumulators on consecutive vectors of one weight row.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"0",
           "f32 lanes of the host's vectors (0: leave the matmuls alone)">,
    Option<"minParallelWork", "min-parallel-work", "int64_t",
           /*default=*/"262144",
           "Fewest multiply-adds (M*N*K) for which the output tiles run as a "
           "parallel loop">,
    Option<"computeUnits", "compute-units", "int64_t", /*default=*/"1",
           "Threads the parallel loops run on (the [K, N] decode chunks are "
           "split evenly over them)">,
    Option<"maxStreamRows", "max-stream-rows", "int64_t", /*default=*/"16",
           "Most rows M for which a [K, N] matmul streams its weight by "
           "column chunks (more: output tiles over the whole of K)">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "The host has AVX512-BF16: [N, K] tiles of bf16 x bf16 use "
           "x86vector.avx512.dot (vdpbf16ps) with 16-lane vectors">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::vector::VectorDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect", "::mlir::math::MathDialect",
    "::mlir::x86vector::X86VectorDialect",
  ];
}

def PootCPUOutlineLoops : Pass<"poot-cpu-outline-loops", "::mlir::ModuleOp"> {
  let summary = "Give every top-level loop nest of a big step its own function";
  let description = [{
    Runs after bufferization and `convert-linalg-to-loops`. A decoder step is
    one function with hundreds of loop nests, and LLVM's loop passes over one
    function grow faster than its loop count (IndVarSimplify took 73% of
    `O3` on an 8-layer step, ~5x per doubling of the layers). In every
    function with at least `min-loops` top-level loop nests (`scf.for`,
    `scf.parallel`, `scf.forall`), each nest is outlined into a private
    function `<name>_loop<i>` (the constants and constant globals it uses
    cloned in so loop bounds stay constant; every other value it uses an
    argument, remapped by walking the nest, not a value's use list: linear
    in the nests) marked `passthrough = ["noinline"]`, and called in place: LLVM then optimizes
    one loop nest per function, and compile time is linear in the layers.
    A nest whose function would equal an earlier one (same type, same body
    printed with local names: another layer's copy on other buffers) calls
    the earlier one instead, so each distinct nest is compiled once. The
    function left holding the calls is glue in one huge block, where LLVM's
    SelectionDAG instruction selector is superlinear (15 of 16 s for a
    16-layer step): it gets `passthrough = ["noinline", "optnone"]` (the fast
    instruction selector; there are no loops left in it to optimize).

    Before:
    ```mlir
    func.func @step(%a: memref<64xf32>) {
      scf.for %i = %c0 to %c64 step %c1 { ... %a ... }
    }
    ```
    After:
    ```mlir
    func.func @step(%a: memref<64xf32>) {
      call @step_loop0(%a) : (memref<64xf32>) -> ()
    }
    func.func private @step_loop0(%a: memref<64xf32>) attributes {passthrough = ["noinline"]} {
      %c0 = arith.constant 0 : index ...
      scf.for %i = %c0 to %c64 step %c1 { ... }
    }
    ```
  }];
  let options = [
    Option<"minLoops", "min-loops", "int64_t", /*default=*/"16",
           "Outline only in functions with at least this many top-level loop "
           "nests (a small step stays one function)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

def PootCPULowerAllocaScopes
    : Pass<"poot-cpu-lower-alloca-scopes", "::mlir::ModuleOp"> {
  let summary = "memref.alloca_scope as stacksave/stackrestore around its body";
  let description = [{
    `convert-scf-to-openmp` wraps every parallel loop body in a
    `memref.alloca_scope`. Only `finalize-memref-to-llvm` lowers a scope, and
    only while its region is a single block; the CPU pipeline lowers the
    loops inside the scope to control flow before that. This pass lowers the
    scopes while they are still one block, as the memref-to-llvm lowering
    would: the body inlined between `llvm.intr.stacksave` and
    `llvm.intr.stackrestore`, so the allocas of one iteration are freed
    before the next.

    Before:
    ```mlir
    memref.alloca_scope {
      %a = memref.alloca() : memref<16xf32>
      ...
    }
    ```
    After:
    ```mlir
    %sp = llvm.intr.stacksave : !llvm.ptr
    %a = memref.alloca() : memref<16xf32>
    ...
    llvm.intr.stackrestore %sp : !llvm.ptr
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def PootCPUApproximateVectorMath
    : Pass<"poot-cpu-approximate-vector-math", "::mlir::ModuleOp"> {
  let summary = "Polynomial approximations for math ops on vectors";
  let description = [{
    The CPU attention kernel (and vectorized linalg) computes `math.exp` and
    `math.tanh` on vectors. LLVM has no vector libm, so it would call `expf`
    once per lane; this pass applies upstream's polynomial approximations
    (`populateMathPolynomialApproximationPatterns`: f32 exp, tanh, log, erf,
    ...) to math ops whose result is a vector and leaves scalar math (a libm
    call, numpy's numerics) as it is. The approximations are within a few
    f32 ulp and keep exp(-inf) = 0 and NaN.

    Before:
    ```mlir
    %e = math.exp %x : vector<16xf32>
    %s = math.exp %y : f32
    ```
    After:
    ```mlir
    %e = ... arith.mulf / arith.addf / arith.bitcast ... : vector<16xf32>
    %s = math.exp %y : f32
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect",
  ];
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

def PootFuseElementwiseChains : Pass<"poot-fuse-elementwise-chains"> {
  let summary = "Fuse elementwise linalg.generic ops into their consumers, bounded";
  let description = [{
    Runs on the linalg form of a step, before bufferization. An elementwise
    op (a `linalg.generic` with only parallel loops) with one use is fused
    into the `linalg.generic` that uses it (upstream's elementwise fusion
    patterns, `linalg::populateElementwiseOpsFusionPatterns`): one loop nest
    computes both, the intermediate value never reaches memory, and every
    later pass sees one op instead of two. A producer with several uses
    stays (fusing would compute it twice).

    A fused op's payload is capped at `max-body-ops` operations: fusing a
    chain one op at a time clones the growing payload each time, so an
    unbounded chain of N ops costs N^2 (upstream's
    `linalg-fuse-elementwise-ops` took ~150 s on a 10,000-op chain); capped,
    it costs N x `max-body-ops`.

    By default only elementwise consumers take a producer (the CPU: a
    matmul or reduction keeps reading a computed operand once, where fused
    into it the producer would run once per reduction step of every
    output). `into-reductions` fuses into any consumer, and
    `propagate-reshapes` adds the rest of upstream's
    `linalg-fuse-elementwise-ops` (reshapes folded by expanding the ops they
    feed, expand_shape bubbled up, constant folding, canonicalization): the
    GPU step pipelines, where a decode GEMV thread recomputes its fused
    prologue (an RMS norm's scale) from registers instead of reading a
    buffer another launch wrote.

    Before:
    ```mlir
    %1 = linalg.generic {iterator_types = ["parallel"]} ins(%x) outs(%e0) {
      ^bb0(%a: f32, %o: f32):
        %t = math.tanh %a : f32
        linalg.yield %t : f32 } -> tensor<64xf32>
    %2 = linalg.generic {iterator_types = ["parallel"]} ins(%1, %h) outs(%e1) {
      ^bb0(%a: f32, %b: f32, %o: f32):
        %m = arith.mulf %a, %b : f32
        linalg.yield %m : f32 } -> tensor<64xf32>
    ```
    After:
    ```mlir
    %2 = linalg.generic {iterator_types = ["parallel"]} ins(%x, %h) outs(%e1) {
      ^bb0(%a: f32, %b: f32, %o: f32):
        %t = math.tanh %a : f32
        %m = arith.mulf %t, %b : f32
        linalg.yield %m : f32 } -> tensor<64xf32>
    ```
  }];
  let options = [
    Option<"maxBodyOps", "max-body-ops", "int64_t", /*default=*/"64",
           "Most operations a fused op's payload may hold">,
    Option<"intoReductions", "into-reductions", "bool", /*default=*/"false",
           "Also fuse into consumers with reduction loops">,
    Option<"propagateReshapes", "propagate-reshapes", "bool",
           /*default=*/"false",
           "Also fold reshapes into the ops around them, fold constants and "
           "canonicalize (the rest of linalg-fuse-elementwise-ops)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def PootUntieSharedTensors : Pass<"poot-untie-shared-tensors"> {
  let summary = "Give every use of a tensor.empty or tensor constant its own op";
  let description = [{
    Runs right before one-shot bufferization. CSE merges the `tensor.empty`
    ops of one type into one, so a chain of N elementwise ops all name the
    same destination, and merges equal tensor constants, so every `x * 0.5`
    of the chain reads one `dense<0.5>`. One-shot bufferization's in-place
    analysis walks every use of such a shared value for each write it
    checks: cubic in N for the empties, quadratic for the constants (an
    elementwise chain of 1,000 ops took 90 s to bufferize, 10,000 over
    200 s). Neither has an identity to keep: an empty tensor has no
    contents, and equal constants bufferize to one global anyway. So each
    use but the first gets a clone of the op, right before its user. (A
    function argument read by thousands of ops still costs the analysis
    time quadratic in its reads: 3,000 reads of one argument take ~15 s.
    A step's arguments are read a few times each, once per layer at most.)

    Before:
    ```mlir
    %e = tensor.empty() : tensor<64xf32>
    %h = arith.constant dense<5.0e-01> : tensor<f32>
    %1 = linalg.generic ... ins(%x, %h : ...) outs(%e : tensor<64xf32>)
    %2 = linalg.generic ... ins(%1, %h : ...) outs(%e : tensor<64xf32>)
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<64xf32>
    %h = arith.constant dense<5.0e-01> : tensor<f32>
    %1 = linalg.generic ... ins(%x, %h : ...) outs(%e : tensor<64xf32>)
    %e_0 = tensor.empty() : tensor<64xf32>
    %h_1 = arith.constant dense<5.0e-01> : tensor<f32>
    %2 = linalg.generic ... ins(%1, %h_1 : ...) outs(%e_0 : tensor<64xf32>)
    ```
  }];
}

def PootCPUPlanArena : Pass<"poot-cpu-plan-arena", "::mlir::ModuleOp"> {
  let summary = "Place a CPU step's temporaries in one arena the runtime allocates";
  let description = [{
    Runs on buffers, after `buffer-results-to-out-params` and before the
    deallocation pipeline. In every function nothing calls (the step and its
    validation prologue), each `memref.alloc` of static size, identity
    layout and whole-byte elements, not inside a parallel loop and not
    flowing into a region's results or a return, becomes a `memref.view` at
    a fixed offset of a new last argument `memref<Nxi8>` (marked
    `poot.arena`). Offsets are placed by first fit over live ranges (the
    positions in the function body of the allocation and the last use of
    the buffer or its views; 64-byte aligned; the GPU program's placement,
    ArenaPlacement.h), so the arena is about the peak of the live bytes. The
    module records each arena's size in `poot.arena_bytes`.

    The runtime allocates the arena before the step runs: out of memory is a
    typed error there, and nothing has run (a `malloc` in the compiled code
    could fail half-way through writing the state, and its result was not
    checked). An arena larger than `max-bytes` (when not 0) is refused:
    `BufferBytes:`.

    Before:
    ```mlir
    func.func @step(%x: memref<64xf32>, %out: memref<64xf32>) {
      %t = memref.alloc() : memref<64xf32>
      ... writes %t, reads %t into %out ...
    }
    ```
    After:
    ```mlir
    module attributes {poot.arena_bytes = {step = 256 : i64}} {
      func.func @step(%x: memref<64xf32>, %out: memref<64xf32>,
                      %arena: memref<256xi8>) {
        %c0 = arith.constant 0 : index
        %t = memref.view %arena[%c0][] : memref<256xi8> to memref<64xf32>
        ...
      }
    }
    ```
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"0",
           "Largest arena in bytes (0: no limit)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def PootDropAliasedResults
    : Pass<"poot-drop-aliased-results", "::mlir::ModuleOp"> {
  let summary = "Drop the results that return an argument's buffer, recording which";
  let description = [{
    Runs right after one-shot bufferization. A state written in place comes
    back as its argument's own buffer: returning it again would make
    `buffer-results-to-out-params` copy the whole state into a fresh
    out-parameter every step. On every function without callers (the
    entry points: upstream `drop-equivalent-buffer-results` skips public
    functions), such a result is removed from the signature, and the module
    records, per function, one entry per original result: the index of the
    argument it was, or -1 for a result that stays. The runtime reads the
    new state from the argument it passed (the manifest says which).

    Before:
    ```mlir
    func.func @step(%k: memref<8x4xf32>, %u: memref<1x4xf32>)
        -> (memref<8x4xf32>, memref<1x4xf32>) {
      ...
      return %k, %o : memref<8x4xf32>, memref<1x4xf32>
    }
    ```
    After:
    ```mlir
    module attributes {poot.result_aliases = {step = array<i64: 0, -1>}} {
      func.func @step(%k: memref<8x4xf32>, %u: memref<1x4xf32>) -> memref<1x4xf32> {
        ...
        return %o : memref<1x4xf32>
      }
    }
    ```
  }];
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
  let options = [
    Option<"every", "every", "bool", /*default=*/"false",
           "Turn every memref.copy into linalg.copy (a GPU step: copies run "
           "as kernels, the host only launches)">,
  ];
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
    itself stays (the host program launches the kernels). The kernels of
    each schedule (names, launches, workgroups, workgroup memory, body) are
    its `ScheduleInfo` in the schedule registry
    (lib/Conversion/AttentionKernels/Schedules/, docs/attention-schedules.md);
    this pass emits what the request's schedule lists. One emitter
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

    `tiled_prefill_mma` (two-byte prefill on NVIDIA tensor cores,
    TiledPrefillMmaKernel.h) emits one `prefill_mma` kernel of 4 warps whose
    products are `nvvm.mma.sync` m16n8k16 (with `vector` and `llvm` ops
    packing the two-byte operands); it is refused for any target but `nvvm`.
    `wide_head_mma` (two-byte wide-head decode on tensor cores,
    WideHeadMmaKernel.h) emits `wide_head_mma` (the W warps of each 16-row
    m tile split S over the key's width and P V over the value's channels;
    its i32 workgroup buffer 16-byte aligned through the attribution's
    `llvm.align`) and, when split, `combine`; refused for any target but
    `nvvm` as well.

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {request = #poot.attention_request<...>, scale = 0.125 : f64} : ...
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
    Option<"target", "target", "::mlir::poot::DeviceTarget",
           /*default=*/"::mlir::poot::DeviceTarget::SPIRV",
           "How kernels declare workgroup memory", [{::llvm::cl::values(
             clEnumValN(::mlir::poot::DeviceTarget::SPIRV, "spirv",
                        "memref.alloc in space 3, spirv.entry_point_abi"),
             clEnumValN(::mlir::poot::DeviceTarget::NVVM, "nvvm",
                        "gpu.func workgroup attributions"),
             clEnumValN(::mlir::poot::DeviceTarget::ROCDL, "rocdl",
                        "gpu.func workgroup attributions"))}]>,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::spirv::SPIRVDialect",
    "::mlir::vector::VectorDialect",
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
    %o = poot.attention %q, %k, %v {request = #poot.attention_request<...>, scale = 0.125 : f64} : ...
    ```
    After:
    ```mlir
    %qb = bufferization.to_buffer %q : ... ; %out = memref.alloc() : memref<2048xf32>
    scf.for %wg = ... { scf.for %lane = ... { <scan> } scf.for %lane = ... { <combine> } }
    %o = bufferization.to_tensor %out restrict writable : ...
    ```

    A request with the CPU's own schedule (`schedule = cpu_tiled`) gets the
    CPU loop nest instead (CpuAttentionKernel.h): an `scf.parallel` over
    work items (batch row, KV group, query block, split), each running its
    group's n_rep heads over key blocks with `vector` loads, FMAs and
    reductions of `lanes` floats, the online softmax per key block (a vector
    `math.exp`), and, when split, a parallel combine over rows:
    ```mlir
    scf.parallel (%item) = (%c0) to (%items) step (%c1) {
      memref.alloca_scope { ... vector.fma ... vector.reduction <add> ... math.exp ... }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
  ];
}

def PootRecordFusedOps : Pass<"poot-record-fused-ops", "::mlir::ModuleOp"> {
  let summary = "Record what the planner made of each fused op, for manifests";
  let description = [{
    Runs after `poot-plan-attention` in the CPU and GPU pipelines. Numbers
    every planned `poot.attention`, `poot.block_topk` and
    `poot.selected_attention` in program order (`poot.fused = i`, carried on
    to the attention call and its launches) and writes one JSON record per op
    on the module: its kind, its request's parameters (integers as integers,
    enums by keyword), its scale and its source location. A compile reads
    the record after the pipeline (the GPU's `poot-gpu-serialize-program`
    moves it into the program, with the op's launches and scratch bytes);
    nobody parses printed attributes. A fused op without a planned request
    is an error.

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {request = #poot.attention_request<
        batch = 1, ..., schedule = streaming, lanes = 64, ...>, scale = 0.125 : f64}
        : ... loc("model.py":12:5)
    ```
    After:
    ```mlir
    module attributes {poot.fused_ops = ["{\"location\":\"model.py:12:5\",
        \"op\":\"attention\",\"request\":{\"batch\":1,...},\"scale\":0.125}"]} {
      %o = poot.attention %q, %k, %v {poot.fused = 0 : i64, request = ...}
    ```
  }];
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
    The op's `request` is copied to the call as `poot.request`.

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {request = #poot.attention_request<...>, scale = 0.125 : f64} : ...
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

//===----------------------------------------------------------------------===//
// Whole steps on a GPU (the host program + its kernels)
//===----------------------------------------------------------------------===//

def PootGPUAttentionLaunches
    : Pass<"poot-gpu-attention-launches", "::mlir::ModuleOp"> {
  let summary = "Replace each attention call by its generated kernels' launches";
  let description = [{
    Runs after bufferization in a whole-step GPU pipeline. Each
    `poot.attention` became a `func.call` of flat buffers carrying its
    request and its kernels (`poot-generate-attention-kernels`, then
    `poot-attention-to-calls`); this pass launches those kernels over the
    same buffers: the planner's grid and `lanes` threads, and for a split
    schedule a plan-local scratch buffer, the partials launch and the
    combine launch (one workgroup per row, folded over the X limit). The
    sparse indexer's `poot.block_topk` and `poot.selected_attention` calls
    launch the same way from their own requests; a call whose request is
    none of the three is an error, not a guess. A call numbered by
    `poot-record-fused-ops` (`poot.fused = i`) gives its number to its
    launches, and op i's record in `poot.fused_ops` gets its
    `scratch_bytes` (0 unless split).

    Before:
    ```mlir
    call @poot_offload_0(%q, %k, %v, %out) {poot.request = #poot.attention_request<
        ..., lanes = 64, splits = 1, grid_x = 8, grid_y = 1>,
        poot.kernels = [@poot_attention_0::@stream]} : (...) -> ()
    ```
    After:
    ```mlir
    gpu.launch_func @poot_attention_0::@stream blocks in (%c8, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%q : memref<512xf32>, ...)
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def PootGPUSplitReductions
    : Pass<"poot-gpu-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "Split the long reductions of narrow linalg ops (decode matmuls, norms) over more threads";
  let description = [{
    Runs on linalg on tensors in a whole-step GPU pipeline, before
    bufferization. Every reduction is first shaped for upstream
    `linalg::splitReduction`, which reads only permutation maps and one
    reduction loop: a keepdim output (`(d0, d1) -> (d0, 0)`, an RMSNorm's
    sum of squares) leaves its unit dimensions (the op writes a
    `tensor.collapse_shape` of its init, its result is expanded back), and
    adjacent reduction loops read as one run by every operand (the output
    projection's heads x head_dim) fold into one (upstream
    `collapseOpIterationDims`). Then a linalg op with one reduction loop,
    projected-permutation maps, static shapes, an f32 init (f32, and bf16/f16
    inputs under the 16-bit contract) -- or a max/min combiner at any type
    (exact in any order: an argmax's max over bf16 logits and its
    first-index min over i32) -- and fewer threads than
    `min-threads` (its parallel iterations, over 4 -- 8 for 16-bit inputs --
    when its last output dimension is a multiple of it:
    poot-gpu-vectorize-columns gives each thread that many columns, 16 bytes
    of weights) is rewritten by `linalg::splitReduction` with the
    largest power-of-two ratio that divides the reduction, brings the threads
    to `min-threads` and leaves each thread at least `min-chunk` products
    (a decode GEMV streams its weights only with ~64 KB of loads in flight
    an SM: 131072 threads of one 16-byte load per unrolled step): partial
    sums over an extra leading parallel dimension, then a final reduction
    of `ratio` terms, interchanged (upstream `interchangeGenericOp`) so that
    its split loop is innermost: its threads run over the outputs, not one
    thread over everything. (The summation order changes: f32 results move
    within rounding.)

    With `batch-invariant` the ratio is chosen for one row: the op's rows
    (the loops poot-gpu-jam-rows jams -- parallel, not the last, not indexed
    by the weight -- or every parallel loop where each output reduces data
    of its own, as a norm's sum of squares does) count as 1 and the partials
    are not capped by the rows, so a row's chunks and the order its sums
    are added in are the same at any batch (issue 24: a request's output is
    bit-identical alone or batched). The cost: a batched op is split as far
    as one row would be, writing rows x ratio partials where the default
    would split less or not at all.

    Before:
    ```mlir
    %o = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x1024xf32>)
                       outs(%init : tensor<1x1024xf32>) -> tensor<1x1024xf32>
    ```
    After (256 threads of 4 columns; ratio min(131072 / 256, 4096 / 32) = 128):
    ```mlir
    %p = linalg.generic {iterator_types = ["parallel", "parallel",
           "parallel", "reduction"]} ... -> tensor<128x1x1024xf32>
    %o = linalg.generic {iterator_types = ["parallel", "parallel",
           "reduction"]} ins(%p) outs(%init) -> tensor<1x1024xf32>
    ```
  }];
  let options = [
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"131072",
           "Threads to reach (a device's threads in flight)">,
    Option<"minChunk", "min-chunk", "int64_t", /*default=*/"32",
           "Products each thread still sums (a shorter chunk costs more in "
           "the final reduction than it gains)">,
    Option<"jamRows", "jam-rows", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.jamRows",
           "Rows poot-gpu-jam-rows will give one thread (its `max-rows`): "
           "threads are counted per group of jammed rows, and the partial "
           "sums of jammed ops are kept to a quarter of the shared input's "
           "bytes">,
    Option<"batchInvariant", "batch-invariant", "bool", /*default=*/"::mlir::poot::kDefaultDevice.batchInvariant",
           "Choose each ratio for one row: the op's rows (the loops "
           "jam-rows jams; every parallel loop where each output reduces "
           "data of its own, as a norm's) count as 1 and the partials are "
           "not capped, so a row's chunks and summation order do not depend "
           "on the batch (a batched op then writes rows x the partials)">,
    Option<"mmaRows", "mma-rows", "int64_t", /*default=*/"0",
           "NVVM with tensor cores: a two-byte matmul with at least this many "
           "rows (MmaContraction.h) is marked for poot-gpu-mma-matmuls and "
           "split by its kernel's warps instead (0: none; never with "
           "batch-invariant)">,
    Option<"mmaStagedRows", "mma-staged-rows", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.mmaStagedRows",
           "Of the marked ops, those with at least this many rows and whole "
           "128-column tiles are marked for the staged kernel "
           "(`poot.mma_matmul = \"staged\"`), the others for the direct one "
           "(`\"direct\"`); 0: none staged">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def PootGPUMmaMatmuls
    : Pass<"poot-gpu-mma-matmuls", "::mlir::ModuleOp"> {
  let summary = "Run the marked two-byte matmuls as mma.sync kernels (tensor cores)";
  let description = [{
    Runs after bufferization in the NVVM whole-step pipeline, on the ops
    `poot-gpu-split-reductions` marked `poot.mma_matmul` (with `mma-rows`):
    a linalg op whose payload is the 16-bit contract's accumulation
    `out + extf(a) * extf(b)` (docs/sixteen-bit-contract.md), `b` a bf16/f16
    weight read directly, `a` any scalar expression without side effects
    (of inputs, loop indices, buffers from outside) that does not read
    along the weight's columns (a fused prologue, a gather of each row's
    last token), at least `mma-rows` rows, columns a multiple of 64 and the
    reduction of 256 (MmaContraction.h). A prologue (or an lhs not
    contiguous along k) is first computed once into a two-byte buffer of
    its own by an elementwise `linalg.generic` over the op's loops but the
    columns, the reduction last. Each becomes one `gpu.launch_func` of a generated
    kernel in the `poot_mma_matmuls` gpu.module, the one the mark names
    (MmaKernel.h). The direct kernel: a workgroup owns 64 columns
    (8 m16n8k16 tiles) of one batch index (a split's partial sums: grid z)
    and the rows of MmaWorkgroupShape. Up to 127 rows, 16-64 rows (1-4
    tiles) and its 4 warps each stream a quarter of the reduction of that
    weight slice once for all the rows in 16-byte loads (either layout:
    [N, K] or [K, N]) with f32 accumulators in registers, adding their sums
    through workgroup memory in a fixed order (3, 2, 1, 0: deterministic);
    from 128 rows (a prefill chunk) 2 or 4 warps take 64-row tiles of their
    own (over half or all of the reduction), so the weight fragments they
    share reach the SM once. The staged kernel (`"staged"`: from the
    device's `mma-staged-rows` rows, whole 128-column tiles): a workgroup
    owns 16-128 rows x 128 columns; each 32-deep step of the lhs and
    weight tiles is copied into workgroup memory by cp.async, 2-3 steps
    ahead of the one computed (3-4 buffers, 48 KB at most), and the warps
    read their fragments by ldmatrix (rows XOR-swizzled: no bank
    conflicts). Rows past the end are masked. A fill of the
    output (or of the whole buffer it views) just before the op is folded
    into the accumulators' start; then the sums' one elementwise consumer
    right after it (the rounding to bf16, a residual add, SiLU(gate) * up
    -- MmaEpilogue.h) runs in the kernel on the sums in registers, and the
    f32 buffer and the consumer's own kernel are gone. An op that no longer
    qualifies on buffers (a strided view) loses its mark and stays on the
    CUDA-core path.

    Before:
    ```mlir
    linalg.fill ins(%zero : f32) outs(%p : memref<16x16x4096xf32>)
    linalg.generic {indexing_maps = [(s, m, n, k) -> (m, s, k),
                                     (s, m, n, k) -> (n, s, k),
                                     (s, m, n, k) -> (s, m, n)], ...}
        ins(%x, %w : memref<16x16x256xbf16>, memref<4096x16x256xbf16>)
        outs(%p : memref<16x16x4096xf32>) attrs = {poot.mma_matmul = "direct"} {
      ^bb0(%a: bf16, %b: bf16, %o: f32):
        %0 = arith.extf %a : bf16 to f32
        %1 = arith.extf %b : bf16 to f32
        %2 = arith.mulf %0, %1 : f32
        %3 = arith.addf %o, %2 : f32
        linalg.yield %3 : f32
    }
    ```
    After:
    ```mlir
    gpu.launch_func @poot_mma_matmuls::@mma_matmul_0
        blocks in (%c1, %c64, %c16) threads in (%c128, %c1, %c1)
        args(%p_flat : memref<1048576xf32>, %w_flat : memref<16777216xbf16>,
             %x_flat : memref<65536xbf16>)
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def PootGPUPromoteAccumulators
    : Pass<"poot-gpu-promote-accumulators", "::mlir::func::FuncOp"> {
  let summary = "Carry a reduction loop's output element in a register, not through memory";
  let description = [{
    Runs on buffers after `convert-linalg-to-parallel-loops` in a whole-step
    GPU pipeline. An `scf.for` inside an `scf.parallel` (a kernel-to-be)
    whose body's only store writes a
    loop-invariant element of a loop-invariant memref, which the body also
    loads (and no other element of it) before the store, carries that value
    as an iteration argument instead: one load before the loop, one store
    after it. The loop's invariant code (index math a folded view left in
    the body) is hoisted first by upstream `moveLoopInvariantCode`, so such
    indices read as invariant. A body with nested regions or other side
    effects is left as it is.

    Before:
    ```mlir
    scf.for %k = %c0 to %c4096 step %c1 {
      %a = memref.load %x[%c0, %k] : memref<1x4096xf32>
      %b = memref.load %w[%k, %n] : memref<4096x1024xf32>
      %c = memref.load %out[%c0, %n] : memref<1x1024xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      memref.store %s, %out[%c0, %n] : memref<1x1024xf32>
    }
    ```
    After:
    ```mlir
    %c0v = memref.load %out[%c0, %n] : memref<1x1024xf32>
    %r = scf.for %k = %c0 to %c4096 step %c1 iter_args(%c = %c0v) -> (f32) {
      ...
      %s = arith.addf %c, %p : f32
      scf.yield %s : f32
    }
    memref.store %r, %out[%c0, %n] : memref<1x1024xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def PootGPUFoldFills
    : Pass<"poot-gpu-fold-fills", "::mlir::func::FuncOp"> {
  let summary = "Start a reduction from its fill's value instead of a separate fill kernel";
  let description = [{
    Runs on buffers after `poot-gpu-promote-accumulators` in a whole-step
    GPU pipeline. A top-level `scf.parallel` whose body is one store of a
    value defined outside it (a lowered `linalg.fill`) is folded into the
    next top-level op that touches its buffer (or a view of it), when that
    op is an `scf.parallel` whose body touches the buffer itself only
    directly (not in a nested region): one load (the accumulator's start),
    before any store, and stores at the load's indices, over exactly the
    filled elements, each once. Two loops cover the same elements when,
    index by index, both use the same constant or terms of the same extent:
    an induction variable from 0 in steps of 1, or a disjoint
    `affine.linearize_index` of such variables by exactly their trip counts
    (a fill over 512 and a reduction over 8 x 64 writing the flat index of
    (head, d)), every variable of each loop used once. Each reduction
    iteration then reads an element the fill wrote (a value the same for
    all) and overwrites it, so the load becomes the fill's value and the
    fill (one launch and one pass over the buffer) goes. Anything else
    between them that uses the buffer keeps both.

    Before:
    ```mlir
    scf.parallel (%n) = (%c0) to (%c256) step (%c1) {
      memref.store %zero, %out[%c0, %n] : memref<1x256xf32>
    }
    scf.parallel (%n) = (%c0) to (%c256) step (%c1) {
      %0 = memref.load %out[%c0, %n] : memref<1x256xf32>
      %1 = scf.for %s = %c0 to %c16 step %c1 iter_args(%acc = %0) -> (f32) { ... }
      memref.store %1, %out[%c0, %n] : memref<1x256xf32>
    }
    ```
    After:
    ```mlir
    scf.parallel (%n) = (%c0) to (%c256) step (%c1) {
      %1 = scf.for %s = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) { ... }
      memref.store %1, %out[%c0, %n] : memref<1x256xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def PootGPUElideLayoutCopies
    : Pass<"poot-gpu-elide-layout-copies", "::mlir::func::FuncOp"> {
  let summary = "A copy that keeps every element at its offset becomes a view";
  let description = [{
    A whole step moves values between layouts that differ only in unit
    dimensions or in how a flat index is split: the fused attention's flat
    output read as the output projection's `[1, 1, heads, d]` lhs, `[b, h,
    1, d]` viewed as `[b, 1, h, d]`. After bufferization each such move is
    a copy kernel (a launch, and a pass over the values) although every
    element keeps its flat offset. This pass finds a top-level loop whose
    body loads one element and stores it unchanged, where both buffers have
    static identity layouts, the same element type and count, the store
    covers its whole destination (each index an induction variable from 0
    over the dimension's size, or 0 in a unit dimension) and the two flat
    offsets are the same linear function of the induction variables. When
    the destination is a fresh allocation and nothing touches the source
    after the copy (so the two can share memory), the destination becomes
    a reshape of the source (`memref.collapse_shape` / `expand_shape`) and
    the copy goes.

    Before:
    ```mlir
    %dst = memref.alloc() : memref<1x1x32x128xbf16>
    scf.parallel (%h, %d) = (%c0, %c0) to (%c32, %c128) step (%c1, %c1) {
      %i = affine.linearize_index disjoint [%h, %d] by (32, 128) : index
      %v = memref.load %src[%i] : memref<4096xbf16>
      memref.store %v, %dst[%c0, %c0, %h, %d] : memref<1x1x32x128xbf16>
    }
    ```
    After:
    ```mlir
    %dst = memref.expand_shape %src [[0, 1, 2, 3]] output_shape [1, 1, 32, 128]
        : memref<4096xbf16> into memref<1x1x32x128xbf16>
    ```
  }];
}

def PootGPUFuseEpilogues
    : Pass<"poot-gpu-fuse-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Run an elementwise consumer of a reduction kernel in the reduction's own iterations";
  let description = [{
    Runs on buffers after `poot-gpu-fold-fills`, before
    `poot-gpu-jam-rows` and `poot-gpu-vectorize-columns`, in a whole-step
    GPU pipeline. A BF16 decode matmul ends in three kernels: the final sum
    of its split partials (f32), the rounding of those sums to bf16, and
    often a copy into the heads' layout; a residual add is another. Each is
    a launch and a pass over the values. A top-level `scf.parallel` that
    holds a reduction loop (an `scf.for` with iteration arguments) takes
    the next top-level `scf.parallel` into its body when: only allocations
    and pure ops lie between them (moved before it); the two have the same
    constant bounds and steps; the consumer is elementwise (loads, stores
    and pure ops, no nested regions); it writes nothing the producer reads
    or writes and reads what the producer writes only from the very same
    buffers (only distinct allocations are known apart); and each such
    load reads exactly the element its own iteration stored (the same index
    values after CSE of the merged body, no write in between): those loads
    become the stored values. Repeated while the next loop qualifies. The
    producer's stores stay, except those to an allocation nothing reads any
    more (its stores and the allocation go: the canonicalizer's dead
    allocation pattern would miss them once they are vector stores). Nothing is computed differently.

    Before:
    ```mlir
    scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
      %i = affine.linearize_index disjoint [%h, %d] by (8, 64) : index
      %s = scf.for %p = %c0 to %c16 step %c1 iter_args(%a = %zero) -> (f32) { ... }
      memref.store %s, %sum[%c0, %i] : memref<1x512xf32>
    }
    scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
      %i = affine.linearize_index disjoint [%h, %d] by (8, 64) : index
      %v = memref.load %sum[%c0, %i] : memref<1x512xf32>
      %b = arith.truncf %v : f32 to bf16
      memref.store %b, %q[%c0, %h, %c0, %d] : memref<1x8x1x64xbf16>
    }
    ```
    After:
    ```mlir
    scf.parallel (%h, %d) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
      %i = affine.linearize_index disjoint [%h, %d] by (8, 64) : index
      %s = scf.for %p = %c0 to %c16 step %c1 iter_args(%a = %zero) -> (f32) { ... }
      memref.store %s, %sum[%c0, %i] : memref<1x512xf32>
      %b = arith.truncf %s : f32 to bf16
      memref.store %b, %q[%c0, %h, %c0, %d] : memref<1x8x1x64xbf16>
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def PootGPUJamRows
    : Pass<"poot-gpu-jam-rows", "::mlir::func::FuncOp"> {
  let summary = "Give each thread of a batched decode matmul several rows of its columns, so a weight element is loaded once for all of them";
  let description = [{
    Runs on buffers after `poot-gpu-fold-fills`, before
    `poot-gpu-vectorize-columns`, in a whole-step GPU pipeline. A decode
    matmul over B rows (`[B, K] x [K, N]`, the serving batch) is lowered
    one thread per (row, column): every row's thread loads the same weight
    element, so the weights are read B times (from L2 at best) and a B-row
    step costs about B single-row steps. For a top-level `scf.parallel`
    whose body holds a reduction loop (an `scf.for` with iteration
    arguments), a dimension other than the last (the columns) that runs
    0..M in steps of 1 is jammed when some load inside a reduction loop
    does not depend on it (the weight, shared by the rows) while depending
    on that loop's induction variable (it is streamed) and every nested
    loop's bounds are independent of it: the dimension runs over M / R
    groups, where R is the largest divisor of M up to `max-rows`, and each
    iteration runs its R rows as an `scf.for` that upstream
    `loopUnrollJamByFactor` unrolls and jams, so the reduction loop carries
    R accumulators and its body holds R copies of the row's work; then CSE
    merges the copies' identical loads (the weight, its conversion to f32,
    its index math). The arithmetic is unchanged per element (each row's
    sum runs in the same order): results are bit-identical.
    `poot-gpu-split-reductions` counts threads with the same rows jammed
    (`jam-rows` there).

    Before (16 rows, 64 splits of a [16, 4096] x [4096, 1024] bf16 matmul):
    ```mlir
    scf.parallel (%s, %m, %n) = (%c0, %c0, %c0) to (%c64, %c16, %c1024) step (%c1, %c1, %c1) {
      %0 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %cst) -> (f32) {
        %i = affine.linearize_index disjoint [%s, %k] by (64, 64) : index
        %a = memref.load %x[%m, %c0, %i] : memref<16x1x4096xbf16>
        %b = memref.load %w[%i, %n] : memref<4096x1024xbf16>
        ... (extf, mulf, addf)
      }
      memref.store %0, %p[%s, %m, %c0, %n] : memref<64x16x1x1024xf32>
    }
    ```
    After (`max-rows=8`: two groups of 8 rows):
    ```mlir
    scf.parallel (%s, %g, %n) = (%c0, %c0, %c0) to (%c64, %c2, %c1024) step (%c1, %c1, %c1) {
      %m0 = arith.muli %g, %c8 : index
      %m1 = arith.addi %m0, %c1 : index
      ...
      %0:8 = scf.for %k = %c0 to %c64 step %c1 iter_args(%a0 = %cst, ..., %a7 = %cst) -> (f32, ...) {
        %b = memref.load %w[%i, %n] : memref<4096x1024xbf16>   // once
        %x0 = memref.load %x[%m0, %c0, %i] ... %x7 = memref.load %x[%m7, %c0, %i]
        ... (8 products and sums)
      }
      memref.store %0#0, %p[%s, %m0, %c0, %n] ... memref.store %0#7, %p[%s, %m7, %c0, %n]
    }
    ```
  }];
  let options = [
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.jamRows",
           "Most rows one thread computes together (1: a row a thread)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def PootGPUVectorizeColumns
    : Pass<"poot-gpu-vectorize-columns", "::mlir::func::FuncOp"> {
  let summary = "Give each thread of a reduction kernel `width` consecutive output columns, as vectors, with its reduction loop unrolled";
  let description = [{
    Runs on buffers after `poot-gpu-promote-accumulators` in a whole-step
    GPU pipeline, before `poot-gpu-host-to-parallel`. A decode matmul's
    kernel is a top-level `scf.parallel` whose threads each sum a column's
    products in a serial loop, one 4-byte load per step: too few bytes in
    flight to stream the weights. For a top-level loop that holds a
    reduction (an `scf.for` with iteration arguments) and whose last
    dimension runs 0..N (N a multiple of `width`), each iteration takes
    `width` consecutive values of that dimension instead (`2 x width` when
    every load inside its reduction loops reads 16-bit elements: bf16/f16
    weights under the 16-bit contract, whose accumulators are f32, so the
    weight loads stay 16 bytes; only with `vector-memory`: SPIR-V vectors
    past 4 lanes need Vector16; a group is `width x element bytes` aligned): every load and
    store indexed by it in the last position (directly, or through an
    `affine.linearize_index` whose last term it is, over a basis of whole
    groups) becomes a `vector.load`/`vector.store` of `width` elements with
    `width x 4`-byte alignment (32-bit elements; the buffer's static strides
    and offset must keep each group aligned — every whole-step buffer starts
    256-byte aligned), values computed from them become vectors
    (elementwise arith/math ops), uniform values (the activation `x[k]`)
    stay scalar and are broadcast. Then, in every top-level loop holding a
    reduction, the innermost reduction loops are unrolled `unroll` times by
    upstream `loopUnrollByFactor` (a remainder loop when the trip count is
    not a multiple), so several independent loads are in flight per
    thread. A loop whose body uses the column index any other way, or has
    other region ops depending on it, is left scalar (still unrolled).
    With `vector-memory=false` (the SPIR-V pipelines: upstream's
    vector.load lowering to SPIR-V bitcasts the element pointer to a vector
    pointer, which spirv-val refuses under logical addressing — "is not a
    logical pointer" — though lavapipe runs it) a group's load is `width`
    scalar loads assembled by `vector.from_elements` and its store `width`
    extracts and stores: the arithmetic is still a vector per thread, and
    adjacent lanes' loads are left for the driver to combine.

    Before:
    ```mlir
    scf.parallel (%s, %n) = (%c0, %c0) to (%c16, %c256) step (%c1, %c1) {
      %0 = memref.load %p[%s, %c0, %n] : memref<16x1x256xf32>
      %1 = scf.for %k = %c0 to %c128 step %c1 iter_args(%acc = %0) -> (f32) {
        %i = affine.linearize_index disjoint [%s, %k] by (16, 128) : index
        %a = memref.load %x[%c0, %i] : memref<1x2048xf32>
        %b = memref.load %w[%i, %n] : memref<2048x256xf32>
        %m = arith.mulf %a, %b : f32
        %r = arith.addf %acc, %m : f32
        scf.yield %r : f32
      }
      memref.store %1, %p[%s, %c0, %n] : memref<16x1x256xf32>
    }
    ```
    After (width 4, unroll 8; the loop body repeated 8 times):
    ```mlir
    scf.parallel (%s, %g) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
      %n = arith.muli %g, %c4 : index
      %0 = vector.load %p[%s, %c0, %n] {alignment = 16 : i64} : memref<16x1x256xf32>, vector<4xf32>
      %1 = scf.for %k = %c0 to %c128 step %c8 iter_args(%acc = %0) -> (vector<4xf32>) {
        ...
        %a = memref.load %x[%c0, %i] : memref<1x2048xf32>
        %b = vector.load %w[%i, %n] {alignment = 16 : i64} : memref<2048x256xf32>, vector<4xf32>
        %ab = vector.broadcast %a : f32 to vector<4xf32>
        %m = arith.mulf %ab, %b : vector<4xf32>
        %r = arith.addf %acc, %m : vector<4xf32>
        ...
      }
      vector.store %1, %p[%s, %c0, %n] {alignment = 16 : i64} : memref<16x1x256xf32>, vector<4xf32>
    }
    ```
  }];
  let options = [
    Option<"width", "width", "int64_t", /*default=*/"4",
           "Consecutive columns per thread (one vector load each)">,
    Option<"unroll", "unroll", "int64_t", /*default=*/"8",
           "Unroll factor of the innermost reduction loops (loads in flight)">,
    Option<"vectorMemory", "vector-memory", "bool", /*default=*/"true",
           "Groups load and store as one vector access (false: `width` "
           "scalar accesses assembled with vector.from_elements: the SPIR-V "
           "pipelines)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def PootGPUWarpReductions
    : Pass<"poot-gpu-warp-reductions", "::mlir::func::FuncOp"> {
  let summary = "Spread the reduction of a kernel with few threads over the lanes of a warp, combined by shuffles";
  let description = [{
    Runs on buffers after `poot-gpu-vectorize-columns`, before
    `poot-gpu-host-to-parallel`, on targets with a fixed warp (NVVM: 32).
    A top-level `scf.parallel` whose iterations each run a long reduction
    over few iterations in all (the final sum of a split decode matmul: 1024
    threads of 4 columns each summing 128 partials; a norm's sum over one
    row: one thread) is latency bound: a few threads per SM, each waiting on
    its own chain of loads. Where the loop has fewer than `min-threads`
    iterations, each iteration gets `L` lanes (a power of two <= `warp-size`
    and <= the reduction's trip count, enough to reach `min-threads`; the
    iterations x L a multiple of `warp-size`, so every warp is whole): a new
    last dimension of the loop, which `poot-gpu-host-to-parallel` maps
    fastest, so one iteration's lanes are adjacent lanes of one warp. Lane
    `l` runs iterations `l, l + L, ...` of every reduction loop (an `scf.for`
    whose iteration arguments are each a chain of one combiner: `addf`,
    `maximumf`, `minimumf`, `maxnumf`, `minnumf`; f32/f64, scalar or vector);
    an `addf` chain starts from its init on lane 0 and from -0.0 on the
    others; after the last reduction loop the lanes combine their partials
    by a butterfly of `gpu.shuffle xor` (offsets L/2 .. 1, width
    `warp-size`), and lane 0 alone runs the rest of the body (the epilogue
    and the stores). A loop whose reduction results are used any other way,
    or with other region ops or stores before its last reduction loop, is
    left as it is. The sum's order changes (a tree over lanes), as any
    parallel reduction's does.

    Before (1024 iterations, 16 trips of 8 loads):
    ```mlir
    scf.parallel (%n) = (%c0) to (%c1024) step (%c1) {
      %s = scf.for %i = %c0 to %c128 step %c8 iter_args(%a = %zero) -> (vector<4xf32>) {
        ... %a1 = arith.addf %x0, %a ... %a8 = arith.addf %x7, %a7
        scf.yield %a8 : vector<4xf32>
      }
      vector.store %s, %out[%c0, %col] : memref<1x4096xf32>, vector<4xf32>
    }
    ```
    After (`min-threads=16384`: 16 lanes an iteration):
    ```mlir
    scf.parallel (%n, %l) = (%c0, %c0) to (%c1024, %c16) step (%c1, %c1) {
      %init = arith.select %l == 0, %zero, %minus_zero : vector<4xf32>
      %s = scf.for %i = %l * 8 to %c128 step %c128 iter_args(%a = %init) ...
      %e0 = vector.extract %s[0] ... %x = gpu.shuffle xor %e0, %c8, %c32 ...
      ... (offsets 8, 4, 2, 1 per element, then vector.from_elements)
      scf.if %l == 0 {
        vector.store %sum, %out[%c0, %col] : memref<1x4096xf32>, vector<4xf32>
      }
    }
    ```
  }];
  let options = [
    Option<"warpSize", "warp-size", "int64_t", /*default=*/"32",
           "Lanes of one warp (a power of two >= 2)">,
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"16384",
           "Loops with fewer iterations get lanes until they reach this">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}
def PootGPUHostToParallel
    : Pass<"poot-gpu-host-to-parallel", "::mlir::func::FuncOp"> {
  let summary = "Leave the host only allocations, views and launches";
  let description = [{
    Runs after `convert-linalg-to-parallel-loops` and `fold-memref-alias-ops`
    in a whole-step GPU pipeline, before `convert-parallel-loops-to-gpu`:
    - a top-level `scf.for` (the scatter over a write map's tokens) becomes
      an `scf.parallel` when the lowering marked its iterations
      `poot.distinct_iterations` (a write map names each slot once: the
      binder checks it), and the row copy nested in it (under the row's
      bounds check) joins that loop, every element a thread; else it runs
      in a one-iteration loop;
    - a top-level `scf.if` whose then-block holds only scalar loads and
      arithmetic and `scf.parallel` loops with host-known bounds (a one-row
      write map's scatter: the unrolled loop leaves its bounds check on the
      host) is interchanged with its loops, `if c { x = f(); parallel i
      {..} }` -> `parallel i { if c { x = f(); .. } }`, so the condition is
      evaluated in the kernels;
    - scalar loads and arithmetic whose uses are all inside top-level loops
      (a clamped position, a loaded length) are recomputed inside them;
    - any other computation left on the host (zero-rank math) is wrapped in
      a one-iteration loop;
    - each top-level loop is flattened to one dimension and mapped onto
      blocks of `threads` threads (`#gpu.loop_dim_map`), guarded by the
      element count. A loop that needs more than `max-blocks` blocks (the
      device's grid X limit) gets `max-blocks` of them, each thread walking
      the rest in an `scf.for` of grid-sized strides, so every launch fits
      the device's grid.
    A value the host would still compute and use is an error.

    Before:
    ```mlir
    %p = memref.load %pos[] : memref<i32>
    %o = arith.index_cast %p : i32 to index
    scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c64) step (%c1, %c1) {
      ... memref.store %x, %k[%c0, %i, %o, %j] ...
    }
    ```
    After:
    ```mlir
    scf.parallel (%b) = (%c0) to (%c1) step (%c1) {
      scf.parallel (%t) = (%c0) to (%c128) step (%c1) {
        %l = ... %b * 128 + %t
        scf.if %l < 128 {
          %p = memref.load %pos[] ...   %i = %l / 64, %j = %l % 64
          ... memref.store %x, %k[%c0, %i, %o, %j] ...
        }
      } {mapping = [#gpu.loop_dim_map<processor = thread_x, ...>]}
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>]}
    ```
  }];
  let options = [
    Option<"threadsPerBlock", "threads", "int64_t", /*default=*/"128",
           "Threads per block of each elementwise kernel">,
    Option<"maxBlocks", "max-blocks", "int64_t",
           /*default=*/"::mlir::poot::kDefaultDevice.maxGridX",
           "Most blocks of one launch (the device's grid X limit, >= 1)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
}

def PootGPUCheckStepTypes
    : Pass<"poot-gpu-check-step-types", "::mlir::ModuleOp"> {
  let summary = "Refuse, as diagnostics, step values a GPU program cannot hold";
  let description = [{
    Runs first in every whole-step GPU pipeline (`poot-step-to-{spirv,nvvm,
    rocdl}`). A GPU step is a list of device buffers of known size, so every
    argument, result and intermediate tensor or memref of a step function
    must be ranked and statically shaped (a dynamic dimension is refused:
    "a dynamically shaped ..."), of integer or float elements (`index`,
    `complex` and other element types are refused with `DtypeLowering:`),
    and no larger than one device buffer: at most `max-buffer-bytes` bytes
    and, where set (SPIR-V: arrays are counted, and indexed, in 32 bits),
    at most `max-elements` elements (refused with `BufferBytes:`). Nothing is
    rewritten; without this check such steps aborted later passes.

    Before (refused, on SPIR-V):
    ```mlir
    func.func @step(%x: tensor<65536x65536xf32>) -> tensor<65536x65536xf32> {
      %0 = poot.exp %x : tensor<65536x65536xf32>
      return %0 : tensor<65536x65536xf32>
    }
    ```
    After: `error: BufferBytes: the step argument #0 holds 4294967296
    elements (17179869184 bytes); the device's buffers hold at most ...`.
  }];
  let options = [
    Option<"maxBufferBytes", "max-buffer-bytes", "int64_t",
           /*default=*/"::mlir::poot::kDefaultDevice.maxBufferBytes",
           "Largest single buffer in bytes">,
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"0",
           "Most elements of one buffer (0: no limit beyond the bytes)">,
  ];
}

def PootGPUSPIRVEntryABI
    : Pass<"poot-gpu-spirv-entry-abi", "::mlir::ModuleOp"> {
  let summary = "Give each outlined kernel its SPIR-V workgroup size";
  let description = [{
    `convert-gpu-to-spirv` needs `spirv.entry_point_abi` on every kernel;
    this copies each kernel's `known_block_size` (recorded by
    `gpu-kernel-outlining` from the launch's constant block size) into it.

    Before:
    ```mlir
    gpu.func @step_kernel(...) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
    ```
    After:
    ```mlir
    gpu.func @step_kernel(...) kernel attributes {known_block_size = array<i32: 128, 1, 1>,
        spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [128, 1, 1]>}
    ```
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

def PootGPUDependentLaunch
    : Pass<"poot-gpu-dependent-launch", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Let each kernel start while the one before it finishes (PDL)";
  let description = [{
    Hopper's programmatic dependent launch (sm_90 and up): a kernel launched
    with programmatic stream serialization may be scheduled before the
    kernel ahead of it in the stream has finished, so its launch and its
    workgroups' start overlap that kernel's tail instead of following it.
    Such a kernel must not touch memory the kernel ahead writes until it
    has run `griddepcontrol.wait` (which returns once every prerequisite
    grid has completed and its memory operations are visible). This pass
    puts that wait first in every kernel, then `griddepcontrol.
    launch_dependents`, which lets the kernel after it be scheduled as soon
    as every workgroup of this one has started. Waiting before anything
    else keeps every kernel's reads and writes ordered exactly as in plain
    stream order; what overlaps is launch latency and workgroup start-up.
    The runtime launches with the attribute only the kernels of an artifact
    compiled with this pass (`Device.dependent_launch`, recorded in the
    manifest); without the attribute the wait returns at once.

    Before:
    ```mlir
    gpu.func @step_kernel(%a: memref<4096xbf16>) kernel {
      %x = memref.load %a[%i] : memref<4096xbf16>
    ```
    After:
    ```mlir
    gpu.func @step_kernel(%a: memref<4096xbf16>) kernel {
      nvvm.griddepcontrol wait
      nvvm.griddepcontrol launch_dependents
      %x = memref.load %a[%i] : memref<4096xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def PootSPIRVBuildNonFinite
    : Pass<"poot-spirv-build-nonfinite", "::mlir::spirv::ModuleOp"> {
  let summary = "Build non-finite float constants from their bits";
  let description = [{
    naga (wgpu's shader translator) refuses a SPIR-V module with an
    infinite or NaN float literal ("Float literal is infinite"), and the
    kernels have them: the softmax's running maximum starts at -inf, a masked
    score is -inf. This rewrites every `spirv.Constant` of a float scalar or
    vector type with a non-finite element into an integer constant of the
    same width holding its bits and a `spirv.Bitcast` to the float type: the
    same value, which naga reads as an expression, not a literal. Raw Vulkan
    drivers fold the bitcast, so the pipelines run it for every client. A
    16-bit float (f16) is built as the f32 value's bits, bitcast, then
    `spirv.FConvert` to f16 (exact for infinities; NaN stays NaN): naga has
    no 16-bit integers to bitcast from.

    Before:
    ```mlir
    %ninf = spirv.Constant 0xFF800000 : f32
    ```
    After:
    ```mlir
    %bits = spirv.Constant -8388608 : i32
    %ninf = spirv.Bitcast %bits : i32 to f32
    ```
  }];
}

def PootGPUExpandIntDivisions
    : Pass<"poot-gpu-expand-int-divisions", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Expand integer floor/ceil divisions in kernels (only those)";
  let description = [{
    No GPU conversion legalizes `arith.floordivsi`, `arith.ceildivsi` or
    `arith.ceildivui`, and `lower-affine` makes them from affine index math.
    Upstream `arith-expand` rewrites them into plain arithmetic, but it also
    expands `arith.maximumf`/`minimumf` into compares and selects, which
    NVVM would otherwise emit as one `max.NaN.f32`: in the attention
    kernels' online softmax that added 14 predicates per lane and cost the
    long-context decode about a third of its speed on the H200. This pass
    applies only upstream's floor/ceil division patterns.

    Before:
    ```mlir
    %q = arith.floordivsi %a, %b : index
    ```
    After (schematically):
    ```mlir
    %d = arith.divsi %a, %b : index
    %fix = ... (the quotient minus one where the signs differ and a
           remainder is left)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def PootSPIRVBf16AsI16 : Pass<"poot-spirv-bf16-as-i16", "::mlir::ModuleOp"> {
  let summary = "Carry bf16 values as their 16 bits (i16) for SPIR-V";
  let description = [{
    Vulkan has no bfloat16 type a portable device reports, and upstream's
    SPIR-V type conversion turns a `memref<...xbf16>` into an array of f32
    with half as many elements: the kernel then reads two-byte data as
    four-byte floats. This pass first widens every arith op on bf16: it
    computes in f32 on extended operands and rounds its result back to
    bf16, one rounding per op as the oracle rounds (math functions were
    extended by upstream `math-extend-to-supported-types` before it). Then
    upstream's bf16 expansion patterns (those of `arith-expand{include-bf16}`)
    turn every bf16<->f32 conversion into integer bit operations with
    `arith.bitcast`s. What is
    left of bf16 only moves bits: loads, stores, constants, selects,
    loop-carried values, buffer types on the host and in kernel signatures.
    This pass rewrites all of them to i16 (the same bits): a bf16 memref
    becomes an i16 memref of the same shape, layout and memory space, a
    bf16 constant its bit pattern, a bitcast between bf16 and i16 disappears.
    A math function still on bf16 at that point is an error (it was not
    extended), never a silent mis-lowering. Buffers keep their byte size:
    the host program and the runtime are unchanged.

    Before:
    ```mlir
    %v = memref.load %buf[%i] : memref<8xbf16>
    %b = arith.bitcast %v : bf16 to i16
    ```
    After:
    ```mlir
    %b = memref.load %buf[%i] : memref<8xi16>
    ```
  }];
  let options = [
    Option<"sixteenBitInts", "sixteen-bit-ints", "bool", "true",
           "The client reads 16-bit integers (raw Vulkan); without them "
           "(wgpu: naga has no i16) a bf16 value is refused with "
           "DtypeLowering">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def PootSPIRVSignedOperands
    : Pass<"poot-spirv-signed-operands", "::mlir::spirv::ModuleOp"> {
  let summary = "Give signed integer instructions operands of a signed type";
  let description = [{
    MLIR's integers are signless and serialize as SPIR-V's unsigned
    `OpTypeInt 32 0`; the instruction says how to read them (`OpSDiv`,
    `OpConvertSToF`, `SAbs`). naga (wgpu's shader translator) types each
    value by its declared signedness instead, and so computes `OpSDiv`,
    `SAbs`, `OpConvertSToF` and `OpConvertFToS` on such operands as unsigned
    (-7 / 2 = 2147483644). For every instruction that reads or makes signed
    integers, this bitcasts its integer operands (a shift's amount excepted)
    and its integer result to the signed type of the same width: the same
    bits, which naga reads as signed. Run for the wgpu client only.

    Before:
    ```mlir
    %q = spirv.SDiv %a, %b : i32
    ```
    After:
    ```mlir
    %sa = spirv.Bitcast %a : i32 to si32
    %sb = spirv.Bitcast %b : i32 to si32
    %sq = spirv.SDiv %sa, %sb : si32
    %q = spirv.Bitcast %sq : si32 to i32
    ```
  }];
}

def PootSPIRVOrderedCompares
    : Pass<"poot-spirv-ordered-compares", "::mlir::spirv::ModuleOp"> {
  let summary = "Spell unordered float comparisons as ordered ones or a NaN test";
  let description = [{
    naga (wgpu's shader translator) reads each SPIR-V float comparison as a
    WGSL operator and writes it back ordered: an unordered comparison, true
    when an operand is NaN, comes out false on NaN (the fused attention's
    `score != -inf` skipped a NaN score, so wgpu returned finite outputs
    where the oracle, the CPU and raw Vulkan return NaN). Each
    `FUnord<pred>(a, b)` becomes `FOrd<pred>(a, b) || IsNan(a) || IsNan(b)`,
    which means the same under either reading. Run for the wgpu client only.

    Before:
    ```mlir
    %live = spirv.FUnordNotEqual %s, %ninf : f32
    ```
    After:
    ```mlir
    %0 = spirv.FOrdNotEqual %s, %ninf : f32
    %1 = spirv.IsNan %s : f32
    %2 = spirv.IsNan %ninf : f32
    %3 = spirv.LogicalOr %1, %2 : i1
    %live = spirv.LogicalOr %0, %3 : i1
    ```
  }];
}

def PootGPUSerializeProgram
    : Pass<"poot-gpu-serialize-program", "::mlir::ModuleOp"> {
  let summary = "Write each host function's buffers and launches as a program";
  let description = [{
    The last host-side pass of a whole-step GPU pipeline. Each function's
    body must be a straight line of `memref.alloc` (temporaries),
    `memref.get_global` (constant buffers, with their bytes), whole-buffer
    views, `memref.copy`, `gpu.launch_func` with constant grids and buffer
    operands, and the return. The pass records it on the module as
    `poot.programs = {<func> = "<json>"}`: the buffers (arguments,
    temporaries with their arena offsets, constants), the commands in order,
    the buffers of the remaining results, and the arena's size. Temporaries
    are placed by first fit over their live ranges, so buffers whose lives do
    not overlap share bytes. A runtime executes the program without MLIR;
    anything else on the host is an error naming the op. The module's
    `poot.fused_ops` records (`poot-record-fused-ops`) move into the
    programs that launch them (`fused_ops`: each record with the ids of its
    launch commands; each such launch says `"fused": i`).

    Before:
    ```mlir
    func.func @step(%x: memref<64xf32>) -> memref<64xf32> {
      %t = memref.alloc() : memref<64xf32>
      gpu.launch_func @step_kernel::@step_kernel blocks in (%c1, %c1, %c1)
          threads in (%c64, %c1, %c1) args(%x : memref<64xf32>, %t : memref<64xf32>)
      return %t : memref<64xf32>
    }
    ```
    After: the module gets `poot.programs = {step = "<json>"}` where the JSON
    lists buffer 0 as argument 0 and buffer 1 as a 256-byte temporary at
    arena offset 0, one launch of `step_kernel` over buffers (0, 1), result
    buffer 1, and `arena_bytes` 256.
  }];
}

#endif // POOT_CONVERSION_PASSES_TD
