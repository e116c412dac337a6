//===- SelectionEmitter.cpp - the block-selected attention kernels --------===//
//
// Block top-k, per row (b, i) at p = q_pos[b, i], own = p / bs (-1 when
// p < 0): block j's key is scores[j] if j < own, else -inf, ranked as
// poot.top_k ranks (numbers before NaN, higher first, ties to the lower id:
// a strict total order). Round r's winner is the best block ranking after
// round r-1's, so no list of taken blocks is kept: each lane scans its
// stride for that, the lanes' bests meet in workgroup memory and every lane
// folds them into the same winner. Lane 0 writes it, or -1 when it is not a
// candidate (j >= own); slots past NB are -1.
//
// Selected attention visits (K + 1) * bs positions per row instead of Lk and
// hands each visible key to the AttentionEmitter's online-softmax update.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/SelectionEmitter.h"

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
  if (auto req = selected->getAttrOfType<SelectedAttentionRequestAttr>(
          PootDialect::kRequestAttrName))
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
  // Both numbers: higher, or equal and the lower id. Both NaN: the lower id.
  Value byValue = arith::OrIOp::create(
      b, loc, higher, arith::AndIOp::create(b, loc, equal, lower));
  Value sameKind = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, nan,
                                         otherNan);
  Value sameKindRank = select(nan, lower, byValue);
  // One NaN: the number ranks first.
  return select(sameKind, sameKindRank, otherNan);
}

Value BlockTopKEmitter::ownBlock(const SelectionBuffers &bufs, Value row) {
  Value p = indexOf(load(bufs.positions, row));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, p, index(0));
  Value own = arith::DivSIOp::create(b, loc, p, index(req.getBlockSize()));
  return select(negative, index(-1), own);
}

void BlockTopKEmitter::emitRow(const SelectionBuffers &bufs, Value row,
                               Value lds, LanePhase eachLane) {
  int64_t blocks = req.getBlocks(), k = req.getK(), lanes = req.getLanes();
  int64_t rounds = std::min(k, blocks);
  Value ninf = f32(-std::numeric_limits<double>::infinity());
  auto toWord = [&](Value id) {
    Value i32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), id);
    return arith::BitcastOp::create(b, loc, b.getF32Type(), i32).getResult();
  };
  auto fromWord = [&](Value word) {
    return indexOf(arith::BitcastOp::create(b, loc, b.getI32Type(), word));
  };
  auto storeId = [&](Value slot, Value id) {
    Value i32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), id);
    store(i32, bufs.ids, add(mul(row, index(k)), slot));
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
      Value slot = mul(lane, index(2));
      store(scan.getResult(0), lds, slot);
      store(toWord(scan.getResult(1)), lds, add(slot, index(1)));
    });

    // Every lane folds the lanes' bests into the same winner.
    auto fold = scf::ForOp::create(b, loc, index(0), index(lanes), index(1),
                                   ValueRange{ninf, index(-1)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(fold.getBody());
      Value slot = mul(fold.getInductionVar(), index(2));
      Value key = load(lds, slot);
      Value id = fromWord(load(lds, add(slot, index(1))));
      Value winKey = fold.getRegionIterArgs()[0];
      Value winId = fold.getRegionIterArgs()[1];
      Value some = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, id,
                                         index(0));
      Value none = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         winId, index(0));
      Value take = arith::AndIOp::create(
          b, loc, some,
          arith::OrIOp::create(b, loc, none,
                               ranksBefore(key, id, winKey, winId)));
      scf::YieldOp::create(
          b, loc, ValueRange{select(take, key, winKey), select(take, id, winId)});
    }
    Value winKey = fold.getResult(0), winId = fold.getResult(1);

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
      req.getChunk(), req.getGridX(), req.getGridY());
}

SelectedAttentionEmitter::SelectedAttentionEmitter(
    OpBuilder &builder, Location loc, SelectedAttentionRequestAttr req,
    double scale, std::optional<double> softcap)
    : KernelBuilder(builder, loc), req(req),
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

