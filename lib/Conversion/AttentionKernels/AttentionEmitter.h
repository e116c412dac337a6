//===- AttentionEmitter.h - the one attention kernel body ----------*- C++ -*-===//
//
// The body of the seed's attention schedules, written once over memrefs and
// three ids (row, split, lane). The GPU kernels (SPIR-V, NVVM, ROCDL) take the
// ids from gpu.block_id / gpu.thread_id and separate the phases with a
// barrier; the CPU form takes them from loops and separates the phases by
// running every lane's first phase before any lane's second. Both therefore
// run the same lanes, splits and combine order.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_ATTENTIONEMITTER_H
#define POOT_CONVERSION_ATTENTIONKERNELS_ATTENTIONEMITTER_H

#include "dialect/PootDialect.h"
#include "lib/Conversion/AttentionKernels/KernelBuilder.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::poot {

/// Flat (1-D) buffers a kernel reads and writes; optional ones are null.
struct AttentionBuffers {
  Value query, key, value, keyShared, mask, read, length;
  /// `out` [B*Hq*Lq*Dv] for streaming/combine; `scratch` for partials.
  Value out, scratch;
};

/// Which operands a request needs, in kernel-argument order.
struct AttentionSignature {
  bool keyShared = false, mask = false, read = false, length = false;
  /// Mask dims of size 1 broadcast ([B|1, Hq|1, Lq|1, Lk]).
  int64_t maskBatch = 1, maskHeads = 1, maskRows = 1;
};

/// Emits the phases of the schedule described by a #poot.attention_request.
class AttentionEmitter : private KernelBuilder {
public:
  AttentionEmitter(OpBuilder &builder, Location loc, AttentionRequestAttr req,
                   AttentionSignature sig, double scale,
                   std::optional<double> softcap);

  /// Workgroup-memory floats the schedule needs (the request's
  /// getLdsFloats: lanes * (Dv + 2) for the seed's schedules).
  int64_t ldsFloats() const { return req.getLdsFloats(); }
  /// Scratch floats of the split-KV schedule: rows * splits * (Dv + 2).
  int64_t scratchFloats() const { return req.getScratchFloats(); }
  /// Rows = B * Hq * Lq.
  int64_t rows() const { return req.getRows(); }

  /// Phase 1 for one lane: initialise its state in `lds` and stream its keys
  /// t = begin + lane, begin + lane + lanes, ... < end, where [begin, end) is
  /// the split's chunk of the row's visible keys.
  void emitLaneScan(const AttentionBuffers &bufs, Value row, Value split,
                    Value lane, Value lds);

  /// Phase 2 for one lane: fold every lane's state over the output channels
  /// c = lane, lane + lanes, ... < Dv. Streaming writes the normalised output;
  /// split partials write the unnormalised (o, m, l) to the scratch.
  void emitLaneCombine(const AttentionBuffers &bufs, Value row, Value split,
                       Value lane, Value lds);

  /// The split-KV combine launch, for one lane of one row's workgroup.
  void emitSplitCombine(const AttentionBuffers &bufs, Value row, Value lane);

  // The pieces of the lane scan, for schedules that visit another key set
  // (the selected-attention kernel): the same lane state and update.

  /// Sets the lane's state in `lds` to (o = 0, m = -inf, l = 0); returns its
  /// base offset lane * (Dv + 2).
  Value emitLaneInit(Value lane, Value lds);
  /// Folds key t of (row, b, h, kv group g) into the lane state at `base`.
  void emitVisit(const AttentionBuffers &bufs, Value row, Value b, Value h,
                 Value g, Value t, Value base, Value lds);
  /// The batch row b and query head h of a row index.
  std::pair<Value, Value> batchAndHead(Value row);

  // The pieces every schedule shares (the tiled prefill reads them too).

  /// Number of visible keys of batch row b: Lk, or clamp(len[b], 0, Lk).
  Value keyEnd(const AttentionBuffers &bufs, Value b);
  /// The same with another cap than Lk (positions of another key set).
  Value keyEnd(const AttentionBuffers &bufs, Value b, int64_t cap);
  /// The first key of a split's chunk: base + split * chunk
  /// (AttentionRequestAttr::getSplitBase: 0, or a decode window's start).
  Value splitBegin(Value split);
  /// A split's chunk of the visible keys [0, end):
  /// [splitBegin, min(splitBegin + chunk, end)).
  std::pair<Value, Value> chunkBounds(Value split, Value end);
  /// With the causal kind, the keys query row i sees end at
  /// min(end, i + (Lk - Lq) + 1); otherwise `end`.
  Value causalEnd(Value end, Value i);
  /// With a window, the first key query row i sees:
  /// max(0, i + (Lk - Lq) - window + 1); otherwise null (key 0).
  Value windowBegin(Value i);
  /// `begin` raised to query row i's windowBegin, when there is a window.
  Value windowStart(Value begin, Value i);
  /// A tiled walk's start: `begin` raised to the start of the tile of
  /// `tile` keys that holds query row i's windowBegin (`begin` and the
  /// tiles are aligned alike).
  Value windowTileStart(Value begin, Value i, int64_t tile);
  /// Whether key t is at or past query row i's windowBegin (i1); null
  /// without a window.
  Value inWindow(Value t, Value i);
  /// Base offset of value(b, g, t) and of the dense/paged key row.
  Value keyRowBase(const AttentionBuffers &bufs, Value b, Value g, Value t,
                   int64_t width);
  /// The row of key t of (b, g) in the K/V buffers (scale by the width for
  /// its base): dense (b * Hkv + g) * Lk + t, paged read[b, t] * Hkv + g.
  Value keyRow(const AttentionBuffers &bufs, Value b, Value g, Value t);
  /// Base offset of the shared key part k_shared[b, 0, t, :] (read once for
  /// every head).
  Value sharedKeyBase(Value b, Value t);
  /// The score transform of a dot product: scale, then the softcap.
  Value transformScore(Value dot);
  /// `s` plus the tensor mask's word for (b, h, query row i, key t), or `s`
  /// when there is no mask operand.
  Value addMask(const AttentionBuffers &bufs, Value s, Value b, Value h,
                Value i, Value t);

  /// `count` partial states laid out as (o[Dv], m, l) from base(i) of `mem`
  /// (the lanes', warps' or splits' states of one row).
  struct PartialStates {
    Value mem;
    int64_t count;
    function_ref<Value(Value i)> base;
  };
  /// The fold's max M = max_i m_i and denominator sum_i l_i exp(m_i - M)
  /// (a state that saw nothing weighs 0).
  std::pair<Value, Value> foldMaxAndSum(const PartialStates &states);
  /// The fold's numerator of channel c: sum_i o_i[c] exp(m_i - M).
  Value foldChannel(const PartialStates &states, Value max, Value c);

private:
  /// Score of key t for (row, b, h): transform(q . key(t)) + mask.
  Value score(const AttentionBuffers &bufs, Value row, Value b, Value h,
              Value g, Value t);

  AttentionRequestAttr req;
  AttentionSignature sig;
  double scale;
  std::optional<double> softcap;
};

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_ATTENTIONEMITTER_H
