//===- SerializeProgram.cpp - poot-gpu-serialize-program -------------------===//
//
// The host side of a whole step on a GPU is a straight line of buffer
// allocations, views, constant buffers, copies and kernel launches. A
// runtime that imports no MLIR executes it from a plain description, which
// this pass writes once, on the IR, as the one record of the step's launches
// and buffers:
//
//   {"buffers": [{"kind": "arg", "index": i} | {"kind": "temp", "bytes": n,
//                 "offset": o} | {"kind": "constant", "bytes": n,
//                 "hex": "..."}],
//    "commands": [{"launch": {"module", "entry", "grid", "block",
//                             "args": [buffer ids]}} |
//                 {"copy": {"from": id, "to": id, "bytes": n}} |
//                 {"all_reduce": {"buffer": id, "count": n, "dtype": code,
//                                 "site": i}}],
//    "results": [buffer id per remaining result],
//    "arena_bytes": n,
//    "fused_ops": [{<poot-gpu-attention-launches' record>, "index": i,
//                   "commands": [the command ids of its launches]}]}
//
// A launch of a fused op (`poot.fused = i`) also says `"fused": i`. The
// module's `poot.fused_ops` records move into the programs that launch them.
//
// Temporaries share one arena: each gets an offset by first fit over its
// live range (its allocation to its last use), so buffers whose lives do not
// overlap share bytes and the arena is the peak of the live bytes (up to
// alignment), not their sum.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/ArenaPlacement.h"
#include "lib/Conversion/Passes.h"
#include "lib/Conversion/PootToLinalg/CollectiveCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUSERIALIZEPROGRAM
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;

