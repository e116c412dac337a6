//===- WarpDecodeKernel.cpp - the warp-cooperative decode kernel ----------===//
//
// A thin driver over the pieces every schedule shares (AttentionEmitter:
// length clamp, chunk bounds, dense/paged addressing, score transform, mask,
// the state fold; KernelBuilder: the online step). What is its own: the
// lane -> channel map (a key row read by the whole warp, or by each half of
// it: two keys a load), the butterfly that completes each dot product over
// a row's lanes, the key walk (`unroll` loads per warp step, all issued
// before any key is used) and the publication of the warps' states.
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

/// How one lane holds a head width: the `lanes` lanes of a row (the whole
/// warp, or a half of it) load vectors of `vector` consecutive elements,
/// one per pass, so a pass is one contiguous stretch of lanes * vector
/// elements (16-byte loads when vector * bytes = 16). Element e of the
/// lane with row lane j (lane % lanes) is channel
/// (e / vector) * lanes * vector + j * vector + e % vector; q, k, v and o
/// all use their width's map.
struct LaneSlice {
  int64_t width = 0, vector = 1, lanes = kWarpSize;
  int64_t elements() const { return width / lanes; }
  int64_t passes() const { return width / (lanes * vector); }
  /// The channel of element e, less the row lane * vector.
  int64_t channel(int64_t e) const {
    return (e / vector) * lanes * vector + e % vector;
  }
};

