//===- PootAttentionOps.cpp - typing rules of the fused attention ops -----===//
//
// The verifier is the op's typing rule: the attention rewrite only forms an
// op this verifier accepts, and declines (keeps the primitive chain) otherwise.
//
//===----------------------------------------------------------------------===//

#include "dialect/PootDialect.h"
#include "dialect/OpInference.h"

#include <cmath>

using namespace mlir;
using namespace mlir::poot;

static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

Attribute PootDialect::getPlan(Operation *op) {
  if (auto attention = dyn_cast<AttentionOp>(op))
    return attention.getRequestAttr();
  if (auto selected = dyn_cast<SelectedAttentionOp>(op))
    return selected.getRequestAttr();
  if (auto topk = dyn_cast<BlockTopKOp>(op))
    return topk.getRequestAttr();
  return {};
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

static LogicalResult inferAttentionOp(MLIRContext *,
                                            std::optional<Location> loc,
                                            AttentionOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto q = tensorOf(adaptor.getQuery());
  auto v = tensorOf(adaptor.getValue());
  if (q.getRank() != 4)
    return emitOptionalError(loc, "query must be [B, Hq, Lq, Dk], got ", q);
  if (v.getRank() < 1)
    return emitOptionalError(loc, "value needs a trailing Dv dimension");
  // [B, Hq, Lq, Dv] in both the dense and the paged layout.
  inferred.push_back(RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getShape().back()},
      q.getElementType()));
  return success();
}
POOT_INFER_VIA(AttentionOp, inferAttentionOp)

int64_t AttentionOp::getNumRep() {
  int64_t hkv = tensorOf(getKey()).getDimSize(1);
  return tensorOf(getQuery()).getDimSize(1) / hkv;
}

int64_t AttentionOp::getKeyLength() {
  if (isPaged())
    return tensorOf(getRead()).getDimSize(1);
  return tensorOf(getKey()).getDimSize(2);
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyInferredAttentionOp(*this)))
    return failure();
  auto q = tensorOf(getQuery());
  auto k = tensorOf(getKey());
  auto v = tensorOf(getValue());
  Type elem = q.getElementType();
  int64_t b = q.getDimSize(0), hq = q.getDimSize(1), lq = q.getDimSize(2),
          dq = q.getDimSize(3);

  if (k.getElementType() != elem || v.getElementType() != elem)
    return emitOpError("query, key and value need one element type");

  int64_t hkv, lk, dk;
  if (isPaged()) {
    if (isSplitKey())
      return emitOpError("a paged key cannot also be a split key (latent "
                         "caches keep the gathered view)");
    if (k.getRank() != 3 || v.getRank() != 3)
      return emitOpError("paged key and value must be pools [S, Hkv, D], got ")
             << k << " and " << v;
    if (k.getDimSize(0) != v.getDimSize(0) || k.getDimSize(1) != v.getDimSize(1))
      return emitOpError("paged key and value pools must agree on [S, Hkv]");
    auto read = tensorOf(getRead());
    if (read.getRank() != 2 || read.getDimSize(0) != b)
      return emitOpError("read map must be [B, Lk] with B = ")
             << b << ", got " << read;
    hkv = k.getDimSize(1);
    lk = read.getDimSize(1);
    dk = k.getDimSize(2);
  } else {
    if (k.getRank() != 4 || v.getRank() != 4)
      return emitOpError("key and value must be [B, Hkv, Lk, D], got ")
             << k << " and " << v;
    if (k.getDimSize(0) != b || v.getDimSize(0) != b)
      return emitOpError("key and value batch must equal the query batch (")
             << b << ")";
    if (k.getDimSize(1) != v.getDimSize(1) || k.getDimSize(2) != v.getDimSize(2))
      return emitOpError("key and value must agree on [Hkv, Lk]");
    hkv = k.getDimSize(1);
    lk = k.getDimSize(2);
    dk = k.getDimSize(3);
  }

  if (hkv < 1 || hq % hkv != 0)
    return emitOpError("query heads (")
           << hq << ") must be a multiple of key/value heads (" << hkv << ")";

  if (isSplitKey()) {
    auto shared = tensorOf(getKeyShared());
    if (shared.getElementType() != elem)
      return emitOpError("key_shared needs the query's element type");
    if (shared.getRank() != 4 || shared.getDimSize(0) != b ||
        shared.getDimSize(1) != 1 || shared.getDimSize(2) != lk)
      return emitOpError("key_shared must be [B, 1, Lk, s] = [")
             << b << ", 1, " << lk << ", s], got " << shared;
    dk += shared.getDimSize(3);
  }
  if (dk != dq)
    return emitOpError("key width (")
           << dk << (isSplitKey() ? ", per-head + shared" : "")
           << ") must equal the query width (" << dq << ")";

  if (Value mask = getMask()) {
    auto m = tensorOf(mask);
    // Two-byte attention: the bias may stay f32 (it is added to the f32
    // scores as given, docs/two-byte-attention.md).
    bool twoByte = elem.isF16() || elem.isBF16();
    if (m.getElementType() != elem &&
        !(twoByte && m.getElementType().isF32()))
      return emitOpError("mask needs the query's element type (or f32 for "
                         "an f16/bf16 query)");
    if (m.getRank() != 4 || (m.getDimSize(0) != 1 && m.getDimSize(0) != b) ||
        (m.getDimSize(1) != 1 && m.getDimSize(1) != hq) ||
        (m.getDimSize(2) != 1 && m.getDimSize(2) != lq) ||
        m.getDimSize(3) != lk)
      return emitOpError("mask must be [B|1, Hq|1, Lq|1, Lk] = [")
             << b << "|1, " << hq << "|1, " << lq << "|1, " << lk << "], got "
             << m;
  }

  if (getCausal()) {
    if (getMask())
      return emitOpError("causal excludes a mask operand (a causal chain with "
                         "other masks stays one tensor mask)");
    if (lk < lq)
      return emitOpError("causal needs Lk >= Lq (every row sees key 0), got Lk = ")
             << lk << ", Lq = " << lq;
  }
  if (IntegerAttr window = getWindowAttr()) {
    if (!getCausal())
      return emitOpError("window needs causal (the window is the band of keys "
                         "ending at each row's causal diagonal)");
    if (window.getInt() < 1)
      return emitOpError("window must be >= 1, got ") << window.getInt();
  }

  if (Value length = getLength()) {
    auto l = tensorOf(length);
    if (l.getRank() != 1 || l.getDimSize(0) != b)
      return emitOpError("len must be [B] = [") << b << "], got " << l;
  }

  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale))
    return emitOpError("scale must be finite");
  if (auto cap = getSoftcap())
    if (!(cap->convertToDouble() > 0) || !std::isfinite(cap->convertToDouble()))
      return emitOpError("softcap must be a positive finite number");
  return success();
}

