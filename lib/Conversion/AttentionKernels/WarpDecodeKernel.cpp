//===- WarpDecodeKernel.cpp - the warp-cooperative decode kernel ----------===//
#include "lib/Conversion/AttentionKernels/WarpDecodeKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

namespace {

/// Small builders over one insertion point (index and f32 arithmetic).
struct Emit {
  OpBuilder &b;
  Location loc;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) {
    if (isa<IndexType>(x.getType()))
      return arith::AddIOp::create(b, loc, x, y);
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) {
    if (isa<IndexType>(x.getType()))
      return arith::MulIOp::create(b, loc, x, y);
    return arith::MulFOp::create(b, loc, x, y);
  }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, loc, x, idx(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, loc, x, idx(y)); }
  Value load(Value mem, Value i) {
    return memref::LoadOp::create(b, loc, mem, ValueRange{i});
  }
  void store(Value v, Value mem, Value i) {
    memref::StoreOp::create(b, loc, v, mem, ValueRange{i});
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value isNegInf(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                 f32(-std::numeric_limits<double>::infinity()));
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// exp(m - max), or 0 for a state that saw nothing.
  Value weight(Value m, Value max) {
    return select(isNegInf(m), f32(0.0),
                  exp(arith::SubFOp::create(b, loc, m, max)));
  }
  Value i32ToIndex(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
};

} // namespace

