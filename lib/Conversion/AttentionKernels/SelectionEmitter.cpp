//===- SelectionEmitter.cpp - the block-selected attention kernels --------===//
//
// Block top-k, per row (b, i) at p = q_pos[b, i], own = p / bs (-1 when
// p < 0): block j's key is scores[j] if j < own, else -inf, ranked as
// poot.top_k ranks (numbers before NaN, higher first, ties to the lower id:
// a strict total order). Round r's winner is the best block ranking after
// round r-1's, so no list of taken blocks is kept: each lane scans its
// stride for that, the lanes' bests meet in workgroup memory (keys and ids
// in two buffers) and a tree of
// log2(lanes) phases folds them; every lane reads the winner. Lane 0 writes
// it, or -1 when it is not a candidate (j >= own); slots past NB are -1.
//
// Selected attention visits (K + 1) * bs positions per row instead of Lk and
// hands each visible key to the AttentionEmitter's online-softmax update.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/SelectionEmitter.h"
#include "lib/Conversion/AttentionKernels/WarpDecodeKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

static int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

//===----------------------------------------------------------------------===//
// SelectionSignature
//===----------------------------------------------------------------------===//

SelectionSignature::SelectionSignature(Operation *op) {
  if (auto topk = dyn_cast<BlockTopKOp>(op)) {
    inputs = {{"scores", elementsOf(topk.getScores()), false},
              {"q_pos", elementsOf(topk.getQPos()), true}};
    out = {"out", elementsOf(topk.getIds()), true};
    scratch = {"scratch", 0, false};
    return;
  }
  auto selected = cast<SelectedAttentionOp>(op);
  inputs = {{"query", elementsOf(selected.getQuery()), false},
            {"key", elementsOf(selected.getKey()), false},
            {"value", elementsOf(selected.getValue()), false},
            {"block_ids", elementsOf(selected.getBlockIds()), true},
            {"q_pos", elementsOf(selected.getQPos()), true}};
  out = {"out", elementsOf(selected.getResult()), false};
  int64_t scratchFloats = 0;
  if (SelectedAttentionRequestAttr req = selected.getRequestAttr())
    scratchFloats = req.getBatch() * req.getQHeads() * req.getQLen() *
                    req.getSplits() * (req.getValueWidth() + 2);
  scratch = {"scratch", scratchFloats, false};
}

SmallVector<SelectionSignature::Arg>
SelectionSignature::args(Launch launch) const {
  if (launch == Launch::Combine)
    return {scratch, out};
  SmallVector<Arg> all(inputs);
  all.push_back(launch == Launch::Partials ? scratch : out);
  return all;
}

SmallVector<Type> SelectionSignature::argumentTypes(MLIRContext *ctx,
                                                    Launch launch) const {
  SmallVector<Type> types;
  for (const Arg &arg : args(launch))
    types.push_back(MemRefType::get(
        {arg.elements}, arg.isInt ? Type(IntegerType::get(ctx, 32))
                                  : Type(Float32Type::get(ctx))));
  return types;
}

SelectionBuffers SelectionSignature::bind(ValueRange values,
                                          Launch launch) const {
  SelectionBuffers bufs;
  bool topk = inputs.front().name == "scores";
  for (auto [arg, value] : llvm::zip(args(launch), values)) {
    Value *slot = llvm::StringSwitch<Value *>(arg.name)
                      .Case("scores", &bufs.scores)
                      .Case("q_pos", &bufs.positions)
                      .Case("block_ids", &bufs.ids)
                      .Case("query", &bufs.query)
                      .Case("key", &bufs.key)
                      .Case("value", &bufs.value)
                      .Case("out", topk ? &bufs.ids : &bufs.out)
                      .Case("scratch", &bufs.scratch)
                      .Default(nullptr);
    *slot = value;
  }
  return bufs;
}

SmallVector<Value> SelectionSignature::orderedInputs(Operation *op) {
  if (auto topk = dyn_cast<BlockTopKOp>(op))
    return {topk.getScores(), topk.getQPos()};
  auto selected = cast<SelectedAttentionOp>(op);
  return {selected.getQuery(), selected.getKey(), selected.getValue(),
          selected.getBlockIds(), selected.getQPos()};
}

//===----------------------------------------------------------------------===//
// BlockTopKEmitter
//===----------------------------------------------------------------------===//

