//===- TiledPrefillKernel.cpp - the tiled GPU prefill kernel --------------===//
#include "lib/Conversion/AttentionKernels/TiledPrefillKernel.h"
#include "lib/Conversion/AttentionKernels/KernelBuilder.h"
#include "lib/Conversion/AttentionKernels/Schedules/Schedule.h"
#include "dialect/AttentionLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/DenseMap.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

/// The wide-head decode runs this body with the KV group's heads packed
/// into the row block and K/V sharing one staging region (its ScheduleInfo
/// says so).
static bool isWideHead(AttentionRequestAttr req) {
  return scheduleInfo(req.getSchedule()).sharesKeyValueStaging;
}

/// Query heads whose rows one workgroup's block packs: the KV group's
/// n_rep for the wide-head decode (either form), one head for the prefill.
static int64_t packedHeads(AttentionRequestAttr req) {
  return scheduleInfo(req.getSchedule()).packsKvGroup ? req.getNumRep() : 1;
}

/// The wide-head S step's width slices (dialect/AttentionLayout.h wideHeadSlices), 1
/// for the prefill.
static int64_t sliceCount(AttentionRequestAttr req) {
  return isWideHead(req)
             ? wideHeadSlices(req.getLanes(), req.getQBlock(),
                              req.getKeyWidth() + req.getSharedWidth())
             : 1;
}

int64_t poot::tiledPrefillLdsFloats(AttentionRequestAttr req) {
  return req.getLdsFloats();
}

int64_t poot::tiledPrefillWorkgroups(AttentionRequestAttr req) {
  int64_t heads = packedHeads(req);
  return req.getBatch() * (req.getQHeads() / heads) * req.getSplits() *
         llvm::divideCeil(heads * req.getQLen(), req.getQBlock());
}

namespace {

/// The kernel body; one instance per emitted kernel.
class TiledPrefill : private KernelBuilder {
public:
  TiledPrefill(OpBuilder &b, Location loc, AttentionRequestAttr req,
               const AttentionSignature &sig, double scale,
               std::optional<double> softcap)
      : KernelBuilder(b, loc), req(req), sig(sig),
        shared(b, loc, req, sig, scale, softcap) {}

  void emit(const AttentionBuffers &bufs, Value wg, Value tid, Value lds);

private:
  /// for (i = tid; i < count; i += lanes) body(i)
  void strided(Value tid, int64_t count, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, index(count),
                                   index(req.getLanes()));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  /// `cond ? then() : other`, with then() emitted only on its branch (a
  /// guarded load never reads out of bounds).
  Value guarded(Value cond, function_ref<Value()> then, Value other) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{other.getType()}, cond,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      scf::YieldOp::create(b, loc, then());
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      scf::YieldOp::create(b, loc, other);
    }
    return ifOp.getResult(0);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value minsi(Value x, Value y) {
    return arith::MinSIOp::create(b, loc, x, y);
  }

  AttentionRequestAttr req;
  AttentionSignature sig;
  AttentionEmitter shared;
};