void poot::emitWarpDecode(OpBuilder &b, Location loc, AttentionRequestAttr req,
                          const AttentionSignature &sig, double scale,
                          std::optional<double> softcap,
                          const AttentionBuffers &bufs, Value wg, Value tid,
                          Value lds) {
  Emit e{b, loc};
  const int64_t hq = req.getQHeads(), hkv = req.getKvHeads(), nrep = hq / hkv;
  const int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth(),
                dv = req.getValueWidth(), dq = dk + ds;
  const int64_t jk = dk / kWarpSize, js = ds / kWarpSize, jv = dv / kWarpSize;
  const int64_t splits = req.getSplits(), lk = req.getKeyLen();
  const int64_t stride = dv + 2;

  Value lane = e.rem(tid, kWarpSize), warp = e.div(tid, kWarpSize);
  Value groupRow = e.div(wg, splits), split = e.rem(wg, splits);
  Value batch = e.div(groupRow, hkv), g = e.rem(groupRow, hkv);

  // This split's chunk of the visible keys.
  Value end = e.idx(lk);
  if (sig.length) {
    Value len = e.i32ToIndex(e.load(bufs.length, batch));
    end = arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, len, e.idx(0)), end);
  }
  Value begin = e.mul(split, e.idx(req.getChunk()));
  Value chunkEnd =
      arith::MinSIOp::create(b, loc, e.add(begin, e.idx(req.getChunk())), end);

  // The group's query heads, lane's slice, in registers.
  SmallVector<SmallVector<Value>> q(nrep);
  for (int64_t r = 0; r < nrep; ++r) {
    Value head = e.add(e.mul(g, e.idx(nrep)), e.idx(r));
    Value base = e.mul(e.add(e.mul(batch, e.idx(hq)), head), e.idx(dq));
    for (int64_t j = 0; j < jk + js; ++j)
      q[r].push_back(e.load(bufs.query, e.add(base, e.add(lane, e.idx(j * kWarpSize)))));
  }

  // State per head: m, l, then o[jv] — loop-carried registers.
  Value ninf = e.f32(-std::numeric_limits<double>::infinity());
  SmallVector<Value> init;
  for (int64_t r = 0; r < nrep; ++r) {
    init.push_back(ninf);
    init.push_back(e.f32(0.0));
    for (int64_t j = 0; j < jv; ++j)
      init.push_back(e.f32(0.0));
  }
  const int64_t perHead = 2 + jv;
  auto keys = scf::ForOp::create(b, loc, e.add(begin, warp), chunkEnd,
                                 e.idx(kWarpsPerGroup), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(keys.getBody());
    Value t = keys.getInductionVar();
    ValueRange state = keys.getRegionIterArgs();
    // Row bases of key t: dense [B, Hkv, Lk, D] or paged pools.
    Value row;
    if (sig.read) {
      Value slot = e.i32ToIndex(
          e.load(bufs.read, e.add(e.mul(batch, e.idx(lk)), t)));
      row = e.add(e.mul(slot, e.idx(hkv)), g);
    } else {
      row = e.add(e.mul(e.add(e.mul(batch, e.idx(hkv)), g), e.idx(lk)), t);
    }
    Value kBase = e.add(e.mul(row, e.idx(dk)), lane);
    Value vBase = e.add(e.mul(row, e.idx(dv)), lane);
    SmallVector<Value> kv, vv;
    for (int64_t j = 0; j < jk; ++j)
      kv.push_back(e.load(bufs.key, e.add(kBase, e.idx(j * kWarpSize))));
    if (js) {
      Value sBase = e.add(
          e.mul(e.add(e.mul(batch, e.idx(lk)), t), e.idx(ds)), lane);
      for (int64_t j = 0; j < js; ++j)
        kv.push_back(e.load(bufs.keyShared, e.add(sBase, e.idx(j * kWarpSize))));
    }
    for (int64_t j = 0; j < jv; ++j)
      vv.push_back(e.load(bufs.value, e.add(vBase, e.idx(j * kWarpSize))));

    SmallVector<Value> next;
    for (int64_t r = 0; r < nrep; ++r) {
      Value partial = e.f32(0.0);
      for (int64_t j = 0; j < jk + js; ++j)
        partial = e.add(partial, e.mul(q[r][j], kv[j]));
      // Butterfly: every lane ends with the whole dot product.
      for (int32_t offset = kWarpSize / 2; offset >= 1; offset /= 2)
        partial = e.add(partial,
                        gpu::ShuffleOp::create(b, loc, partial, offset,
                                               kWarpSize, gpu::ShuffleMode::XOR)
                            .getShuffleResult());
      Value s = e.mul(partial, e.f32(scale));
      if (softcap) {
        Value cap = e.f32(*softcap);
        s = e.mul(cap, math::TanhOp::create(
                           b, loc, arith::DivFOp::create(b, loc, s, cap)));
      }
      if (sig.mask) {
        Value mb = sig.maskBatch == 1 ? e.idx(0) : batch;
        Value mh = sig.maskHeads == 1
                       ? e.idx(0)
                       : e.add(e.mul(g, e.idx(nrep)), e.idx(r));
        Value flat = e.add(
            e.mul(e.add(e.mul(mb, e.idx(sig.maskHeads)), mh), e.idx(lk)), t);
        s = e.add(s, e.load(bufs.mask, flat));
      }
      Value m = state[r * perHead], l = state[r * perHead + 1];
      Value mNew = arith::MaximumFOp::create(b, loc, m, s);
      // A -inf key adds exactly zero; nothing seen yet means no rescale.
      Value rescale =
          e.select(e.isNegInf(mNew), e.f32(1.0),
                   e.exp(arith::SubFOp::create(b, loc, m, mNew)));
      Value w = e.select(e.isNegInf(s), e.f32(0.0),
                         e.exp(arith::SubFOp::create(b, loc, s, mNew)));
      next.push_back(mNew);
      next.push_back(e.add(e.mul(l, rescale), w));
      for (int64_t j = 0; j < jv; ++j)
        next.push_back(e.add(e.mul(state[r * perHead + 2 + j], rescale),
                             e.mul(w, vv[j])));
    }
    scf::YieldOp::create(b, loc, next);
  }

  // Publish each warp's states, then fold them over the warps.
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      e.idx(0));
  for (int64_t r = 0; r < nrep; ++r) {
    Value base = e.mul(e.add(e.mul(warp, e.idx(nrep)), e.idx(r)), e.idx(stride));
    for (int64_t j = 0; j < jv; ++j)
      e.store(keys.getResult(r * perHead + 2 + j), lds,
              e.add(base, e.add(lane, e.idx(j * kWarpSize))));
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    e.store(keys.getResult(r * perHead), lds, e.add(base, e.idx(dv)));
    e.store(keys.getResult(r * perHead + 1), lds, e.add(base, e.idx(dv + 1)));
  }
  gpu::BarrierOp::create(b, loc);

  auto items = scf::ForOp::create(b, loc, tid, e.idx(nrep * dv),
                                  e.idx(kWarpSize * kWarpsPerGroup));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(items.getBody());
  Value item = items.getInductionVar();
  Value r = e.div(item, dv), d = e.rem(item, dv);
  auto overWarps = [&](Value init,
                       function_ref<Value(Value base, Value acc)> step) {
    auto loop = scf::ForOp::create(b, loc, e.idx(0), e.idx(kWarpsPerGroup),
                                   e.idx(1), ValueRange{init});
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    Value base = e.mul(
        e.add(e.mul(loop.getInductionVar(), e.idx(nrep)), r), e.idx(stride));
    scf::YieldOp::create(b, loc, step(base, loop.getRegionIterArgs()[0]));
    return loop.getResult(0);
  };
  Value maxM = overWarps(ninf, [&](Value base, Value acc) -> Value {
    return arith::MaximumFOp::create(b, loc, acc,
                                     e.load(lds, e.add(base, e.idx(dv))));
  });
  Value den = overWarps(e.f32(0.0), [&](Value base, Value acc) -> Value {
    return e.add(acc, e.mul(e.load(lds, e.add(base, e.idx(dv + 1))),
                            e.weight(e.load(lds, e.add(base, e.idx(dv))), maxM)));
  });
  Value num = overWarps(e.f32(0.0), [&](Value base, Value acc) -> Value {
    return e.add(acc, e.mul(e.load(lds, e.add(base, d)),
                            e.weight(e.load(lds, e.add(base, e.idx(dv))), maxM)));
  });
  Value outRow = e.add(e.add(e.mul(batch, e.idx(hq)), e.mul(g, e.idx(nrep))), r);
  if (splits == 1) {
    e.store(arith::DivFOp::create(b, loc, num, den), bufs.out,
            e.add(e.mul(outRow, e.idx(dv)), d));
    return;
  }
  Value base = e.mul(e.add(e.mul(outRow, e.idx(splits)), split), e.idx(stride));
  e.store(num, bufs.scratch, e.add(base, d));
  Value firstChannel =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, d, e.idx(0));
  auto ifFirst = scf::IfOp::create(b, loc, firstChannel, /*withElse=*/false);
  b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
  e.store(maxM, bufs.scratch, e.add(base, e.idx(dv)));
  e.store(den, bufs.scratch, e.add(base, e.idx(dv + 1)));
}