namespace {

constexpr int64_t kAlignment = 256; // Vulkan/CUDA buffer offset alignment

int64_t bytesOf(MemRefType type) {
  int64_t bits = type.getElementTypeBitWidth();
  return type.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

/// The raw little-endian bytes of a global's initial value, as hex.
std::string hexBytes(DenseElementsAttr value, int64_t bytes) {
  ArrayRef<char> raw = value.getRawData();
  std::string hex;
  hex.reserve(bytes * 2);
  static const char digits[] = "0123456789abcdef";
  for (int64_t i = 0; i < bytes; ++i) {
    unsigned char byte = raw.empty() ? 0 : raw[i % raw.size()];
    hex.push_back(digits[byte >> 4]);
    hex.push_back(digits[byte & 15]);
  }
  return hex;
}

struct Buffer {
  llvm::json::Object desc;
  bool temp = false;
  int64_t bytes = 0, first = 0, last = 0, offset = 0;
};

struct SerializeProgram
    : poot::impl::PootGPUSerializeProgramBase<SerializeProgram> {
  using Base::Base;

  LogicalResult serialize(func::FuncOp func, ModuleOp module,
                          ArrayRef<llvm::json::Object> fusedRecords,
                          std::string &out, int64_t &arenaBytes) {
    Block &body = func.getBody().front();
    SmallVector<Buffer> buffers;
    DenseMap<Value, int64_t> ids;
    llvm::json::Array commands;
    // Fused op index -> the ids of its launch commands, in first-launch order.
    llvm::MapVector<int64_t, llvm::json::Array> fusedCommands;
    int64_t position = 0;
    auto use = [&](Value v) -> FailureOr<int64_t> {
      auto it = ids.find(v);
      if (it == ids.end())
        return failure();
      Buffer &buf = buffers[it->second];
      buf.last = std::max(buf.last, position);
      return it->second;
    };
    auto define = [&](Value v, llvm::json::Object desc, bool temp,
                      int64_t bytes) {
      ids[v] = buffers.size();
      Buffer buf;
      buf.desc = std::move(desc);
      buf.temp = temp;
      buf.bytes = bytes;
      buf.first = buf.last = position;
      buffers.push_back(std::move(buf));
    };

    for (BlockArgument arg : body.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type)
        return func.emitError("poot-gpu-serialize-program: argument ")
               << arg.getArgNumber() << " is not a buffer";
      // (The step pipelines refuse dynamic shapes first, in
      // poot-gpu-check-step-types; this pass alone must not assert.)
      if (!type.hasStaticShape())
        return func.emitError("poot-gpu-serialize-program: argument ")
               << arg.getArgNumber() << " is a dynamically shaped buffer ("
               << type << "): a program's buffers have static sizes";
      define(arg, llvm::json::Object{{"kind", "arg"}, {"index", arg.getArgNumber()}},
             false, bytesOf(cast<MemRefType>(arg.getType())));
    }
    SymbolTable symbols(module);
    for (Operation &op : body) {
      ++position;
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        if (!alloc.getType().hasStaticShape())
          return alloc.emitError("poot-gpu-serialize-program: a dynamic allocation");
        int64_t bytes = bytesOf(alloc.getType());
        define(alloc, llvm::json::Object{{"kind", "temp"}, {"bytes", bytes}},
               true, bytes);
      } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        auto decl = symbols.lookup<memref::GlobalOp>(global.getName());
        auto init = decl ? dyn_cast_or_null<DenseElementsAttr>(
                               decl.getInitialValueAttr())
                         : DenseElementsAttr();
        if (!init)
          return global.emitError("poot-gpu-serialize-program: a global without "
                                  "a dense initial value");
        int64_t bytes = bytesOf(global.getType());
        define(global,
               llvm::json::Object{{"kind", "constant"},
                                  {"bytes", bytes},
                                  {"hex", hexBytes(init, bytes)}},
               false, bytes);
      } else if (isa<memref::CollapseShapeOp, memref::ExpandShapeOp,
                     memref::CastOp>(op)) {
        // A view of the whole buffer (contiguous, offset 0): the same id.
        FailureOr<int64_t> source = use(op.getOperand(0));
        if (failed(source))
          return op.emitError("poot-gpu-serialize-program: a view of an unknown buffer");
        auto type = cast<MemRefType>(op.getResult(0).getType());
        if (!type.getLayout().isIdentity() && !type.areTrailingDimsContiguous(type.getRank()))
          return op.emitError("poot-gpu-serialize-program: a strided view on the host");
        ids[op.getResult(0)] = *source;
      } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
        llvm::json::Array args;
        for (Value operand : launch.getKernelOperands()) {
          FailureOr<int64_t> id = use(operand);
          if (failed(id))
            return launch.emitError("poot-gpu-serialize-program: kernel operand is "
                                    "not a step buffer (a scalar must be sunk into "
                                    "the kernel)");
          args.push_back(*id);
        }
        auto dims = [&](gpu::KernelDim3 d) -> FailureOr<llvm::json::Array> {
          llvm::json::Array a;
          for (Value v : {d.x, d.y, d.z}) {
            std::optional<int64_t> k = getConstantIntValue(v);
            if (!k)
              return failure();
            a.push_back(*k);
          }
          return a;
        };
        FailureOr<llvm::json::Array> grid = dims(launch.getGridSizeOperandValues());
        FailureOr<llvm::json::Array> block = dims(launch.getBlockSizeOperandValues());
        if (failed(grid) || failed(block))
          return launch.emitError("poot-gpu-serialize-program: a launch whose grid "
                                  "or block is not constant");
        llvm::json::Object desc{{"module", launch.getKernelModuleName().str()},
                                {"entry", launch.getKernelName().str()},
                                {"grid", std::move(*grid)},
                                {"block", std::move(*block)},
                                {"args", std::move(args)}};
        if (auto fused = launch->getAttrOfType<IntegerAttr>("poot.fused")) {
          int64_t index = fused.getInt();
          if (index < 0 || index >= static_cast<int64_t>(fusedRecords.size()))
            return launch.emitError("poot-gpu-serialize-program: poot.fused ")
                   << index << " names no record of poot.fused_ops";
          desc["fused"] = index;
          fusedCommands[index].push_back(static_cast<int64_t>(commands.size()));
        }
        commands.push_back(llvm::json::Object{{"launch", std::move(desc)}});
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        FailureOr<int64_t> from = use(copy.getSource());
        FailureOr<int64_t> to = use(copy.getTarget());
        if (failed(from) || failed(to))
          return copy.emitError("poot-gpu-serialize-program: a copy between "
                                "unknown buffers");
        commands.push_back(llvm::json::Object{
            {"copy", llvm::json::Object{
                         {"from", *from},
                         {"to", *to},
                         {"bytes", bytesOf(cast<MemRefType>(copy.getSource().getType()))}}}});
      } else if (auto call = dyn_cast<func::CallOp>(op);
                 call && call->hasAttr(poot::kAllReduceCallAttr)) {
        // A tensor-parallel sum over the ranks, in place, between launches
        // (poot-collectives-to-calls).
        auto desc = call->getAttrOfType<DictionaryAttr>(poot::kAllReduceCallAttr);
        auto site = desc ? desc.getAs<IntegerAttr>("site") : IntegerAttr();
        auto dtype = desc ? desc.getAs<IntegerAttr>("dtype") : IntegerAttr();
        FailureOr<int64_t> buffer =
            call.getNumOperands() == 1 ? use(call.getOperand(0))
                                       : FailureOr<int64_t>(failure());
        if (!site || !dtype || failed(buffer))
          return call.emitError("poot-gpu-serialize-program: an all_reduce call "
                                "needs {site, dtype} and one step buffer");
        commands.push_back(llvm::json::Object{
            {"all_reduce",
             llvm::json::Object{
                 {"buffer", *buffer},
                 {"count", cast<MemRefType>(call.getOperand(0).getType())
                               .getNumElements()},
                 {"dtype", dtype.getInt()},
                 {"site", site.getInt()}}}});
      } else if (isa<memref::DeallocOp>(op) ||
                 (op.hasTrait<OpTrait::ConstantLike>() && op.getNumRegions() == 0)) {
        continue;
      } else if (!isa<func::ReturnOp>(op)) {
        return op.emitError("poot-gpu-serialize-program: '")
               << op.getName() << "' would run on the host";
      }
    }
    ++position;
    llvm::json::Array results;
    for (Value v : body.getTerminator()->getOperands()) {
      FailureOr<int64_t> id = use(v);
      if (failed(id))
        return func.emitError("poot-gpu-serialize-program: a result is not a step buffer");
      results.push_back(*id);
    }

    // First fit by allocation order over live ranges [first, last].
    SmallVector<Buffer *> temps;
    SmallVector<poot::ArenaSlot> slots;
    for (Buffer &buf : buffers) {
      if (!buf.temp)
        continue;
      temps.push_back(&buf);
      slots.push_back({buf.bytes, buf.first, buf.last, 0});
    }
    arenaBytes = poot::placeFirstFit(slots, kAlignment);
    for (auto [buf, slot] : llvm::zip(temps, slots)) {
      buf->offset = slot.offset;
      buf->desc["offset"] = slot.offset;
    }
    llvm::json::Array bufferList;
    for (Buffer &buf : buffers)
      bufferList.push_back(std::move(buf.desc));
    llvm::json::Array fusedOps;
    for (auto &[index, launchIds] : fusedCommands) {
      llvm::json::Object record = fusedRecords[index];
      record["index"] = index;
      record["commands"] = std::move(launchIds);
      fusedOps.push_back(std::move(record));
    }
    llvm::json::Object program{{"buffers", std::move(bufferList)},
                               {"commands", std::move(commands)},
                               {"results", std::move(results)},
                               {"arena_bytes", arenaBytes},
                               {"fused_ops", std::move(fusedOps)}};
    llvm::raw_string_ostream os(out);
    os << llvm::json::Value(std::move(program));
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    SmallVector<llvm::json::Object> fusedRecords;
    if (auto records = module->getAttrOfType<ArrayAttr>("poot.fused_ops")) {
      for (Attribute record : records) {
        auto text = dyn_cast<StringAttr>(record);
        llvm::Expected<llvm::json::Value> parsed =
            llvm::json::parse(text ? text.getValue() : StringRef("null"));
        llvm::json::Object *object = parsed ? parsed->getAsObject() : nullptr;
        if (!object) {
          if (!parsed)
            llvm::consumeError(parsed.takeError());
          module.emitError("poot-gpu-serialize-program: poot.fused_ops holds "
                           "a record that is not a JSON object");
          return signalPassFailure();
        }
        fusedRecords.push_back(std::move(*object));
      }
    }
    SmallVector<NamedAttribute> programs;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      std::string text;
      int64_t arena = 0;
      if (failed(serialize(func, module, fusedRecords, text, arena)))
        return signalPassFailure();
      programs.push_back(b.getNamedAttr(func.getSymName(), b.getStringAttr(text)));
    }
    module->setAttr("poot.programs", b.getDictionaryAttr(programs));
    module->removeAttr("poot.fused_ops");
  }
};

} // namespace
