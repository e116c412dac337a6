//===- RecordFusedOps.cpp - poot-record-fused-ops ---------------------------===//
//
// The one record of what the planner made of each fused op, for manifests
// and reports (a Python compile reads it; it never parses printed
// attributes). After planning, every poot.attention, poot.block_topk and
// poot.selected_attention of the module, in program order, gets
// `poot.fused = <index>` and the module gets
//
//   poot.fused_ops = ["<json>", ...]   one JSON object per fused op:
//   {"op": "attention" | "block_topk" | "selected_attention",
//    "request": {<every request parameter: integers, enums by keyword>},
//    "scale": s (not for block_topk), "location": "file:line:col"}
//
// Later passes add what they decide (poot-gpu-attention-launches: the
// scratch bytes and the launches, carried on by poot.fused).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "dialect/PootDialect.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTRECORDFUSEDOPS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// The launch fields every request has: its schedule, lanes and grid.
template <typename Request>
void addLaunchFields(llvm::json::Object &o, Request r) {
  o["schedule"] = stringifyAttentionSchedule(r.getSchedule()).str();
  o["lanes"] = r.getLanes();
  o["grid_x"] = r.getGridX();
  o["grid_y"] = r.getGridY();
}

/// The fields of the two attention requests: shape, score transform and the
/// split of the keys.
template <typename Request>
void addAttentionFields(llvm::json::Object &o, Request r) {
  o["batch"] = r.getBatch();
  o["q_heads"] = r.getQHeads();
  o["kv_heads"] = r.getKvHeads();
  o["q_len"] = r.getQLen();
  o["key_len"] = r.getKeyLen();
  o["key_width"] = r.getKeyWidth();
  o["value_width"] = r.getValueWidth();
  o["transform"] = stringifyScoreKind(r.getTransform()).str();
  o["splits"] = r.getSplits();
  o["chunk"] = r.getChunk();
  addLaunchFields(o, r);
}

/// The fused op's kind and its request's parameters by their assembly names
/// (integers as integers, enums by keyword). The default-valued CPU fields
/// (q_block, key_block) are left out when 0, as the printer leaves them out.
std::optional<llvm::json::Object> requestRecord(Attribute request,
                                                std::string &kind) {
  llvm::json::Object o;
  if (auto r = dyn_cast<AttentionRequestAttr>(request)) {
    kind = "attention";
    addAttentionFields(o, r);
    o["shared_width"] = r.getSharedWidth();
    o["mask"] = stringifyMaskKind(r.getMask()).str();
    o["key_bound"] = stringifyKeyBound(r.getKeyBound()).str();
    if (r.getQBlock())
      o["q_block"] = r.getQBlock();
    if (r.getKeyBlock())
      o["key_block"] = r.getKeyBlock();
    if (r.getUnroll())
      o["unroll"] = r.getUnroll();
    if (r.getRowLanes())
      o["row_lanes"] = r.getRowLanes();
    return o;
  }
  if (auto r = dyn_cast<SelectedAttentionRequestAttr>(request)) {
    kind = "selected_attention";
    addAttentionFields(o, r);
    o["k"] = r.getK();
    o["block_size"] = r.getBlockSize();
    o["visited"] = r.getVisited();
    return o;
  }
  if (auto r = dyn_cast<BlockTopKRequestAttr>(request)) {
    kind = "block_topk";
    o["batch"] = r.getBatch();
    o["q_len"] = r.getQLen();
    o["blocks"] = r.getBlocks();
    o["k"] = r.getK();
    o["block_size"] = r.getBlockSize();
    addLaunchFields(o, r);
    return o;
  }
  return std::nullopt;
}

/// `file:line:col` of the first file location in `loc` (the user's source
/// line when traced; text parsed from a string is `<string>`, as the Python
/// diagnostics name it), or nothing.
std::optional<std::string> sourceOf(Location loc) {
  std::optional<std::string> found;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      StringRef name = file.getFilename().getValue();
      found = ((name == "-" ? StringRef("<string>") : name) + ":" +
               Twine(file.getLine()) + ":" + Twine(file.getColumn()))
                  .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

struct RecordFusedOps : poot::impl::PootRecordFusedOpsBase<RecordFusedOps> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    SmallVector<Attribute> records;
    WalkResult walk = module.walk([&](Operation *op) {
      if (!isa<AttentionOp, BlockTopKOp, SelectedAttentionOp>(op))
        return WalkResult::advance();
      std::string kind;
      Attribute request = PootDialect::getPlan(op);
      std::optional<llvm::json::Object> fields =
          request ? requestRecord(request, kind) : std::nullopt;
      if (!fields) {
        op->emitError() << op->getName()
                        << " has no planned request: run "
                           "poot-plan-attention before poot-record-fused-ops";
        return WalkResult::interrupt();
      }
      llvm::json::Object record{{"op", kind}, {"request", std::move(*fields)}};
      if (auto scale = op->getAttrOfType<FloatAttr>("scale"))
        record["scale"] = scale.getValueAsDouble();
      if (std::optional<std::string> where = sourceOf(op->getLoc()))
        record["location"] = *where;
      op->setAttr("poot.fused", b.getI64IntegerAttr(records.size()));
      std::string text;
      llvm::raw_string_ostream os(text);
      os << llvm::json::Value(std::move(record));
      records.push_back(b.getStringAttr(text));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (!records.empty())
      module->setAttr("poot.fused_ops", b.getArrayAttr(records));
  }
};

} // namespace
