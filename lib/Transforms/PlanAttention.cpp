//===- PlanAttention.cpp - the attention planner ---------------------------===//
//
// Chooses, per poot.attention and device, the schedule the one generator will
// emit, and records it as a #poot.attention_request. Refusals are errors whose
// message starts with a reason tag (AttentionLds, ScratchBytes, BufferBytes,
// DtypeLowering, GridLimit) that the Python driver maps to an exception type.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "lib/Transforms/PlanCommon.h"
#include "lib/Transforms/PlanPrefill.h"
#include "lib/Transforms/PlanSelection.h"
#include "lib/Transforms/PlanTail.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTPLANATTENTION
#include "lib/Transforms/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

constexpr int64_t kMaxLanes = 64;
constexpr int64_t kMaxSplits = 16;
constexpr int64_t kMinChunk = 128;
constexpr int64_t kFloatBytes = 4;

/// The request's mask kind: none, one mask for every head, per head, or the
/// causal index expression.
MaskKind maskKindOf(AttentionOp op) {
  if (op.getCausal())
    return MaskKind::Causal;
  Value mask = op.getMask();
  if (!mask)
    return MaskKind::None;
  return cast<RankedTensorType>(mask.getType()).getDimSize(1) == 1
             ? MaskKind::Shared
             : MaskKind::PerHead;
}

/// Which keys a row visits and how they are addressed.
KeyBound keyBoundOf(AttentionOp op) {
  if (op.isPaged())
    return op.isLive() ? KeyBound::PagedLive : KeyBound::Paged;
  return op.isLive() ? KeyBound::Live : KeyBound::Capacity;
}

struct PlanAttention : poot::impl::PootPlanAttentionBase<PlanAttention> {
  using PootPlanAttentionBase::PootPlanAttentionBase;

  /// Every buffer a GPU kernel binds must fit one device buffer, and SPIR-V
  /// counts a buffer's elements in 32 bits (its runtime arrays: upstream
  /// truncates a larger count to a zero-length array and aborts). The CPU
  /// runs on host memory and has no such limit.
  LogicalResult checkBufferSizes(AttentionOp op) {
    if (target == DeviceTarget::CPU)
      return success();
    for (Value value :
         llvm::concat<Value>(op->getOperands(), op->getResults())) {
      auto type = cast<RankedTensorType>(value.getType());
      int64_t count = type.getNumElements();
      int64_t bytes = mul(count, (type.getElementTypeBitWidth() + 7) / 8)
                          .value_or(INT64_MAX);
      if (bytes > maxBufferBytes)
        return op.emitError() << "BufferBytes: a " << type << " buffer needs "
                              << bytes << " bytes; the device's largest "
                              << "buffer is " << maxBufferBytes.getValue()
                              << " bytes";
      if (target == DeviceTarget::SPIRV &&
          count > std::numeric_limits<uint32_t>::max())
        return op.emitError() << "BufferBytes: a " << type << " buffer has "
                              << count << " elements; a SPIR-V array holds "
                              << "at most "
                              << std::numeric_limits<uint32_t>::max();
    }
    return success();
  }

  /// The element types the generated kernels lower (two-byte attention,
  /// docs/two-byte-attention.md): f32, f16 and bf16 operands, f32 math.
  /// (SPIR-V carries bf16 as its bits, poot-spirv-bf16-as-i16, which also
  /// refuses it for a client without 16-bit integers.)
  LogicalResult checkElementType(AttentionOp op, Type element) {
    if (!element.isF32() && !element.isF16() && !element.isBF16())
      return op.emitError() << "DtypeLowering: the generated attention kernel "
                               "reads f32, f16 or bf16 and computes in f32; "
                               "this op is "
                            << element;
    return success();
  }

  static int64_t elementBytes(Type type) {
    return (getElementTypeOrSelf(type).getIntOrFloatBitWidth() + 7) / 8;
  }