void TiledPrefill::emit(const AttentionBuffers &bufs, Value wg, Value tid,
                        Value lds) {
  const int64_t rowsPer = req.getQBlock(), tile = req.getKeyBlock(),
                lanes = req.getLanes(), splits = req.getSplits();
  const int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth(),
                dq = dk + ds, dv = req.getValueWidth();
  const int64_t lq = req.getQLen(), lk = req.getKeyLen(),
                hq = req.getQHeads(), nRep = req.getNumRep();
  const bool wide = isWideHead(req);
  // A unit is what a workgroup's rows come from: one (batch row, query
  // head) for the prefill, one (batch row, KV group) for the wide-head
  // decode, whose packed row p is head h0 + p / Lq, query row p % Lq. Its
  // rows are consecutive flat rows of q and out ([B, Hq, Lq, D]).
  const int64_t heads = packedHeads(req), unitRows = heads * lq;
  // Strides padded by one float so that threads of one warp reading
  // different key (score) rows of one column hit different banks.
  const int64_t qStride = dq + 1, kStride = dq + 1, pStride = tile + 1;
  const int64_t slices = sliceCount(req);
  const TiledPrefillLayout at = tiledPrefillLayout(
      rowsPer, tile, dq, dv, /*shareKeyValue=*/wide, slices);
  // Thread `tid` owns the scores e = tid + k * lanes < R x C and the outputs
  // e = tid + k * lanes < R x Dv; when `lanes` does not divide a count, the
  // last round's idle threads compute on a clamped index and store nothing.
  const int64_t scoreCount = rowsPer * tile, outputCount = rowsPer * dv;
  const int64_t scoresPer = llvm::divideCeil(scoreCount, lanes),
                outputsPer = llvm::divideCeil(outputCount, lanes);
  Value ninf = f32(-std::numeric_limits<double>::infinity());

  // wg = (unit * splits + split) * blocks + qb: the blocks of one split
  // (the same keys) are adjacent in launch order; the block's rows are
  // p0 .. p0 + R - 1 of the unit.
  int64_t blocks = llvm::divideCeil(unitRows, rowsPer);
  Value qb = remui(wg, blocks), rest = divui(wg, blocks);
  Value split = remui(rest, splits), unit = divui(rest, splits);
  Value firstHead = mul(unit, index(heads));
  Value head = remui(firstHead, hq), batch = divui(firstHead, hq);
  Value g = divui(head, nRep);
  Value p0 = mul(qb, index(rowsPer));
  Value rowsLeft = index(unitRows);
  // Flat (b, h, i) row of block row r (valid when p0 + r < unitRows), its
  // query head and its query row.
  auto flatRow = [&](Value r) {
    return add(mul(unit, index(unitRows)), add(p0, r));
  };
  auto rowHead = [&](Value r) {
    return wide ? add(head, divui(add(p0, r), lq)) : head;
  };
  auto rowIndex = [&](Value r) {
    return wide ? remui(add(p0, r), lq) : add(p0, r);
  };

  // Stage the block's queries (zero for rows past the unit), init (m, l).
  strided(tid, rowsPer * dq, [&](Value e) {
    Value r = divui(e, dq), d = remui(e, dq);
    Value q = guarded(
        ult(add(p0, r), rowsLeft),
        [&] { return load(bufs.query, add(mul(flatRow(r), index(dq)), d)); },
        f32(0.0));
    store(q, lds, add(index(at.query), add(mul(r, index(qStride)), d)));
  });
  strided(tid, rowsPer, [&](Value r) {
    store(ninf, lds, add(index(at.max), r));
    store(f32(0.0), lds, add(index(at.sum), r));
  });

  // The block's visible keys end at min(len, last row's causal end): the
  // largest query row of the block is the last row's, or Lq - 1 when the
  // packed block spans two heads.
  Value end = shared.keyEnd(bufs, batch);
  Value lastP = minsi(add(p0, index(rowsPer - 1)), index(unitRows - 1));
  Value lastRow = wide ? remui(lastP, lq) : lastP;
  if (wide && lq > 1)
    lastRow = select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           divui(p0, lq), divui(lastP, lq)),
                     lastRow, index(lq - 1));
  Value walkEnd = shared.causalEnd(end, lastRow);
  // Split-KV: this split's chunk of them (chunk is a multiple of the tile).
  Value walkBegin = index(0);
  if (splits > 1) {
    walkBegin = shared.splitBegin(split);
    walkEnd = minsi(walkEnd, add(walkBegin, index(req.getChunk())));
  }
  // A window: the walk starts at the tile of the block's smallest query
  // row's first key (row p0's, or row 0 when the packed block spans two
  // heads); tiles before it hide every key of every row.
  if (req.getWindow()) {
    Value firstRow = rowIndex(index(0));
    if (wide && lq > 1)
      firstRow = select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              divui(p0, lq), divui(lastP, lq)),
                        firstRow, index(0));
    walkBegin = shared.windowTileStart(walkBegin, firstRow, tile);
  }

  // When `lanes` divides the row width, the k-th element's row is the
  // constant k * lanes / width for every thread (`rowOf`), so the PV step
  // loads each of its rows' weights once per key, not once per output.
  auto owned = [&](int64_t count, int64_t width, SmallVector<Value> &row,
                   SmallVector<Value> &col, SmallVector<Value> &live,
                   SmallVector<int64_t> *rowOf) {
    bool uniform = width % lanes == 0;
    for (int64_t k = 0; k * lanes < count; ++k) {
      Value e = add(tid, index(k * lanes));
      bool partial = (k + 1) * lanes > count;
      live.push_back(partial ? ult(e, index(count)) : Value());
      if (partial)
        e = minsi(e, index(count - 1));
      if (uniform) {
        row.push_back(index(k * lanes / width));
        col.push_back(add(tid, index(k * lanes % width)));
      } else {
        row.push_back(divui(e, width));
        col.push_back(remui(e, width));
      }
      if (rowOf)
        rowOf->push_back(uniform ? k * lanes / width : -1 - k);
    }
  };
  // The outputs this thread owns over R x Dv, and its scores over R x C.
  SmallVector<Value> outRow, outCol, outLive;
  SmallVector<int64_t> outRowOf;
  owned(outputCount, dv, outRow, outCol, outLive, &outRowOf);
  SmallVector<Value> scoreRow, scoreCol, scoreLive;
  owned(scoreCount, tile, scoreRow, scoreCol, scoreLive, nullptr);
  gpu::BarrierOp::create(b, loc);

  // Sliced S step: thread tid serves packed row tid / slices with the query
  // words d = s, s + slices, ... (s = tid % slices), held in registers for
  // the whole walk; consecutive threads read consecutive key words.
  const int64_t words = dq / slices, partialStride = rowsPer * tile + 1;
  Value sliceRow, slice;
  SmallVector<Value> qWords;
  if (slices > 1) {
    sliceRow = divui(tid, slices);
    slice = remui(tid, slices);
    Value qBase = add(index(at.query), add(mul(sliceRow, index(qStride)), slice));
    for (int64_t j = 0; j < words; ++j)
      qWords.push_back(load(lds, add(qBase, index(j * slices))));
  }

  SmallVector<Value> zeros(outputsPer, f32(0.0));
  auto walk =
      scf::ForOp::create(b, loc, walkBegin, walkEnd, index(tile), zeros);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(walk.getBody());
    Value k0 = walk.getInductionVar();

    // Stage K (per-head part, then the shared part) and V; keys past the
    // walk are zero (never read from memory, add nothing).
    auto stage = [&](Value src, int64_t width, int64_t stride, int64_t offset,
                     int64_t base, bool sharedKey) {
      strided(tid, tile * width, [&](Value e) {
        Value j = divui(e, width), d = remui(e, width);
        Value t = add(k0, j);
        Value v = guarded(
            ult(t, walkEnd),
            [&] {
              Value row = sharedKey
                              ? mul(add(mul(batch, index(lk)), t), index(width))
                              : shared.keyRowBase(bufs, batch, g, t, width);
              return load(src, add(row, d));
            },
            f32(0.0));
        store(v, lds, add(index(base), add(mul(j, index(stride)),
                                           add(index(offset), d))));
      });
    };
    stage(bufs.key, dk, kStride, 0, at.key, false);
    if (ds)
      stage(bufs.keyShared, ds, kStride, dk, at.key, true);
    // With one K/V region, V is staged once the scores are computed.
    if (!wide)
      stage(bufs.value, dv, dv, 0, at.value, false);
    gpu::BarrierOp::create(b, loc);

    // Step 1, S = Q K^T: the dot products of this thread's (r, c), then the
    // transform, the mask and the hidden keys (-inf: past the length or the
    // split's chunk, past the unit's rows, above the causal diagonal).
    SmallVector<Value> dotOf;
    if (slices > 1) {
      // Each slice's partial dot for every key of the tile, stored at
      // [slice][row * C + key] (rows of R C + 1: the slices of a warp on
      // different banks), then summed over the slices per score.
      Value partialBase = add(index(at.partial), mul(slice, index(partialStride)));
      Value rowBase = add(partialBase, mul(sliceRow, index(tile)));
      Value keyBase = add(index(at.key), slice);
      for (int64_t c = 0; c < tile; ++c) {
        Value acc = f32(0.0);
        for (int64_t j = 0; j < words; ++j)
          acc = add(acc, mul(qWords[j],
                             load(lds, add(keyBase, index(c * kStride + j * slices)))));
        store(acc, lds, add(rowBase, index(c)));
      }
      gpu::BarrierOp::create(b, loc);
      for (int64_t k = 0; k < scoresPer; ++k) {
        Value e = add(mul(scoreRow[k], index(tile)), scoreCol[k]);
        Value sum = f32(0.0);
        for (int64_t s = 0; s < slices; ++s)
          sum = add(sum, load(lds, add(index(at.partial + s * partialStride), e)));
        dotOf.push_back(sum);
      }
    } else {
      SmallVector<Value> accInit(scoresPer, f32(0.0));
      auto dots = scf::ForOp::create(b, loc, index(0), index(dq), index(1),
                                     accInit);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(dots.getBody());
        Value d = dots.getInductionVar();
        SmallVector<Value> next;
        for (int64_t k = 0; k < scoresPer; ++k) {
          Value kv = load(lds, add(index(at.key),
                                   add(mul(scoreCol[k], index(kStride)), d)));
          Value qv = load(lds, add(index(at.query),
                                   add(mul(scoreRow[k], index(qStride)), d)));
          next.push_back(add(dots.getRegionIterArgs()[k], mul(qv, kv)));
        }
        scf::YieldOp::create(b, loc, next);
      }
      dotOf.assign(dots.getResults().begin(), dots.getResults().end());
    }
    for (int64_t k = 0; k < scoresPer; ++k) {
      Value r = scoreRow[k];
      Value i = rowIndex(r);
      Value t = add(k0, scoreCol[k]);
      Value visible =
          both(ult(t, splits > 1 ? walkEnd : end), ult(add(p0, r), rowsLeft));
      if (req.getMask() == MaskKind::Causal)
        visible = both(visible, ult(t, shared.causalEnd(index(lk), i)));
      if (Value inWindow = shared.inWindow(t, i))
        visible = both(visible, inWindow);
      Value s = guarded(
          visible,
          [&] {
            return shared.addMask(bufs, shared.transformScore(dotOf[k]),
                                  batch, rowHead(r), i, t);
          },
          ninf);
      Value slot = add(index(at.scores), add(mul(r, index(pStride)), scoreCol[k]));
      if (Value live = scoreLive[k]) {
        auto ifLive = scf::IfOp::create(b, loc, live, /*withElse=*/false);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(&ifLive.getThenRegion().front());
        store(s, lds, slot);
      } else {
        store(s, lds, slot);
      }
    }
    gpu::BarrierOp::create(b, loc);
    if (wide)
      stage(bufs.value, dv, dv, 0, at.value, false);

    // Per row: the online softmax update of the tile.
    strided(tid, rowsPer, [&](Value r) {
      Value pBase = add(index(at.scores), mul(r, index(pStride)));
      auto maxLoop = scf::ForOp::create(b, loc, index(0), index(tile), index(1),
                                        ValueRange{ninf});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(maxLoop.getBody());
        Value s = load(lds, add(pBase, maxLoop.getInductionVar()));
        scf::YieldOp::create(
            b, loc,
            Value(arith::MaximumFOp::create(
                b, loc, maxLoop.getRegionIterArgs()[0], s)));
      }
      // The online step by the tile's max: its rescale is alpha; each
      // key's weight is exp(s - m') below.
      OnlineStep step =
          onlineStep(load(lds, add(index(at.max), r)), maxLoop.getResult(0));
      Value mNew = step.max;
      auto sumLoop = scf::ForOp::create(b, loc, index(0), index(tile), index(1),
                                        ValueRange{f32(0.0)});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(sumLoop.getBody());
        Value idx = add(pBase, sumLoop.getInductionVar());
        // weight(): a hidden key (-inf) adds exactly 0, also in a row that
        // has seen nothing yet (m' = -inf).
        Value p = weight(load(lds, idx), mNew);
        store(p, lds, idx);
        scf::YieldOp::create(b, loc,
                             add(sumLoop.getRegionIterArgs()[0], p));
      }
      Value alpha = step.rescale;
      Value lIdx = add(index(at.sum), r);
      store(add(mul(load(lds, lIdx), alpha), sumLoop.getResult(0)), lds, lIdx);
      store(mNew, lds, add(index(at.max), r));
      store(alpha, lds, add(index(at.alpha), r));
    });
    gpu::BarrierOp::create(b, loc);

    // Step 2, O = O alpha + P V for this thread's outputs, in registers.
    SmallVector<Value> scaled;
    for (int64_t k = 0; k < outputsPer; ++k)
      scaled.push_back(mul(walk.getRegionIterArgs()[k],
                           load(lds, add(index(at.alpha), outRow[k]))));
    auto pv = scf::ForOp::create(b, loc, index(0), index(tile), index(1),
                                 scaled);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(pv.getBody());
      Value c = pv.getInductionVar();
      SmallVector<Value> next;
      llvm::SmallDenseMap<int64_t, Value> weights;
      for (int64_t k = 0; k < outputsPer; ++k) {
        Value &p = weights[outRowOf[k]];
        if (!p)
          p = load(lds, add(index(at.scores),
                            add(mul(outRow[k], index(pStride)), c)));
        Value v = load(lds, add(index(at.value),
                                add(mul(c, index(dv)), outCol[k])));
        next.push_back(add(pv.getRegionIterArgs()[k], mul(p, v)));
      }
      scf::YieldOp::create(b, loc, next);
    }
    // The next tile overwrites K, V and the scores.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, pv.getResults());
  }

  // Publish the rows that exist: o / l (a row that saw nothing: 0 / 0), or
  // with splits the unnormalised partial (o, m, l) at (row, split) of the
  // scratch, as emitSplitCombine reads it (a split that saw nothing
  // publishes (0, -inf, 0)).
  for (int64_t k = 0; k < outputsPer; ++k) {
    Value r = outRow[k];
    Value exists = ult(add(p0, r), rowsLeft);
    if (Value live = outLive[k])
      exists = both(exists, live);
    auto ifRow = scf::IfOp::create(b, loc, exists, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifRow.getThenRegion().front());
    Value l = load(lds, add(index(at.sum), r));
    if (splits == 1) {
      store(arith::DivFOp::create(b, loc, walk.getResult(k), l), bufs.out,
            add(mul(flatRow(r), index(dv)), outCol[k]));
      continue;
    }
    Value base =
        mul(add(mul(flatRow(r), index(splits)), split), index(dv + 2));
    store(walk.getResult(k), bufs.scratch, add(base, outCol[k]));
    auto ifFirst = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, outCol[k],
                              index(0)),
        /*withElse=*/false);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    store(load(lds, add(index(at.max), r)), bufs.scratch,
          add(base, index(dv)));
    store(l, bufs.scratch, add(base, index(dv + 1)));
  }
}

} // namespace

void poot::emitTiledPrefill(OpBuilder &b, Location loc,
                            AttentionRequestAttr req,
                            const AttentionSignature &sig, double scale,
                            std::optional<double> softcap,
                            const AttentionBuffers &bufs, Value wg, Value tid,
                            Value lds) {
  TiledPrefill(b, loc, req, sig, scale, softcap).emit(bufs, wg, tid, lds);
}