BlockTopKEmitter::BlockTopKEmitter(OpBuilder &builder, Location loc,
                                   BlockTopKRequestAttr req)
    : KernelBuilder(builder, loc), req(req) {}

Value BlockTopKEmitter::ranksBefore(Value key, Value id, Value otherKey,
                                    Value otherId) {
  using P = arith::CmpFPredicate;
  Value nan = arith::CmpFOp::create(b, loc, P::UNO, key, key);
  Value otherNan = arith::CmpFOp::create(b, loc, P::UNO, otherKey, otherKey);
  Value higher = arith::CmpFOp::create(b, loc, P::OGT, key, otherKey);
  Value equal = arith::CmpFOp::create(b, loc, P::OEQ, key, otherKey);
  Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, id,
                                      otherId);
  // Both numbers: higher, or equal and the lower id. Both NaN: the lower
  // id. One NaN: the number ranks first. (Plain and/or on i1: no i1 select.)
  auto all = [&](Value x, Value y) -> Value {
    return arith::AndIOp::create(b, loc, x, y);
  };
  auto any = [&](Value x, Value y) -> Value {
    return arith::OrIOp::create(b, loc, x, y);
  };
  Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto no = [&](Value x) -> Value { return arith::XOrIOp::create(b, loc, x, yes); };
  Value byValue = any(higher, all(equal, lower));
  Value numbers = all(no(nan), no(otherNan));
  Value nans = all(nan, otherNan);
  Value numberFirst = all(no(nan), otherNan);
  return any(any(all(numbers, byValue), all(nans, lower)), numberFirst);
}

/// The own block of position p: p / bs, or -1 for a negative p (any
/// negative block has no candidate and no visible key, as floor(p / bs)).
static Value ownBlockOf(OpBuilder &b, Location loc, Value p, int64_t bs) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, p, zero);
  Value own = arith::DivSIOp::create(
      b, loc, p, arith::ConstantIndexOp::create(b, loc, bs));
  return arith::SelectOp::create(
      b, loc, negative, arith::ConstantIndexOp::create(b, loc, -1), own);
}

Value BlockTopKEmitter::ownBlock(const SelectionBuffers &bufs, Value row) {
  return ownBlockOf(b, loc, indexOf(load(bufs.positions, row)),
                    req.getBlockSize());
}

