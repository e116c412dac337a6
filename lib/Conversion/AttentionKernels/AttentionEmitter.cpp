//===- AttentionEmitter.cpp - the one attention kernel body ----------------===//
//
// Per lane, over its keys (the seed's online softmax):
//   s      = transform(dot(q, k[t]) * scale) + mask[t]
//   m_new  = max(m, s);  rescale = exp(m - m_new);  w = exp(s - m_new)
//   l      = l * rescale + w;  o[d] = o[d] * rescale + w * v[t][d];  m = m_new
// A key whose score is -inf is skipped: it adds exactly zero weight. The
// lane state (o[Dv], m, l) lives in workgroup memory at lane * (Dv + 2).
// Combine: M = max_i m_i; out[c] = sum_i o_i[c] w_i / sum_i l_i w_i with
// w_i = exp(m_i - M), or 0 for a lane that saw nothing; a row with no visible
// key is 0 / 0 = NaN, as the oracle's softmax gives.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/AttentionEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

AttentionEmitter::AttentionEmitter(OpBuilder &builder, Location loc,
                                   AttentionRequestAttr req,
                                   AttentionSignature sig, double scale,
                                   std::optional<double> softcap)
    : KernelBuilder(builder, loc), req(req), sig(sig), scale(scale),
      softcap(softcap) {}

std::pair<Value, Value> AttentionEmitter::batchAndHead(Value row) {
  // row = (b * Hq + h) * Lq + i
  Value bh = arith::DivUIOp::create(b, loc, row, index(req.getQLen()));
  Value batch = arith::DivUIOp::create(b, loc, bh, index(req.getQHeads()));
  Value head = arith::RemUIOp::create(b, loc, bh, index(req.getQHeads()));
  return {batch, head};
}

Value AttentionEmitter::keyEnd(const AttentionBuffers &bufs, Value batch) {
  return keyEnd(bufs, batch, req.getKeyLen());
}

Value AttentionEmitter::keyEnd(const AttentionBuffers &bufs, Value batch,
                               int64_t capacity) {
  Value cap = index(capacity);
  if (!sig.length)
    return cap;
  // Clamp len into 0..cap so no length can read outside the buffers.
  Value len = indexOf(load(bufs.length, batch));
  Value lo = arith::MaxSIOp::create(b, loc, len, index(0));
  return arith::MinSIOp::create(b, loc, lo, cap);
}

Value AttentionEmitter::splitBegin(Value split) {
  return add(index(req.getSplitBase()), mul(split, index(req.getChunk())));
}

std::pair<Value, Value> AttentionEmitter::chunkBounds(Value split, Value end) {
  Value begin = splitBegin(split);
  Value chunkEnd =
      arith::MinSIOp::create(b, loc, add(begin, index(req.getChunk())), end);
  return {begin, chunkEnd};
}

Value AttentionEmitter::keyRow(const AttentionBuffers &bufs, Value batch,
                               Value g, Value t) {
  Value hkv = index(req.getKvHeads());
  if (sig.read) {
    // Paged: pool row read[b, t] * Hkv + g (read is a slot of the pool).
    Value flat = add(mul(batch, index(req.getKeyLen())), t);
    Value slot = indexOf(load(bufs.read, flat));
    return add(mul(slot, hkv), g);
  }
  return add(mul(add(mul(batch, hkv), g), index(req.getKeyLen())), t);
}

Value AttentionEmitter::keyRowBase(const AttentionBuffers &bufs, Value batch,
                                   Value g, Value t, int64_t width) {
  return mul(keyRow(bufs, batch, g, t), index(width));
}

Value AttentionEmitter::sharedKeyBase(Value batch, Value t) {
  return mul(add(mul(batch, index(req.getKeyLen())), t),
             index(req.getSharedWidth()));
}

Value AttentionEmitter::score(const AttentionBuffers &bufs, Value row,
                              Value batch, Value head, Value g, Value t) {
  int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth();
  Value qBase = mul(row, index(dk + ds));
  Value kBase = keyRowBase(bufs, batch, g, t, dk);

  auto dot = [&](Value mem, Value base, Value qOffset, int64_t width,
                 Value init) -> Value {
    auto loop = scf::ForOp::create(b, loc, index(0), index(width), index(1),
                                   ValueRange{init});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value d = loop.getInductionVar();
    Value qv = load(bufs.query, add(qOffset, d));
    Value kv = load(mem, add(base, d));
    Value acc = add(loop.getRegionIterArgs()[0], mul(qv, kv));
    scf::YieldOp::create(b, loc, acc);
    return loop.getResult(0);
  };

  Value acc = dot(bufs.key, kBase, qBase, dk, f32(0.0));
  if (sig.keyShared) {
    acc = dot(bufs.keyShared, sharedKeyBase(batch, t), add(qBase, index(dk)),
              ds, acc);
  }
  Value i = sig.mask ? arith::RemUIOp::create(b, loc, row,
                                              index(req.getQLen()))
                     : Value();
  return addMask(bufs, transformScore(acc), batch, head, i, t);
}

