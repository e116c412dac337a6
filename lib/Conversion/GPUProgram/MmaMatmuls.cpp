//===- MmaMatmuls.cpp - poot-gpu-mma-matmuls -------------------------------===//
//
// A marked two-byte matmul (MmaContraction.h; marked, and split over the
// reduction where that fills the GPU, by poot-gpu-split-reductions) becomes
// one launch of a generated kernel on mma.sync m16n8k16 with f32
// accumulators (MmaKernel.h: the direct kernel for few rows, the staged
// one for prefill-sized matmuls; MmaWorkgroupShape chooses).
// Both kernels load the lhs as vectors: an input read directly, contiguous
// along k in aligned vectors, or else (a fused prologue: an RMSNorm's scaling, SiLU(gate) * up)
// the prologue is computed once into a two-byte buffer of its own by an
// elementwise op over the matmul's loops but the columns, run before the
// kernel (recomputing it in the kernel would redo each element for every
// 64 columns).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/BufferViews.h"
#include "lib/Conversion/GPUProgram/MmaKernel.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUMMAMATMULS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// Whether `v` covers every element of the buffer it views.
bool wholeBuffer(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  auto base = dyn_cast<MemRefType>(viewedBuffer(v).getType());
  return type && base && type.hasStaticShape() && base.hasStaticShape() &&
         type.getNumElements() == base.getNumElements();
}

/// The constant a `linalg.fill` of `out`'s buffer (or of a view of all of
/// it, `out` covering all of it too) just before `op` writes (nothing
/// between them but views touches the buffer), and the fill; nothing
/// otherwise.
std::pair<std::optional<double>, linalg::FillOp>
foldableFill(linalg::LinalgOp op, Value out) {
  Value buffer = viewedBuffer(out);
  auto touches = [&](Operation *prev) {
    return llvm::any_of(prev->getOperands(),
                        [&](Value v) { return viewedBuffer(v) == buffer; });
  };
  Operation *prev = op->getPrevNode();
  for (; prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev);
        fill && viewedBuffer(fill.getOutputs()[0]) == buffer) {
      FloatAttr value;
      if (!matchPattern(fill.getInputs()[0], m_Constant(&value)) ||
          !wholeBuffer(fill.getOutputs()[0]) || !wholeBuffer(out))
        return {};
      return {value.getValueAsDouble(), fill};
    }
    if (isa<ViewLikeOpInterface>(prev) && isPure(prev))
      continue;
    if (touches(prev))
      return {};
  }
  return {};
}

/// `v` as a 1-D buffer of its elements (a view of the same buffer).
Value flatten(OpBuilder &b, Location loc, Value v) {
  auto type = cast<MemRefType>(v.getType());
  if (type.getRank() == 1)
    return v;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::CollapseShapeOp::create(b, loc, v,
                                         ArrayRef<ReassociationIndices>{all});
}