//===----------------------------------------------------------------------===//
// BlockTopKOp
//===----------------------------------------------------------------------===//

static LogicalResult inferBlockTopKOp(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            BlockTopKOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto scores = tensorOf(adaptor.getScores());
  if (scores.getRank() != 3)
    return emitOptionalError(loc, "scores must be [B, Lq, NB], got ", scores);
  // k becomes a dimension: check it before building a type with it.
  if (adaptor.getK() < 1)
    return emitOptionalError(loc, "k must be >= 1, got ",
                             adaptor.getK());
  inferred.push_back(RankedTensorType::get(
      {scores.getDimSize(0), scores.getDimSize(1), adaptor.getK()},
      IntegerType::get(ctx, 32)));
  return success();
}
POOT_INFER_VIA(BlockTopKOp, inferBlockTopKOp)

LogicalResult BlockTopKOp::verify() {
  if (failed(verifyInferredBlockTopKOp(*this)))
    return failure();
  auto scores = tensorOf(getScores());
  auto qpos = tensorOf(getQPos());
  if (getBlockSize() < 1)
    return emitOpError("block_size must be >= 1");
  if (qpos.getShape() != scores.getShape().drop_back())
    return emitOpError("q_pos must be [B, Lq] matching the scores, got ") << qpos;
  return success();
}

//===----------------------------------------------------------------------===//
// SelectedAttentionOp
//===----------------------------------------------------------------------===//

static LogicalResult inferSelectedAttentionOp(MLIRContext *, std::optional<Location> loc, SelectedAttentionOp::Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto q = tensorOf(adaptor.getQuery());
  auto v = tensorOf(adaptor.getValue());
  if (q.getRank() != 4 || v.getRank() != 4)
    return emitOptionalError(loc, "query and value must be rank 4");
  inferred.push_back(RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)},
      q.getElementType()));
  return success();
}
POOT_INFER_VIA(SelectedAttentionOp, inferSelectedAttentionOp)

LogicalResult SelectedAttentionOp::verify() {
  if (failed(verifyInferredSelectedAttentionOp(*this)))
    return failure();
  auto q = tensorOf(getQuery());
  auto k = tensorOf(getKey());
  auto v = tensorOf(getValue());
  auto ids = tensorOf(getBlockIds());
  auto qpos = tensorOf(getQPos());
  int64_t b = q.getDimSize(0), hq = q.getDimSize(1), lq = q.getDimSize(2);
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return emitOpError("query, key and value need one element type");
  if (k.getRank() != 4 || v.getRank() != 4 || k.getDimSize(0) != b ||
      v.getDimSize(0) != b || k.getDimSize(1) != v.getDimSize(1) ||
      k.getDimSize(2) != v.getDimSize(2))
    return emitOpError("key and value must be [B, Hkv, Lk, D] with the query's B");
  if (k.getDimSize(3) != q.getDimSize(3))
    return emitOpError("key width must equal the query width");
  int64_t hkv = k.getDimSize(1);
  if (hkv < 1 || hq % hkv != 0)
    return emitOpError("query heads (")
           << hq << ") must be a multiple of key/value heads (" << hkv << ")";
  if (ids.getRank() != 3 || ids.getDimSize(0) != b || ids.getDimSize(1) != lq)
    return emitOpError("block_ids must be [B, Lq, K], got ") << ids;
  if (qpos.getRank() != 2 || qpos.getDimSize(0) != b || qpos.getDimSize(1) != lq)
    return emitOpError("q_pos must be [B, Lq], got ") << qpos;
  if (getBlockSize() < 1)
    return emitOpError("block_size must be >= 1");
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError("scale must be finite");
  if (auto cap = getSoftcap())
    if (!(cap->convertToDouble() > 0) || !std::isfinite(cap->convertToDouble()))
      return emitOpError("softcap must be a positive finite number");
  return success();
}
