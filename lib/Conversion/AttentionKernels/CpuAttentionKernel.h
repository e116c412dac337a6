//===- CpuAttentionKernel.h - the CPU schedule of attention -------*- C++ -*-===//
//
// The `cpu_tiled` schedule (#poot.attention_request, planned for the host):
// the GPU schedules' lanes are threads that a CPU would run one after
// another, so the CPU gets its own loop nest instead, written in the vector
// dialect over the same flat buffers as the other emitters:
//
//   scf.parallel over chunks (one per core), each over its work items
//   (b, kv group g, query block, split):
//     for each key block of `key_block` keys in the split's chunk:
//       for each of the item's rows r (n_rep heads x q_block query rows):
//         s[j]  = scale * dot(q_r, k[t]) (+ softcap, + mask)   vectors over D
//         m'    = max(m, max_j s[j]);  p[j] = exp(s[j] - m')   vectors over j
//         l     = l * exp(m - m') + sum_j p[j]
//         o     = o * exp(m - m') + sum_j p[j] * v[t]           vectors over D
//   out = o / l, or (o, m, l) partials and a combine loop when split.
//
// A key row is read once per work item for all of its rows (GQA reads K/V
// once per group). The work items are independent, so the parallel loop
// becomes an OpenMP worksharing loop (or a serial loop) downstream.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_CPUATTENTIONKERNEL_H
#define POOT_CONVERSION_ATTENTIONKERNELS_CPUATTENTIONKERNEL_H

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"

namespace mlir::poot {

class CpuAttentionKernel : private KernelBuilder {
public:
  CpuAttentionKernel(OpBuilder &builder, Location loc, AttentionRequestAttr req,
                     AttentionSignature sig, double scale,
                     std::optional<double> softcap);

  /// Scratch floats of the split schedule: rows * splits * (Dv + 2); 0 when
  /// the request is not split.
  int64_t scratchFloats() const;

  /// Emits the whole kernel at the builder's insertion point: reads the
  /// inputs of `bufs`, writes `bufs.out` (and `bufs.scratch` when split).
  void emit(const AttentionBuffers &bufs);

private:
  /// A work item's row state: scores/probabilities [rows x key_block], the
  /// running output [rows x Dv], max and sum [rows] (stack buffers).
  struct ItemState {
    Value scores, acc, runMax, runSum;
  };
  ItemState allocateItemState();
  /// One work item: its rows over its split's keys.
  void emitItem(const AttentionBuffers &bufs, const ItemState &state,
                Value item);
  /// The split combine for one row.
  void emitCombine(const AttentionBuffers &bufs, Value row);
  /// Visible keys of batch row b: Lk, or clamp(len[b], 0, Lk).
  Value keyEnd(const AttentionBuffers &bufs, Value batch);
  /// Base offset of the key/value row of (b, g, t), dense or paged.
  Value keyRowBase(const AttentionBuffers &bufs, Value batch, Value g, Value t,
                   int64_t width);

  VectorType vec() const;
  Value vload(Value mem, Value idx);
  void vstore(Value val, Value mem, Value idx);
  Value splat(Value scalar);
  /// The W lane sums of W vectors of W lanes as one vector: lane j is the
  /// sum of vecs[j]'s lanes. A transpose tree: each level adds two shuffles
  /// of a pair, halving the lanes each source keeps (W - 1 pairs in all,
  /// instead of W separate horizontal reductions).
  Value sumAcrossLanes(ArrayRef<Value> vecs);

  AttentionRequestAttr req;
  AttentionSignature sig;
  double scale;
  std::optional<double> softcap;
};

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_CPUATTENTIONKERNEL_H