/// The lhs expression of `mm` computed once, before `op`, into a new
/// two-byte buffer over the op's loops but the columns (the reduction loop
/// last, so the kernel reads it in vectors along k): an elementwise
/// linalg.generic running the payload's own lhs ops. Returns the buffer and
/// its access over `op`'s loops (0 along the columns).
std::pair<Value, LinearAccess> materializeLhs(OpBuilder &b,
                                              linalg::LinalgOp op,
                                              const MmaContraction &mm) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  unsigned loops = op.getNumLoops();
  SmallVector<unsigned> kept; // buffer dims, as loops of `op`
  for (unsigned d = 0; d < loops; ++d)
    if (d != mm.reduction && !llvm::is_contained(mm.columnLoops, d))
      kept.push_back(d);
  kept.push_back(mm.reduction);
  SmallVector<int64_t> shape;
  for (unsigned d : kept)
    shape.push_back(mm.ranges[d]);
  Value buffer = memref::AllocOp::create(
      b, loc, MemRefType::get(shape, mm.element));
  // The generic's loop i is op's loop kept[i]; op's column loops are not
  // loops of it (no lhs input reads them).
  SmallVector<AffineExpr> toNew(loops, getAffineConstantExpr(0, ctx));
  for (auto [i, d] : llvm::enumerate(kept))
    toNew[d] = getAffineDimExpr(i, ctx);
  SmallVector<AffineMap> maps;
  SmallVector<Value> inputs;
  for (OpOperand *in : mm.lhsInputs) {
    inputs.push_back(in->get());
    maps.push_back(op.getMatchingIndexingMap(in).replaceDimsAndSymbols(
        toNew, {}, kept.size(), 0));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(kept.size(), ctx));
  SmallVector<utils::IteratorType> parallel(kept.size(),
                                            utils::IteratorType::parallel);
  Block *payload = op.getBlock();
  linalg::GenericOp::create(
      b, loc, inputs, ValueRange{buffer}, maps, parallel,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping map;
        for (auto [i, in] : llvm::enumerate(mm.lhsInputs))
          map.map(payload->getArgument(in->getOperandNumber()), args[i]);
        // The payload's lhs ops (values from outside the payload dominate
        // the new op: used as they are).
        for (Operation *inner : mm.lhsOps) {
          // A loop index is the same loop's index in the generic.
          if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
            unsigned at = llvm::find(kept, index.getDim()) - kept.begin();
            map.map(index.getResult(),
                    linalg::IndexOp::create(nb, nloc, at).getResult());
            continue;
          }
          nb.clone(*inner, map);
        }
        linalg::YieldOp::create(nb, nloc, map.lookupOrDefault(mm.lhs));
      });
  LinearAccess access;
  access.coefficients.assign(loops, 0);
  int64_t stride = 1;
  for (int64_t i = kept.size() - 1; i >= 0; --i) {
    access.coefficients[kept[i]] = stride;
    stride *= shape[i];
  }
  return {buffer, access};
}

