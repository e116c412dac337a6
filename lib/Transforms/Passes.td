//===- Passes.td - poot -> poot passes ---------------------*- tablegen -*-===//
#ifndef POOT_TRANSFORMS_PASSES_TD
#define POOT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PootVerifyDriverContract : Pass<"poot-verify-driver-contract", "::mlir::ModuleOp"> {
  let summary = "Check the step function's slot contract as a whole";
  let description = [{
    Per-argument markers are checked by the dialect's attribute verifiers;
    this pass checks what only the whole function shows: every state
    argument has exactly one state result of the same name (state in ->
    state out), and at most one argument is marked `pos`. It changes
    nothing.

    Before and after (unchanged):
    ```mlir
    func.func @step(%k: tensor<1x8x128x64xf32> {poot.slot = #poot.slot<state "k0">},
                    %pos: tensor<i32> {poot.slot = #poot.slot<pos>})
        -> (tensor<1x8x128x64xf32> {poot.slot = #poot.slot<state "k0">})
    ```
    A state argument `"k0"` without a `"k0"` result is an error.
  }];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

def PootSplitValidation : Pass<"poot-split-validation", "::mlir::ModuleOp"> {
  let summary = "Give each step that writes state in place a validation prologue";
  let description = [{
    A step writes its state (a KV cache, a paged pool) in place, so a step
    whose validation output turns out false must be stopped *before* it
    writes: "a failed step publishes nothing". For every public function
    with at least one `#poot.slot<validation>` result and at least one state
    result, this pass adds `@<name>_validate`: the same arguments, only the
    validation results, and only the ops they need (the rest is dead and
    erased). A runtime calls it first and runs the step only when every
    validation output is true; the validation outputs are functions of the
    step's inputs alone, so the prologue answers exactly what the step would.
    The clone carries `poot.validation_of = "<name>"`.

    Before:
    ```mlir
    func.func @step(%k: tensor<8x4xf32> {poot.slot = #poot.slot<state "k">},
                    %pos: tensor<i32> {poot.slot = #poot.slot<pos>}, ...)
        -> (tensor<8x4xf32> {poot.slot = #poot.slot<state "k">},
            tensor<i1> {poot.slot = #poot.slot<validation>})
    ```
    After (the step unchanged, and):
    ```mlir
    func.func @step_validate(%k: tensor<8x4xf32> {...}, %pos: tensor<i32> {...}, ...)
        -> (tensor<i1> {poot.slot = #poot.slot<validation>})
        attributes {poot.validation_of = "step"}
    ```
  }];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

def PootPlanAttention : Pass<"poot-plan-attention", "::mlir::ModuleOp"> {
  let summary = "Turn each poot.attention into a generation request for a device";
  let description = [{
    The planner. For every `poot.attention` it picks the schedule and records
    a `#poot.attention_request` (the plan key) as the op's declared `request`
    attribute, from the device description given as options (their
    defaults are lib/Transforms/DeviceDescription.h `kDefaultDevice`, the one
    set the GPU pipelines and Python's `Device` share):

    - lanes: the widest power of two <= 64 whose running state
      `lanes * (Dv + 2)` f32 fits `workgroup-memory`; if not even one lane
      fits, the op is refused with `AttentionLds` (naming Dv and the bytes);
    - split-KV: only for a decode (`Lq == 1`) whose rows `B * Hq` do not fill
      `compute-units`: `splits = min(16, ceil(CUs / rows), Lk / 128)` (never a
      chunk under 128 keys); kept streaming when the partial state
      `rows * splits * (Dv + 2) * 4` bytes passes `max-buffer-bytes` or the
      launch would not fit the grid; a scratch larger than
      `max-alloc-bytes` is refused with `ScratchBytes`;
    - grid: the workgroup count folded onto (x, y) past `max-grid-x`; a count
      that does not fit `max-grid-x * max-grid-y` is refused with `GridLimit`.

    On a GPU target a prefill (`Lq >= 16`) plans `tiled_prefill`
    (PlanPrefill.cpp): a workgroup per block of `q_block` query rows, K/V
    tiles of `key_block` keys in workgroup memory, the first of (64, 32),
    (32, 32), (32, 16), (16, 32), (16, 16), (8, 16), (8, 8) whose memory
    (dialect/AttentionLayout.h `tiledPrefillFloats`) fits `workgroup-memory` and whose
    128 threads (64 on SPIR-V) split the scores and outputs evenly; when
    none fits it keeps the rules above (streaming). With `mma-sm` >= 80 on
    NVVM, a two-byte (bf16/f16) prefill of at least 64 query rows whose head
    widths fit the tensor-core tiles (Dq a multiple of 16 up to 256, Dv a
    multiple of 8 up to 128, dense keys that are not split: paged and split
    keys keep the FFMA schedule until the kernel's reading of them has run
    on a GPU)
    plans `tiled_prefill_mma` instead (PlanPrefill.cpp): 64 query rows and
    128 threads a workgroup, `key_block` 64 (32 when its workgroup memory,
    PlanCommon.h `tiledPrefillMmaWords`, does not fit).

    On a GPU target a decode of a wide KV group (`Lq < 16`, `n_rep >= 8`,
    and on NVVM when `warp_decode` does not fit) plans `wide_head`
    (PlanPrefill.cpp `planWideHead`): the tiled body with the group's
    `n_rep * Lq` (head, query row) rows packed into blocks of `q_block`
    rows, K/V tiles of `key_block` keys sharing one region of workgroup
    memory, the first of (32, 16), (16, 16), (32, 8), (16, 8), (8, 16),
    (8, 8), (16, 4), (4, 16), (8, 4), (4, 8), (4, 4) with `q_block` <= the
    packed rows rounded up to a power of two, at most 64 outputs and 32
    scores a thread, and memory (with the S step's partial dots,
    dialect/AttentionLayout.h `wideHeadSlices`) that fits; split over keys for about
    4 workgroups per compute unit (`chunk` >= 128 keys and a multiple of
    `key_block`, <= 128 splits, <= `max-splits`), kept unsplit when the
    scratch passes `max-buffer-bytes` or the grid; `ScratchBytes` past
    `max-alloc-bytes`, `GridLimit` past the grid. When no tiling fits it
    keeps the rules above. With `wide-head-mma` and `mma-sm` >= 80 on NVVM
    a two-byte wide-head decode whose head widths are multiples of 8 (Dq of
    16) plans its tensor-core form `wide_head_mma` instead
    (WideHeadMmaKernel.h): `q_block` 32 or 16 packed rows in m tiles of 16,
    W = 4, 2 or 1 warps a tile (`lanes` = 2 W `q_block`), `key_block` 32 or
    16, the first of (32, 32), (32, 16), (16, 32), (16, 16) whose memory
    (dialect/AttentionLayout.h `wideHeadMmaWords`) fits, split as
    `wide_head`; what it does not take plans `wide_head`.

    On the CPU with `vector-width` > 0 it plans the CPU schedule instead
    (`cpu_tiled`): `lanes` = the widest power of two <= vector-width that
    divides every head width; `key_block` = the most keys (a power of two,
    <= 256) whose K and V rows fit `workgroup-memory` (the L1 data cache);
    `q_block` = the largest divisor of Lq that is <= max(1, 16 / n_rep)
    (query rows per work item); a decode
    with fewer than 2 * compute-units work items (batch x KV groups) splits
    its keys: `splits = min(16, ceil(2 * cores / items), Lk / 512)`;
    `grid_x` = the work-item count, `grid_y` = min(items, compute-units), the
    chunks (one per core) the items are dealt to — 1 (no thread team) when
    the attention has fewer than 2^18 multiply-adds (rows x Lk x widths).

    With `batch-invariant` every rule above chooses its split over keys (the
    count, hence the chunks) for one batch row, as if B were 1: the same
    row gets the same splits, chunk boundaries and combine order whatever
    batch it is packed into, so its output is bit-identical alone or
    batched (issue 24). It costs a batch that fills the device the splits
    (scratch and combine launch) one row needs; a split whose whole batch's
    scratch passes `max-buffer-bytes` or whose grid does not fit still falls
    back to one split.

    It also refuses what the target cannot lower: an attention that is not
    f32, f16 or bf16 (`DtypeLowering`: the kernels read those and compute in
    f32; a two-byte op keeps f32 lane state and scratch, and the CPU key
    block is sized by the K/V element bytes), on SPIR-V a bf16 attention
    and a two-byte (f16/bf16) `poot.select` (`DtypeLowering`), and on a GPU target
    an operand or result larger than `max-buffer-bytes` or, on SPIR-V, with
    more than 2^32 - 1 elements (`BufferBytes`: no device buffer binds it).
    Every refusal is an error whose message starts with its reason tag.

    The block-selected ops get their own requests (PlanSelection.cpp):
    `poot.selected_attention` a `#poot.selected_attention_request` with the
    same lane rule, split rule (over its `visited = (K + 1) * block_size`
    positions instead of Lk) and grid fold, never warp decode;
    `poot.block_topk` a `#poot.block_topk_request` (one workgroup per
    (batch row, query row), at most 64 lanes and no more than the blocks).
    Refusals carry the same tags (`DtypeLowering` for non-f32, `AttentionLds`,
    `ScratchBytes`, `GridLimit`).

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : ...
    ```
    After (`poot-plan-attention{workgroup-memory=32768 compute-units=64}`):
    ```mlir
    %o = poot.attention %q, %k, %v {request = #poot.attention_request<
        batch = 1, q_heads = 32, ..., schedule = split_kv, lanes = 64,
        splits = 2, chunk = 512, grid_x = 64, grid_y = 1>, scale = 0.125 : f64} : ...
    ```
  }];
  let options = [
    Option<"target", "target", "::mlir::poot::DeviceTarget",
           /*default=*/"::mlir::poot::kDefaultDevice.target",
           "Lowering target", [{::llvm::cl::values(
             clEnumValN(::mlir::poot::DeviceTarget::CPU, "cpu",
                        "CPU loops (poot-attention-to-loops)"),
             clEnumValN(::mlir::poot::DeviceTarget::SPIRV, "spirv",
                        "SPIR-V kernels for Vulkan"),
             clEnumValN(::mlir::poot::DeviceTarget::NVVM, "nvvm",
                        "PTX kernels for NVIDIA GPUs"),
             clEnumValN(::mlir::poot::DeviceTarget::ROCDL, "rocdl",
                        "ROCDL kernels for AMD GPUs"))}]>,
    Option<"workgroupMemory", "workgroup-memory", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.workgroupMemory",
           "Workgroup (shared/LDS) memory per workgroup, in bytes">,
    Option<"maxGridX", "max-grid-x", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.maxGridX",
           "Largest workgroup count in X (>= 1)">,
    Option<"maxGridY", "max-grid-y", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.maxGridY",
           "Largest workgroup count in Y (>= 1)">,
    Option<"computeUnits", "compute-units", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.computeUnits",
           "Compute units (SMs, CUs, cores) a launch can fill">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.vectorWidth",
           "CPU only: f32 lanes of the host's SIMD registers; > 0 plans the "
           "CPU schedule (cpu_tiled), 0 the GPU schedules as loops">,
    Option<"maxBufferBytes", "max-buffer-bytes", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.maxBufferBytes",
           "Largest single buffer (storage buffer range) in bytes">,
    Option<"maxAllocBytes", "max-alloc-bytes", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.maxAllocBytes",
           "Largest allocation the device can make, in bytes">,
    Option<"maxSplits", "max-splits", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.maxSplits",
           "Most split-KV partitions per row any schedule may use (>= 1; 1: "
           "never split). Each schedule has its own smaller bound too">,
    Option<"batchInvariant", "batch-invariant", "bool", /*default=*/"::mlir::poot::kDefaultDevice.batchInvariant",
           "Every schedule chooses its split over keys (count and chunk) for "
           "one row, as if the batch were 1, so a row's summation order and "
           "its output bits do not depend on the batch it is packed into "
           "(off: the split follows rows vs compute units). Costs a large "
           "batch the splits (partials and a combine launch) it would not "
           "need">,
    Option<"mmaSm", "mma-sm", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.mmaSm",
           "NVVM only: the SM version (80 and up) whose warp-level "
           "mma.sync m16n8k16 a two-byte prefill may use "
           "(tiled_prefill_mma); 0: no tensor cores">,
    Option<"wideHeadMma", "wide-head-mma", "bool", /*default=*/"::mlir::poot::kDefaultDevice.wideHeadMma",
           "NVVM with mma-sm >= 80: plan two-byte wide-head decodes on tensor "
           "cores (wide_head_mma, the default); off: the FFMA wide_head">,
    Option<"maxUnroll", "max-unroll", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.maxUnroll",
           "NVIDIA warp decode: N >= 1 (default 4) reads K/V as 16-byte "
           "vectors and loads up to N keys a warp step before using any "
           "(verified on the H200; 4 was the fastest at B=1 4k/128k and "
           "B=16 8k); 0 keeps the scalar one-key-a-step form. The planner "
           "takes fewer when the loaded rows would not fit the register "
           "budget">,
    Option<"maxKeysPerLoad", "max-keys-per-load", "int64_t", /*default=*/"::mlir::poot::kDefaultDevice.maxKeysPerLoad",
           "NVIDIA warp decode of two-byte keys: N >= 2 (default 2) lets rows "
           "that a whole warp would not read as 16-byte vectors (bf16/f16 "
           "D = 128) take 32 / N lanes, N keys a load (half-warp rows, "
           "`row_lanes` on the request; verified on the H200, "
           "docs/warp-decode.md); 1: a whole warp reads each key row">
  ];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

def PootTensorParallel : Pass<"poot-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "Rank `rank`'s program of a step split over `degree` ranks (Megatron-style)";
  let description = [{
    Runs after the attention rewrite, before planning. In every public
    function it splits each *group* of column-parallel projections (matmuls
    whose rhs is a 2-D weight argument, through transposes and conversions)
    whose outputs meet before a contraction: q, k and v at a
    `poot.attention` (split by heads: a rank attends with `Hq / degree`
    query heads over its KV heads; with fewer KV heads than ranks each KV
    head is held by `degree / Hkv` ranks, as vLLM does), gate and up at the
    MLP's product (split by columns). Each op the group reaches follows its
    split (reshapes into heads, transposes, RoPE, elementwise ops, the KV
    cache's `dynamic_update_slice`/`scatter_update`, state results); a
    replicated operand split along the same dimension (a per-head mask, a
    bias that is not an argument) is read as the rank's block through a
    `poot.slice`. The contraction that closes the group (output or down
    projection) reads its block of k, rows of its weight, and a
    `poot.all_reduce` sums the ranks' partial products.

    A group that meets an op with no rule, splits a non-state result (the
    lm_head: its logits), or shares a weight with an op outside it stays
    whole on every rank (a remark says why). Weights and states a rank
    holds a block of are marked `poot.shard = #poot.shard<dim, block,
    parts>` (also the state results), and the function
    `poot.tensor_parallel = #poot.tensor_parallel<rank, degree>`; the
    runtime slices the unsharded arrays it binds by those marks.

    Before (degree 2, rank 1; an MLP):
    ```mlir
    func.func @f(%x: tensor<1x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>,
                 %wd: tensor<16x8xf32>) -> tensor<1x8xf32> {
      %g = poot.matmul %x, %wg : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
      %u = poot.matmul %x, %wu : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
      %h = poot.mul %g, %u : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
      %y = poot.matmul %h, %wd : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
      return %y : tensor<1x8xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<1x8xf32>,
                 %wg: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 1, block = 1, parts = 2>},
                 %wu: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 1, block = 1, parts = 2>},
                 %wd: tensor<8x8xf32> {poot.shard = #poot.shard<dim = 0, block = 1, parts = 2>})
        -> tensor<1x8xf32> attributes {poot.tensor_parallel = #poot.tensor_parallel<rank = 1, degree = 2>} {
      %g = poot.matmul %x, %wg : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
      %u = poot.matmul %x, %wu : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
      %h = poot.mul %g, %u : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
      %p = poot.matmul %h, %wd : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
      %y = poot.all_reduce %p : tensor<1x8xf32>
      return %y : tensor<1x8xf32>
    }
    ```
  }];
  let options = [
    Option<"degree", "degree", "int64_t", /*default=*/"1",
           "How many ranks the step is split over">,
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "Which rank's program to produce (0 <= rank < degree)">,
  ];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

def PootRecognizeRope : Pass<"poot-recognize-rope", "::mlir::func::FuncOp"> {
  let summary = "Form poot.rope from the tracer's rotate-half chain";
  let description = [{
    Replaces `x * cos + concat(neg(slice(x, second half)), slice(x, first
    half)) * sin` (slices and concat over the last axis, operands of `add` and
    `mul` in either order) with one `poot.rope`, so the attention rewrite and
    later passes see a rotary embedding as one value. A chain whose result
    shape is not `x`'s (the tables widen it) or whose halves do not split the
    last axis exactly is left alone.

    Before:
    ```mlir
    %a  = poot.mul %x, %cos : (tensor<1x8x4x64xf32>, tensor<1x1x4x64xf32>) -> tensor<1x8x4x64xf32>
    %x1 = poot.slice %x [0, 0, 0, 0] to [1, 8, 4, 32] step [1, 1, 1, 1] : ...
    %x2 = poot.slice %x [0, 0, 0, 32] to [1, 8, 4, 64] step [1, 1, 1, 1] : ...
    %n  = poot.neg %x2 : tensor<1x8x4x32xf32>
    %r  = poot.concat %n, %x1 axis = 3 : ...
    %b  = poot.mul %r, %sin : ...
    %y  = poot.add %a, %b : ...
    ```
    After:
    ```mlir
    %y = poot.rope %x, %cos, %sin : tensor<1x8x4x64xf32>, tensor<1x1x4x64xf32>,
        tensor<1x1x4x64xf32> -> tensor<1x8x4x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

def PootExpandRope : Pass<"poot-expand-rope", "::mlir::func::FuncOp"> {
  let summary = "Expand poot.rope back into the tracer's rotate-half primitives";
  let description = [{
    The inverse of `poot-recognize-rope`, for a lowering without a
    `poot.rope` kernel: every `poot.rope` becomes exactly the chain the
    tracer emits (`mul`, `slice`, `slice`, `neg`, `concat`, `mul`, `add`), so
    the numbers are those of the program before recognition.

    Before:
    ```mlir
    %y = poot.rope %x, %cos, %sin : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    ```
    After:
    ```mlir
    %a  = poot.mul %x, %cos : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %x1 = poot.slice %x [0, 0] to [2, 4] step [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
    %x2 = poot.slice %x [0, 4] to [2, 8] step [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
    %n  = poot.neg %x2 : tensor<2x4xf32>
    %r  = poot.concat %n, %x1 axis = 1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
    %b  = poot.mul %r, %sin : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %y  = poot.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

def PootAttentionRewrite : Pass<"poot-attention-rewrite", "::mlir::func::FuncOp"> {
  let summary = "Replace the tracer's attention chains with poot.attention";
  let description = [{
    Runs after canonicalization and `poot-recognize-rope`. Every `exp` with a
    matmul upstream (through float values) is a candidate: around it the pass
    reads a softmax (`exp(s - max(s))` or `exp(s + -max(s))`, reductions over
    the last axis with or without keepdim, normalized by `/ sum`, `* (1 /
    sum)`, or after the P.V matmul), the P.V matmul, and the score chain back
    to `matmul(q, k^T)`, and forms one `poot.attention` when the op's typing
    rule (its verifier) accepts the operands:

    - scale: `mul` by a splat constant or `div` by one (their product),
      also on q or k before the score matmul (folded into the op's scale);
    - softcap: `c * tanh(s / c)` (also `tanh(s * (1/c)) * c`), before masks;
    - masks: `add` of any value independent of the scores (e.g. the in-graph
      causal mask or an ALiBi bias with head axis Hq), and boolean masks
      applied by `select(m, s, fill)` with fill `-inf` or the lowest finite
      value; the steps replay on zero into the `mask` operand (a select
      becomes `select(m, 0, fill)`); a mask added before the scale is
      scaled with it;
    - GQA/MQA: `reshape -> broadcast -> reshape` (or a plain head broadcast)
      of K and V is read back to the `[B, Hkv, Lk, D]` cache; no repeated copy
      survives (the dead chain is erased);
    - layouts: heads folded into the batch of rank-3 matmuls (`[B*H, L, D]`,
      viewed as 4-D around the mask or not), keys stored `[B, H, D, Lk]`;
    - split key: `concat(k_nope, broadcast(k_pe))` on the last axis (or
      `concat(k_nope, k_pe)` with one key head) becomes `key` + `key_shared`;
    - paged key: `transpose(gather(pool, read, axis 0), [0, 2, 1, 3])` becomes
      the pool + `read` operand when integer range analysis (seeded from the
      arguments' `poot.range`) proves `read` inside `[0, S)`; otherwise the
      attention stays over the gathered view;
    - live length: the `attention_live` selects (K and V rows zeroed where
      `t >= len`, scores set to `-inf`) become the `len` operand when range
      analysis proves `1 <= len <= Lk`; a bound that relies on an
      `index_guard` clamp counts only when that guard's witness is returned
      as a `#poot.slot<validation>` result;
    - two-byte attention (docs/two-byte-attention.md): a chain in f16/bf16
      throughout, or one that widens its scores (or Q, K, V) to f32 and
      rounds its probabilities (or its f32 output) back, becomes a two-byte
      `poot.attention` (f32 inside, the output rounded once); a mask added
      to the widened scores stays f32.

    Anything else is left exactly as it was: chains whose operands the op
    cannot type, Q/K/V of different element types, two-byte Q/K/V with an
    f32 output, f64, unproven lengths, fills other than -inf or the lowest finite value. With
    `remarks=true` every declined candidate emits one remark naming the
    failed check, at the op where the match stopped (the user's source line,
    from the frontend). A chain whose only mask is the sparse indexer's
    block-selection visibility (`select(visible, s, -inf)`, no live length)
    is not this pass's candidate: it stays as it is, with no remark, for
    `poot-select-blocks`, which runs next.

    Before (decode, GQA n_rep = 4, causal mask `%mask`):
    ```mlir
    %r0 = poot.reshape %kc : tensor<1x2x16x8xf32> -> tensor<1x2x1x16x8xf32>
    %b0 = poot.broadcast %r0 : tensor<1x2x1x16x8xf32> -> tensor<1x2x4x16x8xf32>
    %kx = poot.reshape %b0 : tensor<1x2x4x16x8xf32> -> tensor<1x8x16x8xf32>
    %kt = poot.transpose %kx perm = [0, 1, 3, 2] : ...
    %s  = poot.matmul %q, %kt : ...
    %s1 = poot.mul %s, %scale : ...
    %s2 = poot.add %s1, %mask : ...
    %m  = poot.reduce max %s2 axis = 3 keepdim : ...
    %d  = poot.sub %s2, %m : ...
    %e  = poot.exp %d : ...
    %z  = poot.reduce sum %e axis = 3 keepdim : ...
    %p  = poot.div %e, %z : ...
    %o  = poot.matmul %p, %vx : ...
    ```
    After:
    ```mlir
    %o = poot.attention %q, %kc, %vc mask(%mask : tensor<1x1x1x16xf32>)
        {scale = 0.35355339059327379 : f64}
        : tensor<1x8x1x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
        -> tensor<1x8x1x8xf32>
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit one remark for every declined candidate, naming the failed check, at the op it stopped at">
  ];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

def PootSelectBlocks : Pass<"poot-select-blocks", "::mlir::func::FuncOp"> {
  let summary = "Form poot.block_topk and poot.selected_attention from the sparse indexer's chains";
  let description = [{
    The selection pass. Runs after `poot-attention-rewrite` (which leaves a
    chain whose scores are hidden by the block-selection mask to it) and
    reads the chains `frontend/sparse.py` emits:

    - block top-k: `top_k(select(j < p / bs, blk, -inf), K)` whose indices
      are fixed up by `select(i < p / bs, i, -1)` becomes
      `poot.block_topk(blk, q_pos) k = K block_size = bs` (the block scores
      `blk [B, Lq, NB]` stay as they are computed); every fix-up's result is
      replaced by the op's;
    - selected attention: an attention chain (the attention rewrite's
      matcher reads it: scale, softcap, GQA/MQA repeats, transposed key
      layouts) whose only masking is `select(visible, s, -inf)` with
      `visible = (any_k(ids[k] == t / bs) | t / bs == p / bs) & t <= p`
      becomes `poot.selected_attention(q, k, v, ids, q_pos) block_size = bs`
      (no mask operand).

    The tensors of both chains may broadcast in any layout numpy allows (a
    `[B, Lq, 1]` position column or a bare `[1, 1]`, the mask as
    `[B, 1, Lq, Lk]` or `[1, Lq, Lk]`), compares may be written either way
    round, and `and`/`or`/`eq` take their operands in either order. The
    positions may be an argument or the iota of a prefill (row i at i).

    Declined chains keep their primitive form and, with `remarks=true`, say
    why (`block top-k not formed: <check>`, `selected attention not formed:
    <check>`): a non-f32 element type (the kernels are F32 only), an
    additive mask or a live length beside the selection (the op has neither),
    values escaping the chain, or a condition that is not the selection.
    Paged K/V compose by reading the gathered view: `poot.selected_attention`
    has no read map (the seed keeps indexer attention over the gathered view).

    Before (decode, one query row at `%p`, K = 2, bs = 4, Lk = 32):
    ```mlir
    %own = poot.div %p, %c4 : (tensor<1x1xi32>, tensor<i32>) -> tensor<1x1xi32>
    %bid = poot.iota dim = 2 : tensor<1x1x8xi32>
    %cand = poot.compare lt, %bid, %own : ...
    %cs = poot.select %cand, %blk, %ninf : ...
    %vals, %idx = poot.top_k %cs k = 2 : ...
    %ok = poot.compare lt, %idx, %own : ...
    %ids = poot.select %ok, %idx, %m1 : ...
    %t = poot.iota dim = 2 : tensor<1x1x32xi32>
    %kb = poot.div %t, %c4 : ...
    ... %vis = poot.and (poot.or %listed, %ownk), (poot.compare le, %t, %p)
    %s1 = poot.select %vis, %s, %ninf : ...      (then the softmax, the PV matmul)
    ```
    After:
    ```mlir
    %ids = poot.block_topk %blk, %p k = 2 block_size = 4
        : tensor<1x1x8xf32>, tensor<1x1xi32> -> tensor<1x1x2xi32>
    %o = poot.selected_attention %q, %k, %v, %ids, %p block_size = 4
        {scale = 0.35355339059327379 : f64}
        : tensor<1x4x1x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>,
          tensor<1x1x2xi32>, tensor<1x1xi32> -> tensor<1x4x1x8xf32>
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark for every declined candidate, naming the failed check">
  ];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

#endif // POOT_TRANSFORMS_PASSES_TD