void BlockTopKEmitter::emitRow(const SelectionBuffers &bufs, Value row,
                               Value ldsKeys, Value ldsIds,
                               LanePhase eachLane) {
  int64_t blocks = req.getBlocks(), k = req.getK(), lanes = req.getLanes();
  int64_t rounds = std::min(k, blocks);
  Value ninf = f32(-std::numeric_limits<double>::infinity());
  auto toWord = [&](Value id) -> Value {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), id);
  };
  auto storeId = [&](Value slot, Value id) {
    store(toWord(id), bufs.ids, add(mul(row, index(k)), slot));
  };

  auto roundsLoop = scf::ForOp::create(b, loc, index(0), index(rounds),
                                       index(1), ValueRange{ninf, index(-1)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(roundsLoop.getBody());
    Value r = roundsLoop.getInductionVar();
    Value prevKey = roundsLoop.getRegionIterArgs()[0];
    Value prevId = roundsLoop.getRegionIterArgs()[1];

    // Each lane: the best block of its stride that ranks after the previous
    // round's winner (prevId < 0: the first round).
    eachLane([&](Value lane) {
      Value own = ownBlock(bufs, row);
      auto scan = scf::ForOp::create(b, loc, lane, index(blocks), index(lanes),
                                     ValueRange{ninf, index(-1)});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(scan.getBody());
        Value j = scan.getInductionVar();
        Value bestKey = scan.getRegionIterArgs()[0];
        Value bestId = scan.getRegionIterArgs()[1];
        Value candidate =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j, own);
        Value score =
            load(bufs.scores, add(mul(row, index(blocks)), j));
        Value key = select(candidate, score, ninf);
        Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                            prevId, index(0));
        Value afterPrev = arith::OrIOp::create(
            b, loc, first, ranksBefore(prevKey, prevId, key, j));
        Value none = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           bestId, index(0));
        Value improves = arith::OrIOp::create(
            b, loc, none, ranksBefore(key, j, bestKey, bestId));
        Value take = arith::AndIOp::create(b, loc, afterPrev, improves);
        scf::YieldOp::create(
            b, loc,
            ValueRange{select(take, key, bestKey), select(take, j, bestId)});
      }
      // A lane past the last block runs its scan zero times. Take the
      // initial values explicitly then: the SPIR-V lowering of scf.for
      // leaves a zero-trip loop's results undefined (docs/toolchain-notes.md).
      Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                          lane, index(blocks));
      store(select(empty, ninf, scan.getResult(0)), ldsKeys, lane);
      store(toWord(select(empty, index(-1), scan.getResult(1))), ldsIds, lane);
    });

    // The lanes' bests meet in a tree: log2(lanes) phases, lane l < s
    // keeping the better of slots l and l + s; slot 0 ends with the winner.
    for (int64_t half = lanes / 2; half >= 1; half /= 2)
      eachLane([&](Value lane) {
        Value active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                             lane, index(half));
        auto ifActive = scf::IfOp::create(b, loc, active, /*withElse=*/false);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(&ifActive.getThenRegion().front());
        Value theirs = add(lane, index(half));
        Value key = load(ldsKeys, lane), id = indexOf(load(ldsIds, lane));
        Value otherKey = load(ldsKeys, theirs);
        Value otherId = indexOf(load(ldsIds, theirs));
        Value some = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                           otherId, index(0));
        Value none = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, id,
                                           index(0));
        Value take = arith::AndIOp::create(
            b, loc, some,
            arith::OrIOp::create(b, loc, none,
                                 ranksBefore(otherKey, otherId, key, id)));
        store(select(take, otherKey, key), ldsKeys, lane);
        store(toWord(select(take, otherId, id)), ldsIds, lane);
      });
    Value winKey = load(ldsKeys, index(0));
    Value winId = indexOf(load(ldsIds, index(0)));

    // Lane 0 publishes it (the phase boundary also keeps the next round's
    // scan from overwriting the bests before every lane has read them).
    eachLane([&](Value lane) {
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
      auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      Value listed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           winId, ownBlock(bufs, row));
      storeId(r, select(listed, winId, index(-1)));
    });
    scf::YieldOp::create(b, loc, ValueRange{winKey, winId});
  }

  // Slots past the NB blocks: -1.
  if (rounds < k)
    eachLane([&](Value lane) {
      auto pad = scf::ForOp::create(b, loc, add(index(rounds), lane), index(k),
                                    index(lanes));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(pad.getBody());
      storeId(pad.getInductionVar(), index(-1));
    });
}

//===----------------------------------------------------------------------===//
// SelectedAttentionEmitter
//===----------------------------------------------------------------------===//

AttentionRequestAttr mlir::poot::denseEquivalent(SelectedAttentionRequestAttr req) {
  return AttentionRequestAttr::get(
      req.getContext(), req.getBatch(), req.getQHeads(), req.getKvHeads(),
      req.getQLen(), req.getKeyLen(), req.getKeyWidth(), /*shared_width=*/0,
      req.getValueWidth(), req.getTransform(), MaskKind::None,
      KeyBound::Capacity, req.getSchedule(), req.getLanes(), req.getSplits(),
      req.getChunk(), req.getGridX(), req.getGridY(), /*q_block=*/0,
      /*key_block=*/0);
}

SelectedAttentionEmitter::SelectedAttentionEmitter(
    OpBuilder &builder, Location loc, SelectedAttentionRequestAttr req,
    double scale, std::optional<double> softcap)
    : KernelBuilder(builder, loc), req(req), scale(scale), softcap(softcap),
      dense(builder, loc, denseEquivalent(req), AttentionSignature(), scale,
            softcap) {}

AttentionBuffers
SelectedAttentionEmitter::denseBuffers(const SelectionBuffers &bufs) const {
  AttentionBuffers dense;
  dense.query = bufs.query;
  dense.key = bufs.key;
  dense.value = bufs.value;
  dense.out = bufs.out;
  dense.scratch = bufs.scratch;
  return dense;
}

std::pair<Value, Value>
SelectedAttentionEmitter::rowPosition(const SelectionBuffers &bufs, Value bi) {
  Value p = indexOf(load(bufs.positions, bi));
  return {p, ownBlockOf(b, loc, p, req.getBlockSize())};
}

