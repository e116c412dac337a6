//===- TiledPrefillMmaKernel.cpp - tensor-core tiled prefill --------------===//
#include "lib/Conversion/AttentionKernels/TiledPrefillMmaKernel.h"
#include "lib/Conversion/AttentionKernels/MmaFragments.h"
#include "dialect/AttentionLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

namespace {

constexpr int64_t kThreads = kMmaPrefillWarps * MmaBuilder::kWarp;

using Acc = MmaAcc;

class TiledPrefillMma : private MmaBuilder {
public:
  TiledPrefillMma(OpBuilder &b, Location loc, AttentionRequestAttr req,
                  const AttentionSignature &sig, double scale,
                  std::optional<double> softcap, Type element)
      : MmaBuilder(b, loc, element), req(req), sig(sig),
        shared(b, loc, req, sig, scale, softcap) {}

  void emit(const AttentionBuffers &bufs, Value wg, Value tid, Value lds);

private:
  AttentionRequestAttr req;
  AttentionSignature sig;
  AttentionEmitter shared;
};

void TiledPrefillMma::emit(const AttentionBuffers &bufs, Value wg, Value tid,
                           Value lds) {
  const int64_t rowsPer = kMmaPrefillRows, tile = req.getKeyBlock();
  const int64_t dk = req.getKeyWidth(), ds = req.getSharedWidth(),
                dq = dk + ds, dv = req.getValueWidth();
  const int64_t lq = req.getQLen(), lk = req.getKeyLen(),
                hq = req.getQHeads(), nRep = hq / req.getKvHeads();
  const int64_t kStride = dq / 2 + 4, vStride = tile / 2 + 4,
                vOffset = tile * kStride;
  const int64_t sTiles = tile / 8, kSteps = dq / 16, oTiles = dv / 8,
                pSteps = tile / 16;
  Value ninf = f32(-std::numeric_limits<double>::infinity());

  // wg = (b * Hq + h) * blocks + qb; the block's rows are i0 .. i0 + 63.
  int64_t blocks = llvm::divideCeil(lq, rowsPer);
  Value qb = remui(wg, blocks), bh = divui(wg, blocks);
  Value head = remui(bh, hq), batch = divui(bh, hq);
  Value g = divui(head, nRep);
  Value i0 = mul(qb, index(rowsPer));
  Value warp = divui(tid, kWarp), lane = remui(tid, kWarp);
  Value grp = divui(lane, 4), quad = remui(lane, 4);
  // This thread's two rows: the accumulator rows g and g + 8 of its warp.
  Value rowA = add(i0, add(mul(warp, index(16)), grp));
  std::array<Value, 2> rows = {rowA, add(rowA, index(8))};
  Value lastQ = index(lq - 1);
  auto flatRow = [&](Value i) { return add(mul(bh, index(lq)), i); };

  // Q's A fragments, once: register r of k-step kk holds row
  // rows[r % 2], columns 16 kk + 8 (r / 2) + 2 quad + {0, 1}.
  SmallVector<std::array<Value, 4>> qFrag(kSteps);
  {
    std::array<Value, 2> qBase, qValid;
    for (int h = 0; h < 2; ++h) {
      qValid[h] = ult(rows[h], index(lq));
      qBase[h] = mul(flatRow(minui(rows[h], lastQ)), index(dq));
    }
    Value zero = zeroElement();
    for (int64_t kk = 0; kk < kSteps; ++kk)
      for (int64_t r = 0; r < 4; ++r) {
        Value col = add(index(16 * kk + 8 * (r / 2)), mul(quad, index(2)));
        Value at = add(qBase[r % 2], col);
        Value lo = select(qValid[r % 2], raw(bufs.query, at), zero);
        Value hi = select(qValid[r % 2], raw(bufs.query, add(at, index(1))),
                          zero);
        qFrag[kk][r] = packWord(lo, hi);
      }
  }

  // The block's visible keys end at min(len, last row's causal end).
  Value end = shared.keyEnd(bufs, batch);
  Value lastRow = minui(add(i0, index(rowsPer - 1)), lastQ);
  Value walkEnd = shared.causalEnd(end, lastRow);

  // Loop state: O (oTiles x 4 accumulators), then m and the thread's part
  // of l for its two rows.
  SmallVector<Value> init(oTiles * 4, f32(0.0));
  init.append({ninf, ninf, f32(0.0), f32(0.0)});
  auto walk = scf::ForOp::create(b, loc, index(0), walkEnd, index(tile), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(walk.getBody());
    Value k0 = walk.getInductionVar();
    ValueRange state = walk.getRegionIterArgs();
    Value lastKey = arith::SubIOp::create(b, loc, walkEnd, index(1));
    Value zeroWord = i32(0);

    // Stage K [key][word] (the per-head part, then the shared part) and
    // V^T [channel][key pair]. Keys past the walk are zero words: their
    // loads read the last walked key (in bounds) and are discarded.
    auto stageKey = [&](Value src, int64_t width, int64_t wordOffset,
                        bool sharedKey) {
      int64_t words = tile * width / 2;
      for (int64_t k = 0; k * kThreads < words; ++k) {
        Value e = add(tid, index(k * kThreads));
        Value j = divui(e, width / 2), wp = remui(e, width / 2);
        Value t = add(k0, j);
        Value tc = minui(t, lastKey);
        Value row = sharedKey
                        ? mul(add(mul(batch, index(lk)), tc), index(width))
                        : shared.keyRowBase(bufs, batch, g, tc, width);
        Value at = add(row, mul(wp, index(2)));
        Value w = packWord(raw(src, at), raw(src, add(at, index(1))));
        store(select(ult(t, walkEnd), w, zeroWord), lds,
              add(mul(j, index(kStride)), add(index(wordOffset), wp)));
      }
    };
    stageKey(bufs.key, dk, 0, false);
    if (ds)
      stageKey(bufs.keyShared, ds, dk / 2, true);
    for (int64_t k = 0; k * kThreads < dv * tile / 2; ++k) {
      Value e = add(tid, index(k * kThreads));
      Value d = remui(e, dv), jp = divui(e, dv);
      Value t0 = add(k0, mul(jp, index(2))), t1 = add(t0, index(1));
      Value zero = zeroElement();
      auto value = [&](Value t) {
        Value row = shared.keyRowBase(bufs, batch, g, minui(t, lastKey), dv);
        return select(ult(t, walkEnd), raw(bufs.value, add(row, d)), zero);
      };
      store(packWord(value(t0), value(t1)), lds,
            add(index(vOffset), add(mul(d, index(vStride)), jp)));
    }
    gpu::BarrierOp::create(b, loc);

    // S = Q K^T: B register r of key tile j, k-step kk is the word
    // K[8 j + g][8 kk + 4 r + quad].
    SmallVector<Acc> s(sTiles);
    for (int64_t j = 0; j < sTiles; ++j) {
      Value kRow = mul(add(index(8 * j), grp), index(kStride));
      Acc acc = zeroAcc();
      for (int64_t kk = 0; kk < kSteps; ++kk) {
        Value w0 = load(lds, add(kRow, add(index(8 * kk), quad)));
        Value w1 = load(lds, add(kRow, add(index(8 * kk + 4), quad)));
        acc = mma(qFrag[kk], {w0, w1}, acc);
      }
      s[j] = acc;
    }

    // Transform, mask, hide: accumulator i of tile j is (rows[i / 2],
    // key k0 + 8 j + 2 quad + i % 2).
    std::array<Value, 2> rowVisible;
    for (int h = 0; h < 2; ++h)
      rowVisible[h] = ult(rows[h], index(lq));
    Value keyBase = add(k0, mul(quad, index(2)));
    for (int64_t j = 0; j < sTiles; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        Value row = rows[i / 2];
        Value t = add(keyBase, index(8 * j + i % 2));
        Value visible = both(ult(t, end), rowVisible[i / 2]);
        if (req.getMask() == MaskKind::Causal)
          visible = both(visible, ult(t, shared.causalEnd(index(lk), row)));
        Value v = shared.transformScore(s[j][i]);
        if (sig.mask)
          v = shared.addMask(bufs, v, batch, head, minui(row, lastQ),
                             minui(t, index(lk - 1)));
        s[j][i] = select(visible, v, ninf);
      }

    // The online softmax on the fragments; P's A fragments (k-step ks
    // covers key tiles 2 ks and 2 ks + 1).
    FragmentSoftmax step =
        softmaxStep(s, {state[oTiles * 4], state[oTiles * 4 + 1]});
    std::array<Value, 2> mNew = step.max, alpha = step.rescale, lNew;
    for (int h = 0; h < 2; ++h)
      lNew[h] = add(mul(state[oTiles * 4 + 2 + h], alpha[h]), step.sum[h]);
    SmallVector<MmaFrag> pFrag = pFragments(s);

    // O = O * alpha + P V: B register r of channel tile n, k-step ks is
    // the word V^T[8 n + g][8 ks + 4 r + quad].
    SmallVector<Value> next;
    for (int64_t n = 0; n < oTiles; ++n) {
      Acc acc;
      for (int64_t i = 0; i < 4; ++i)
        acc[i] = mul(state[n * 4 + i], alpha[i / 2]);
      Value vRow =
          add(index(vOffset), mul(add(index(8 * n), grp), index(vStride)));
      for (int64_t ks = 0; ks < pSteps; ++ks) {
        Value w0 = load(lds, add(vRow, add(index(8 * ks), quad)));
        Value w1 = load(lds, add(vRow, add(index(8 * ks + 4), quad)));
        acc = mma(pFrag[ks], {w0, w1}, acc);
      }
      next.append(acc.begin(), acc.end());
    }
    next.append({mNew[0], mNew[1], lNew[0], lNew[1]});
    // The next tile overwrites K and V.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, next);
  }

  // l: the quad's four parts; publish o / l for the rows that exist (a row
  // that saw nothing: 0 / 0).
  std::array<Value, 2> l;
  for (int h = 0; h < 2; ++h)
    l[h] = quadSum(walk.getResult(oTiles * 4 + 2 + h));
  for (int h = 0; h < 2; ++h) {
    auto ifRow = scf::IfOp::create(b, loc, ult(rows[h], index(lq)),
                                   /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifRow.getThenRegion().front());
    Value outBase = add(mul(flatRow(rows[h]), index(dv)), mul(quad, index(2)));
    for (int64_t n = 0; n < oTiles; ++n)
      for (int64_t c = 0; c < 2; ++c) {
        Value o = walk.getResult(n * 4 + 2 * h + c);
        store(arith::DivFOp::create(b, loc, o, l[h]), bufs.out,
              add(outBase, index(8 * n + c)));
      }
  }
}

} // namespace

void poot::emitTiledPrefillMma(OpBuilder &b, Location loc,
                               AttentionRequestAttr req,
                               const AttentionSignature &sig, double scale,
                               std::optional<double> softcap,
                               const AttentionBuffers &bufs, Value wg,
                               Value tid, Value lds) {
  Type element = cast<MemRefType>(bufs.query.getType()).getElementType();
  TiledPrefillMma(b, loc, req, sig, scale, softcap, element)
      .emit(bufs, wg, tid, lds);
}
