//===- TiledPrefillKernel.cpp - the tiled GPU prefill kernel --------------===//
#include "lib/Conversion/AttentionKernels/TiledPrefillKernel.h"
#include "lib/Conversion/AttentionKernels/KernelBuilder.h"
#include "dialect/AttentionLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

int64_t poot::tiledPrefillLdsFloats(AttentionRequestAttr req) {
  return req.getLdsFloats();
}

int64_t poot::tiledPrefillWorkgroups(AttentionRequestAttr req) {
  return req.getBatch() * req.getQHeads() *
         llvm::divideCeil(req.getQLen(), req.getQBlock());
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
                lanes = req.getLanes();
  const int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth(),
                dq = dk + ds, dv = req.getValueWidth();
  const int64_t lq = req.getQLen(), lk = req.getKeyLen(),
                hq = req.getQHeads(), nRep = req.getNumRep();
  // Strides padded by one float so that threads of one warp reading
  // different key (score) rows of one column hit different banks.
  const int64_t qStride = dq + 1, kStride = dq + 1, pStride = tile + 1;
  const TiledPrefillLayout at = tiledPrefillLayout(rowsPer, tile, dq, dv);
  const int64_t scoresPer = rowsPer * tile / lanes,
                outputsPer = rowsPer * dv / lanes;
  Value ninf = f32(-std::numeric_limits<double>::infinity());

  // wg = (b * Hq + h) * blocks + qb; the block's rows are i0 .. i0 + R - 1.
  int64_t blocks = llvm::divideCeil(lq, rowsPer);
  Value qb = remui(wg, blocks), bh = divui(wg, blocks);
  Value head = remui(bh, hq), batch = divui(bh, hq);
  Value g = divui(head, nRep);
  Value i0 = mul(qb, index(rowsPer));
  Value rowsLeft = index(lq);
  // Flat (b, h, i) row of block row r (valid when i0 + r < Lq).
  auto flatRow = [&](Value r) {
    return add(mul(bh, index(lq)), add(i0, r));
  };

  // Stage the block's queries (zero for rows past Lq), init (m, l).
  strided(tid, rowsPer * dq, [&](Value e) {
    Value r = divui(e, dq), d = remui(e, dq);
    Value q = guarded(
        ult(add(i0, r), rowsLeft),
        [&] { return load(bufs.query, add(mul(flatRow(r), index(dq)), d)); },
        f32(0.0));
    store(q, lds, add(index(at.query), add(mul(r, index(qStride)), d)));
  });
  strided(tid, rowsPer, [&](Value r) {
    store(ninf, lds, add(index(at.max), r));
    store(f32(0.0), lds, add(index(at.sum), r));
  });

  // The block's visible keys end at min(len, last row's causal end).
  Value end = shared.keyEnd(bufs, batch);
  Value lastRow = minsi(add(i0, index(rowsPer - 1)), index(lq - 1));
  Value walkEnd = shared.causalEnd(end, lastRow);

  // The outputs this thread owns: e = tid + k * lanes over R x Dv.
  SmallVector<Value> outRow, outCol;
  for (int64_t k = 0; k < outputsPer; ++k) {
    Value e = add(tid, index(k * lanes));
    outRow.push_back(divui(e, dv));
    outCol.push_back(remui(e, dv));
  }
  SmallVector<Value> scoreRow, scoreCol;
  for (int64_t k = 0; k < scoresPer; ++k) {
    Value e = add(tid, index(k * lanes));
    scoreRow.push_back(divui(e, tile));
    scoreCol.push_back(remui(e, tile));
  }
  gpu::BarrierOp::create(b, loc);

  SmallVector<Value> zeros(outputsPer, f32(0.0));
  auto walk = scf::ForOp::create(b, loc, index(0), walkEnd, index(tile), zeros);
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
    stage(bufs.value, dv, dv, 0, at.value, false);
    gpu::BarrierOp::create(b, loc);

    // Scores: the dot products of this thread's (r, c), then the transform,
    // the mask and the hidden keys (-inf: past the length, past Lq, above
    // the causal diagonal).
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
    for (int64_t k = 0; k < scoresPer; ++k) {
      Value i = add(i0, scoreRow[k]);
      Value t = add(k0, scoreCol[k]);
      Value visible = both(ult(t, end), ult(i, rowsLeft));
      if (req.getMask() == MaskKind::Causal)
        visible = both(visible, ult(t, shared.causalEnd(index(lk), i)));
      Value s = guarded(
          visible,
          [&] {
            return shared.addMask(bufs, shared.transformScore(dots.getResult(k)),
                                  batch, head, i, t);
          },
          ninf);
      store(s, lds, add(index(at.scores),
                        add(mul(scoreRow[k], index(pStride)), scoreCol[k])));
    }
    gpu::BarrierOp::create(b, loc);

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

    // o = o * alpha + P V for this thread's outputs, in registers.
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
      for (int64_t k = 0; k < outputsPer; ++k) {
        Value p = load(lds, add(index(at.scores),
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

  // Publish the rows that exist: o / l (a row that saw nothing: 0 / 0).
  for (int64_t k = 0; k < outputsPer; ++k) {
    Value r = outRow[k];
    auto ifRow = scf::IfOp::create(b, loc, ult(add(i0, r), rowsLeft),
                                   /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifRow.getThenRegion().front());
    Value l = load(lds, add(index(at.sum), r));
    store(arith::DivFOp::create(b, loc, walk.getResult(k), l), bufs.out,
          add(mul(flatRow(r), index(dv)), outCol[k]));
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