std::pair<Value, Value>
SelectedAttentionEmitter::visitedKey(const SelectionBuffers &bufs, Value bi,
                                     Value p, Value own, Value u) {
  using P = arith::CmpIPredicate;
  int64_t bs = req.getBlockSize(), k = req.getK(), keyLen = req.getKeyLen();
  int64_t blocks = llvm::divideCeil(keyLen, bs);
  auto cmp = [&](P pred, Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  };
  auto both = [&](Value x, Value y) -> Value {
    return arith::AndIOp::create(b, loc, x, y);
  };
  Value slot = divui(u, bs), offset = remui(u, bs);
  Value isOwn = cmp(P::eq, slot, index(k));
  Value idsBase = mul(bi, index(k));
  // Slot K is the own block; a listed slot reads its id (clamped: the own
  // slot loads a word it then ignores).
  Value listed = indexOf(load(
      bufs.ids, add(idsBase, arith::MinUIOp::create(b, loc, slot, index(k - 1)))));
  Value block = select(isOwn, own, listed);
  Value inRange = both(cmp(P::sge, block, index(0)),
                       cmp(P::slt, block, index(blocks)));
  // A listed block that the own slot or an earlier slot visits: skip it.
  Value repeat = select(isOwn, arith::ConstantIntOp::create(b, loc, 0, 1),
                        cmp(P::eq, block, own));
  // K is a compile-time constant: the earlier slots are unrolled (K loads,
  // independent of each other, no loop-carried flag).
  for (int64_t earlier = 0; earlier + 1 < k; ++earlier) {
    Value other = indexOf(load(bufs.ids, add(idsBase, index(earlier))));
    Value before = cmp(P::ult, index(earlier), slot);
    Value same = both(cmp(P::eq, other, block), before);
    repeat = arith::OrIOp::create(b, loc, repeat, same);
  }
  repeat = select(isOwn, arith::ConstantIntOp::create(b, loc, 0, 1), repeat);
  Value fresh = arith::XOrIOp::create(b, loc, repeat,
                                      arith::ConstantIntOp::create(b, loc, 1, 1));
  Value t = add(mul(block, index(bs)), offset);
  Value causal = both(cmp(P::sle, t, p), cmp(P::slt, t, index(keyLen)));
  return {t, both(both(inRange, causal), fresh)};
}

void SelectedAttentionEmitter::emitLaneScan(const SelectionBuffers &bufs,
                                            Value row, Value split, Value lane,
                                            Value lds) {
  AttentionBuffers attention = denseBuffers(bufs);
  Value base = dense.emitLaneInit(lane, lds);
  auto [batch, head] = dense.batchAndHead(row);
  Value g = divui(head, req.getQHeads() / req.getKvHeads());
  // The (batch row, query row) the ids and the position belong to.
  Value bi = add(mul(batch, index(req.getQLen())), remui(row, req.getQLen()));
  auto [p, own] = rowPosition(bufs, bi);

  Value begin = mul(split, index(req.getChunk()));
  Value end = arith::MinSIOp::create(b, loc, add(begin, index(req.getChunk())),
                                     index(req.getVisited()));
  auto positions =
      scf::ForOp::create(b, loc, add(begin, lane), end, index(req.getLanes()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(positions.getBody());
  auto [t, visit] = visitedKey(bufs, bi, p, own, positions.getInductionVar());
  auto ifVisit = scf::IfOp::create(b, loc, visit, /*withElse=*/false);
  b.setInsertionPointToStart(&ifVisit.getThenRegion().front());
  dense.emitVisit(attention, row, batch, head, g, t, base, lds);
}

void SelectedAttentionEmitter::emitWarpDecode(const SelectionBuffers &bufs,
                                              Value wg, Value tid, Value lds) {
  // Decode: one query row per batch row, so the ids row of batch b is b.
  auto map = [&](Value batch, Value u) -> std::pair<Value, Value> {
    auto [p, own] = rowPosition(bufs, batch);
    return visitedKey(bufs, batch, p, own, u);
  };
  WarpKeyMap keyMap{req.getVisited(), map};
  poot::emitWarpDecode(b, loc, denseEquivalent(req), AttentionSignature(),
                       scale, softcap, denseBuffers(bufs), wg, tid, lds,
                       &keyMap);
}

void SelectedAttentionEmitter::emitLaneCombine(const SelectionBuffers &bufs,
                                               Value row, Value split,
                                               Value lane, Value lds) {
  dense.emitLaneCombine(denseBuffers(bufs), row, split, lane, lds);
}

void SelectedAttentionEmitter::emitSplitCombine(const SelectionBuffers &bufs,
                                                Value row, Value lane) {
  dense.emitSplitCombine(denseBuffers(bufs), row, lane);
}