/// Whether `op` (or an op nested in it) may write elements `v` shares: an
/// op that declares no memory effects is taken to write each of its memref
/// operands (a launch writes some of its arguments).
bool mayWrite(Operation *op, Value v) {
  WalkResult result = op->walk([&](Operation *inner) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects) {
      if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        return WalkResult::advance();
      for (Value operand : inner->getOperands())
        if (isa<MemRefType>(operand.getType()) && mayAlias(operand, v))
          return WalkResult::interrupt();
      return WalkResult::advance();
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (MemoryEffects::EffectInstance &effect : list)
      if (isa<MemoryEffects::Write>(effect.getEffect()) &&
          (!effect.getValue() || mayAlias(effect.getValue(), v)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Whether `a` and `b` are the same value: the same SSA value, or results
/// of two side-effect-free ops (views, constants) of the same kind and
/// attributes over the same values (bufferization views one argument once
/// per use).
bool sameValue(Value a, Value b) {
  if (a == b)
    return true;
  auto ra = dyn_cast<OpResult>(a), rb = dyn_cast<OpResult>(b);
  if (!ra || !rb || ra.getResultNumber() != rb.getResultNumber() ||
      !isPure(ra.getOwner()) || !isPure(rb.getOwner()) ||
      ra.getOwner()->getNumRegions() || rb.getOwner()->getNumRegions())
    return false;
  return OperationEquivalence::isEquivalentTo(
      ra.getOwner(), rb.getOwner(),
      [](Value x, Value y) { return success(sameValue(x, y)); },
      /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

/// `later` computes what `earlier` already did: the same inputs through the
/// same maps and payload into a buffer of the same type, and nothing between
/// the two writes an input or `earlier`'s buffer.
bool recomputes(linalg::GenericOp earlier, linalg::GenericOp later) {
  if (earlier->getBlock() != later->getBlock() ||
      !earlier->isBeforeInBlock(later) ||
      earlier.getNumDpsInputs() != later.getNumDpsInputs() ||
      !llvm::all_of_zip(earlier.getDpsInputs(), later.getDpsInputs(),
                        sameValue) ||
      earlier.getIndexingMapsArray() != later.getIndexingMapsArray() ||
      earlier.getIteratorTypesArray() != later.getIteratorTypesArray() ||
      earlier.getDpsInits().getTypes() != later.getDpsInits().getTypes() ||
      !OperationEquivalence::isRegionEquivalentTo(
          &earlier.getRegion(), &later.getRegion(),
          OperationEquivalence::IgnoreLocations))
    return false;
  SmallVector<Value> read(earlier.getDpsInputs());
  read.push_back(earlier.getDpsInits()[0]);
  for (Operation *op = earlier->getNextNode(); op != later;
       op = op->getNextNode())
    if (llvm::any_of(read, [&](Value v) { return mayWrite(op, v); }))
      return false;
  return true;
}

struct MmaMatmuls : poot::impl::PootGPUMmaMatmulsBase<MmaMatmuls> {
  void getDependentDialects(DialectRegistry &registry) const override {
    PootGPUMmaMatmulsBase::getDependentDialects(registry);
    registry.insert<vector::VectorDialect, LLVM::LLVMDialect,
                    NVVM::NVVMDialect>();
  }

  /// The plan of a marked op, or nothing when it cannot run as the kernel
  /// (it then stays on the CUDA-core path).
  std::optional<MmaPlan> planFor(linalg::LinalgOp op) {
    std::optional<MmaContraction> mm = matchMmaContraction(op, 1);
    if (!mm || !op.hasPureBufferSemantics())
      return std::nullopt;
    MmaPlan plan;
    plan.mm = *mm;
    plan.out = *linearAccess(op, op.getDpsInitOperand(0));
    plan.weight = *linearAccess(op, mm->weight);
    plan.rows = mm->rowCount();
    // The kernel poot-gpu-split-reductions chose (its split ratio counted
    // that kernel's threads).
    auto kernel = op->getAttrOfType<StringAttr>(kMmaMatmulAttr);
    bool staged = kernel && kernel.getValue() == kMmaStagedKernel;
    plan.shape = mmaWorkgroupShape(plan.rows, mm->columnCount(), staged ? 1 : 0);
    plan.tiles = plan.shape.warpRows / 16;
    // The lhs as the kernel reads it: the input itself where that is
    // contiguous along k in aligned vectors, else materialized.
    if (isa<BlockArgument>(mm->lhs) && mm->lhsInputs.size() == 1) {
      LinearAccess a = *linearAccess(op, mm->lhsInputs[0]);
      if (alignedChunks(a, mm->reduction, plan.chunk())) {
        plan.lhs = mm->lhsInputs[0]->get();
        plan.lhsAccess = a;
      }
    }
    // Loads in flight a trip: 64 weight words a thread (16 KB a warp),
    // fewer trips' worth with more lhs tiles (registers).
    if (mm->weightAlongReduction)
      plan.steps = plan.tiles <= 2 ? 2 : 1;
    else
      plan.steps = plan.tiles <= 2 ? 4 : 2;
    return plan;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> marked;
    module.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kMmaMatmulAttr))
        marked.push_back(op);
    });
    if (marked.empty())
      return;
    OpBuilder mb(module.getBodyRegion());
    mb.setInsertionPointToEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    mb.getUnitAttr());
    auto kernels = gpu::GPUModuleOp::create(mb, module.getLoc(), "poot_mma_matmuls");
    int64_t count = 0;
    // Every plan first, its prologue materialized before its op: an
    // op's epilogue may then be the next op's prologue (SiLU(gate) * up
    // computed in up's kernel, gate's sums an input of it).
    // Matmuls of one input through one prologue (q, k and v of one
    // normed x) share one materialized buffer: one kernel, not three.
    SmallVector<std::pair<linalg::LinalgOp, MmaPlan>, 4> plans;
    SmallVector<Operation *> materialized;
    SmallVector<linalg::GenericOp> prologues;
    for (linalg::LinalgOp op : marked) {
      std::optional<MmaPlan> plan = planFor(op);
      op->removeAttr(kMmaMatmulAttr);
      if (!plan)
        continue;
      if (!plan->lhs) {
        OpBuilder b(op);
        std::tie(plan->lhs, plan->lhsAccess) = materializeLhs(b, op, plan->mm);
        auto prologue = cast<linalg::GenericOp>(op->getPrevNode());
        for (linalg::GenericOp earlier : prologues) {
          if (!recomputes(earlier, prologue))
            continue;
          Value buffer = plan->lhs;
          plan->lhs = earlier.getDpsInits()[0];
          prologue->erase();
          buffer.getDefiningOp()->erase();
          prologue = nullptr;
          break;
        }
        if (prologue)
          prologues.push_back(prologue);
        materialized.push_back(op);
      }
      plans.push_back({op, std::move(*plan)});
    }
    for (auto &[op, planValue] : plans) {
      MmaPlan *plan = &planValue;
      Location loc = op.getLoc();
      Value out = op.getDpsInitOperand(0)->get();
      auto [fillValue, fill] = foldableFill(op, out);
      plan->fill = fillValue;
      if (plan->fill) {
        // Its consumer in the kernel (the kernel writes every sum once, so
        // a folded fill is the whole initial value).
        SmallVector<Value> reads{plan->mm.weight->get(), plan->lhs};
        for (OpOperand *in : plan->mm.lhsInputs)
          reads.push_back(in->get());
        int64_t sums = plan->mm.rowCount() * plan->mm.columnCount() *
                       plan->mm.batchCount();
        plan->epilogue = matchMmaEpilogue(op, out, sums, reads, materialized);
        if (plan->epilogue)
          for (Operation *moved : plan->epilogue->between)
            moved->moveBefore(op);
      }

      // The kernel.
      SmallVector<Value> operands{out, plan->mm.weight->get(), plan->lhs};
      if (plan->epilogue) {
        operands[0] = plan->epilogue->op.getDpsInitOperand(0)->get();
        for (OpOperand *in : plan->epilogue->inputs)
          operands.push_back(in->get());
      }
      SmallVector<Type> argTypes;
      for (Value v : operands) {
        auto type = cast<MemRefType>(v.getType());
        argTypes.push_back(MemRefType::get({type.getNumElements()},
                                           type.getElementType()));
      }
      OpBuilder kb(kernels.getBodyRegion());
      kb.setInsertionPointToEnd(kernels.getBody());
      std::string name = "mma_matmul_" + std::to_string(count++);
      auto func = gpu::GPUFuncOp::create(kb, loc, name,
                                         kb.getFunctionType(argTypes, {}));
      func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
      int64_t lanes = kMmaWarpsPerColumns * MmaBuilder::kWarp;
      func.setKnownBlockSizeAttr(
          kb.getDenseI32ArrayAttr({static_cast<int32_t>(lanes), 1, 1}));
      if (plan->shape.staged)
        emitMmaStagedKernel(kb, loc, *plan, func);
      else
        emitMmaDirectKernel(kb, loc, *plan, func);

      // The launch.
      OpBuilder b(op);
      SmallVector<Value> args;
      for (Value v : operands)
        args.push_back(flatten(b, loc, v));
      auto cst = [&](int64_t v) {
        return arith::ConstantIndexOp::create(b, loc, v).getResult();
      };
      int64_t units = plan->mm.columnCount() / plan->shape.columns();
      int64_t workgroupRows = plan->shape.rows();
      gpu::KernelDim3 grid{cst((plan->rows + workgroupRows - 1) / workgroupRows),
                           cst(units), cst(plan->mm.batchCount())};
      gpu::KernelDim3 block{cst(lanes), cst(1), cst(1)};
      gpu::LaunchFuncOp::create(b, loc, func, grid, block, Value(), args);
      op->erase();
      if (fill)
        fill->erase();
      if (plan->epilogue) {
        plan->epilogue->op->erase();
        eraseIfUnused(out);
      }
    }
    if (count == 0)
      kernels->erase();
  }
};

} // namespace