void SelectedAttentionEmitter::emitLaneScan(const SelectionBuffers &bufs,
                                            Value row, Value split, Value lane,
                                            Value lds) {
  using P = arith::CmpIPredicate;
  AttentionBuffers attention = denseBuffers(bufs);
  int64_t bs = req.getBlockSize(), k = req.getK(), keyLen = req.getKeyLen();
  int64_t blocks = llvm::divideCeil(keyLen, bs);
  Value base = dense.emitLaneInit(lane, lds);
  auto [batch, head] = dense.batchAndHead(row);
  Value g = divui(head, req.getQHeads() / req.getKvHeads());
  // The (batch row, query row) the ids and the position belong to.
  Value bi = add(mul(batch, index(req.getQLen())), remui(row, req.getQLen()));
  Value p = indexOf(load(bufs.positions, bi));
  Value own = select(arith::CmpIOp::create(b, loc, P::slt, p, index(0)),
                     index(-1), arith::DivSIOp::create(b, loc, p, index(bs)));

  Value begin = mul(split, index(req.getChunk()));
  Value end = arith::MinSIOp::create(b, loc, add(begin, index(req.getChunk())),
                                     index(req.getVisited()));
  auto positions =
      scf::ForOp::create(b, loc, add(begin, lane), end, index(req.getLanes()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(positions.getBody());
  Value u = positions.getInductionVar();
  Value slot = divui(u, bs), offset = remui(u, bs);
  Value isOwn = arith::CmpIOp::create(b, loc, P::eq, slot, index(k));
  Value idsBase = mul(bi, index(k));
  // Slot K is the own block; a listed slot reads its id (clamped: the own
  // slot loads a word it then ignores).
  Value listed = indexOf(load(
      bufs.ids, add(idsBase, arith::MinUIOp::create(b, loc, slot, index(k - 1)))));
  Value block = select(isOwn, own, listed);
  Value inRange = arith::AndIOp::create(
      b, loc, arith::CmpIOp::create(b, loc, P::sge, block, index(0)),
      arith::CmpIOp::create(b, loc, P::slt, block, index(blocks)));
  // A listed block the own slot or an earlier slot already visits: skip.
  Value isOwnBlock = arith::CmpIOp::create(b, loc, P::eq, block, own);
  Value repeatOwn =
      arith::AndIOp::create(b, loc, isOwnBlock, arith::XOrIOp::create(
                                                    b, loc, isOwn, arith::ConstantIntOp::create(b, loc, 1, 1)));
  Value earlierEnd = select(isOwn, index(0), slot);
  auto earlier = scf::ForOp::create(
      b, loc, index(0), earlierEnd, index(1),
      ValueRange{arith::ConstantIntOp::create(b, loc, 0, 1).getResult()});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(earlier.getBody());
    Value other = indexOf(load(bufs.ids, add(idsBase, earlier.getInductionVar())));
    Value same = arith::CmpIOp::create(b, loc, P::eq, other, block);
    scf::YieldOp::create(
        b, loc,
        ValueRange{arith::OrIOp::create(b, loc, earlier.getRegionIterArgs()[0],
                                        same)
                       .getResult()});
  }
  Value repeat = arith::OrIOp::create(b, loc, repeatOwn, earlier.getResult(0));
  Value t = add(mul(block, index(bs)), offset);
  Value causal = arith::AndIOp::create(
      b, loc, arith::CmpIOp::create(b, loc, P::sle, t, p),
      arith::CmpIOp::create(b, loc, P::slt, t, index(keyLen)));
  Value visit = arith::AndIOp::create(
      b, loc, arith::AndIOp::create(b, loc, inRange, causal),
      arith::XOrIOp::create(b, loc, repeat,
                            arith::ConstantIntOp::create(b, loc, 1, 1)));
  auto ifVisit = scf::IfOp::create(b, loc, visit, /*withElse=*/false);
  b.setInsertionPointToStart(&ifVisit.getThenRegion().front());
  dense.emitVisit(attention, row, batch, head, g, t, base, lds);
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
