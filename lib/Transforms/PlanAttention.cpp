//===- PlanAttention.cpp - the attention planner ---------------------------===//
//
// Chooses, per poot.attention and device, the schedule the one generator will
// emit, and records it as a #poot.attention_request. Refusals are errors whose
// message starts with a reason tag (AttentionLds, ScratchBytes, DtypeLowering,
// GridLimit) that the Python driver maps to an exception type.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "lib/Transforms/PlanCommon.h"
#include "lib/Transforms/PlanSelection.h"

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

/// The request's mask kind: none, one mask for every head, or per head.
MaskKind maskKindOf(AttentionOp op) {
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

  LogicalResult planOne(AttentionOp op) {
    auto q = cast<RankedTensorType>(op.getQuery().getType());
    auto k = cast<RankedTensorType>(op.getKey().getType());
    auto v = cast<RankedTensorType>(op.getValue().getType());
    if (!q.getElementType().isF32())
      return op.emitError() << "DtypeLowering: the generated attention kernel "
                               "is f32 only, this op is "
                            << q.getElementType();

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

    if (std::optional<LogicalResult> warp = planWarpDecode(
            op, batch, qHeads, kvHeads, qLen, keyLen, keyWidth, sharedWidth,
            valueWidth))
      return *warp;

    // Lanes: the widest power of two <= 64 whose running state fits.
    int64_t laneBytes = (valueWidth + 2) * kFloatBytes;
    int64_t lanes = kMaxLanes;
    while (lanes >= 1 && lanes * laneBytes > workgroupMemory)
      lanes /= 2;
    if (lanes < 1)
      return op.emitError()
             << "AttentionLds: one lane's running state for value width "
             << valueWidth << " needs " << laneBytes
             << " bytes of workgroup memory; the device has "
             << workgroupMemory.getValue() << " bytes";

    // Split-KV: decode rows that do not fill the device.
    int64_t rows = batch * qHeads * qLen;
    int64_t splits = 1;
    if (qLen == 1 && rows < computeUnits) {
      int64_t want = llvm::divideCeil(computeUnits, rows);
      splits = std::min({kMaxSplits, want, keyLen / kMinChunk});
      if (splits < 2)
        splits = 1;
    }
    if (splits > 1) {
      int64_t scratchBytes = rows * splits * laneBytes;
      bool fitsBuffer = scratchBytes <= maxBufferBytes;
      bool fitsGrid =
          foldGrid(rows * splits, maxGridX, maxGridY).has_value();
      if (!fitsBuffer || !fitsGrid) {
        splits = 1;
      } else if (scratchBytes > maxAllocBytes) {
        return op.emitError()
               << "ScratchBytes: the split-KV scratch needs " << scratchBytes
               << " bytes (" << rows << " rows x " << splits << " splits x "
               << laneBytes << " bytes); the device can allocate "
               << maxAllocBytes.getValue() << " bytes";
      }
    }
    int64_t chunk = llvm::divideCeil(keyLen, splits);

    std::optional<Grid> grid = foldGrid(rows * splits, maxGridX, maxGridY);
    if (!grid)
      return op.emitError() << "GridLimit: " << rows * splits
                            << " workgroups do not fit a " << maxGridX.getValue() << " x "
                            << maxGridY.getValue() << " grid";

    MaskKind mask = maskKindOf(op);
    KeyBound bound = keyBoundOf(op);
    auto request = AttentionRequestAttr::get(
        op.getContext(), batch, qHeads, kvHeads, qLen, keyLen, keyWidth,
        sharedWidth, valueWidth,
        op.getSoftcap() ? ScoreKind::ScaleSoftcap : ScoreKind::Scale,
        mask, bound,
        splits > 1 ? AttentionSchedule::SplitKV : AttentionSchedule::Streaming,
        lanes, splits, chunk, grid->x, grid->y);
    op->setAttr(PootDialect::kRequestAttrName, request);
    return success();
  }

  /// NVIDIA decode: the warp-cooperative schedule (WarpDecodeKernel.h) when
  /// the head widths are whole warps, the group's warp states fit workgroup
  /// memory and its registers stay modest; nullopt keeps the seed's
  /// schedules. Each workgroup reads its keys once for all n_rep heads.
  std::optional<LogicalResult>
  planWarpDecode(AttentionOp op, int64_t batch, int64_t qHeads, int64_t kvHeads,
                 int64_t qLen, int64_t keyLen, int64_t keyWidth,
                 int64_t sharedWidth, int64_t valueWidth) {
    constexpr int64_t warp = 32, warps = 4;
    int64_t nRep = qHeads / kvHeads;
    if (target != "nvvm" || qLen != 1 ||
        !warpDecodeFits(nRep, keyWidth, sharedWidth, valueWidth,
                        workgroupMemory))
      return std::nullopt;
    int64_t groups = batch * kvHeads;
    int64_t splits = warpDecodeSplits(groups, keyLen, computeUnits);
    int64_t rows = batch * qHeads;
    int64_t scratchBytes = rows * splits * (valueWidth + 2) * kFloatBytes;
    if (splits > 1 && (scratchBytes > maxBufferBytes ||
                       !foldGrid(groups * splits, maxGridX, maxGridY)))
      splits = 1;
    if (splits > 1 && scratchBytes > maxAllocBytes)
      return op.emitError()
             << "ScratchBytes: the split-KV scratch needs " << scratchBytes
             << " bytes; the device can allocate " << maxAllocBytes.getValue()
             << " bytes";
    std::optional<Grid> grid = foldGrid(groups * splits, maxGridX, maxGridY);
    if (!grid)
      return std::nullopt;
    MaskKind mask = maskKindOf(op);
    KeyBound bound = keyBoundOf(op);
    op->setAttr(PootDialect::kRequestAttrName,
                AttentionRequestAttr::get(
                    op.getContext(), batch, qHeads, kvHeads, qLen, keyLen,
                    keyWidth, sharedWidth, valueWidth,
                    op.getSoftcap() ? ScoreKind::ScaleSoftcap : ScoreKind::Scale,
                    mask, bound, AttentionSchedule::WarpDecode, warp * warps,
                    splits, (int64_t)llvm::divideCeil(keyLen, splits), grid->x,
                    grid->y));
    return success();
  }

  DeviceLimits deviceLimits() {
    return {target, workgroupMemory, maxGridX,      maxGridY,
            computeUnits, maxBufferBytes, maxAllocBytes};
  }

  /// SPIR-V has no two-byte select: a bf16/f16 chain that stays primitive
  /// cannot be lowered there.
  LogicalResult checkDtypeLowering(Operation *op) {
    if (target != "spirv" || !isa<SelectOp>(op))
      return success();
    Type elem = getElementTypeOrSelf(op->getResult(0).getType());
    if (elem.isF16() || elem.isBF16())
      return op->emitError() << "DtypeLowering: SPIR-V cannot lower a "
                                "two-byte select ("
                             << elem << ")";
    return success();
  }

  void runOnOperation() override {
    if (target != "cpu" && target != "spirv" && target != "nvvm" &&
        target != "rocdl") {
      getOperation().emitError()
          << "unknown target '" << target << "' (cpu, spirv, nvvm, rocdl)";
      return signalPassFailure();
    }
    bool failed = false;
    getOperation().walk([&](Operation *op) {
      if (mlir::failed(checkDtypeLowering(op)))
        failed = true;
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
