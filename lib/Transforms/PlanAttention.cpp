//===- PlanAttention.cpp - the attention planner ---------------------------===//
//
// Chooses, per poot.attention and device, the schedule the one generator will
// emit, and records it as a #poot.attention_request. Refusals are errors whose
// message starts with a reason tag (AttentionLds, ScratchBytes, DtypeLowering,
// GridLimit) that the Python driver maps to an exception type.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

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

struct Grid {
  int64_t x = 0, y = 0;
};

/// Folds `count` workgroups onto (x, y); nullopt when even that does not fit.
std::optional<Grid> foldGrid(int64_t count, int64_t maxX, int64_t maxY) {
  Grid grid;
  grid.x = std::min(count, maxX);
  grid.y = llvm::divideCeil(count, grid.x);
  if (grid.y > maxY)
    return std::nullopt;
  return grid;
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

    MaskKind mask = MaskKind::None;
    if (Value m = op.getMask())
      mask = cast<RankedTensorType>(m.getType()).getDimSize(1) == 1
                 ? MaskKind::Shared
                 : MaskKind::PerHead;
    KeyBound bound = op.isPaged()
                         ? (op.isLive() ? KeyBound::PagedLive : KeyBound::Paged)
                         : (op.isLive() ? KeyBound::Live : KeyBound::Capacity);
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
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
