//===- WarpDecodeKernel.cpp - the warp-cooperative decode kernel ----------===//
//
// A thin driver over the pieces every schedule shares (AttentionEmitter:
// length clamp, chunk bounds, dense/paged addressing, score transform, mask,
// the state fold; KernelBuilder: the online step). What is its own: the
// lane -> channel map, the butterfly that completes each dot product, the
// key walk (`unroll` keys per warp step, all their loads issued before any
// of them is used) and the publication of the warps' states.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/AttentionKernels/WarpDecodeKernel.h"
#include "lib/Conversion/AttentionKernels/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

namespace {

/// How one lane holds a head width: it loads vectors of `vector` consecutive
/// elements, one per warp-wide pass, so a warp's pass is one contiguous
/// stretch of 32 * vector elements (16-byte loads when vector * bytes = 16).
/// Element e of the lane is channel (e / vector) * 32 * vector +
/// lane * vector + e % vector; q, k, v and o all use their width's map.
struct LaneSlice {
  int64_t width = 0, vector = 1;
  int64_t elements() const { return width / kWarpSize; }
  int64_t passes() const { return width / (kWarpSize * vector); }
  /// The channel of element e, less lane * vector.
  int64_t channel(int64_t e) const {
    return (e / vector) * kWarpSize * vector + e % vector;
  }
};

/// The slice of a head width read from `mem`: 16-byte vectors where the
/// width allows (AttentionRequestAttr::warpVectorWidth) and the plan asks
/// for them (unroll >= 1); scalars in the one-key form (unroll 0).
LaneSlice sliceOf(AttentionRequestAttr req, int64_t width, Value mem) {
  if (req.getUnroll() == 0)
    return {width, 1};
  Type element = cast<MemRefType>(mem.getType()).getElementType();
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  return {width, AttentionRequestAttr::warpVectorWidth(width, bytes)};
}

class WarpDecode : private KernelBuilder {
public:
  WarpDecode(OpBuilder &b, Location loc, AttentionRequestAttr req,
             const AttentionSignature &sig, double scale,
             std::optional<double> softcap)
      : KernelBuilder(b, loc), req(req), sig(sig),
        shared(b, loc, req, sig, scale, softcap) {}

  void emit(const AttentionBuffers &bufs, Value wg, Value tid, Value lds,
            const WarpKeyMap *keyMap);

private:
  /// One key's rows, the lane's elements of each (f32).
  struct KeyRows {
    SmallVector<Value> k, v;
  };

  /// The lane's elements of the row at `base` of `mem` (f32), `vectorize`d
  /// as the slice says (16-byte aligned: every row base is a whole number
  /// of vectors, and the buffers start 256-byte aligned).
  SmallVector<Value> readSlice(Value mem, Value base, const LaneSlice &slice,
                               bool vectorize) {
    SmallVector<Value> out;
    if (!vectorize || slice.vector == 1) {
      Value start = add(base, mul(lane, index(slice.vector)));
      for (int64_t e = 0; e < slice.elements(); ++e)
        out.push_back(load(mem, add(start, index(slice.channel(e)))));
      return out;
    }
    Type element = cast<MemRefType>(mem.getType()).getElementType();
    auto type = VectorType::get({slice.vector}, element);
    int64_t bytes = slice.vector * element.getIntOrFloatBitWidth() / 8;
    Value start = add(base, mul(lane, index(slice.vector)));
    for (int64_t p = 0; p < slice.passes(); ++p) {
      Value idx = add(start, index(p * kWarpSize * slice.vector));
      Value vec = widen(vector::LoadOp::create(
          b, loc, type, mem, ValueRange{idx}, /*nontemporal=*/false,
          llvm::MaybeAlign(bytes)));
      for (int64_t j = 0; j < slice.vector; ++j)
        out.push_back(vector::ExtractOp::create(b, loc, vec, j));
    }
    return out;
  }

  KeyRows loadKey(const AttentionBuffers &bufs, Value t) {
    KeyRows rows;
    Value row = shared.keyRow(bufs, batch, g, t);
    rows.k = readSlice(bufs.key, mul(row, index(req.getKeyWidth())), kSlice,
                       true);
    if (sSlice.width) {
      SmallVector<Value> s = readSlice(
          bufs.keyShared, shared.sharedKeyBase(batch, t), sSlice, true);
      rows.k.append(s.begin(), s.end());
    }
    rows.v = readSlice(bufs.value, mul(row, index(req.getValueWidth())),
                       vSlice, true);
    return rows;
  }

