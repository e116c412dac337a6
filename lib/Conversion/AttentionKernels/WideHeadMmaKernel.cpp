//===- WideHeadMmaKernel.cpp - tensor-core wide-head decode ---------------===//
#include "lib/Conversion/AttentionKernels/WideHeadMmaKernel.h"
#include "lib/Conversion/AttentionKernels/MmaFragments.h"
#include "dialect/AttentionLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

namespace {

/// Elements per global load of the staging (16 bytes).
constexpr int64_t kVector = 8;

class WideHeadMma : private MmaBuilder {
public:
  WideHeadMma(OpBuilder &b, Location loc, AttentionRequestAttr req,
              const AttentionSignature &sig, double scale,
              std::optional<double> softcap, Type element)
      : MmaBuilder(b, loc, element), req(req), sig(sig),
        shared(b, loc, req, sig, scale, softcap) {}

  void emit(const AttentionBuffers &bufs, Value wg, Value tid, Value lds);

private:
  Value asWord(Value f) {
    return arith::BitcastOp::create(b, loc, b.getI32Type(), f);
  }
  Value asFloat(Value w) {
    return arith::BitcastOp::create(b, loc, b.getF32Type(), w);
  }

  AttentionRequestAttr req;
  AttentionSignature sig;
  AttentionEmitter shared;
};

void WideHeadMma::emit(const AttentionBuffers &bufs, Value wg, Value tid,
                       Value lds) {
  const int64_t rowsPer = req.getQBlock(), tile = req.getKeyBlock(),
                splits = req.getSplits();
  const int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth(),
                dq = dk + ds, dv = req.getValueWidth();
  const int64_t lq = req.getQLen(), lk = req.getKeyLen(),
                hq = req.getQHeads(), nRep = req.getNumRep();
  const int64_t mTiles = rowsPer / 16, warps = req.getLanes() / (2 * rowsPer);
  const int64_t kStride = dq / 2 + 4, vStride = tile / 2 + 4,
                partialAt = wideHeadMmaRegionWords(tile, dq, dv);
  const int64_t sTiles = tile / 8, kSteps = dq / 16 / warps,
                oTiles = dv / 8 / warps;
  const int64_t unitRows = nRep * lq;
  Value ninf = f32(-std::numeric_limits<double>::infinity());

  // wg = (unit * splits + split) * blocks + qb, as wide_head: the blocks
  // of one split (the same keys) are adjacent in launch order. A unit is
  // one (batch row, KV group); its packed row p is head g n_rep + p / Lq,
  // query row p % Lq, flat row unit * n_rep Lq + p of q and out.
  int64_t blocks = llvm::divideCeil(unitRows, rowsPer);
  Value qb = remui(wg, blocks), rest = divui(wg, blocks);
  Value split = remui(rest, splits), unit = divui(rest, splits);
  Value firstHead = mul(unit, index(nRep));
  Value head = remui(firstHead, hq), batch = divui(firstHead, hq);
  Value g = divui(head, nRep);
  Value p0 = mul(qb, index(rowsPer));
  Value warp = divui(tid, kWarp), lane = remui(tid, kWarp);
  Value mt = divui(warp, warps), kw = remui(warp, warps);
  Value grp = divui(lane, 4), quad = remui(lane, 4);
  // This thread's two packed rows: accumulator rows g and g + 8 of its
  // warp's m tile; rows past the unit are computed on clamped indices and
  // hidden.
  Value rowA = add(p0, add(mul(mt, index(16)), grp));
  std::array<Value, 2> rows = {rowA, add(rowA, index(8))};
  std::array<Value, 2> rowValid, rowClamped;
  for (int h = 0; h < 2; ++h) {
    rowValid[h] = ult(rows[h], index(unitRows));
    rowClamped[h] = minui(rows[h], index(unitRows - 1));
  }
  auto flatRow = [&](Value p) { return add(mul(unit, index(unitRows)), p); };
  auto rowHead = [&](Value p) { return add(head, divui(p, lq)); };
  auto rowIndex = [&](Value p) { return remui(p, lq); };

  // Q's A fragments of this warp's k-steps w kSteps + kk, once: register r
  // holds row rows[r % 2], columns 16 k + 8 (r / 2) + 2 quad + {0, 1}.
  SmallVector<MmaFrag> qFrag(kSteps);
  {
    Value zero = zeroElement();
    Value colBase = add(mul(kw, index(16 * kSteps)), mul(quad, index(2)));
    for (int64_t kk = 0; kk < kSteps; ++kk)
      for (int64_t r = 0; r < 4; ++r) {
        Value at = add(mul(flatRow(rowClamped[r % 2]), index(dq)),
                       add(colBase, index(16 * kk + 8 * (r / 2))));
        Value lo = select(rowValid[r % 2], raw(bufs.query, at), zero);
        Value hi = select(rowValid[r % 2], raw(bufs.query, add(at, index(1))),
                          zero);
        qFrag[kk][r] = packWord(lo, hi);
      }
  }

  // The block's visible keys end at min(len, last row's causal end): the
  // largest query row of the block is the last row's, or Lq - 1 when the
  // block spans two heads; split, this split's chunk of them.
  Value end = shared.keyEnd(bufs, batch);
  Value lastP = minui(add(p0, index(rowsPer - 1)), index(unitRows - 1));
  Value lastRow = remui(lastP, lq);
  if (lq > 1)
    lastRow = select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           divui(p0, lq), divui(lastP, lq)),
                     lastRow, index(lq - 1));
  Value walkEnd = shared.causalEnd(end, lastRow);
  Value walkBegin = index(0);
  if (splits > 1) {
    walkBegin = shared.splitBegin(split);
    walkEnd = minui(walkEnd, add(walkBegin, index(req.getChunk())));
  }
  // A window: the walk starts at the tile of the block's smallest query
  // row's first key (row p0's, or row 0 when the block spans two heads).
  if (req.getWindow()) {
    Value firstRow = remui(p0, lq);
    if (lq > 1)
      firstRow = select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              divui(p0, lq), divui(lastP, lq)),
                        firstRow, index(0));
    walkBegin = shared.windowTileStart(walkBegin, firstRow, tile);
  }

  // The staging is software-pipelined: a tile's K words are loaded from
  // global memory into registers during the previous tile's P V (the
  // first tile's before the walk) and its V during its own S, so their
  // latency overlaps the mma work. Loads clamp the key to the last visible
  // one (in bounds, also for an empty walk: key 0) and zero the words of
  // keys past the walk.
  Value lastKey = arith::SubIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, walkEnd, index(1)), index(1));
  auto vectorType = VectorType::get({kVector}, element);
  auto wordsType = VectorType::get({kVector / 2}, b.getI32Type());
  // One 16-byte vector of a key part per thread and round: (j, v) = the
  // key and vector of item e (clamped in a partial round, whose extra
  // threads store nothing: `live`).
  struct KeyPart {
    Value src;
    int64_t width, wordOffset;
    bool sharedKey;
  };
  SmallVector<KeyPart> parts = {{bufs.key, dk, 0, false}};
  if (ds)
    parts.push_back({bufs.keyShared, ds, dk / 2, true});
  auto forItems = [&](int64_t count,
                      function_ref<void(Value e, Value live)> fn) {
    int64_t lanes = req.getLanes();
    for (int64_t k = 0; k * lanes < count; ++k) {
      Value e = add(tid, index(k * lanes));
      bool partial = (k + 1) * lanes > count;
      fn(partial ? minui(e, index(count - 1)) : e,
         partial ? ult(e, index(count)) : Value());
    }
  };
  auto guardedStore = [&](Value live, function_ref<void()> body) {
    if (!live)
      return body();
    auto ifLive = scf::IfOp::create(b, loc, live, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifLive.getThenRegion().front());
    body();
  };
  auto loadVector = [&](Value src, Value at) {
    return vector::LoadOp::create(b, loc, vectorType, src, ValueRange{at},
                                  /*nontemporal=*/false,
                                  llvm::MaybeAlign(kVector * 2));
  };
  // K [key][word] (the per-group part, then the shared part).
  auto loadKeys = [&](Value k0) {
    SmallVector<Value> words;
    Value zeros = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(wordsType, b.getI32IntegerAttr(0)));
    for (const KeyPart &part : parts) {
      int64_t perKey = part.width / kVector;
      forItems(tile * perKey, [&](Value e, Value) {
        Value t = add(k0, divui(e, perKey));
        Value tc = minui(t, lastKey);
        Value row = part.sharedKey
                        ? shared.sharedKeyBase(batch, tc)
                        : shared.keyRowBase(bufs, batch, g, tc, part.width);
        Value vec = vector::BitCastOp::create(
            b, loc, wordsType,
            loadVector(part.src, add(row, mul(remui(e, perKey),
                                              index(kVector)))));
        words.push_back(
            arith::SelectOp::create(b, loc, ult(t, walkEnd), vec, zeros));
      });
    }
    return words;
  };
  auto storeKeys = [&](ValueRange words) {
    size_t next = 0;
    for (const KeyPart &part : parts) {
      int64_t perKey = part.width / kVector;
      forItems(tile * perKey, [&](Value e, Value live) {
        Value word = words[next++];
        // Row starts (kStride words), the shared part's offset (Dk / 2)
        // and the vectors are multiples of 4 words: one 16-byte store.
        Value slot =
            add(mul(divui(e, perKey), index(kStride)),
                add(index(part.wordOffset),
                    mul(remui(e, perKey), index(kVector / 2))));
        guardedStore(live, [&] {
          vector::StoreOp::create(b, loc, word, lds, ValueRange{slot},
                                  /*nontemporal=*/false,
                                  llvm::MaybeAlign(16));
        });
      });
    }
  };
  // V^T [channel][key pair]: a thread loads 8 channels of two keys
  // (consecutive threads: consecutive key pairs, so that their words of
  // one channel row are consecutive).
  const int64_t pairs = tile / 2, vectorsPerRow = dv / kVector;
  auto loadValues = [&](Value k0) {
    SmallVector<Value> vecs;
    forItems(pairs * vectorsPerRow, [&](Value e, Value) {
      Value t0 = add(k0, mul(remui(e, pairs), index(2)));
      for (Value t : {t0, add(t0, index(1))}) {
        Value row = shared.keyRowBase(bufs, batch, g, minui(t, lastKey), dv);
        vecs.push_back(loadVector(
            bufs.value, add(row, mul(divui(e, pairs), index(kVector)))));
      }
    });
    return vecs;
  };
  auto storeValues = [&](ArrayRef<Value> vecs, Value k0) {
    size_t next = 0;
    forItems(pairs * vectorsPerRow, [&](Value e, Value live) {
      Value jp = remui(e, pairs), v = divui(e, pairs);
      Value t0 = add(k0, mul(jp, index(2)));
      Value a = vecs[next++], c = vecs[next++];
      Value live0 = ult(t0, walkEnd), live1 = ult(add(t0, index(1)), walkEnd);
      Value zero = zeroElement();
      Value slot = add(mul(mul(v, index(kVector)), index(vStride)), jp);
      guardedStore(live, [&] {
        for (int64_t x = 0; x < kVector; ++x) {
          Value lo = select(live0, vector::ExtractOp::create(b, loc, a, x),
                            zero);
          Value hi = select(live1, vector::ExtractOp::create(b, loc, c, x),
                            zero);
          store(packWord(lo, hi), lds, add(slot, index(x * vStride)));
        }
      });
    });
  };

  // Loop state: this warp's O (oTiles x 4), then m and the thread's part
  // of l for its two rows (the same in every warp of the m tile), then the
  // next tile's K words.
  SmallVector<Value> init(oTiles * 4, f32(0.0));
  init.append({ninf, ninf, f32(0.0), f32(0.0)});
  SmallVector<Value> firstKeys = loadKeys(walkBegin);
  const int64_t keyState = oTiles * 4 + 4;
  init.append(firstKeys.begin(), firstKeys.end());
  auto walk = scf::ForOp::create(b, loc, walkBegin, walkEnd, index(tile), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(walk.getBody());
    Value k0 = walk.getInductionVar();
    ValueRange state = walk.getRegionIterArgs();

    storeKeys(state.drop_front(keyState));
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> values = loadValues(k0);

    // Partial S = Q K^T over this warp's k-steps: B register r of key tile
    // j, k-step k is the word K[8 j + g][8 k + 4 r + quad].
    SmallVector<MmaAcc> s(sTiles);
    Value kCol = add(mul(kw, index(8 * kSteps)), quad);
    for (int64_t j = 0; j < sTiles; ++j) {
      Value kRow = add(mul(add(index(8 * j), grp), index(kStride)), kCol);
      MmaAcc acc = zeroAcc();
      for (int64_t kk = 0; kk < kSteps; ++kk) {
        Value w0 = load(lds, add(kRow, index(8 * kk)));
        Value w1 = load(lds, add(kRow, index(8 * kk + 4)));
        acc = mma(qFrag[kk], {w0, w1}, acc);
      }
      s[j] = acc;
    }
    // The warps' partials meet in workgroup memory, each lane's in its own
    // word of (warp, m tile, tile, element) (no bank conflict).
    auto partialSlot = [&](Value w, int64_t j, int64_t i) {
      Value block = add(mul(w, index(mTiles)), mt);
      return add(index(partialAt),
                 add(mul(block, index(sTiles * 128)),
                     add(index(j * 128 + i * 32), lane)));
    };
    if (warps > 1)
      for (int64_t j = 0; j < sTiles; ++j)
        for (int64_t i = 0; i < 4; ++i)
          store(asWord(s[j][i]), lds, partialSlot(kw, j, i));
    // K is dead once every warp's partial is written.
    gpu::BarrierOp::create(b, loc);

    // V^T into the K region.
    storeValues(values, k0);

    // The scores: the W partials summed in one order, so every warp of the
    // m tile holds the same; then transform, mask and hide. Accumulator i
    // of tile j is (rows[i / 2], key k0 + 8 j + 2 quad + i % 2).
    if (warps > 1)
      for (int64_t j = 0; j < sTiles; ++j)
        for (int64_t i = 0; i < 4; ++i) {
          Value sum = asFloat(load(lds, partialSlot(index(0), j, i)));
          for (int64_t w = 1; w < warps; ++w)
            sum = add(sum, asFloat(load(lds, partialSlot(index(w), j, i))));
          s[j][i] = sum;
        }
    Value keyAt = add(k0, mul(quad, index(2)));
    for (int64_t j = 0; j < sTiles; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        Value p = rowClamped[i / 2];
        Value t = add(keyAt, index(8 * j + i % 2));
        Value visible = both(ult(t, walkEnd), rowValid[i / 2]);
        if (req.getMask() == MaskKind::Causal)
          visible =
              both(visible, ult(t, shared.causalEnd(index(lk), rowIndex(p))));
        if (Value inWindow = shared.inWindow(t, rowIndex(p)))
          visible = both(visible, inWindow);
        Value v = shared.transformScore(s[j][i]);
        if (sig.mask)
          v = shared.addMask(bufs, v, batch, rowHead(p), rowIndex(p),
                             minui(t, index(lk - 1)));
        s[j][i] = select(visible, v, ninf);
      }
    FragmentSoftmax step =
        softmaxStep(s, {state[oTiles * 4], state[oTiles * 4 + 1]});
    std::array<Value, 2> lNew;
    for (int h = 0; h < 2; ++h)
      lNew[h] =
          add(mul(state[oTiles * 4 + 2 + h], step.rescale[h]), step.sum[h]);
    SmallVector<MmaFrag> pFrag = pFragments(s);
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> nextKeys = loadKeys(add(k0, index(tile)));

    // O = O alpha + P V over this warp's channel tiles w oTiles + n: B
    // register r of k-step ks is the word V^T[8 n' + g][8 ks + 4 r + quad].
    SmallVector<Value> next;
    Value vBase = mul(add(mul(kw, index(8 * oTiles)), grp), index(vStride));
    for (int64_t n = 0; n < oTiles; ++n) {
      MmaAcc acc;
      for (int64_t i = 0; i < 4; ++i)
        acc[i] = mul(state[n * 4 + i], step.rescale[i / 2]);
      Value vRow = add(vBase, add(index(8 * n * vStride), quad));
      for (int64_t ks = 0; ks < tile / 16; ++ks) {
        Value w0 = load(lds, add(vRow, index(8 * ks)));
        Value w1 = load(lds, add(vRow, index(8 * ks + 4)));
        acc = mma(pFrag[ks], {w0, w1}, acc);
      }
      next.append(acc.begin(), acc.end());
    }
    next.append({step.max[0], step.max[1], lNew[0], lNew[1]});
    next.append(nextKeys.begin(), nextKeys.end());
    // The next tile overwrites the region and the partials.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, next);
  }

  // Publish this warp's channels of the rows that exist: o / l (a row
  // that saw nothing: 0 / 0), or split the unnormalised partial (o, m, l)
  // at (row, split) of the scratch (a split that saw nothing publishes
  // (0, -inf, 0)); m and l once a row, by warp 0 of the m tile.
  Value chBase = add(mul(kw, index(8 * oTiles)), mul(quad, index(2)));
  for (int h = 0; h < 2; ++h) {
    Value l = quadSum(walk.getResult(oTiles * 4 + 2 + h));
    Value m = walk.getResult(oTiles * 4 + h);
    auto ifRow = scf::IfOp::create(b, loc, rowValid[h], /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifRow.getThenRegion().front());
    Value row = flatRow(rows[h]);
    Value base = splits > 1
                     ? mul(add(mul(row, index(splits)), split), index(dv + 2))
                     : mul(row, index(dv));
    for (int64_t n = 0; n < oTiles; ++n)
      for (int64_t c = 0; c < 2; ++c) {
        Value o = walk.getResult(n * 4 + 2 * h + c);
        Value at = add(base, add(chBase, index(8 * n + c)));
        if (splits > 1)
          store(o, bufs.scratch, at);
        else
          store(arith::DivFOp::create(b, loc, o, l), bufs.out, at);
      }
    if (splits > 1) {
      Value first = both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               kw, index(0)),
                         arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               quad, index(0)));
      auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      store(m, bufs.scratch, add(base, index(dv)));
      store(l, bufs.scratch, add(base, index(dv + 1)));
    }
  }
}

} // namespace

void poot::emitWideHeadMma(OpBuilder &b, Location loc,
                           AttentionRequestAttr req,
                           const AttentionSignature &sig, double scale,
                           std::optional<double> softcap,
                           const AttentionBuffers &bufs, Value wg, Value tid,
                           Value lds) {
  Type element = cast<MemRefType>(bufs.query.getType()).getElementType();
  WideHeadMma(b, loc, req, sig, scale, softcap, element)
      .emit(bufs, wg, tid, lds);
}