Value AttentionEmitter::transformScore(Value dot) {
  Value s = mul(dot, f32(scale));
  if (softcap) {
    Value cap = f32(*softcap);
    s = mul(cap, math::TanhOp::create(b, loc,
                                      arith::DivFOp::create(b, loc, s, cap)));
  }
  return s;
}

Value AttentionEmitter::addMask(const AttentionBuffers &bufs, Value s,
                                Value batch, Value head, Value i, Value t) {
  if (!sig.mask)
    return s;
  // mask [Bm, Hm, Qm, Lk] with size-1 dims broadcast.
  Value mb = sig.maskBatch == 1 ? index(0) : batch;
  Value mh = sig.maskHeads == 1 ? index(0) : head;
  Value mi = sig.maskRows == 1 ? index(0) : i;
  Value flat = add(mul(add(mul(add(mul(mb, index(sig.maskHeads)), mh),
                               index(sig.maskRows)),
                           mi),
                       index(req.getKeyLen())),
                   t);
  return add(s, load(bufs.mask, flat));
}

Value AttentionEmitter::causalEnd(Value end, Value i) {
  if (req.getMask() != MaskKind::Causal)
    return end;
  Value last = add(i, index(req.getKeyLen() - req.getQLen() + 1));
  return arith::MinSIOp::create(b, loc, end, last);
}

Value AttentionEmitter::windowBegin(Value i) {
  int64_t window = req.getWindow();
  if (!window)
    return Value();
  // i + D + 1 - W may be negative: compare in signed index arithmetic.
  Value first = arith::SubIOp::create(
      b, loc, add(i, index(req.getKeyLen() - req.getQLen() + 1)),
      index(window));
  return arith::MaxSIOp::create(b, loc, first, index(0));
}

Value AttentionEmitter::windowStart(Value begin, Value i) {
  Value first = windowBegin(i);
  return first ? arith::MaxSIOp::create(b, loc, begin, first).getResult()
               : begin;
}

Value AttentionEmitter::windowTileStart(Value begin, Value i, int64_t tile) {
  Value first = windowBegin(i);
  if (!first)
    return begin;
  Value aligned = mul(divui(first, tile), index(tile));
  return arith::MaxSIOp::create(b, loc, begin, aligned);
}

Value AttentionEmitter::inWindow(Value t, Value i) {
  Value first = windowBegin(i);
  if (!first)
    return Value();
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t, first);
}

Value AttentionEmitter::emitLaneInit(Value lane, Value lds) {
  int64_t dv = req.getValueWidth();
  Value base = mul(lane, index(dv + 2));
  // Initial state: o = 0, m = -inf, l = 0.
  {
    auto init = scf::ForOp::create(b, loc, index(0), index(dv), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(init.getBody());
    store(f32(0.0), lds, add(base, init.getInductionVar()));
  }
  store(f32(-std::numeric_limits<double>::infinity()), lds,
        add(base, index(dv)));
  store(f32(0.0), lds, add(base, index(dv + 1)));
  return base;
}

void AttentionEmitter::emitVisit(const AttentionBuffers &bufs, Value row,
                                 Value batch, Value head, Value g, Value t,
                                 Value base, Value lds) {
  int64_t dv = req.getValueWidth();
  Value ninf = f32(-std::numeric_limits<double>::infinity());
  Value mIdx = add(base, index(dv));
  Value lIdx = add(base, index(dv + 1));
  Value s = score(bufs, row, batch, head, g, t);
  // A -inf score adds exactly zero weight: skip it (NaN still propagates).
  Value visible = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, s, ninf);
  auto ifVisible = scf::IfOp::create(b, loc, visible, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifVisible.getThenRegion().front());
  OnlineStep step = onlineStep(load(lds, mIdx), s);
  store(rescaleAdd(load(lds, lIdx), step, Value()), lds, lIdx);
  Value vBase = keyRowBase(bufs, batch, g, t, dv);
  auto acc = scf::ForOp::create(b, loc, index(0), index(dv), index(1));
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(acc.getBody());
    Value d = acc.getInductionVar();
    Value oIdx = add(base, d);
    store(rescaleAdd(load(lds, oIdx), step, load(bufs.value, add(vBase, d))),
          lds, oIdx);
  }
  store(step.max, lds, mIdx);
}