  /// Query head r of the group.
  Value headOf(int64_t r) {
    return add(mul(g, index(req.getNumRep())), index(r));
  }

  /// The state after key t for every head of the group. State per head:
  /// m, l, then the lane's o elements.
  SmallVector<Value> update(const AttentionBuffers &bufs, ValueRange state,
                            Value t, const KeyRows &rows) {
    SmallVector<Value> next;
    int64_t perHead = 2 + vSlice.elements();
    for (int64_t r = 0; r < req.getNumRep(); ++r) {
      Value partial = f32(0.0);
      for (auto [qe, ke] : llvm::zip_equal(q[r], rows.k))
        partial = add(partial, mul(qe, ke));
      // Butterfly: every lane ends with the whole dot product.
      for (int32_t offset = kWarpSize / 2; offset >= 1; offset /= 2)
        partial = add(partial,
                      gpu::ShuffleOp::create(b, loc, partial, offset, kWarpSize,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult());
      Value s = shared.addMask(bufs, shared.transformScore(partial), batch,
                               headOf(r), index(0), t);
      ValueRange head = state.slice(r * perHead, perHead);
      OnlineStep step = onlineStep(head[0], s);
      next.push_back(step.max);
      next.push_back(rescaleAdd(head[1], step, Value()));
      for (auto [o, v] : llvm::zip_equal(head.drop_front(2), rows.v))
        next.push_back(rescaleAdd(o, step, v));
    }
    return next;
  }

  /// for (t = from; t < to; t += stride) state = body(t, state)
  scf::ForOp walk(Value from, Value to, int64_t stride, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(b, loc, from, to, index(stride), init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()));
    return loop;
  }

