//===- PootAttrs.td - poot enums and attributes -------------*- tablegen -*-===//

#ifndef POOT_ATTRS_TD
#define POOT_ATTRS_TD

include "dialect/PootBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Poot_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">]> {
  let cppNamespace = "::mlir::poot";
  let genSpecializedAttr = 0;
}
def Poot_ReduceKindAttr : EnumAttr<Poot_Dialect, Poot_ReduceKind, "reduce_kind">;

def Poot_CompareDirection : I32EnumAttr<"CompareDirection", "comparison", [
    I32EnumAttrCase<"EQ", 0, "eq">,
    I32EnumAttrCase<"NE", 1, "ne">,
    I32EnumAttrCase<"LT", 2, "lt">,
    I32EnumAttrCase<"LE", 3, "le">,
    I32EnumAttrCase<"GT", 4, "gt">,
    I32EnumAttrCase<"GE", 5, "ge">]> {
  let cppNamespace = "::mlir::poot";
  let genSpecializedAttr = 0;
}
def Poot_CompareDirectionAttr
    : EnumAttr<Poot_Dialect, Poot_CompareDirection, "compare_direction">;

def Poot_SlotKind : I32EnumAttr<"SlotKind", "what a function argument or result is to the driver", [
    // A buffer carried across steps: an argument (state in) and the result of
    // the same name (state out). The input buffer is donated to the output.
    I32EnumAttrCase<"State", 0, "state">,
    // The decode position: one i32 for the step (tensor<i32>) or one per
    // batch row (tensor<Bxi32>); every binder checks each word against its
    // declared range.
    I32EnumAttrCase<"Pos", 1, "pos">,
    // Paged read map: [rows, cap] i32 pool slots, declared in [0, pool_slots).
    I32EnumAttrCase<"SlotMap", 2, "slot_map">,
    // Paged write map: [rows * tokens] i32 pool slots or -1 (write nothing);
    // bound only through a checked map (no slot outside the pool, none twice).
    I32EnumAttrCase<"WriteMap", 3, "write_map">,
    // A result that witnesses a runtime check (i1). When it is false the step
    // fails and publishes no state.
    I32EnumAttrCase<"Validation", 4, "validation">]> {
  let cppNamespace = "::mlir::poot";
  let genSpecializedAttr = 0;
}

def Poot_AttentionSchedule : I32EnumAttr<"AttentionSchedule", "attention kernel schedule", [
    // One workgroup per (batch row, query head, query row).
    I32EnumAttrCase<"Streaming", 0, "streaming">,
    // Decode only: a partials launch per (row, split) and a combine launch.
    I32EnumAttrCase<"SplitKV", 1, "split_kv">,
    // Decode on NVIDIA: one workgroup of warps per (batch row, KV group,
    // split) serves the group's n_rep query heads; a warp reads one key row
    // coalesced (lanes split the head width, a shuffle reduces the dot) and
    // keeps the running state in registers; combine launch when split.
    I32EnumAttrCase<"WarpDecode", 2, "warp_decode">,
    // The CPU: one work item per (batch row, KV group, query block, split)
    // serves the group's n_rep heads and a block of query rows; key blocks
    // of `key_block` keys sized to the L1 cache, vectors of `lanes` floats
    // over the head width; work items run on a thread pool (OpenMP); a
    // combine loop when split.
    I32EnumAttrCase<"CpuTiled", 3, "cpu_tiled">,
    // GPU prefill: one workgroup per (batch row, query head, block of
    // `q_block` query rows); K/V tiles of `key_block` keys staged in
    // workgroup memory and read by every row of the block; causal tiles
    // above the diagonal skipped (TiledPrefillKernel.h).
    I32EnumAttrCase<"TiledPrefill", 4, "tiled_prefill">,
    // Decode for a wide KV group (MQA / absorbed MLA): the tiled body with
    // the group's query heads packed into the row block (packed row p is
    // head g * n_rep + p / Lq, query row p % Lq), one workgroup per (batch
    // row, KV group, split, block of `q_block` packed rows), the blocks of
    // one split adjacent so that L2 serves their shared K/V tiles; K and V
    // tiles share one staging region; combine launch when split.
    I32EnumAttrCase<"WideHead", 5, "wide_head">,
    // Two-byte (bf16/f16) GPU prefill on NVIDIA tensor cores (sm_80+): the
    // tiled walk with 4 warps of 16 query rows, S = Q K^T and O += P V as
    // warp-level mma.sync m16n8k16 with f32 accumulators, the online softmax
    // on the fragments in registers (TiledPrefillMmaKernel.h).
    I32EnumAttrCase<"TiledPrefillMma", 6, "tiled_prefill_mma">,
    // Two-byte (bf16/f16) wide-head decode on NVIDIA tensor cores (sm_80+):
    // the wide_head walk over packed KV-group rows with S = Q K^T and
    // O += P V as mma.sync m16n8k16 (f32 accumulators); the `lanes / (2
    // q_block)` warps of each 16-row m tile split S over the key's width
    // (partial scores summed through workgroup memory) and P V over the
    // value's channels, so a warp keeps 16 rows x Dv / warps of O in
    // registers (WideHeadMmaKernel.h); combine launch when split.
    I32EnumAttrCase<"WideHeadMma", 7, "wide_head_mma">]> {
  let cppNamespace = "::mlir::poot";
  let genSpecializedAttr = 0;
}