  LogicalResult planOne(AttentionOp op) {
    auto q = cast<RankedTensorType>(op.getQuery().getType());
    auto k = cast<RankedTensorType>(op.getKey().getType());
    auto v = cast<RankedTensorType>(op.getValue().getType());
    if (failed(checkElementType(op, q.getElementType())))
      return failure();
    if (failed(checkBufferSizes(op)))
      return failure();

    int64_t batch = q.getDimSize(0), qHeads = q.getDimSize(1),
            qLen = q.getDimSize(2);
    int64_t kvHeads = k.getDimSize(1);
    int64_t keyLen = op.getKeyLength();
    int64_t keyWidth = k.getShape().back();
    int64_t sharedWidth =
        op.isSplitKey()
            ? cast<RankedTensorType>(op.getKeyShared().getType()).getDimSize(3)
            : 0;
    int64_t valueWidth = v.getShape().back();

    if (target == DeviceTarget::CPU && vectorWidth > 0)
      return planCpu(op, batch, qHeads, kvHeads, qLen, keyLen, keyWidth,
                     sharedWidth, valueWidth);
    // The op's sizes, score, mask and key bound; the schedule is chosen below.
    AttentionRequestAttr shape = AttentionRequestAttr::get(
        op.getContext(), batch, qHeads, kvHeads, qLen, keyLen, keyWidth,
        sharedWidth, valueWidth,
        op.getSoftcap() ? ScoreKind::ScaleSoftcap : ScoreKind::Scale,
        maskKindOf(op), keyBoundOf(op), AttentionSchedule::Streaming, 1, 1,
        keyLen, 1, 1, /*q_block=*/0, /*key_block=*/0);
    if (std::optional<LogicalResult> warp = planWarpDecode(op, shape))
      return *warp;

    // GPU prefill: the tiled schedule when a tiling fits.
    if (std::optional<FailureOr<AttentionRequestAttr>> tiled =
            planTiledPrefill(op, shape, deviceLimits())) {
      if (failed(*tiled))
        return failure();
      op.setRequestAttr(**tiled);
      return success();
    }
    // GPU decode of a wide KV group (MQA / MLA): the wide-head schedule.
    if (std::optional<FailureOr<AttentionRequestAttr>> wide =
            planWideHead(op, shape, deviceLimits())) {
      if (failed(*wide))
        return failure();
      op.setRequestAttr(**wide);
      return success();
    }

    // Lanes: the widest power of two <= 64 whose running state fits.
    std::optional<int64_t> laneBytesOr =
        mul(llvm::checkedAdd(valueWidth, int64_t(2)), kFloatBytes);
    if (!laneBytesOr)
      return op.emitError()
             << "AttentionLds: one lane's running state for value width "
             << valueWidth << " overflows a 64-bit byte count";
    int64_t laneBytes = *laneBytesOr;
    int64_t lanes = kMaxLanes;
    while (lanes >= 1 && mul(lanes, laneBytes).value_or(INT64_MAX) >
                             workgroupMemory)
      lanes /= 2;
    if (lanes < 1)
      return op.emitError()
             << "AttentionLds: one lane's running state for value width "
             << valueWidth << " needs " << laneBytes
             << " bytes of workgroup memory; the device has "
             << workgroupMemory.getValue() << " bytes";

    // Split-KV: decode rows that do not fill the device. (B * Hq * Lq is at
    // most q's element count, which the tensor type keeps below 2^63.)
    int64_t rows = batch * qHeads * qLen;
    int64_t splits = 1;
    if (qLen == 1 && rows < computeUnits) {
      int64_t want = llvm::divideCeil(computeUnits, rows);
      splits = std::min({kMaxSplits, want, keyLen / kMinChunk,
                         maxSplits.getValue()});
      if (splits < 2)
        splits = 1;
    }
    return planTail(op, shape, AttentionSchedule::Streaming, lanes, splits,
                    /*workgroupsPerSplit=*/rows, /*unroll=*/0);
  }