  AttentionRequestAttr req;
  AttentionSignature sig;
  AttentionEmitter shared;
  // Set by emit(): this workgroup's ids and the lane's query elements.
  Value lane, warp, batch, g;
  LaneSlice kSlice, sSlice, vSlice;
  SmallVector<SmallVector<Value>> q;
};

void WarpDecode::emit(const AttentionBuffers &bufs, Value wg, Value tid,
                      Value lds, const WarpKeyMap *keyMap) {
  const int64_t hq = req.getQHeads(), hkv = req.getKvHeads(),
                nrep = req.getNumRep();
  const int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth(),
                dv = req.getValueWidth();
  const int64_t splits = req.getSplits(), stride = req.getStateFloats();
  constexpr int64_t warps = kWarpsPerGroup;

  lane = remui(tid, kWarpSize);
  warp = divui(tid, kWarpSize);
  Value groupRow = divui(wg, splits), split = remui(wg, splits);
  batch = divui(groupRow, hkv);
  g = remui(groupRow, hkv);
  kSlice = sliceOf(req, dk, bufs.key);
  sSlice = ds ? sliceOf(req, ds, bufs.keyShared) : LaneSlice{};
  vSlice = sliceOf(req, dv, bufs.value);

  // This split's chunk of the visible keys (positions, with a key map).
  Value end = shared.keyEnd(bufs, batch, keyMap ? keyMap->end : req.getKeyLen());
  auto [begin, chunkEnd] = shared.chunkBounds(split, end);

  // The group's query heads, the lane's elements (in k's map), once.
  q.assign(nrep, {});
  for (int64_t r = 0; r < nrep; ++r) {
    Value base = mul(add(mul(batch, index(hq)), headOf(r)), index(dk + ds));
    q[r] = readSlice(bufs.query, base, kSlice, false);
    if (ds) {
      SmallVector<Value> s =
          readSlice(bufs.query, add(base, index(dk)), sSlice, false);
      q[r].append(s.begin(), s.end());
    }
  }

  Value ninf = f32(-std::numeric_limits<double>::infinity());
  SmallVector<Value> init;
  for (int64_t r = 0; r < nrep; ++r) {
    init.push_back(ninf);
    init.push_back(f32(0.0));
    init.append(vSlice.elements(), f32(0.0));
  }
  const int64_t perHead = 2 + vSlice.elements();

  SmallVector<Value> state(init);
  auto oneKey = [&](Value t, ValueRange st) {
    return update(bufs, st, t, loadKey(bufs, t));
  };
  if (keyMap) {
    // A position that visits nothing keeps the state (and loads nothing).
    auto loop = walk(add(begin, warp), chunkEnd, warps, state,
                     [&](Value u, ValueRange st) -> SmallVector<Value> {
      auto [t, visit] = keyMap->map(batch, u);
      auto ifVisit = scf::IfOp::create(b, loc, st.getTypes(), visit,
                                       /*withElseRegion=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&ifVisit.getThenRegion().front());
      scf::YieldOp::create(b, loc, oneKey(t, st));
      b.setInsertionPointToStart(&ifVisit.getElseRegion().front());
      scf::YieldOp::create(b, loc, st);
      return SmallVector<Value>(ifVisit.getResults());
    });
    state.assign(loop.getResults().begin(), loop.getResults().end());
  } else {
    // Steps of `unroll` keys per warp over the chunk's whole steps: every
    // key of a step exists, so all their loads are issued first and the
    // math follows; then the remaining keys one per warp.
    int64_t unroll = req.getKeysPerStep();
    Value tailBegin = begin;
    if (unroll > 1) {
      int64_t span = unroll * warps;
      Value keys = arith::MaxSIOp::create(
          b, loc, arith::SubIOp::create(b, loc, chunkEnd, begin), index(0));
      tailBegin = add(begin, mul(divui(keys, span), index(span)));
      auto loop = walk(add(begin, warp), tailBegin, span, state,
                       [&](Value t0, ValueRange st) -> SmallVector<Value> {
        SmallVector<Value> t;
        SmallVector<KeyRows> rows;
        for (int64_t u = 0; u < unroll; ++u) {
          t.push_back(add(t0, index(u * warps)));
          rows.push_back(loadKey(bufs, t.back()));
        }
        SmallVector<Value> next(st);
        for (int64_t u = 0; u < unroll; ++u)
          next = update(bufs, next, t[u], rows[u]);
        return next;
      });
      state.assign(loop.getResults().begin(), loop.getResults().end());
    }
    auto tail = walk(add(tailBegin, warp), chunkEnd, warps, state, oneKey);
    state.assign(tail.getResults().begin(), tail.getResults().end());
  }

  // Publish each warp's states, then fold them over the warps.
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      index(0));
  Value vStart = mul(lane, index(vSlice.vector));
  for (int64_t r = 0; r < nrep; ++r) {
    Value base = mul(add(mul(warp, index(nrep)), index(r)), index(stride));
    for (int64_t e = 0; e < vSlice.elements(); ++e)
      store(state[r * perHead + 2 + e], lds,
            add(base, add(vStart, index(vSlice.channel(e)))));
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    store(state[r * perHead], lds, add(base, index(dv)));
    store(state[r * perHead + 1], lds, add(base, index(dv + 1)));
  }
  gpu::BarrierOp::create(b, loc);

  auto items = scf::ForOp::create(b, loc, tid, index(nrep * dv),
                                  index(kWarpSize * warps));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(items.getBody());
  Value item = items.getInductionVar();
  Value r = divui(item, dv), d = remui(item, dv);
  auto warpBase = [&](Value w) {
    return mul(add(mul(w, index(nrep)), r), index(stride));
  };
  AttentionEmitter::PartialStates states{lds, warps, warpBase};
  auto [maxM, den] = shared.foldMaxAndSum(states);
  Value num = shared.foldChannel(states, maxM, d);
  Value outRow = add(add(mul(batch, index(hq)), mul(g, index(nrep))), r);
  if (splits == 1) {
    store(arith::DivFOp::create(b, loc, num, den), bufs.out,
          add(mul(outRow, index(dv)), d));
    return;
  }
  Value base = mul(add(mul(outRow, index(splits)), split), index(stride));
  store(num, bufs.scratch, add(base, d));
  Value firstChannel =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, d, index(0));
  auto ifFirst = scf::IfOp::create(b, loc, firstChannel, /*withElse=*/false);
  b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
  store(maxM, bufs.scratch, add(base, index(dv)));
  store(den, bufs.scratch, add(base, index(dv + 1)));
}

} // namespace

void poot::emitWarpDecode(OpBuilder &b, Location loc, AttentionRequestAttr req,
                          const AttentionSignature &sig, double scale,
                          std::optional<double> softcap,
                          const AttentionBuffers &bufs, Value wg, Value tid,
                          Value lds, const WarpKeyMap *keyMap) {
  WarpDecode(b, loc, req, sig, scale, softcap)
      .emit(bufs, wg, tid, lds, keyMap);
}
