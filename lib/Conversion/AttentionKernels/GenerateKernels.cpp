//===- GenerateKernels.cpp - poot.attention -> gpu kernels -----------------===//
//
// Wraps each schedule's kernels (Schedules/, looked up in the registry) in
// gpu.func kernels: ids come from gpu.block_id / gpu.thread_id, the phases
// are separated by gpu.barrier, and workgroup memory is declared the way
// each target lowers it.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"
#include "lib/Conversion/AttentionKernels/KernelSignature.h"
#include "lib/Conversion/AttentionKernels/SelectionEmitter.h"
#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGENERATEATTENTIONKERNELS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

struct GenerateKernels
    : poot::impl::PootGenerateAttentionKernelsBase<GenerateKernels> {
  using PootGenerateAttentionKernelsBase::PootGenerateAttentionKernelsBase;

  /// The TableGen list, plus what the tensor-core schedules emit
  /// (tiled_prefill_mma, wide_head_mma): vector and llvm
  /// ops that pack its two-byte operands and nvvm.mma.sync.
  void getDependentDialects(DialectRegistry &registry) const override {
    PootGenerateAttentionKernelsBase::getDependentDialects(registry);
    registry.insert<vector::VectorDialect, LLVM::LLVMDialect,
                    NVVM::NVVMDialect>();
  }

  /// Workgroup memory of `floats` words (f32 unless `element` says
  /// otherwise), declared as the target lowers it.
  Value workgroupBuffer(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                        int64_t floats, Type element = Type()) {
    if (!element)
      element = b.getF32Type();
    if (target == DeviceTarget::SPIRV) {
      // SPIR-V: memref.alloc in memory space 3 maps to Workgroup storage
      // (a workgroup attribution crashes GPUFuncOpConversion in LLVM 22).
      auto type = MemRefType::get({floats}, element, AffineMap(),
                                  b.getI64IntegerAttr(3));
      return memref::AllocOp::create(b, loc, type);
    }
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    auto type = MemRefType::get({floats}, element, AffineMap(), space);
    return func.addWorkgroupAttribution(type, loc);
  }

  gpu::GPUFuncOp createKernel(OpBuilder &b, Location loc, StringRef name,
                              TypeRange argTypes, int64_t lanes) {
    auto type = b.getFunctionType(argTypes, {});
    auto func = gpu::GPUFuncOp::create(b, loc, name, type);
    func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    func.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({static_cast<int32_t>(lanes), 1, 1}));
    if (target == DeviceTarget::SPIRV)
      func->setAttr(spirv::getEntryPointABIAttrName(),
                    spirv::getEntryPointABIAttr(
                        b.getContext(), {static_cast<int32_t>(lanes), 1, 1}));
    return func;
  }

  /// One kernel of a schedule (Schedules/): the workgroup decomposition
  /// every kernel shares (the workgroup id over the grid's (x, y) fold, the
  /// in-range guard, the workgroup buffer) around the schedule's body.
  void emitKernel(OpBuilder &moduleBuilder, AttentionOp op,
                  AttentionRequestAttr req, const KernelSignature &sig,
                  const GpuKernel &kernel) {
    Location loc = op.getLoc();
    SmallVector<Type> argTypes =
        sig.argumentTypes(moduleBuilder.getContext(), kernel.launch);
    gpu::GPUFuncOp func =
        createKernel(moduleBuilder, loc, kernel.name, argTypes, req.getLanes());
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());

    AttentionBuffers bufs = sig.bind(func.getArguments(), kernel.launch);
    double scale = op.getScale().convertToDouble();
    std::optional<double> softcap =
        op.getSoftcap()
            ? std::optional<double>(op.getSoftcap()->convertToDouble())
            : std::nullopt;
    AttentionEmitter emitter(b, loc, req, sig.layout, scale, softcap);

    // Linear workgroup id over the (x, y) fold; the fold may overshoot.
    Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    Value lane = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value gridX = arith::ConstantIndexOp::create(b, loc, req.getGridX());
    Value wg = arith::AddIOp::create(
        b, loc, bx, arith::MulIOp::create(b, loc, by, gridX));
    Value inRange = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, wg,
        arith::ConstantIndexOp::create(b, loc, kernel.workgroups));

    Value lds;
    if (kernel.memory == WorkgroupMemory::Words ||
        kernel.memory == WorkgroupMemory::AlignedWords)
      lds = workgroupBuffer(b, loc, func, req.getLdsFloats(), b.getI32Type());
    else if (kernel.memory == WorkgroupMemory::Floats)
      lds = workgroupBuffer(b, loc, func, req.getLdsFloats());
    if (kernel.memory == WorkgroupMemory::AlignedWords)
      func.setWorkgroupAttributionAttr(
          0, b.getStringAttr(LLVM::LLVMDialect::getAlignAttrName()),
          b.getI64IntegerAttr(16));

    // The whole workgroup takes the same branch (wg is uniform), so the
    // barrier inside it is reached by every thread or by none.
    auto ifInRange = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifInRange.getThenRegion().front());
      kernel.body({b, loc, req, sig, emitter, bufs, scale, softcap, wg, lane,
                   lds});
    }
    if (target == DeviceTarget::SPIRV && lds)
      memref::DeallocOp::create(b, loc, lds);
    gpu::ReturnOp::create(b, loc);
  }

  /// The workgroup id folded over (x, y), the lane, and an scf.if over the
  /// workgroups that exist (`count`), its body the insertion point.
  std::pair<Value, Value> beginWorkgroup(OpBuilder &b, Location loc,
                                         int64_t gridX, int64_t count) {
    Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    Value lane = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value wg = arith::AddIOp::create(
        b, loc, bx,
        arith::MulIOp::create(b, loc, by,
                              arith::ConstantIndexOp::create(b, loc, gridX)));
    Value inRange = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, wg,
        arith::ConstantIndexOp::create(b, loc, count));
    auto ifInRange = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    b.setInsertionPointToStart(&ifInRange.getThenRegion().front());
    return {wg, lane};
  }

  /// One kernel of a selection op: `body(b, args, wg, lane, lds)` inside
  /// the in-range branch, `lds` one workgroup buffer per (words, element
  /// type) of `memory`.
  void emitSelectionKernel(
      OpBuilder &moduleBuilder, Location loc, StringRef name, TypeRange types,
      int64_t lanes, int64_t gridX, int64_t count,
      ArrayRef<std::pair<int64_t, Type>> memory,
      function_ref<void(OpBuilder &, ValueRange, Value, Value, ValueRange)> body) {
    gpu::GPUFuncOp func = createKernel(moduleBuilder, loc, name, types, lanes);
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    SmallVector<Value> lds;
    for (auto [words, element] : memory)
      lds.push_back(workgroupBuffer(b, loc, func, words, element));
    {
      OpBuilder::InsertionGuard guard(b);
      // The whole workgroup takes the same branch (wg is uniform), so the
      // barriers inside it are reached by every thread or by none.
      auto [wg, lane] = beginWorkgroup(b, loc, gridX, count);
      body(b, func.getArguments(), wg, lane, lds);
    }
    if (target == DeviceTarget::SPIRV)
      for (Value buffer : lds)
        memref::DeallocOp::create(b, loc, buffer);
    gpu::ReturnOp::create(b, loc);
  }

  void emitBlockTopK(OpBuilder &kb, BlockTopKOp op, BlockTopKRequestAttr req,
                     SmallVectorImpl<StringRef> &names) {
    SelectionSignature sig(op);
    auto launch = SelectionSignature::Launch::Stream;
    int64_t rows = req.getBatch() * req.getQLen();
    MLIRContext *ctx = &getContext();
    emitSelectionKernel(
        kb, op.getLoc(), "topk", sig.argumentTypes(ctx, launch),
        req.getLanes(), req.getGridX(), rows,
        {{req.getLanes(), Float32Type::get(ctx)},
         {req.getLanes(), IntegerType::get(ctx, 32)}},
        [&](OpBuilder &b, ValueRange args, Value wg, Value lane, ValueRange lds) {
          BlockTopKEmitter emitter(b, op.getLoc(), req);
          emitter.emitRow(sig.bind(args, launch), wg, lds[0], lds[1],
                          [&](function_ref<void(Value)> phase) {
                            phase(lane);
                            gpu::BarrierOp::create(b, op.getLoc());
                          });
        });
    names.push_back("topk");
  }

  void emitSelectedAttention(OpBuilder &kb, SelectedAttentionOp op,
                             SelectedAttentionRequestAttr req,
                             SmallVectorImpl<StringRef> &names) {
    using Launch = SelectionSignature::Launch;
    SelectionSignature sig(op);
    Location loc = op.getLoc();
    double scale = op.getScale().convertToDouble();
    std::optional<double> softcap;
    if (op.getSoftcap())
      softcap = op.getSoftcap()->convertToDouble();
    int64_t splits = req.getSplits();
    int64_t rows = req.getBatch() * req.getQHeads() * req.getQLen();
    Launch first = splits > 1 ? Launch::Partials : Launch::Stream;
    if (req.getSchedule() == AttentionSchedule::WarpDecode) {
      // NVIDIA decode: a workgroup of warps per (batch row, KV group, split).
      int64_t lds = AttentionRequestAttr::warpDecodeLdsFloats(
          req.getQHeads() / req.getKvHeads(), req.getValueWidth());
      emitSelectionKernel(
          kb, loc, "warp", sig.argumentTypes(&getContext(), first),
          req.getLanes(), req.getGridX(),
          req.getBatch() * req.getKvHeads() * splits,
          {{lds, Float32Type::get(&getContext())}},
          [&](OpBuilder &b, ValueRange args, Value wg, Value tid, ValueRange mem) {
            SelectedAttentionEmitter emitter(b, loc, req, scale, softcap);
            emitter.emitWarpDecode(sig.bind(args, first), wg, tid, mem[0]);
          });
      names.push_back("warp");
    } else {
      StringRef name = splits > 1 ? "partials" : "stream";
      emitSelectionKernel(
          kb, loc, name, sig.argumentTypes(&getContext(), first),
          req.getLanes(), req.getGridX(), rows * splits,
          {{req.getLanes() * (req.getValueWidth() + 2),
            Float32Type::get(&getContext())}},
          [&](OpBuilder &b, ValueRange args, Value wg, Value lane,
              ValueRange lds) {
            Value mem = lds[0];
            SelectedAttentionEmitter emitter(b, loc, req, scale, softcap);
            SelectionBuffers bufs = sig.bind(args, first);
            Value splitsV = arith::ConstantIndexOp::create(b, loc, splits);
            Value row = arith::DivUIOp::create(b, loc, wg, splitsV);
            Value split = arith::RemUIOp::create(b, loc, wg, splitsV);
            emitter.emitLaneScan(bufs, row, split, lane, mem);
            gpu::BarrierOp::create(b, loc);
            emitter.emitLaneCombine(bufs, row, split, lane, mem);
          });
      names.push_back(name);
    }
    if (splits == 1)
      return;
    emitSelectionKernel(
        kb, loc, "combine", sig.argumentTypes(&getContext(), Launch::Combine),
        req.getLanes(), req.getGridX(), rows, {},
        [&](OpBuilder &b, ValueRange args, Value wg, Value lane, ValueRange) {
          SelectedAttentionEmitter emitter(b, loc, req, scale, softcap);
          emitter.emitSplitCombine(sig.bind(args, Launch::Combine), wg, lane);
        });
    names.push_back("combine");
  }

  /// A gpu.module per poot.block_topk / poot.selected_attention, its kernels
  /// recorded on the op as `poot.kernels`.
  LogicalResult generateSelectionKernels(ModuleOp module,
                                         SymbolTable &symbols) {
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<BlockTopKOp, SelectedAttentionOp>(op))
        ops.push_back(op);
    });
    bool failed = false;
    int64_t topkCount = 0, selectedCount = 0;
    for (Operation *op : ops) {
      Attribute req = PootDialect::getPlan(op);
      auto topk = dyn_cast<BlockTopKOp>(op);
      if (!req || (topk ? !isa<BlockTopKRequestAttr>(req)
                        : !isa<SelectedAttentionRequestAttr>(req))) {
        op->emitError() << op->getName()
                        << " has no request: run poot-plan-attention first";
        failed = true;
        continue;
      }
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      UnitAttr::get(&getContext()));
      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      std::string moduleName =
          topk ? ("poot_block_topk_" + Twine(topkCount++)).str()
               : ("poot_selected_attention_" + Twine(selectedCount++)).str();
      auto gpuModule = gpu::GPUModuleOp::create(b, op->getLoc(), moduleName);
      symbols.insert(gpuModule);
      OpBuilder kb(gpuModule.getBodyRegion());
      kb.setInsertionPointToStart(gpuModule.getBody());
      SmallVector<StringRef> names;
      if (topk)
        emitBlockTopK(kb, topk, cast<BlockTopKRequestAttr>(req), names);
      else
        emitSelectedAttention(kb, cast<SelectedAttentionOp>(op),
                              cast<SelectedAttentionRequestAttr>(req), names);
      SmallVector<Attribute> kernels;
      for (StringRef name : names)
        kernels.push_back(SymbolRefAttr::get(
            gpuModule.getNameAttr(), {FlatSymbolRefAttr::get(&getContext(), name)}));
      op->setAttr("poot.kernels", ArrayAttr::get(&getContext(), kernels));
    }
    return failure(failed);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AttentionOp> ops;
    module.walk([&](AttentionOp op) { ops.push_back(op); });
    SymbolTable symbols(module);
    bool failed = false;
    for (auto [i, op] : llvm::enumerate(ops)) {
      AttentionRequestAttr req = op.getRequestAttr();
      if (!req) {
        op.emitError("poot.attention has no request: run "
                     "poot-plan-attention first");
        failed = true;
        continue;
      }
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      UnitAttr::get(&getContext()));
      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      auto gpuModule = gpu::GPUModuleOp::create(
          b, op.getLoc(), ("poot_attention_" + Twine(i)).str());
      symbols.insert(gpuModule);
      OpBuilder kb(gpuModule.getBodyRegion());
      kb.setInsertionPointToStart(gpuModule.getBody());
      KernelSignature sig(op, req);
      SmallVector<Attribute> kernels;
      auto ref = [&](StringRef name) {
        kernels.push_back(SymbolRefAttr::get(
            gpuModule.getNameAttr(), {FlatSymbolRefAttr::get(&getContext(), name)}));
      };
      const ScheduleInfo &schedule = scheduleInfo(req.getSchedule());
      SmallVector<GpuKernel, 2> launches = schedule.kernels(req);
      if (launches.empty()) {
        op.emitError() << "the "
                       << stringifyAttentionSchedule(req.getSchedule())
                       << " schedule has no GPU kernel: plan for a GPU target";
        failed = true;
        continue;
      }
      if (schedule.nvvmOnly && target != DeviceTarget::NVVM) {
        op.emitError() << "the "
                       << stringifyAttentionSchedule(req.getSchedule())
                       << " schedule is NVIDIA tensor-core code (mma.sync): "
                          "plan for the NVVM target";
        failed = true;
        continue;
      }
      for (const GpuKernel &kernel : launches) {
        emitKernel(kb, op, req, sig, kernel);
        ref(kernel.name);
      }
      op->setAttr("poot.kernels", ArrayAttr::get(&getContext(), kernels));
    }
    if (mlir::failed(generateSelectionKernels(module, symbols)))
      failed = true;
    if (failed)
      signalPassFailure();
  }
};

} // namespace