  /// The tail of the seed's GPU schedules and warp decode: the planner tail
  /// (PlanTail.h) keeps or drops `splits` and folds the grid; the request is
  /// recorded on `op`. A split streaming schedule becomes split_kv;
  /// warp_decode stays itself.
  LogicalResult planTail(AttentionOp op, AttentionRequestAttr shape,
                         AttentionSchedule schedule, int64_t lanes,
                         int64_t splits, int64_t workgroupsPerSplit,
                         int64_t unroll, int64_t rowLanes = 0) {
    SplitCost cost;
    cost.rows = shape.getRows();
    cost.stateBytes = shape.getStateFloats() * kFloatBytes;
    cost.workgroupsPerSplit = workgroupsPerSplit;
    FailureOr<int64_t> kept = keepSplits(op, deviceLimits(), splits, cost);
    if (failed(kept))
      return failure();
    splits = *kept;
    int64_t keyLen = shape.getKeyLen();
    int64_t chunk = llvm::divideCeil(keyLen, splits);

    // splits > 1 only when the workgroups fit the grid (checked above).
    FailureOr<Grid> grid =
        foldLaunch(op, deviceLimits(), workgroupsPerSplit * splits);
    if (failed(grid))
      return failure();
    if (schedule == AttentionSchedule::Streaming && splits > 1)
      schedule = AttentionSchedule::SplitKV;
    op.setRequestAttr(withSchedule(shape, schedule, lanes, splits, chunk, *grid,
                             unroll, rowLanes));
    return success();
  }

  /// `shape` (the op's sizes, score, mask and key bound) with a schedule.
  static AttentionRequestAttr withSchedule(AttentionRequestAttr shape,
                                           AttentionSchedule schedule,
                                           int64_t lanes, int64_t splits,
                                           int64_t chunk, Grid grid,
                                           int64_t unroll, int64_t rowLanes) {
    return AttentionRequestAttr::get(
        shape.getContext(), shape.getBatch(), shape.getQHeads(),
        shape.getKvHeads(), shape.getQLen(), shape.getKeyLen(),
        shape.getKeyWidth(), shape.getSharedWidth(), shape.getValueWidth(),
        shape.getTransform(), shape.getMask(), shape.getKeyBound(), schedule,
        lanes, splits, chunk, grid.x, grid.y, /*q_block=*/0, /*key_block=*/0,
        unroll, rowLanes);
  }

