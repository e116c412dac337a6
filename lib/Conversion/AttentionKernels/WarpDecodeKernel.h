//===- WarpDecodeKernel.h - the warp-cooperative decode kernel ----*- C++ -*-===//
//
// The NVIDIA decode schedule the planner picks over the seed's one-key-per-
// lane streaming schedule (bench/NOTES.md measured why): a workgroup of
// `kWarpsPerGroup` warps per (batch row, KV group, split) serves all n_rep
// query heads of the group, so each K/V row is read once, by one warp,
// coalesced: lane l holds vectors of V consecutive channels (16-byte loads
// when the head width is a whole number of 32 * V: V = 4 for f32, 8 for
// f16/bf16; smaller vectors or scalars otherwise) of the query heads and of
// the running outputs in registers; a 5-step xor shuffle completes each dot
// product. A warp loads the request's `unroll` keys before it uses any. The
// warps' states are folded through workgroup memory at the end. The score,
// mask, addressing, online step and fold are AttentionEmitter's; the split
// combine is AttentionEmitter::emitSplitCombine.
//
//===----------------------------------------------------------------------===//

#ifndef POOT_CONVERSION_ATTENTIONKERNELS_WARPDECODEKERNEL_H
#define POOT_CONVERSION_ATTENTIONKERNELS_WARPDECODEKERNEL_H

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"

namespace mlir::poot {

/// Threads of one warp, and warps per workgroup of the warp-decode schedule
/// (defined on the request, which the planner sizes with).
constexpr int64_t kWarpSize = AttentionRequestAttr::kWarpSize;
constexpr int64_t kWarpsPerGroup = AttentionRequestAttr::kWarpsPerGroup;

/// For a schedule that visits another key set than [0, len) (the selected
/// attention): the warps stride over positions u of the split's chunk of
/// [0, end), and `map(batch, u)` gives the key t of position u and whether
/// to visit it (warp-uniform: one warp handles one position).
struct WarpKeyMap {
  int64_t end;
  function_ref<std::pair<Value, Value>(Value batch, Value u)> map;
};

/// Emits the body of the warp-decode kernel for workgroup `wg` and thread
/// `tid`; `lds` holds kWarpsPerGroup * n_rep * (Dv + 2) floats. Writes the
/// normalised output (splits == 1) or the split's partial states.
void emitWarpDecode(OpBuilder &b, Location loc, AttentionRequestAttr req,
                    const AttentionSignature &sig, double scale,
                    std::optional<double> softcap, const AttentionBuffers &bufs,
                    Value wg, Value tid, Value lds,
                    const WarpKeyMap *keyMap = nullptr);

} // namespace mlir::poot

#endif // POOT_CONVERSION_ATTENTIONKERNELS_WARPDECODEKERNEL_H
