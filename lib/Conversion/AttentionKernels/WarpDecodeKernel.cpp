//===- WarpDecodeKernel.cpp - the warp-cooperative decode kernel ----------===//
#include "lib/Conversion/AttentionKernels/WarpDecodeKernel.h"
#include "lib/Conversion/AttentionKernels/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;


void poot::emitWarpDecode(OpBuilder &b, Location loc, AttentionRequestAttr req,
                          const AttentionSignature &sig, double scale,
                          std::optional<double> softcap,
                          const AttentionBuffers &bufs, Value wg, Value tid,
                          Value lds, const WarpKeyMap *keyMap) {
  KernelBuilder e(b, loc);
  const int64_t hq = req.getQHeads(), hkv = req.getKvHeads(), nrep = hq / hkv;
  const int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth(),
                dv = req.getValueWidth(), dq = dk + ds;
  const int64_t jk = dk / kWarpSize, js = ds / kWarpSize, jv = dv / kWarpSize;
  const int64_t splits = req.getSplits(), lk = req.getKeyLen();
  const int64_t stride = dv + 2;

  Value lane = e.remui(tid, kWarpSize), warp = e.divui(tid, kWarpSize);
  Value groupRow = e.divui(wg, splits), split = e.remui(wg, splits);
  Value batch = e.divui(groupRow, hkv), g = e.remui(groupRow, hkv);

  // This split's chunk of the visible keys.
  Value end = e.index(keyMap ? keyMap->end : lk);
  if (sig.length) {
    Value len = e.indexOf(e.load(bufs.length, batch));
    end = arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, len, e.index(0)), end);
  }
  Value begin = e.mul(split, e.index(req.getChunk()));
  Value chunkEnd =
      arith::MinSIOp::create(b, loc, e.add(begin, e.index(req.getChunk())), end);

  // The group's query heads, lane's slice, in registers.
  SmallVector<SmallVector<Value>> q(nrep);
  for (int64_t r = 0; r < nrep; ++r) {
    Value head = e.add(e.mul(g, e.index(nrep)), e.index(r));
    Value base = e.mul(e.add(e.mul(batch, e.index(hq)), head), e.index(dq));
    for (int64_t j = 0; j < jk + js; ++j)
      q[r].push_back(e.load(bufs.query, e.add(base, e.add(lane, e.index(j * kWarpSize)))));
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
                                 e.index(kWarpsPerGroup), init);
  // One key's step for every head of the group: the next state.
  auto step = [&](Value t, ValueRange state) -> SmallVector<Value> {
    // Row bases of key t: dense [B, Hkv, Lk, D] or paged pools.
    Value row;
    if (sig.read) {
      Value slot = e.indexOf(
          e.load(bufs.read, e.add(e.mul(batch, e.index(lk)), t)));
      row = e.add(e.mul(slot, e.index(hkv)), g);
    } else {
      row = e.add(e.mul(e.add(e.mul(batch, e.index(hkv)), g), e.index(lk)), t);
    }
    Value kBase = e.add(e.mul(row, e.index(dk)), lane);
    Value vBase = e.add(e.mul(row, e.index(dv)), lane);
    SmallVector<Value> kv, vv;
    for (int64_t j = 0; j < jk; ++j)
      kv.push_back(e.load(bufs.key, e.add(kBase, e.index(j * kWarpSize))));
    if (js) {
      Value sBase = e.add(
          e.mul(e.add(e.mul(batch, e.index(lk)), t), e.index(ds)), lane);
      for (int64_t j = 0; j < js; ++j)
        kv.push_back(e.load(bufs.keyShared, e.add(sBase, e.index(j * kWarpSize))));
    }
    for (int64_t j = 0; j < jv; ++j)
      vv.push_back(e.load(bufs.value, e.add(vBase, e.index(j * kWarpSize))));

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
        Value mb = sig.maskBatch == 1 ? e.index(0) : batch;
        Value mh = sig.maskHeads == 1
                       ? e.index(0)
                       : e.add(e.mul(g, e.index(nrep)), e.index(r));
        Value flat = e.add(
            e.mul(e.add(e.mul(mb, e.index(sig.maskHeads)), mh), e.index(lk)), t);
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
    return next;
  };
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(keys.getBody());
    ValueRange state = keys.getRegionIterArgs();
    if (!keyMap) {
      scf::YieldOp::create(b, loc, step(keys.getInductionVar(), state));
    } else {
      // A position that visits nothing keeps the state (and loads nothing).
      auto [t, visit] = keyMap->map(batch, keys.getInductionVar());
      auto ifVisit = scf::IfOp::create(b, loc, ValueRange(state).getTypes(),
                                       visit, /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(&ifVisit.getThenRegion().front());
        scf::YieldOp::create(b, loc, step(t, state));
        b.setInsertionPointToStart(&ifVisit.getElseRegion().front());
        scf::YieldOp::create(b, loc, state);
      }
      scf::YieldOp::create(b, loc, ifVisit.getResults());
    }
  }

  // Publish each warp's states, then fold them over the warps.
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      e.index(0));
  for (int64_t r = 0; r < nrep; ++r) {
    Value base = e.mul(e.add(e.mul(warp, e.index(nrep)), e.index(r)), e.index(stride));
    for (int64_t j = 0; j < jv; ++j)
      e.store(keys.getResult(r * perHead + 2 + j), lds,
              e.add(base, e.add(lane, e.index(j * kWarpSize))));
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    e.store(keys.getResult(r * perHead), lds, e.add(base, e.index(dv)));
    e.store(keys.getResult(r * perHead + 1), lds, e.add(base, e.index(dv + 1)));
  }
  gpu::BarrierOp::create(b, loc);

  auto items = scf::ForOp::create(b, loc, tid, e.index(nrep * dv),
                                  e.index(kWarpSize * kWarpsPerGroup));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(items.getBody());
  Value item = items.getInductionVar();
  Value r = e.divui(item, dv), d = e.remui(item, dv);
  auto overWarps = [&](Value init,
                       function_ref<Value(Value base, Value acc)> step) {
    auto loop = scf::ForOp::create(b, loc, e.index(0), e.index(kWarpsPerGroup),
                                   e.index(1), ValueRange{init});
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    Value base = e.mul(
        e.add(e.mul(loop.getInductionVar(), e.index(nrep)), r), e.index(stride));
    scf::YieldOp::create(b, loc, step(base, loop.getRegionIterArgs()[0]));
    return loop.getResult(0);
  };
  Value maxM = overWarps(ninf, [&](Value base, Value acc) -> Value {
    return arith::MaximumFOp::create(b, loc, acc,
                                     e.load(lds, e.add(base, e.index(dv))));
  });
  Value den = overWarps(e.f32(0.0), [&](Value base, Value acc) -> Value {
    return e.add(acc, e.mul(e.load(lds, e.add(base, e.index(dv + 1))),
                            e.weight(e.load(lds, e.add(base, e.index(dv))), maxM)));
  });
  Value num = overWarps(e.f32(0.0), [&](Value base, Value acc) -> Value {
    return e.add(acc, e.mul(e.load(lds, e.add(base, d)),
                            e.weight(e.load(lds, e.add(base, e.index(dv))), maxM)));
  });
  Value outRow = e.add(e.add(e.mul(batch, e.index(hq)), e.mul(g, e.index(nrep))), r);
  if (splits == 1) {
    e.store(arith::DivFOp::create(b, loc, num, den), bufs.out,
            e.add(e.mul(outRow, e.index(dv)), d));
    return;
  }
  Value base = e.mul(e.add(e.mul(outRow, e.index(splits)), split), e.index(stride));
  e.store(num, bufs.scratch, e.add(base, d));
  Value firstChannel =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, d, e.index(0));
  auto ifFirst = scf::IfOp::create(b, loc, firstChannel, /*withElse=*/false);
  b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
  e.store(maxM, bufs.scratch, e.add(base, e.index(dv)));
  e.store(den, bufs.scratch, e.add(base, e.index(dv + 1)));
}
