//===- TiledPrefillMmaKernel.cpp - tensor-core tiled prefill --------------===//
#include "lib/Conversion/AttentionKernels/TiledPrefillMmaKernel.h"
#include "lib/Conversion/AttentionKernels/MmaFragments.h"
#include "dialect/AttentionLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

namespace {

constexpr int64_t kThreads = kMmaPrefillWarps * MmaBuilder::kWarp;

using Acc = MmaAcc;

/// The operand words, mma, shuffles, constants, cp.async staging and
/// ldmatrix fragment loads are MmaBuilder's (MmaFragments.h, shared with
/// the wide-head decode and the staged matmul kernel).
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
  // Words: K [C][Dq/2 + 4], V [C][Dv/2 + 4] (rows of 16-byte chunks; the
  // +4 words put the 8 row addresses of one ldmatrix on 32 banks).
  const int64_t kStride = dq / 2 + 4, vStride = dv / 2 + 4,
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
  Value warpRow0 = add(i0, mul(warp, index(16)));
  Value rowA = add(warpRow0, grp);
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
  // A window: the walk starts at the tile of the block's first row's first
  // key (tiles before it hide every key of every row).
  Value walkBegin = shared.windowTileStart(index(0), i0, tile);

  // This lane's ldmatrix row addresses (bytes, the tile offsets added per
  // use): K at key l % 8, channel 8 (l / 8); V at key 8 ((l / 8) % 2) + l % 8,
  // channel 8 (l / 16).
  Value ldsBase = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, lds);
  Value lane8 = remui(lane, 8), group8 = divui(lane, 8);
  Value kLane = add(ldsBase,
                    mul(add(mul(lane8, index(kStride)), mul(group8, index(4))),
                        index(4)));
  Value vLane = add(
      ldsBase,
      mul(add(mul(add(mul(remui(group8, 2), index(8)), lane8), index(vStride)),
              mul(divui(lane, 16), index(4))),
          index(4)));

  // Staging by cp.async: tile rows in 16-byte chunks (8 elements), K at
  // words [key][Dq/2 + 4] (the per-head part, then the shared part), V at
  // [key][Dv/2 + 4] after it. A key past the walk copies 0 bytes of the
  // last walked key's row and zero-fills its chunk.
  Value lastKey = arith::SubIOp::create(b, loc, walkEnd, index(1));
  Value keyAddr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bufs.key);
  Value valueAddr =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bufs.value);
  Value sharedAddr =
      ds ? Value(memref::ExtractAlignedPointerAsIndexOp::create(
               b, loc, bufs.keyShared))
         : Value();
  auto copyRows = [&](Value k0, Value src, Value srcAddr, int64_t width,
                      int64_t wordOffset, int64_t stride, int64_t base,
                      bool sharedKey) {
    int64_t perRow = width / 8, chunks = tile * perRow;
    for (int64_t k = 0; k * kThreads < chunks; ++k) {
      Value e = add(tid, index(k * kThreads));
      Value active;
      if ((k + 1) * kThreads > chunks) {
        active = ult(e, index(chunks));
        e = minui(e, index(chunks - 1));
      }
      Value j = divui(e, perRow), ch = remui(e, perRow);
      Value t = add(k0, j);
      Value tc = minui(t, lastKey);
      Value row = sharedKey
                      ? mul(add(mul(batch, index(lk)), tc), index(width))
                      : shared.keyRowBase(bufs, batch, g, tc, width);
      Value from = globalPtr(srcAddr, add(row, mul(ch, index(8))));
      Value wordAt = add(index(base), add(mul(j, index(stride)),
                                          add(index(wordOffset),
                                              mul(ch, index(4)))));
      Value to = sharedPtr(ldsBase, mul(wordAt, index(4)));
      Value bytes = select(ult(t, walkEnd), i32(16), i32(0));
      auto copy = [&] { copyAsync(to, from, bytes); };
      if (!active) {
        copy();
        continue;
      }
      auto ifActive = scf::IfOp::create(b, loc, active, /*withElse=*/false);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&ifActive.getThenRegion().front());
      copy();
    }
  };
  auto issueKey = [&](Value k0) {
    copyRows(k0, bufs.key, keyAddr, dk, 0, kStride, 0, false);
    if (ds)
      copyRows(k0, bufs.keyShared, sharedAddr, ds, dk / 2, kStride, 0, true);
  };
  auto issueValue = [&](Value k0) {
    copyRows(k0, bufs.value, valueAddr, dv, 0, vStride, vOffset, false);
  };
  // The first tile's K (no tile when the walk is empty: walkEnd = 0).
  {
    auto ifAny = scf::IfOp::create(b, loc, ult(walkBegin, walkEnd),
                                   /*withElse=*/false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&ifAny.getThenRegion().front());
    issueKey(walkBegin);
  }
  NVVM::CpAsyncCommitGroupOp::create(b, loc);

  // Loop state: O (oTiles x 4 accumulators), then m and the thread's part
  // of l for its two rows.
  SmallVector<Value> init(oTiles * 4, f32(0.0));
  init.append({ninf, ninf, f32(0.0), f32(0.0)});
  auto walk = scf::ForOp::create(b, loc, walkBegin, walkEnd, index(tile), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(walk.getBody());
    Value k0 = walk.getInductionVar();
    ValueRange state = walk.getRegionIterArgs();

    // The tile's V is copied (cp.async, 16 bytes a thread and chunk) while
    // the warps compute S from its K, copied during the previous tile's
    // P V (or before the walk): wait for K (one group may stay pending),
    // then the barrier makes every thread's copies visible.
    issueValue(k0);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
    gpu::BarrierOp::create(b, loc);

    // S = Q K^T. One ldmatrix.x4 gives the B fragments of k-steps kk and
    // kk + 1 of key tile j: lane l addresses key 8 j + l % 8, channel
    // 16 kk + 8 (l / 8) (an x2 for an odd last k-step).
    SmallVector<Acc> s(sTiles);
    for (int64_t j = 0; j < sTiles; ++j) {
      Acc acc = {f32(0.0), f32(0.0), f32(0.0), f32(0.0)};
      for (int64_t kk = 0; kk < kSteps; kk += 2) {
        int64_t num = kk + 1 < kSteps ? 4 : 2;
        Value ptr = sharedPtr(kLane, index(4 * (8 * j * kStride + 8 * kk)));
        SmallVector<Value> w = ldmatrix(ptr, num, /*trans=*/false);
        acc = mma(qFrag[kk], {w[0], w[1]}, acc);
        if (num == 4)
          acc = mma(qFrag[kk + 1], {w[2], w[3]}, acc);
      }
      s[j] = acc;
    }

    // Transform, mask, hide: accumulator i of tile j is (rows[i / 2],
    // key k0 + 8 j + 2 quad + i % 2). Without a mask tensor, a tile that
    // the warp's 16 rows see whole (inside the length and Lq, below the
    // causal diagonal of its first row) takes the branch with no per-score
    // index test.
    auto hide = [&]() {
      SmallVector<Value> out;
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
          if (Value inWindow = shared.inWindow(t, row))
            visible = both(visible, inWindow);
          Value v = shared.transformScore(s[j][i]);
          if (sig.mask)
            v = shared.addMask(bufs, v, batch, head, minui(row, lastQ),
                               minui(t, index(lk - 1)));
          out.push_back(select(visible, v, ninf));
        }
      return out;
    };
    SmallVector<Value> scores;
    if (sig.mask) {
      scores = hide();
    } else {
      Value tileEnd = add(k0, index(tile));
      Value whole = both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                               tileEnd, end),
                         ult(add(warpRow0, index(15)), index(lq)));
      if (req.getMask() == MaskKind::Causal)
        whole = both(whole, arith::CmpIOp::create(
                                b, loc, arith::CmpIPredicate::ule, tileEnd,
                                shared.causalEnd(index(lk), warpRow0)));
      // Inside the window of the warp's last row (the latest first key).
      if (Value inWindow = shared.inWindow(k0, add(warpRow0, index(15))))
        whole = both(whole, inWindow);
      SmallVector<Type> types(sTiles * 4, b.getF32Type());
      auto ifWhole = scf::IfOp::create(b, loc, types, whole,
                                       /*withElseRegion=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&ifWhole.getThenRegion().front());
      SmallVector<Value> plain;
      for (int64_t j = 0; j < sTiles; ++j)
        for (int64_t i = 0; i < 4; ++i)
          plain.push_back(shared.transformScore(s[j][i]));
      scf::YieldOp::create(b, loc, plain);
      b.setInsertionPointToStart(&ifWhole.getElseRegion().front());
      scf::YieldOp::create(b, loc, hide());
      scores.assign(ifWhole.getResults().begin(), ifWhole.getResults().end());
    }
    for (int64_t j = 0; j < sTiles; ++j)
      for (int64_t i = 0; i < 4; ++i)
        s[j][i] = scores[j * 4 + i];

    // Online softmax per row half h (accumulators 2h, 2h + 1): the quad's
    // four threads hold the row's tile between them.
    std::array<Value, 2> mNew, alpha, lNew;
    for (int h = 0; h < 2; ++h) {
      Value mx = ninf;
      for (int64_t j = 0; j < sTiles; ++j)
        mx = maxf(mx, maxf(s[j][2 * h], s[j][2 * h + 1]));
      mx = maxf(mx, shuffleXor(mx, 1));
      mx = maxf(mx, shuffleXor(mx, 2));
      Value mOld = state[oTiles * 4 + h];
      mNew[h] = maxf(mOld, mx);
      alpha[h] = weight(mOld, mNew[h]);
    }
    std::array<Value, 2> rowSum = {f32(0.0), f32(0.0)};
    for (int64_t j = 0; j < sTiles; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        // weight(): a hidden key (-inf) adds exactly 0, also in a row that
        // has seen nothing yet (m' = -inf).
        s[j][i] = weight(s[j][i], mNew[i / 2]);
        rowSum[i / 2] = add(rowSum[i / 2], s[j][i]);
      }
    for (int h = 0; h < 2; ++h)
      lNew[h] = add(mul(state[oTiles * 4 + 2 + h], alpha[h]), rowSum[h]);

    // P's A fragments: k-step ks covers key tiles 2 ks and 2 ks + 1.
    SmallVector<std::array<Value, 4>> pFrag(pSteps);
    for (int64_t ks = 0; ks < pSteps; ++ks)
      pFrag[ks] = {roundWord(s[2 * ks][0], s[2 * ks][1]),
                   roundWord(s[2 * ks][2], s[2 * ks][3]),
                   roundWord(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                   roundWord(s[2 * ks + 1][2], s[2 * ks + 1][3])};

    // V has landed and every warp is done with K: copy the next tile's K
    // behind the P V product.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    gpu::BarrierOp::create(b, loc);
    {
      Value nextK = add(k0, index(tile));
      auto ifMore = scf::IfOp::create(b, loc, ult(nextK, walkEnd),
                                      /*withElse=*/false);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&ifMore.getThenRegion().front());
      issueKey(nextK);
    }
    NVVM::CpAsyncCommitGroupOp::create(b, loc);

    // O = O * alpha + P V. One ldmatrix.x4.trans gives the B fragments of
    // channel tiles n and n + 1 for k-step ks: lane l addresses key
    // 16 ks + 8 ((l / 8) % 2) + l % 8, channel 8 (n + l / 16) (an x2 for an
    // odd last tile).
    SmallVector<Acc> o(oTiles);
    for (int64_t n = 0; n < oTiles; ++n)
      for (int64_t i = 0; i < 4; ++i)
        o[n][i] = mul(state[n * 4 + i], alpha[i / 2]);
    for (int64_t ks = 0; ks < pSteps; ++ks)
      for (int64_t n = 0; n < oTiles; n += 2) {
        int64_t num = n + 1 < oTiles ? 4 : 2;
        Value ptr = sharedPtr(
            vLane, index(4 * (vOffset + 16 * ks * vStride + 4 * n)));
        SmallVector<Value> w = ldmatrix(ptr, num, /*trans=*/true);
        o[n] = mma(pFrag[ks], {w[0], w[1]}, o[n]);
        if (num == 4)
          o[n + 1] = mma(pFrag[ks], {w[2], w[3]}, o[n + 1]);
      }
    SmallVector<Value> next;
    for (const Acc &acc : o)
      next.append(acc.begin(), acc.end());
    next.append({mNew[0], mNew[1], lNew[0], lNew[1]});
    // The next tile's V overwrites this one.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, next);
  }

  // l: the quad's four parts; publish o / l for the rows that exist (a row
  // that saw nothing: 0 / 0).
  std::array<Value, 2> l;
  for (int h = 0; h < 2; ++h) {
    Value part = walk.getResult(oTiles * 4 + 2 + h);
    part = add(part, shuffleXor(part, 1));
    l[h] = add(part, shuffleXor(part, 2));
  }
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