  /// The CPU schedule (CpuAttentionKernel.h). A work item serves one KV
  /// group's n_rep heads for a block of query rows, so each key row is read
  /// once per item; vectors of `lanes` floats run along the head width (the
  /// widest power of two <= vector-width dividing every head width); key
  /// blocks fit the per-core cache (`workgroup-memory`: the L1 data cache)
  /// and are a whole number of vectors; a decode whose items do not give
  /// every core two splits its keys (chunks of >= 512 keys, <= 16 splits).
  LogicalResult planCpu(AttentionOp op, int64_t batch, int64_t qHeads,
                        int64_t kvHeads, int64_t qLen, int64_t keyLen,
                        int64_t keyWidth, int64_t sharedWidth,
                        int64_t valueWidth) {
    constexpr int64_t kCpuMinChunk = 512, kMaxKeyBlock = 256,
                      kQueryRowsPerItem = 16;
    // An item's row state lives on its thread's stack (CpuAttentionKernel):
    // keep it well inside the smallest default thread stack (OpenMP's
    // workers get 4 MiB on 64-bit hosts).
    constexpr int64_t kStackBudget = int64_t(1) << 20;
    int64_t width = std::max<int64_t>(
        1, int64_t(llvm::bit_floor(
               uint64_t(std::max<int64_t>(1, vectorWidth)))));
    auto divides = [&](int64_t w) {
      return keyWidth % w == 0 && sharedWidth % w == 0 && valueWidth % w == 0;
    };
    while (width > 1 && !divides(width))
      width /= 2;
    // Shapes are arbitrary static sizes: a byte count that overflows is
    // past every limit (INT64_MAX), never wrapped.
    // A key block holds K/V rows in their own element type (two bytes for
    // f16/bf16: the kernel widens them as it reads); the row state is f32.
    int64_t rowBytes = mul(keyWidth + sharedWidth + valueWidth,
                           elementBytes(op.getKey().getType()))
                           .value_or(INT64_MAX);
    int64_t keyBlock = width;
    while (keyBlock * 2 <= kMaxKeyBlock &&
           mul(keyBlock * 2, rowBytes).value_or(INT64_MAX) <= workgroupMemory &&
           keyBlock < keyLen)
      keyBlock *= 2;
    int64_t nRep = qHeads / kvHeads;
    // The largest divisor of Lq <= 16 / n_rep: whole blocks, no guards;
    // smaller while the item's row state does not fit the stack budget.
    auto stateBytes = [&](int64_t qBlock) {
      std::optional<int64_t> floats =
          llvm::checkedAdd(keyBlock, valueWidth + 2);
      return mul(mul(mul(floats.value_or(INT64_MAX), nRep), qBlock),
                 kFloatBytes)
          .value_or(INT64_MAX);
    };
    int64_t qBlock = std::max<int64_t>(
        1, std::min<int64_t>(qLen, kQueryRowsPerItem / nRep));
    while (qBlock > 1 && (qLen % qBlock || stateBytes(qBlock) > kStackBudget))
      --qBlock;
    if (stateBytes(qBlock) > kStackBudget)
      return op.emitError()
             << "AttentionLds: the CPU schedule's row state for " << nRep
             << " heads of value width " << valueWidth << " needs "
             << stateBytes(qBlock) << " bytes of a thread's stack; the budget is "
             << kStackBudget << " bytes";
    int64_t items = batch * kvHeads * llvm::divideCeil(qLen, qBlock);
    int64_t splits = 1;
    if (qLen == 1 && items < 2 * computeUnits)
      splits = std::clamp<int64_t>(
          std::min<int64_t>(llvm::divideCeil(2 * computeUnits, items),
                            keyLen / kCpuMinChunk),
          1, std::min<int64_t>(kMaxSplits, maxSplits));
    int64_t laneBytes = (valueWidth + 2) * kFloatBytes;
    int64_t rows = batch * qHeads * qLen;
    // Threads only for work worth a parallel region (the same 2^18
    // multiply-adds as the CPU matmuls): a small step forks no team.
    constexpr int64_t kMinParallelWork = int64_t(1) << 18;
    int64_t work = mul(mul(rows, keyLen), keyWidth + sharedWidth + valueWidth)
                       .value_or(INT64_MAX);
    int64_t chunks =
        work < kMinParallelWork
            ? 1
            : std::min<int64_t>(items * splits,
                                std::max<int64_t>(1, computeUnits));
    // The scratch is host memory and the items are loop iterations: only
    // the largest allocation bounds the split.
    SplitCost cost;
    cost.rows = rows;
    cost.stateBytes = laneBytes;
    cost.deviceBuffer = false;
    cost.detailed = false;
    if (failed(keepSplits(op, deviceLimits(), splits, cost)))
      return failure();
    op.setRequestAttr(AttentionRequestAttr::get(
                    op.getContext(), batch, qHeads, kvHeads, qLen, keyLen,
                    keyWidth, sharedWidth, valueWidth,
                    op.getSoftcap() ? ScoreKind::ScaleSoftcap : ScoreKind::Scale,
                    maskKindOf(op), keyBoundOf(op), AttentionSchedule::CpuTiled,
                    width, splits, (int64_t)llvm::divideCeil(keyLen, splits),
                    items * splits, chunks, qBlock, keyBlock));
    return success();
  }

  /// NVIDIA decode: the warp-cooperative schedule (WarpDecodeKernel.h) when
  /// the head widths are whole warps, the group's warp states fit workgroup
  /// memory and its registers stay modest; nullopt keeps the seed's
  /// schedules. Each workgroup reads its keys once for all n_rep heads.
  std::optional<LogicalResult> planWarpDecode(AttentionOp op,
                                              AttentionRequestAttr shape) {
    int64_t nRep = shape.getNumRep();
    if (target != DeviceTarget::NVVM || shape.getQLen() != 1 ||
        !warpDecodeFits(nRep, shape.getKeyWidth(), shape.getSharedWidth(),
                        shape.getValueWidth(), workgroupMemory))
      return std::nullopt;
    // At most k's element count (below 2^63).
    int64_t groups = shape.getBatch() * shape.getKvHeads();
    if (!foldGrid(groups, maxGridX, maxGridY))
      return std::nullopt;
    int64_t splits = std::min<int64_t>(
        warpDecodeSplits(groups, shape.getKeyLen(), computeUnits), maxSplits);
    // Half-warp (or narrower) rows where a whole warp's row would not read
    // 16-byte vectors (bf16/f16 D = 128), within max-keys-per-load and
    // while the doubled lane state still fits; 0 records the whole warp.
    // Two-byte keys only: that is what ran on the H200 (bench/NOTES.md
    // "half-warp rows"); f32 rows narrower than 128 keep the whole warp.
    int64_t dk = shape.getKeyWidth(), ds = shape.getSharedWidth(),
            dv = shape.getValueWidth();
    int64_t keyBytes = elementBytes(op.getKey().getType());
    int64_t rowLanes = AttentionRequestAttr::warpRowLanes(
        keyBytes, {dk, ds, dv}, keyBytes == 2 ? maxKeysPerLoad : 1);
    int64_t keysPerLoad = AttentionRequestAttr::kWarpSize / rowLanes;
    if (keysPerLoad > 1 &&
        !warpDecodeFits(nRep, dk, ds, dv, workgroupMemory, keysPerLoad))
      keysPerLoad = 1;
    // unroll 0: the scalar one-key form (max-unroll=0 with whole-warp rows;
    // the default is 4); rows of several keys a load are vector loads.
    int64_t unroll =
        maxUnroll == 0 && keysPerLoad == 1
            ? 0
            : warpDecodeUnroll(nRep, dk, ds, dv,
                               std::max<int64_t>(maxUnroll, 1), keysPerLoad);
    return planTail(op, shape, AttentionSchedule::WarpDecode,
                    AttentionRequestAttr::kWarpSize *
                        AttentionRequestAttr::kWarpsPerGroup,
                    splits, /*workgroupsPerSplit=*/groups, unroll,
                    keysPerLoad > 1 ? AttentionRequestAttr::kWarpSize /
                                          keysPerLoad
                                    : 0);
  }

