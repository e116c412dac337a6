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

def PootPlanAttention : Pass<"poot-plan-attention", "::mlir::ModuleOp"> {
  let summary = "Turn each poot.attention into a generation request for a device";
  let description = [{
    The planner. For every `poot.attention` it picks the schedule and records
    a `#poot.attention_request` (the plan key) as the op's `poot.request`
    attribute, from the device description given as options:

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

    It also refuses what the target cannot lower: an attention that is not
    f32 (`DtypeLowering`: the generated kernel is f32 only), and on SPIR-V a
    two-byte (f16/bf16) `poot.select` (`DtypeLowering`). Every refusal is an
    error whose message starts with its reason tag.

    Before:
    ```mlir
    %o = poot.attention %q, %k, %v {scale = 0.125 : f64} : ...
    ```
    After (`poot-plan-attention{workgroup-memory=32768 compute-units=64}`):
    ```mlir
    %o = poot.attention %q, %k, %v {poot.request = #poot.attention_request<
        batch = 1, q_heads = 32, ..., schedule = split_kv, lanes = 64,
        splits = 2, chunk = 512, grid_x = 64, grid_y = 1>, scale = 0.125 : f64} : ...
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Lowering target: cpu, spirv, nvvm or rocdl">,
    Option<"workgroupMemory", "workgroup-memory", "int64_t", /*default=*/"65536",
           "Workgroup (shared/LDS) memory per workgroup, in bytes">,
    Option<"maxGridX", "max-grid-x", "int64_t", /*default=*/"65535",
           "Largest workgroup count in X">,
    Option<"maxGridY", "max-grid-y", "int64_t", /*default=*/"65535",
           "Largest workgroup count in Y">,
    Option<"computeUnits", "compute-units", "int64_t", /*default=*/"1",
           "Compute units (SMs, CUs, cores) a launch can fill">,
    Option<"maxBufferBytes", "max-buffer-bytes", "int64_t", /*default=*/"1073741824",
           "Largest single buffer (storage buffer range) in bytes">,
    Option<"maxAllocBytes", "max-alloc-bytes", "int64_t", /*default=*/"4294967296",
           "Largest allocation the device can make, in bytes">
  ];
  let dependentDialects = ["::mlir::poot::PootDialect"];
}

#endif // POOT_TRANSFORMS_PASSES_TD
