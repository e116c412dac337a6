//===- PlanCpuTiled.cpp - plan the CPU's own schedule ---------------------===//
//
// The CPU schedule (CpuAttentionKernel.h), for a CPU device with vectors
// (vector-width > 0). A work item serves one KV group's n_rep heads for a
// block of query rows, so each key row is read once per item; vectors of
// `lanes` floats run along the head width (the widest power of two <=
// vector-width dividing every head width); key blocks fit the per-core
// cache (`workgroup-memory`: the L1 data cache) and are a whole number of
// vectors; a decode whose items do not give every core two splits its keys
// (chunks of >= 512 keys, <= 16 splits).
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/PlanRules.h"
#include "lib/Transforms/PlanTail.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::poot;

PlanResult poot::planCpuTiled(AttentionOp op, AttentionRequestAttr shape,
                              const DeviceDescription &device) {
  if (device.target != DeviceTarget::CPU || device.vectorWidth <= 0)
    return std::nullopt;
  constexpr int64_t kCpuMinChunk = 512, kMaxKeyBlock = 256,
                    kQueryRowsPerItem = 16, kMaxSplits = 16, kFloatBytes = 4;
  // An item's row state lives on its thread's stack (CpuAttentionKernel):
  // keep it well inside the smallest default thread stack (OpenMP's
  // workers get 4 MiB on 64-bit hosts).
  constexpr int64_t kStackBudget = int64_t(1) << 20;
  int64_t batch = shape.getBatch(), qHeads = shape.getQHeads(),
          kvHeads = shape.getKvHeads(), qLen = shape.getQLen(),
          keyLen = shape.getKeyLen(), keyWidth = shape.getKeyWidth(),
          sharedWidth = shape.getSharedWidth(),
          valueWidth = shape.getValueWidth();
  int64_t computeUnits = device.computeUnits;
  int64_t width = std::max<int64_t>(
      1, int64_t(llvm::bit_floor(
             uint64_t(std::max<int64_t>(1, device.vectorWidth)))));
  auto divides = [&](int64_t w) {
    return keyWidth % w == 0 && sharedWidth % w == 0 && valueWidth % w == 0;
  };
  while (width > 1 && !divides(width))
    width /= 2;
  // Shapes are arbitrary static sizes: a byte count that overflows is past
  // every limit (INT64_MAX), never wrapped. A key block holds K/V rows in
  // their own element type (two bytes for f16/bf16: the kernel widens them
  // as it reads); the row state is f32.
  int64_t rowBytes = mul(keyWidth + sharedWidth + valueWidth,
                         elementBytes(op.getKey().getType()))
                         .value_or(INT64_MAX);
  int64_t keyBlock = width;
  while (keyBlock * 2 <= kMaxKeyBlock &&
         mul(keyBlock * 2, rowBytes).value_or(INT64_MAX) <=
             device.workgroupMemory &&
         keyBlock < keyLen)
    keyBlock *= 2;
  int64_t nRep = qHeads / kvHeads;
  // The largest divisor of Lq <= 16 / n_rep: whole blocks, no guards;
  // smaller while the item's row state does not fit the stack budget.
  auto stateBytes = [&](int64_t qBlock) {
    std::optional<int64_t> floats = llvm::checkedAdd(keyBlock, valueWidth + 2);
    return mul(mul(mul(floats.value_or(INT64_MAX), nRep), qBlock), kFloatBytes)
        .value_or(INT64_MAX);
  };
  int64_t qBlock = std::max<int64_t>(
      1, std::min<int64_t>(qLen, kQueryRowsPerItem / nRep));
  while (qBlock > 1 && (qLen % qBlock || stateBytes(qBlock) > kStackBudget))
    --qBlock;
  if (stateBytes(qBlock) > kStackBudget) {
    op.emitError() << "AttentionLds: the CPU schedule's row state for " << nRep
                   << " heads of value width " << valueWidth << " needs "
                   << stateBytes(qBlock)
                   << " bytes of a thread's stack; the budget is "
                   << kStackBudget << " bytes";
    return FailureOr<AttentionRequestAttr>(failure());
  }
  int64_t items = batch * kvHeads * llvm::divideCeil(qLen, qBlock);
  // Batch-invariant: the split one row of the batch would get (the items
  // are then only how the work is shared, never how a row is summed).
  int64_t splitItems = splitBatch(device, batch) * kvHeads *
                       llvm::divideCeil(qLen, qBlock);
  int64_t splits = 1;
  if (qLen == 1 && splitItems < 2 * computeUnits)
    splits = std::clamp<int64_t>(
        std::min<int64_t>(llvm::divideCeil(2 * computeUnits, splitItems),
                          shape.getSplitKeys() / kCpuMinChunk),
        1, std::min<int64_t>(kMaxSplits, device.maxSplits));
  int64_t laneBytes = (valueWidth + 2) * kFloatBytes;
  int64_t rows = batch * qHeads * qLen;
  // Threads only for work worth a parallel region (the same 2^18
  // multiply-adds as the CPU matmuls): a small step forks no team.
  constexpr int64_t kMinParallelWork = int64_t(1) << 18;
  int64_t work = mul(mul(rows, keyLen), keyWidth + sharedWidth + valueWidth)
                     .value_or(INT64_MAX);
  int64_t chunks = work < kMinParallelWork
                       ? 1
                       : std::min<int64_t>(items * splits,
                                           std::max<int64_t>(1, computeUnits));
  // The scratch is host memory and the items are loop iterations: only the
  // largest allocation bounds the split.
  SplitCost cost;
  cost.rows = rows;
  cost.stateBytes = laneBytes;
  cost.deviceBuffer = false;
  cost.detailed = false;
  if (failed(keepSplits(op, device, splits, cost)))
    return FailureOr<AttentionRequestAttr>(failure());
  return AttentionRequestAttr::get(
      op.getContext(), batch, qHeads, kvHeads, qLen, keyLen, keyWidth,
      sharedWidth, valueWidth, shape.getTransform(), shape.getMask(),
      shape.getKeyBound(), AttentionSchedule::CpuTiled, width, splits,
      (int64_t)llvm::divideCeil(shape.getSplitKeys(), splits), items * splits,
      chunks, qBlock,
      keyBlock, /*unroll=*/0, /*row_lanes=*/0, shape.getWindow());
}
