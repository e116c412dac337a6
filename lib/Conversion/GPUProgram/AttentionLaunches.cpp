//===- AttentionLaunches.cpp - poot-gpu-attention-launches -----------------===//
//
// In a whole step on a GPU, each attention is a call of its generated
// kernels (poot-attention-to-calls left a func.call carrying the plan and
// the kernel symbols). After bufferization the call's operands are the
// step's own device buffers; this pass replaces the call by the kernels'
// launches over them: the planner's grid, one workgroup of `lanes`, and for
// a split schedule the plan-local scratch and the combine launch. The
// sparse indexer's poot.block_topk and poot.selected_attention calls are
// launched by the same rule from their own requests.
//
// A call numbered by poot-record-fused-ops (`poot.fused = i`) passes the
// number on to each of its launches, and the record of op i in the module's
// `poot.fused_ops` gets the op's `scratch_bytes`, where the scratch is made.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "dialect/PootDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUATTENTIONLAUNCHES
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

constexpr llvm::StringLiteral kFusedAttr = "poot.fused";
constexpr llvm::StringLiteral kFusedOpsAttr = "poot.fused_ops";

/// What the launches of one planned call depend on, read from whichever
/// request the planner recorded.
struct LaunchShape {
  int64_t lanes, gridX, gridY, splits, rows, valueWidth;
};

std::optional<LaunchShape> launchShapeOf(Attribute request) {
  if (auto req = dyn_cast<AttentionRequestAttr>(request))
    return LaunchShape{req.getLanes(), req.getGridX(), req.getGridY(),
                       req.getSplits(),
                       req.getBatch() * req.getQHeads() * req.getQLen(),
                       req.getValueWidth()};
  if (auto req = dyn_cast<SelectedAttentionRequestAttr>(request))
    return LaunchShape{req.getLanes(), req.getGridX(), req.getGridY(),
                       req.getSplits(),
                       req.getBatch() * req.getQHeads() * req.getQLen(),
                       req.getValueWidth()};
  if (auto req = dyn_cast<BlockTopKRequestAttr>(request))
    return LaunchShape{req.getLanes(), req.getGridX(), req.getGridY(),
                       /*splits=*/1, req.getBatch() * req.getQLen(),
                       /*valueWidth=*/0};
  return std::nullopt;
}

struct AttentionLaunches
    : poot::impl::PootGPUAttentionLaunchesBase<AttentionLaunches> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call->hasAttr(PootDialect::kRequestAttrName))
        calls.push_back(call);
    });
    Builder attrs(&getContext());
    SmallVector<Attribute> records;
    if (auto recorded = module->getAttrOfType<ArrayAttr>(kFusedOpsAttr))
      records.assign(recorded.begin(), recorded.end());
    for (func::CallOp call : calls) {
      std::optional<LaunchShape> req =
          launchShapeOf(call->getAttr(PootDialect::kRequestAttrName));
      if (!req) {
        call.emitError("poot-gpu-attention-launches: the call's poot.request "
                       "is not a planned attention, block top-k or selected "
                       "attention request");
        return signalPassFailure();
      }
      auto kernels = call->getAttrOfType<ArrayAttr>("poot.kernels");
      if (!kernels || kernels.empty()) {
        call.emitError("poot-gpu-attention-launches: the attention call has "
                       "no poot.kernels (run poot-generate-attention-kernels "
                       "before poot-attention-to-calls)");
        return signalPassFailure();
      }
      OpBuilder b(call);
      Location loc = call.getLoc();
      auto c = [&](int64_t v) {
        return arith::ConstantIndexOp::create(b, loc, v).getResult();
      };
      SmallVector<Value> operands(call.getOperands());
      Value out = operands.pop_back_val();
      gpu::KernelDim3 block{c(req->lanes), c(1), c(1)};
      int64_t rows = req->rows;
      bool split = req->splits > 1;
      auto index = call->getAttrOfType<IntegerAttr>(kFusedAttr);
      auto launch = [&](Attribute kernel, gpu::KernelDim3 grid,
                        ValueRange args) {
        auto op = gpu::LaunchFuncOp::create(
            b, loc, cast<SymbolRefAttr>(kernel), grid, block, Value(), args);
        if (index)
          op->setAttr(kFusedAttr, index);
      };
      int64_t scratchBytes = 0;
      gpu::KernelDim3 grid{c(req->gridX), c(req->gridY), c(1)};
      if (!split) {
        SmallVector<Value> args(operands);
        args.push_back(out);
        launch(kernels[0], grid, args);
      } else {
        // The partials of every (row, split), then one combine per row.
        int64_t floats = rows * req->splits * (req->valueWidth + 2);
        scratchBytes = floats * 4;
        Value scratch = memref::AllocOp::create(
            b, loc, MemRefType::get({floats}, b.getF32Type()));
        SmallVector<Value> args(operands);
        args.push_back(scratch);
        launch(kernels[0], grid, args);
        if (kernels.size() < 2) {
          call.emitError("poot-gpu-attention-launches: a split plan needs "
                         "its combine kernel in poot.kernels");
          return signalPassFailure();
        }
        int64_t x = std::min(rows, req->gridX);
        gpu::KernelDim3 combineGrid{c(x), c((rows + x - 1) / x), c(1)};
        launch(kernels[1], combineGrid, ValueRange{scratch, out});
        memref::DeallocOp::create(b, loc, scratch);
      }
      if (index && index.getInt() >= 0 &&
          index.getInt() < static_cast<int64_t>(records.size())) {
        // The scratch size joins the op's record.
        auto text = dyn_cast<StringAttr>(records[index.getInt()]);
        llvm::Expected<llvm::json::Value> parsed =
            llvm::json::parse(text ? text.getValue() : StringRef("null"));
        llvm::json::Object *entry = parsed ? parsed->getAsObject() : nullptr;
        if (!entry) {
          if (!parsed)
            llvm::consumeError(parsed.takeError());
          call.emitError("poot-gpu-attention-launches: the call's record in ")
              << kFusedOpsAttr << " is not a JSON object";
          return signalPassFailure();
        }
        (*entry)["scratch_bytes"] = scratchBytes;
        std::string updated;
        llvm::raw_string_ostream os(updated);
        os << llvm::json::Value(std::move(*entry));
        records[index.getInt()] = attrs.getStringAttr(updated);
      }
      call.erase();
    }
    if (!records.empty())
      module->setAttr(kFusedOpsAttr, attrs.getArrayAttr(records));
    // The callees are declarations nobody calls any more.
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (func.isExternal() && SymbolTable::symbolKnownUseEmpty(func, module))
        func.erase();
  }
};

} // namespace