  /// The device the options describe (the schedules' rules read it).
  DeviceDescription deviceLimits() {
    DeviceDescription device;
    device.target = target;
    device.workgroupMemory = workgroupMemory;
    device.maxGridX = maxGridX;
    device.maxGridY = maxGridY;
    device.computeUnits = computeUnits;
    device.vectorWidth = vectorWidth;
    device.maxBufferBytes = maxBufferBytes;
    device.maxAllocBytes = maxAllocBytes;
    device.maxSplits = maxSplits;
    device.mmaSm = mmaSm;
    device.wideHeadMma = wideHeadMma;
    device.maxUnroll = maxUnroll;
    device.maxKeysPerLoad = maxKeysPerLoad;
    return device;
  }

  /// The device description, checked once before anything is planned: the
  /// grid limits divide workgroup counts, so a device with no workgroup in a
  /// dimension cannot run anything.
  LogicalResult initialize(MLIRContext *context) override {
    for (auto [name, value] : {std::pair{"max-grid-x", maxGridX.getValue()},
                               std::pair{"max-grid-y", maxGridY.getValue()},
                               std::pair{"max-splits", maxSplits.getValue()}})
      if (value < 1)
        return emitError(UnknownLoc::get(context))
               << "poot-plan-attention: " << name << " must be >= 1, got "
               << value;
    if (maxUnroll < 0)
      return emitError(UnknownLoc::get(context))
             << "poot-plan-attention: max-unroll must be >= 0, got "
             << maxUnroll.getValue();
    if (maxKeysPerLoad < 1)
      return emitError(UnknownLoc::get(context))
             << "poot-plan-attention: max-keys-per-load must be >= 1, got "
             << maxKeysPerLoad.getValue();
    return success();
  }

  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](Operation *op) {
      if (auto attention = dyn_cast<AttentionOp>(op))
        if (mlir::failed(planOne(attention)))
          failed = true;
      if (mlir::failed(planSelectionOp(op, deviceLimits())))
        failed = true;
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace

PootPlanAttentionOptions
mlir::poot::planAttentionOptions(const DeviceDescription &device) {
  PootPlanAttentionOptions plan;
  plan.target = device.target;
  plan.workgroupMemory = device.workgroupMemory;
  plan.maxGridX = device.maxGridX;
  plan.maxGridY = device.maxGridY;
  plan.computeUnits = device.computeUnits;
  plan.vectorWidth = device.vectorWidth;
  plan.maxBufferBytes = device.maxBufferBytes;
  plan.maxAllocBytes = device.maxAllocBytes;
  plan.maxSplits = device.maxSplits;
  plan.mmaSm = device.mmaSm;
  plan.wideHeadMma = device.wideHeadMma;
  plan.maxUnroll = device.maxUnroll;
  plan.maxKeysPerLoad = device.maxKeysPerLoad;
  return plan;
}