void AttentionEmitter::emitLaneScan(const AttentionBuffers &bufs, Value row,
                                    Value split, Value lane, Value lds) {
  Value base = emitLaneInit(lane, lds);
  auto [batch, head] = batchAndHead(row);
  Value g = divui(head, req.getNumRep());

  // This split's chunk of the visible keys.
  Value i = remui(row, req.getQLen());
  Value end = causalEnd(keyEnd(bufs, batch), i);
  auto [chunkBegin, chunkEnd] = chunkBounds(split, end);
  Value begin = windowStart(chunkBegin, i);
  auto keys = scf::ForOp::create(b, loc, add(begin, lane), chunkEnd,
                                 index(req.getLanes()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(keys.getBody());
  emitVisit(bufs, row, batch, head, g, keys.getInductionVar(), base, lds);
}

std::pair<Value, Value>
AttentionEmitter::foldMaxAndSum(const PartialStates &states) {
  int64_t dv = req.getValueWidth();
  auto over = [&](Value init, function_ref<Value(Value base, Value acc)> step) {
    auto loop = scf::ForOp::create(b, loc, index(0), index(states.count),
                                   index(1), ValueRange{init});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value base = states.base(loop.getInductionVar());
    scf::YieldOp::create(b, loc, step(base, loop.getRegionIterArgs()[0]));
    return loop.getResult(0);
  };
  Value max = over(f32(-std::numeric_limits<double>::infinity()),
                   [&](Value base, Value acc) -> Value {
                     return arith::MaximumFOp::create(
                         b, loc, acc, load(states.mem, add(base, index(dv))));
                   });
  Value den = over(f32(0.0), [&](Value base, Value acc) -> Value {
    Value w = weight(load(states.mem, add(base, index(dv))), max);
    return add(acc, mul(load(states.mem, add(base, index(dv + 1))), w));
  });
  return {max, den};
}

Value AttentionEmitter::foldChannel(const PartialStates &states, Value max,
                                    Value c) {
  int64_t dv = req.getValueWidth();
  auto loop = scf::ForOp::create(b, loc, index(0), index(states.count),
                                 index(1), ValueRange{f32(0.0)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value base = states.base(loop.getInductionVar());
  Value w = weight(load(states.mem, add(base, index(dv))), max);
  scf::YieldOp::create(
      b, loc,
      add(loop.getRegionIterArgs()[0], mul(load(states.mem, add(base, c)), w)));
  return loop.getResult(0);
}

void AttentionEmitter::emitLaneCombine(const AttentionBuffers &bufs, Value row,
                                       Value split, Value lane, Value lds) {
  int64_t dv = req.getValueWidth(), stride = req.getStateFloats(),
          lanes = req.getLanes();
  bool partials = req.getSchedule() == AttentionSchedule::SplitKV;

  auto laneBase = [&](Value i) { return mul(i, index(stride)); };
  PartialStates states{lds, lanes, laneBase};
  auto [maxM, den] = foldMaxAndSum(states);

  Value outBase =
      partials ? mul(add(mul(row, index(req.getSplits())), split), index(stride))
               : mul(row, index(dv));
  auto channels = scf::ForOp::create(b, loc, lane, index(dv), index(lanes));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(channels.getBody());
    Value c = channels.getInductionVar();
    Value num = foldChannel(states, maxM, c);
    if (partials)
      store(num, bufs.scratch, add(outBase, c));
    else
      store(arith::DivFOp::create(b, loc, num, den), bufs.out, add(outBase, c));
  }
  if (partials) {
    // Lane 0 publishes (m, l); a split that saw nothing publishes (-inf, 0)
    // by the same arithmetic, so the scratch needs no initialisation.
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                        index(0));
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    store(maxM, bufs.scratch, add(outBase, index(dv)));
    store(den, bufs.scratch, add(outBase, index(dv + 1)));
  }
}

void AttentionEmitter::emitSplitCombine(const AttentionBuffers &bufs, Value row,
                                        Value lane) {
  int64_t dv = req.getValueWidth(), stride = req.getStateFloats();
  Value rowBase = mul(mul(row, index(req.getSplits())), index(stride));
  auto splitBase = [&](Value i) { return add(rowBase, mul(i, index(stride))); };
  PartialStates states{bufs.scratch, req.getSplits(), splitBase};
  auto [maxM, den] = foldMaxAndSum(states);
  auto channels =
      scf::ForOp::create(b, loc, lane, index(dv), index(req.getLanes()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(channels.getBody());
  Value c = channels.getInductionVar();
  Value num = foldChannel(states, maxM, c);
  store(arith::DivFOp::create(b, loc, num, den), bufs.out,
        add(mul(row, index(dv)), c));
}