def Poot_ScoreTransform : I32EnumAttr<"ScoreKind", "score transform", [
    I32EnumAttrCase<"Scale", 0, "scale">,
    I32EnumAttrCase<"ScaleSoftcap", 1, "scale_softcap">]> {
  let cppNamespace = "::mlir::poot";
  let genSpecializedAttr = 0;
}

def Poot_MaskKind : I32EnumAttr<"MaskKind", "additive mask layout", [
    I32EnumAttrCase<"None", 0, "none">,
    // Head axis 1: one mask shared by every head.
    I32EnumAttrCase<"Shared", 1, "shared">,
    // Head axis Hq: per-head biases (ALiBi).
    I32EnumAttrCase<"PerHead", 2, "per_head">,
    // No tensor: row i sees keys t <= i + (Lk - Lq) (poot.attention causal).
    I32EnumAttrCase<"Causal", 3, "causal">]> {
  let cppNamespace = "::mlir::poot";
  let genSpecializedAttr = 0;
}

def Poot_KeyBound : I32EnumAttr<"KeyBound", "which keys a row visits and how they are addressed", [
    I32EnumAttrCase<"Capacity", 0, "capacity">,
    I32EnumAttrCase<"Live", 1, "live">,
    I32EnumAttrCase<"Paged", 2, "paged">,
    I32EnumAttrCase<"PagedLive", 3, "paged_live">]> {
  let cppNamespace = "::mlir::poot";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Poot_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Poot_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Poot_SlotAttr : Poot_Attr<"Slot", "slot"> {
  let summary = "Marks a function argument or result with its driver role";
  let description = [{
    `#poot.slot<pos>`, `#poot.slot<slot_map>`, `#poot.slot<write_map>`,
    `#poot.slot<validation>`, or `#poot.slot<state "k_cache_0">`. A state
    argument and the state result of the same name are one buffer across
    steps: the argument is donated and the result replaces it.
  }];
  let parameters = (ins
    EnumParameter<Poot_SlotKind>:$kind,
    OptionalParameter<"::mlir::StringAttr">:$name);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Poot_RangeAttr : Poot_Attr<"Range", "range"> {
  let summary = "Declared inclusive value range of an integer argument";
  let description = [{
    `#poot.range<0, 4095>` declares that every element lies in [0, 4095]
    (both ends inclusive). The binder refuses a value outside it before
    anything dispatches; the integer range analysis starts from it.
  }];
  let parameters = (ins "int64_t":$min, "int64_t":$max);
  let assemblyFormat = "`<` $min `,` $max `>`";
  let genVerifyDecl = 1;
}

def Poot_ShardAttr : Poot_Attr<"Shard", "shard"> {
  let summary = "Which block of an unsharded argument a tensor-parallel rank holds";
  let description = [{
    `#poot.shard<dim = 1, block = 0, parts = 2>` on an argument (or state
    result) of a rank program: the value is block `block` of `parts` equal
    blocks along `dim` of the unsharded tensor, i.e.
    `unsharded[..., block * n : (block + 1) * n, ...]` with
    `n = unsharded.shape[dim] / parts`. `poot-tensor-parallel` writes it; the
    runtime slices each weight and state it binds from it. `parts` divides
    the degree: with fewer KV heads than ranks, `degree / parts` ranks hold
    the same KV head (replicated, as vLLM does).

    `segments = [s0, s1, ...]` (sizes along `dim` of the unsharded tensor,
    summing to it): the dimension is a concatenation of segments, each split
    into `parts` blocks, and the value is block `block` of every segment,
    concatenated -- a packed projection (`qkv_proj = [q | k | v]`,
    `gate_up_proj`), which each rank reads as its block of q, of k and of v.
  }];
  let parameters = (ins "int64_t":$dim, "int64_t":$block, "int64_t":$parts,
                    OptionalArrayRefParameter<"int64_t">:$segments);
  let assemblyFormat = [{
    `<` `dim` `=` $dim `,` `block` `=` $block `,` `parts` `=` $parts
    (`,` `segments` `=` `[` $segments^ `]`)? `>`
  }];
  let builders = [
    AttrBuilder<(ins "int64_t":$dim, "int64_t":$block, "int64_t":$parts), [{
      return $_get($_ctxt, dim, block, parts, ::llvm::ArrayRef<int64_t>());
    }]>,
  ];
  let genVerifyDecl = 1;
}

def Poot_TensorParallelAttr : Poot_Attr<"TensorParallel", "tensor_parallel"> {
  let summary = "The rank and degree of a tensor-parallel rank program";
  let description = [{
    `#poot.tensor_parallel<rank = 0, degree = 2>` on a step function: the
    function is rank `rank`'s program of a step split over `degree` ranks
    (`poot-tensor-parallel`). Its `poot.all_reduce` ops sum over those ranks;
    a runtime refuses a communicator of another size.
  }];
  let parameters = (ins "int64_t":$rank, "int64_t":$degree);
  let assemblyFormat = "`<` `rank` `=` $rank `,` `degree` `=` $degree `>`";
  let genVerifyDecl = 1;
}

def Poot_AttentionRequestAttr : Poot_Attr<"AttentionRequest", "attention_request"> {
  let summary = "The planner's generation request for one poot.attention";
  let description = [{
    Everything the kernel generator needs, and nothing else: the shape
    (`batch`, `q_heads`, `kv_heads`, `q_len`, `key_len`, `key_width` = the
    per-head key width, `shared_width` = the split key's shared width or 0,
    `value_width`), the score transform, the mask kind, the key bound, and
    the schedule: `lanes` threads per workgroup (a power of two <= 64 whose
    running state `lanes * (value_width + 2)` floats fits the device's
    workgroup memory), `splits` (1 for streaming) with `chunk` keys per split,
    and the launch grid (`grid_x`, `grid_y`: the workgroup count folded onto
    two dimensions past the device's X limit). The CPU schedule
    (`cpu_tiled`) reads `lanes` as the vector width, `grid_x` as the number
    of work items, `grid_y` as the chunks (one per core) they are dealt to, `q_block` as the query rows per work item and
    `key_block` as the keys per cache block. The GPU prefill
    (`tiled_prefill`) reads `q_block` as the query rows per workgroup and
    `key_block` as the keys per staged tile (both 0, and not printed, for
    the other GPU schedules); the wide-head decode (`wide_head`) reads
    `q_block` as the packed (head, query row) rows of one KV group per
    workgroup, `key_block` as the keys per tile, `chunk` as the keys per
    split (a multiple of `key_block`); its tensor-core form
    (`wide_head_mma`) reads them the same way, with `lanes` = 32 x
    (q_block / 16) x the warps that share one 16-row m tile. The warp decode
    (`warp_decode`) reads
    `unroll` as the loads (of `kWarpSize / row_lanes` keys each) every warp
    issues before it uses any of them (0, not printed: the scalar one-key
    form, and the other schedules) and `row_lanes` as the lanes that read
    one key row together (0, not printed: the whole warp; 16: half-warp rows,
    two keys a load, docs/warp-decode.md). `window` (0, not printed: none)
    is the op's sliding window, with the causal mask kind only: row i sees
    keys i + (Lk - Lq) - window < t <= i + (Lk - Lq). Derived sizes (n_rep, rows,
    workgroup-memory and scratch floats, the warp constants) are methods of
    the attribute, so the planner and the generator read one definition.
    Equal requests generate equal kernels, so the request is the plan key.
  }];
  let parameters = (ins
    "int64_t":$batch, "int64_t":$q_heads, "int64_t":$kv_heads,
    "int64_t":$q_len, "int64_t":$key_len, "int64_t":$key_width,
    "int64_t":$shared_width, "int64_t":$value_width,
    EnumParameter<Poot_ScoreTransform>:$transform,
    EnumParameter<Poot_MaskKind>:$mask,
    EnumParameter<Poot_KeyBound>:$key_bound,
    EnumParameter<Poot_AttentionSchedule>:$schedule,
    "int64_t":$lanes, "int64_t":$splits, "int64_t":$chunk,
    "int64_t":$grid_x, "int64_t":$grid_y,
    DefaultValuedParameter<"int64_t", "0">:$q_block,
    DefaultValuedParameter<"int64_t", "0">:$key_block,
    DefaultValuedParameter<"int64_t", "0">:$unroll,
    DefaultValuedParameter<"int64_t", "0">:$row_lanes,
    DefaultValuedParameter<"int64_t", "0">:$window);
  let assemblyFormat = "`<` struct(params) `>`";
  // A request is read back from text (lit tests, the fuzzer): sizes the
  // generator and the launch builder divide by or allocate from are checked.
  let genVerifyDecl = 1;
  // `unroll`, `row_lanes` and `window` last and defaulted, so a request of
  // another schedule (or without a window) is built without them.
  let skipDefaultBuilders = 1;
  let builders = [
    AttrBuilder<(ins "int64_t":$batch, "int64_t":$q_heads, "int64_t":$kv_heads,
      "int64_t":$q_len, "int64_t":$key_len, "int64_t":$key_width,
      "int64_t":$shared_width, "int64_t":$value_width,
      "::mlir::poot::ScoreKind":$transform, "::mlir::poot::MaskKind":$mask,
      "::mlir::poot::KeyBound":$key_bound,
      "::mlir::poot::AttentionSchedule":$schedule,
      "int64_t":$lanes, "int64_t":$splits, "int64_t":$chunk,
      "int64_t":$grid_x, "int64_t":$grid_y, "int64_t":$q_block,
      "int64_t":$key_block, CArg<"int64_t", "0">:$unroll,
      CArg<"int64_t", "0">:$row_lanes, CArg<"int64_t", "0">:$window), [{
      return $_get($_ctxt, batch, q_heads, kv_heads, q_len, key_len,
                   key_width, shared_width, value_width, transform, mask,
                   key_bound, schedule, lanes, splits, chunk, grid_x, grid_y,
                   q_block, key_block, unroll, row_lanes, window);
    }]>];
  let extraClassDeclaration = [{
    /// Threads of one warp, and warps per workgroup, of the warp-decode
    /// schedule (WarpDecodeKernel.h); the planner sizes against the same.
    static constexpr int64_t kWarpSize = 32;
    static constexpr int64_t kWarpsPerGroup = 4;
    /// Bytes a warp-decode lane reads per load at most (one 16-byte vector).
    static constexpr int64_t kWarpLoadBytes = 16;

    /// Query heads per KV head (the GQA group size n_rep).
    int64_t getNumRep() const { return getQHeads() / getKvHeads(); }
    /// Output rows: batch * q_heads * q_len.
    int64_t getRows() const { return getBatch() * getQHeads() * getQLen(); }
    /// Floats of one running state (o[Dv], m, l).
    int64_t getStateFloats() const { return getValueWidth() + 2; }
    /// Keys the split-KV chunks divide, from getSplitBase(): all Lk keys,
    /// or for one query row under a window only its last min(W, Lk) keys
    /// (every other key is hidden from the row). Split planners size their
    /// chunks from it; kernels start split s at base + s * chunk.
    int64_t getSplitKeys() const {
      return getWindow() && getQLen() == 1
                 ? std::min<int64_t>(getWindow(), getKeyLen())
                 : getKeyLen();
    }
    int64_t getSplitBase() const { return getKeyLen() - getSplitKeys(); }
    /// Warp decode: lanes that read one key row together (the whole warp,
    /// or 16 for half-warp rows), keys one warp-wide load reads side by side,
    /// loads each warp issues per step before it uses any (>= 1), and so the
    /// keys a warp consumes per step.
    int64_t getLanesPerRow() const {
      return getRowLanes() ? getRowLanes() : kWarpSize;
    }
    int64_t getKeysPerLoad() const { return kWarpSize / getLanesPerRow(); }
    int64_t getLoadsPerStep() const { return getUnroll() > 1 ? getUnroll() : 1; }
    int64_t getKeysPerStep() const { return getLoadsPerStep() * getKeysPerLoad(); }
    /// Warp decode: the running states one workgroup folds at its end (one
    /// per key a load reads, per warp).
    int64_t getWarpStates() const { return kWarpsPerGroup * getKeysPerLoad(); }
    /// Warp decode: elements per load of a head width of `elementBytes`
    /// elements: 1 in the scalar one-key form (unroll 0), else
    /// warpVectorWidth over the lanes of a row.
    int64_t getVectorWidth(int64_t width, int64_t elementBytes) const {
      return getUnroll() == 0
                 ? 1
                 : warpVectorWidth(width, elementBytes, getLanesPerRow());
    }
    /// Workgroup-memory floats of the schedule's first kernel: the lanes'
    /// states (streaming, split_kv), the warps' states of every head of the
    /// group (warp_decode), the tiled prefill's layout (tiled_prefill,
    /// wide_head); 32-bit words for tiled_prefill_mma and wide_head_mma;
    /// 0 for the CPU.
    int64_t getLdsFloats() const;
    /// Scratch floats of the split partials: rows * splits * (Dv + 2).
    int64_t getScratchFloats() const {
      return getRows() * getSplits() * getStateFloats();
    }
    /// Warp-decode workgroup memory: kWarpsPerGroup * keysPerLoad states per
    /// query head of the group (the planner checks it before any request
    /// exists).
    static int64_t warpDecodeLdsFloats(int64_t nRep, int64_t valueWidth,
                                       int64_t keysPerLoad = 1) {
      return kWarpsPerGroup * keysPerLoad * nRep * (valueWidth + 2);
    }
    /// Elements per warp-decode load of a head width of `elementBytes`
    /// elements read by `lanes` lanes a row: the widest power of two <=
    /// kWarpLoadBytes / elementBytes with `width` a whole number of
    /// `lanes`-wide vectors (1: scalar loads).
    static int64_t warpVectorWidth(int64_t width, int64_t elementBytes,
                                   int64_t lanes = kWarpSize) {
      int64_t vector = kWarpLoadBytes / elementBytes;
      while (vector > 1 && width % (lanes * vector))
        vector /= 2;
      return vector < 1 ? 1 : vector;
    }
    /// The lanes a warp-decode row takes: the whole warp when its widths
    /// (0: absent) already read as full 16-byte vectors, else the widest
    /// kWarpSize / keys (keys = 2, 4, ... <= maxKeysPerLoad) that makes every
    /// width a whole number of 16-byte lane vectors; the whole warp when none
    /// does (bf16/f16 D = 128: 16 lanes x 8 elements, two keys a load).
    static int64_t warpRowLanes(int64_t elementBytes,
                                ::llvm::ArrayRef<int64_t> widths,
                                int64_t maxKeysPerLoad) {
      int64_t full = kWarpLoadBytes / elementBytes;
      for (int64_t keys = 1; keys <= maxKeysPerLoad && keys <= kWarpSize;
           keys *= 2) {
        bool whole = true;
        for (int64_t w : widths)
          whole &= !w || warpVectorWidth(w, elementBytes, kWarpSize / keys) ==
                             full;
        if (whole)
          return kWarpSize / keys;
      }
      return kWarpSize;
    }
  }];
}

def Poot_BlockTopKRequestAttr : Poot_Attr<"BlockTopKRequest", "block_topk_request"> {
  let summary = "The planner's generation request for one poot.block_topk";
  let description = [{
    The shape (`batch`, `q_len`, `blocks` = NB, `k`, `block_size`) and the
    schedule: `streaming`, one workgroup of `lanes` threads per (batch row,
    query row) over a `grid_x` x `grid_y` fold of the `batch * q_len`
    workgroups. Each of the `min(k, blocks)` rounds, every lane finds the
    best block of its stride j = lane, lane + lanes, ... that ranks after the
    previous round's winner; the lanes' bests (a key and an id per lane in
    workgroup memory) are folded by a tree into the round's winner. Equal
    requests generate equal kernels.
  }];
  let parameters = (ins
    "int64_t":$batch, "int64_t":$q_len, "int64_t":$blocks, "int64_t":$k,
    "int64_t":$block_size,
    EnumParameter<Poot_AttentionSchedule>:$schedule,
    "int64_t":$lanes, "int64_t":$grid_x, "int64_t":$grid_y);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Poot_SelectedAttentionRequestAttr
    : Poot_Attr<"SelectedAttentionRequest", "selected_attention_request"> {
  let summary = "The planner's generation request for one poot.selected_attention";
  let description = [{
    The shape (`batch`, `q_heads`, `kv_heads`, `q_len`, `key_len`,
    `key_width`, `value_width`), the selection (`k` listed blocks of
    `block_size` keys, so `visited = (k + 1) * block_size` positions per row:
    the listed blocks, then the row's own block), the score transform, and
    the seed's schedules over those positions: `streaming` (one workgroup of
    `lanes` threads per (batch row, query head, query row); lane l visits
    positions u = l, l + lanes, ... < visited, position u being key
    `u % block_size` of the row's `u / block_size`-th block) or `split_kv`
    (a partials launch per (row, split) over `chunk` positions each, then
    the combine launch); an NVIDIA decode takes `warp_decode` (a workgroup of
    4 warps per (batch row, KV group, split), a warp per visited position).
    The lane state, the scratch and the combine are those of
    `#poot.attention_request`'s schedules.
  }];
  let parameters = (ins
    "int64_t":$batch, "int64_t":$q_heads, "int64_t":$kv_heads,
    "int64_t":$q_len, "int64_t":$key_len, "int64_t":$key_width,
    "int64_t":$value_width, "int64_t":$k, "int64_t":$block_size,
    "int64_t":$visited,
    EnumParameter<Poot_ScoreTransform>:$transform,
    EnumParameter<Poot_AttentionSchedule>:$schedule,
    "int64_t":$lanes, "int64_t":$splits, "int64_t":$chunk,
    "int64_t":$grid_x, "int64_t":$grid_y);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // POOT_ATTRS_TD
