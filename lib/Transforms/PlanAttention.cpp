//===- PlanAttention.cpp - the attention planner ---------------------------===//
//
// Chooses, per poot.attention and device, the schedule the one generator will
// emit, and records it as a #poot.attention_request: the op is checked
// (element type, buffer sizes), then each schedule's planning rule is asked
// in turn (PlanRules.h). Refusals are errors whose
// message starts with a reason tag (AttentionLds, ScratchBytes, BufferBytes,
// DtypeLowering, GridLimit) that the Python driver maps to an exception type.
//
//===----------------------------------------------------------------------===//

#include "lib/Transforms/Passes.h"

#include "lib/Transforms/PlanCommon.h"
#include "lib/Transforms/PlanRules.h"
#include "lib/Transforms/PlanSelection.h"

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

    // The op's sizes, score, mask and key bound; each schedule's rule sets
    // its own schedule fields.
    AttentionRequestAttr shape = AttentionRequestAttr::get(
        op.getContext(), batch, qHeads, kvHeads, qLen, keyLen, keyWidth,
        sharedWidth, valueWidth,
        op.getSoftcap() ? ScoreKind::ScaleSoftcap : ScoreKind::Scale,
        maskKindOf(op), keyBoundOf(op), AttentionSchedule::Streaming, 1, 1,
        keyLen, 1, 1, /*q_block=*/0, /*key_block=*/0, /*unroll=*/0,
        /*row_lanes=*/0, op.getWindowAttr() ? op.getWindowAttr().getInt() : 0);
    // The first schedule whose rule takes the op plans it (PlanRules.h);
    // streaming takes whatever the others leave.
    DeviceDescription device = deviceLimits();
    for (const PlanningRule &rule : planningRules()) {
      PlanResult planned = rule.plan(op, shape, device);
      if (!planned)
        continue;
      if (failed(*planned))
        return failure();
      op.setRequestAttr(**planned);
      return success();
    }
    llvm_unreachable("the streaming rule plans or refuses every op");
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
    device.batchInvariant = batchInvariant;
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
    if (!validVectorWidth(vectorWidth))
      return emitError(UnknownLoc::get(context))
             << "poot-plan-attention: vector-width must be in [0, "
             << kMaxVectorWidth << "], got " << vectorWidth.getValue();
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
  plan.batchInvariant = device.batchInvariant;
  return plan;
}