/// The slice of a head width read from `mem`: the request's lanes a row and
/// vector width (16-byte vectors where the width allows and the plan asks
/// for them; scalars in the one-key form, unroll 0).
LaneSlice sliceOf(AttentionRequestAttr req, int64_t width, Value mem) {
  Type element = cast<MemRefType>(mem.getType()).getElementType();
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  return {width, req.getVectorWidth(width, bytes), req.getLanesPerRow()};
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
    Value start = add(base, mul(rowLane, index(slice.vector)));
    if (!vectorize || slice.vector == 1) {
      for (int64_t e = 0; e < slice.elements(); ++e)
        out.push_back(load(mem, add(start, index(slice.channel(e)))));
      return out;
    }
    Type element = cast<MemRefType>(mem.getType()).getElementType();
    auto type = VectorType::get({slice.vector}, element);
    int64_t bytes = slice.vector * element.getIntOrFloatBitWidth() / 8;
    for (int64_t p = 0; p < slice.passes(); ++p) {
      Value idx = add(start, index(p * slice.lanes * slice.vector));
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

  /// One key a row's lanes fold in: its position, its rows, and whether it
  /// counts (null: it does; false: a half-warp row past the chunk's end,
  /// whose rows were read at an existing key, gets the score -inf: weight 0).
  struct Visit {
    Value t;
    KeyRows rows;
    Value valid;
  };

  /// The state after the keys `visits` (in order) for every head of the
  /// group. State per head: m, l, then the lane's o elements. Each row's
  /// lanes (the whole warp, or each half) keep their own state of their own
  /// keys. The keys given are one online step (KernelBuilder's, with their
  /// max score): the state is rescaled once for them, not once per key.
  SmallVector<Value> update(const AttentionBuffers &bufs, ValueRange state,
                            ArrayRef<Visit> visits) {
    SmallVector<Value> next;
    int64_t perHead = 2 + vSlice.elements();
    Value ninf = f32(-std::numeric_limits<double>::infinity());
    for (int64_t r = 0; r < req.getNumRep(); ++r) {
      SmallVector<Value> scores;
      for (const Visit &visit : visits) {
        Value partial = f32(0.0);
        for (auto [qe, ke] : llvm::zip_equal(q[r], visit.rows.k))
          partial = add(partial, mul(qe, ke));
        // Butterfly over the row's lanes (xor offsets below lanes-a-row
        // stay in the row; the whole warp shuffles, so no lane diverges):
        // every lane of the row ends with the whole dot product.
        for (int32_t offset = req.getLanesPerRow() / 2; offset >= 1;
             offset /= 2)
          partial = add(partial, gpu::ShuffleOp::create(
                                     b, loc, partial, offset, kWarpSize,
                                     gpu::ShuffleMode::XOR)
                                     .getShuffleResult());
        Value s = shared.addMask(bufs, shared.transformScore(partial), batch,
                                 headOf(r), index(0), visit.t);
        scores.push_back(visit.valid ? select(visit.valid, s, ninf) : s);
      }
      Value top = scores.front();
      for (Value s : ArrayRef<Value>(scores).drop_front())
        top = arith::MaximumFOp::create(b, loc, top, s);
      ValueRange head = state.slice(r * perHead, perHead);
      OnlineStep step = onlineStep(head[0], top);
      // Key i's weight weight(s_i, max) (with one key: the step's own).
      SmallVector<Value> weights;
      for (Value s : scores)
        weights.push_back(scores.size() == 1 ? step.weight
                                             : weight(s, step.max));
      next.push_back(step.max);
      auto fold = [&](Value acc, function_ref<Value(size_t)> x) {
        OnlineStep first{step.max, step.rescale, weights[0]};
        acc = rescaleAdd(acc, first, x(0));
        for (size_t i = 1; i < weights.size(); ++i)
          acc = add(acc, x(i) ? mul(weights[i], x(i)) : weights[i]);
        return acc;
      };
      next.push_back(fold(head[1], [](size_t) { return Value(); }));
      for (size_t c = 0; c < head.size() - 2; ++c)
        next.push_back(fold(head[2 + c], [&](size_t i) {
          return visits[i].rows.v[c];
        }));
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
  // Set by emit(): this workgroup's ids (the lane's row lane, and which key
  // of a load its row reads) and the lane's query elements.
  Value lane, rowLane, keyOfLoad, warp, batch, g;
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

  const int64_t keysPerLoad = req.getKeysPerLoad();
  lane = remui(tid, kWarpSize);
  warp = divui(tid, kWarpSize);
  rowLane = keysPerLoad == 1 ? lane : remui(lane, req.getLanesPerRow());
  keyOfLoad = keysPerLoad == 1 ? index(0) : divui(lane, req.getLanesPerRow());
  Value groupRow = divui(wg, splits), split = remui(wg, splits);
  batch = divui(groupRow, hkv);
  g = remui(groupRow, hkv);
  kSlice = sliceOf(req, dk, bufs.key);
  sSlice = ds ? sliceOf(req, ds, bufs.keyShared) : LaneSlice{};
  vSlice = sliceOf(req, dv, bufs.value);

  // This split's chunk of the visible keys (positions, with a key map).
  Value end = shared.keyEnd(bufs, batch, keyMap ? keyMap->end : req.getKeyLen());
  auto [chunkBegin, chunkEnd] = shared.chunkBounds(split, end);
  // Decode (Lq = 1): one query row, so one window start for the group.
  Value begin = shared.windowStart(chunkBegin, index(0));

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
    return update(bufs, st, {Visit{t, loadKey(bufs, t), Value()}});
  };
  if (keyMap) {
    // One position a warp (the selection plans whole-warp rows).
    assert(keysPerLoad == 1 && "the selected attention reads whole-warp rows");
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
    // Steps of `unroll` loads per warp, `keysPerLoad` consecutive keys a
    // load (key t0 + u * warps * keysPerLoad + the row's key of the load),
    // over the chunk's whole steps: every key of a step exists, so all
    // their loads are issued first and the math follows. Then the remaining
    // keys a load per warp; a half-warp row past the chunk's end reads the
    // load's first key (which exists) with weight 0, so every lane of the
    // warp runs the same steps (its shuffles span the warp).
    int64_t loads = req.getLoadsPerStep();
    int64_t perLoad = warps * keysPerLoad;
    Value tailBegin = begin;
    if (loads * keysPerLoad > 1) {
      int64_t span = loads * perLoad;
      Value keys = arith::MaxSIOp::create(
          b, loc, arith::SubIOp::create(b, loc, chunkEnd, begin), index(0));
      tailBegin = add(begin, mul(divui(keys, span), index(span)));
      auto loop = walk(add(begin, mul(warp, index(keysPerLoad))), tailBegin,
                       span, state,
                       [&](Value t0, ValueRange st) -> SmallVector<Value> {
        SmallVector<Visit> visits;
        for (int64_t u = 0; u < loads; ++u) {
          Value t = add(t0, add(keyOfLoad, index(u * perLoad)));
          visits.push_back({t, loadKey(bufs, t), Value()});
        }
        if (keysPerLoad > 1)
          return update(bufs, st, visits);
        // Whole-warp rows: one online step a key, the form verified on the
        // H200 (a step's keys as one online step is the half-warp form's,
        // until the H200 has run it).
        SmallVector<Value> next(st);
        for (const Visit &visit : visits)
          next = update(bufs, next, visit);
        return next;
      });
      state.assign(loop.getResults().begin(), loop.getResults().end());
    }
    auto tail = walk(add(tailBegin, mul(warp, index(keysPerLoad))), chunkEnd,
                     perLoad, state,
                     [&](Value t0, ValueRange st) -> SmallVector<Value> {
      if (keysPerLoad == 1)
        return oneKey(t0, st);
      Value t = add(t0, keyOfLoad);
      Value valid =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, t, chunkEnd);
      Value read = select(valid, t, t0);
      return update(bufs, st, {Visit{read, loadKey(bufs, read), valid}});
    });
    state.assign(tail.getResults().begin(), tail.getResults().end());
  }

  // Publish the states (one per warp and key of a load: a row's lanes own
  // theirs), then fold them.
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      rowLane, index(0));
  Value vStart = mul(rowLane, index(vSlice.vector));
  Value own = add(mul(warp, index(keysPerLoad)), keyOfLoad);
  for (int64_t r = 0; r < nrep; ++r) {
    Value base = mul(add(mul(own, index(nrep)), index(r)), index(stride));
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
  AttentionEmitter::PartialStates states{lds, req.getWarpStates(), warpBase};
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
