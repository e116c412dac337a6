//===- PootAttrs.cpp - poot enums and attributes ---------------------------===//
#include "dialect/PootDialect.h"
#include "dialect/AttentionLayout.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::poot;

#include "dialect/PootEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/PootAttrs.cpp.inc"

int64_t AttentionRequestAttr::getLdsFloats() const {
  switch (getSchedule()) {
  case AttentionSchedule::Streaming:
  case AttentionSchedule::SplitKV:
    return getLanes() * getStateFloats();
  case AttentionSchedule::WarpDecode:
    return warpDecodeLdsFloats(getNumRep(), getValueWidth(), getKeysPerLoad());
  case AttentionSchedule::TiledPrefill:
  case AttentionSchedule::WideHead:
    return tiledPrefillFloats(getQBlock(), getKeyBlock(),
                              getKeyWidth() + getSharedWidth(),
                              getValueWidth(),
                              /*shareKeyValue=*/getSchedule() ==
                                  AttentionSchedule::WideHead,
                              getSchedule() == AttentionSchedule::WideHead
                                  ? wideHeadSlices(getLanes(), getQBlock(),
                                                   getKeyWidth() +
                                                       getSharedWidth())
                                  : 1);
  case AttentionSchedule::TiledPrefillMma:
    // 32-bit words (two two-byte elements each), not floats.
    return tiledPrefillMmaWords(getKeyBlock(), getKeyWidth() + getSharedWidth(),
                                getValueWidth());
  case AttentionSchedule::WideHeadMma:
    // 32-bit words, not floats.
    return wideHeadMmaWords(getQBlock(), getKeyBlock(),
                            getKeyWidth() + getSharedWidth(), getValueWidth(),
                            getLanes() / (2 * getQBlock()));
  case AttentionSchedule::CpuTiled:
    return 0;
  }
  llvm_unreachable("unknown attention schedule");
}

void PootDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/PootAttrs.cpp.inc"
      >();
}

// `<` kind (string-name)? `>`: the name is a plain string literal, present
// only for state slots.
Attribute SlotAttr::parse(AsmParser &parser, Type) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<SlotKind> kind = symbolizeSlotKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown slot kind '" << keyword
                          << "' (state, pos, slot_map, write_map, validation)";
    return {};
  }
  std::string name;
  bool hasName = succeeded(parser.parseOptionalString(&name));
  if (parser.parseGreater())
    return {};
  StringAttr nameAttr = hasName ? parser.getBuilder().getStringAttr(name) : StringAttr();
  return parser.getChecked<SlotAttr>(loc, parser.getContext(), *kind, nameAttr);
}

void SlotAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifySlotKind(getKind());
  if (getName())
    printer << " \"" << getName().getValue() << '"';
  printer << '>';
}

LogicalResult SlotAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               SlotKind kind, StringAttr name) {
  bool isState = kind == SlotKind::State;
  if (isState && (!name || name.getValue().empty()))
    return emitError() << "a state slot needs a name, e.g. #poot.slot<state \"k0\">";
  if (!isState && name)
    return emitError() << "only state slots carry a name";
  return success();
}

LogicalResult AttentionRequestAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t batch, int64_t qHeads,
    int64_t kvHeads, int64_t qLen, int64_t keyLen, int64_t keyWidth,
    int64_t sharedWidth, int64_t valueWidth, ScoreKind,
    MaskKind mask, KeyBound, AttentionSchedule, int64_t lanes, int64_t splits,
    int64_t chunk, int64_t gridX, int64_t gridY, int64_t qBlock,
    int64_t keyBlock, int64_t unroll, int64_t rowLanes, int64_t window) {
  // Sizes of at least one element (the dialect refuses zero-sized
  // attention operands), then counts that may be 0 (not used by a schedule).
  std::pair<const char *, int64_t> positive[] = {
      {"batch", batch},         {"q_heads", qHeads}, {"kv_heads", kvHeads},
      {"q_len", qLen},          {"key_len", keyLen}, {"key_width", keyWidth},
      {"value_width", valueWidth}, {"lanes", lanes}, {"splits", splits},
      {"chunk", chunk},         {"grid_x", gridX},   {"grid_y", gridY}};
  for (auto [name, value] : positive)
    if (value < 1)
      return emitError() << "attention_request: " << name
                         << " must be at least 1, got " << value;
  std::pair<const char *, int64_t> counts[] = {
      {"shared_width", sharedWidth}, {"q_block", qBlock},
      {"key_block", keyBlock},       {"unroll", unroll},
      {"row_lanes", rowLanes}, {"window", window}};
  for (auto [name, value] : counts)
    if (value < 0)
      return emitError() << "attention_request: " << name
                         << " must not be negative, got " << value;
  if (qHeads % kvHeads)
    return emitError() << "attention_request: q_heads (" << qHeads
                       << ") is not a multiple of kv_heads (" << kvHeads << ")";
  if (window && mask != MaskKind::Causal)
    return emitError() << "attention_request: a window needs the causal mask";
  return success();
}

LogicalResult RangeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t min, int64_t max) {
  if (min > max)
    return emitError() << "range min (" << min << ") exceeds max (" << max << ")";
  return success();
}

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t dim, int64_t block, int64_t parts,
                                ArrayRef<int64_t> segments) {
  if (dim < 0 || parts < 1 || block < 0 || block >= parts)
    return emitError() << "shard needs dim >= 0 and 0 <= block < parts, got dim "
                       << dim << ", block " << block << ", parts " << parts;
  for (int64_t segment : segments)
    if (segment < 1 || segment % parts != 0)
      return emitError() << "shard segment of size " << segment
                         << " does not split into " << parts << " blocks";
  return success();
}

LogicalResult
TensorParallelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t rank, int64_t degree) {
  if (degree < 1 || rank < 0 || rank >= degree)
    return emitError() << "tensor_parallel needs 0 <= rank < degree, got rank "
                       << rank << " of " << degree;
  return success();
}
