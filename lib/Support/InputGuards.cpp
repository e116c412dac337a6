//===- InputGuards.cpp - input MLIR 22 aborts on instead of diagnosing -----===//

#include "lib/Support/InputGuards.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

/// MLIR 22's SPIR-V type parser reads an `!spirv.array` count as int64 and
/// builds the type with a 32-bit count: 2^32 truncates to 0 and
/// `ArrayType::get` asserts. This happens inside the parser, so it is checked
/// on the text.
std::string findSpirvArrayCountOverflow(llvm::StringRef text,
                                        llvm::StringRef name,
                                        unsigned lineOffset) {
  if (!text.contains("!spirv.array"))
    return {};
  llvm::Regex arrayCount("!spirv\\.array<[[:space:]]*([0-9]+)");
  unsigned line = lineOffset + 1;
  for (llvm::StringRef rest = text; !rest.empty(); ++line) {
    auto [current, next] = rest.split('\n');
    rest = next;
    llvm::SmallVector<llvm::StringRef, 2> match;
    for (llvm::StringRef tail = current; arrayCount.match(tail, &match);
         tail = tail.drop_front(tail.find(match[0]) + match[0].size())) {
      uint64_t count = 0;
      if (match[1].getAsInteger(10, count) || count > 0xFFFFFFFFull)
        return (name + ":" + llvm::Twine(line) + ": '!spirv.array' with " +
                match[1] +
                " elements: a SPIR-V array holds at most 4294967295 (MLIR "
                "22's SPIR-V type parser would truncate the count and abort)")
            .str();
    }
  }
  return {};
}

/// A block label defined twice in one region: MLIR 22's parser reports
/// "redefinition of block" and then, tearing down the half-built region,
/// destroys values that still have uses (or asks dominance about an
/// unlinked block) and asserts. Checked on the text: braces open and close
/// scopes (a region's, or an attribute dictionary's, which holds no
/// labels), a label at the start of a line or right after `{`, followed by
/// `(` or `:`, is a definition; strings and comments are skipped.
std::string findRedefinedBlockLabel(llvm::StringRef text, llvm::StringRef name,
                                    unsigned lineOffset) {
  if (!text.contains('^'))
    return {};
  llvm::SmallVector<llvm::StringSet<>> scopes(1);
  unsigned line = lineOffset + 1;
  bool lineStart = true; // only blanks (or a `{`) since the line began
  auto isLabelChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
  };
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = true;
      continue;
    }
    if (c == '"') { // a string: up to its unescaped closing quote
      for (++i; i < n && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      lineStart = false;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') { // a comment
      while (i + 1 < n && text[i + 1] != '\n')
        ++i;
      continue;
    }
    if (c == '{') {
      scopes.emplace_back();
      lineStart = true;
      continue;
    }
    if (c == '}') {
      if (scopes.size() > 1)
        scopes.pop_back();
      lineStart = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r')
      continue;
    if (c == '^' && lineStart) {
      size_t end = i + 1;
      while (end < n && isLabelChar(text[end]))
        ++end;
      size_t after = end;
      while (after < n && (text[after] == ' ' || text[after] == '\t'))
        ++after;
      llvm::StringRef label = text.slice(i, end);
      if (end > i + 1 && after < n && (text[after] == '(' || text[after] == ':') &&
          !scopes.back().insert(label).second)
        return (name + ":" + llvm::Twine(line) + ": redefinition of block '" +
                label +
                "' (MLIR 22's parser would abort tearing down the region)")
            .str();
      i = end - 1;
    }
    lineStart = false;
  }
  return {};
}

/// The largest rank among an op's shaped operands and results (the rank a
/// reassociation indexes into), 0 when none is ranked.
int64_t largestRank(Operation *op) {
  int64_t rank = 0;
  auto consider = [&](Type type) {
    if (auto shaped = dyn_cast<ShapedType>(type); shaped && shaped.hasRank())
      rank = std::max(rank, shaped.getRank());
  };
  for (Type type : op->getOperandTypes())
    consider(type);
  for (Type type : op->getResultTypes())
    consider(type);
  return rank;
}

std::string lineOf(Operation *op, llvm::StringRef name, unsigned lineOffset) {
  if (auto at = dyn_cast<FileLineColLoc>(op->getLoc()))
    return (name + ":" + llvm::Twine(at.getLine() + lineOffset)).str();
  return name.str();
}

/// The reshape ops' verifiers (tensor/memref expand_shape and collapse_shape)
/// build affine maps from the `reassociation` attribute before checking it:
/// a negative index (or one past 2^32) becomes a dimension position whose
/// map `AffineMap::get` asserts on. Every index must name a dimension of the
/// op's larger-ranked type; the verifier diagnoses the rest.
std::string findBadReassociation(Operation *top, llvm::StringRef name,
                                 unsigned lineOffset) {
  std::string found;
  top->walk([&](Operation *op) {
    auto groups = op->getAttrOfType<ArrayAttr>("reassociation");
    if (!groups || !op->isRegistered())
      return WalkResult::advance();
    int64_t rank = largestRank(op);
    for (Attribute group : groups) {
      auto indices = dyn_cast<ArrayAttr>(group);
      if (!indices)
        continue; // not an index list: the verifier says so
      for (Attribute index : indices) {
        auto integer = dyn_cast<IntegerAttr>(index);
        if (!integer)
          continue;
        int64_t value = integer.getValue().getSExtValue();
        if (value >= 0 && value < std::max<int64_t>(rank, 1))
          continue;
        found = (lineOf(op, name, lineOffset) + ": '" + op->getName().getStringRef() +
                 "' reassociation index " + llvm::Twine(value) +
                 " is not a dimension of its rank-" + llvm::Twine(rank) +
                 " type" +
                 (value < 0 ? " (MLIR 22's verifier would abort building its "
                              "map)"
                            : ""))
                    .str();
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return found;
}

} // namespace

std::string mlir::poot::findUpstreamAbort(MLIRContext *context,
                                          llvm::StringRef text,
                                          llvm::StringRef name,
                                          unsigned lineOffset) {
  if (std::string found = findSpirvArrayCountOverflow(text, name, lineOffset);
      !found.empty())
    return found;
  if (std::string found = findRedefinedBlockLabel(text, name, lineOffset);
      !found.empty())
    return found;
  // Only text that can hold a reshape is parsed a second time (unverified).
  if (!text.contains("expand_shape") && !text.contains("collapse_shape"))
    return {};
  // Diagnostics of this parse are dropped: the real parse reports them.
  ScopedDiagnosticHandler silence(context, [](Diagnostic &) {
    return success();
  });
  Block scratch;
  ParserConfig config(context, /*verifyAfterParse=*/false);
  if (failed(parseSourceString(text, &scratch, config, name)))
    return {};
  for (Operation &op : scratch)
    if (std::string found = findBadReassociation(&op, name, lineOffset);
        !found.empty())
      return found;
  return {};
}
