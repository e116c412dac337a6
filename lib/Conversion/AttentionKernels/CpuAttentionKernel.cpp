//===- CpuAttentionKernel.cpp - the CPU schedule of attention -------------===//
//
// See CpuAttentionKernel.h for the loop nest. Numerics: the online softmax
// of the seed's kernel, per key block instead of per key; a key whose score
// is -inf gets exactly zero weight (exp(-inf) = 0), the running max is
// taken as 0 while it is still -inf so no exp(-inf - -inf) = NaN appears,
// and a row with no visible key ends as 0 / 0 = NaN like the oracle's
// softmax. NaN scores propagate (arith.maximumf and the sums keep them). A
// key block whose mask is -inf for a row (a causal prefill's upper triangle)
// is skipped for that row: its keys would add exactly 0 (a NaN or inf q.k
// under a -inf mask is the one case where the oracle's NaN is not kept).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/CpuAttentionKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
} // namespace

CpuAttentionKernel::CpuAttentionKernel(OpBuilder &builder, Location loc,
                                       AttentionRequestAttr req,
                                       AttentionSignature sig, double scale,
                                       std::optional<double> softcap)
    : KernelBuilder(builder, loc), req(req), sig(sig), scale(scale),
      softcap(softcap) {}

int64_t CpuAttentionKernel::scratchFloats() const {
  if (req.getSplits() == 1)
    return 0;
  return req.getBatch() * req.getQHeads() * req.getQLen() * req.getSplits() *
         (req.getValueWidth() + 2);
}

VectorType CpuAttentionKernel::vec() const {
  return VectorType::get({req.getLanes()}, b.getF32Type());
}

/// A vector of the memref's own element type: two-byte operands are read
/// as vectors of halves and widened to f32 (KernelBuilder::widen).
static VectorType vecOf(Value mem, int64_t lanes) {
  return VectorType::get({lanes},
                         cast<MemRefType>(mem.getType()).getElementType());
}

Value CpuAttentionKernel::vload(Value mem, Value idx) {
  return widen(vector::LoadOp::create(b, loc, vecOf(mem, req.getLanes()), mem,
                                      ValueRange{idx}));
}

void CpuAttentionKernel::vstore(Value val, Value mem, Value idx) {
  Type element = cast<MemRefType>(mem.getType()).getElementType();
  vector::StoreOp::create(b, loc, narrowTo(val, element), mem,
                          ValueRange{idx});
}

Value CpuAttentionKernel::splat(Value scalar) {
  return vector::BroadcastOp::create(b, loc, vec(), scalar);
}

Value CpuAttentionKernel::sumAcrossLanes(ArrayRef<Value> vecs) {
  int64_t lanes = req.getLanes();
  assert(static_cast<int64_t>(vecs.size()) == lanes &&
         llvm::isPowerOf2_64(lanes) && "W vectors of a power-of-two W");
  // Level invariant: each vector holds `sources` partial sums in blocks of
  // `block` lanes, in source order. A pair (u, w) becomes one vector of
  // 2 * sources blocks of block / 2 lanes: the first halves of every block
  // (u's, then w's) plus the second halves.
  SmallVector<Value> level(vecs.begin(), vecs.end());
  for (int64_t block = lanes; block > 1; block /= 2) {
    int64_t half = block / 2;
    SmallVector<int64_t> lo, hi;
    for (int64_t from : {int64_t(0), lanes})
      for (int64_t start = 0; start < lanes; start += block)
        for (int64_t k = 0; k < half; ++k) {
          lo.push_back(from + start + k);
          hi.push_back(from + start + half + k);
        }
    SmallVector<Value> next;
    for (size_t p = 0; p + 1 < level.size(); p += 2) {
      Value u = level[p], w = level[p + 1];
      next.push_back(add(vector::ShuffleOp::create(b, loc, u, w, lo),
                         vector::ShuffleOp::create(b, loc, u, w, hi)));
    }
    level = std::move(next);
  }
  return level.front();
}

Value CpuAttentionKernel::keyEnd(const AttentionBuffers &bufs, Value batch) {
  Value cap = index(req.getKeyLen());
  if (!sig.length)
    return cap;
  Value len = indexOf(load(bufs.length, batch));
  return arith::MinSIOp::create(b, loc,
                                arith::MaxSIOp::create(b, loc, len, index(0)),
                                cap);
}

Value CpuAttentionKernel::keyRowBase(const AttentionBuffers &bufs, Value batch,
                                     Value g, Value t, int64_t width) {
  Value hkv = index(req.getKvHeads());
  Value rowIdx;
  if (sig.read) {
    Value slot = indexOf(load(bufs.read, add(mul(batch, index(req.getKeyLen())), t)));
    rowIdx = add(mul(slot, hkv), g);
  } else {
    rowIdx = add(mul(add(mul(batch, hkv), g), index(req.getKeyLen())), t);
  }
  return mul(rowIdx, index(width));
}

/// for (iv = lb; iv < ub; iv += step) body(iv), with loop-carried `inits`.
static scf::ForOp forLoop(OpBuilder &b, Location loc, Value lb, Value ub,
                          Value step, ValueRange inits,
                          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, loc, lb, ub, step, inits);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> yields =
      body(loop.getInductionVar(), loop.getRegionIterArgs());
  if (loop.getBody()->empty() ||
      !isa<scf::YieldOp>(loop.getBody()->back()))
    scf::YieldOp::create(b, loc, yields);
  return loop;
}

void CpuAttentionKernel::emit(const AttentionBuffers &bufs) {
  // One parallel iteration per chunk (grid_y: one per core), each dealing
  // itself the items chunk, chunk + chunks, ...: the chunk's row state is
  // allocated once on its thread's stack and reused by its items.
  int64_t chunks = std::max<int64_t>(1, req.getGridY());
  if (chunks == 1) {
    // One chunk: no parallel loop (no thread team for a small attention).
    ItemState state = allocateItemState();
    forLoop(b, loc, index(0), index(req.getGridX()), index(1), {},
            [&](Value item, ValueRange) -> SmallVector<Value> {
              emitItem(bufs, state, item);
              return {};
            });
  } else
  scf::ParallelOp::create(
      b, loc, ValueRange{index(0)}, ValueRange{index(chunks)},
      ValueRange{index(1)},
      [&](OpBuilder &nested, Location nloc, ValueRange ivs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        ItemState state = allocateItemState();
        forLoop(b, loc, ivs[0], index(req.getGridX()), index(chunks), {},
                [&](Value item, ValueRange) -> SmallVector<Value> {
                  emitItem(bufs, state, item);
                  return {};
                });
      });
  if (req.getSplits() == 1)
    return;
  int64_t rows = req.getBatch() * req.getQHeads() * req.getQLen();
  if (chunks == 1) {
    forLoop(b, loc, index(0), index(rows), index(1), {},
            [&](Value row, ValueRange) -> SmallVector<Value> {
              emitCombine(bufs, row);
              return {};
            });
    return;
  }
  scf::ParallelOp::create(
      b, loc, ValueRange{index(0)}, ValueRange{index(rows)},
      ValueRange{index(1)},
      [&](OpBuilder &nested, Location nloc, ValueRange ivs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        emitCombine(bufs, ivs[0]);
      });
}

CpuAttentionKernel::ItemState CpuAttentionKernel::allocateItemState() {
  int64_t rowsPerItem = req.getQHeads() / req.getKvHeads() * req.getQBlock();
  auto stackBuffer = [&](int64_t n) {
    return memref::AllocaOp::create(b, loc,
                                    MemRefType::get({n}, b.getF32Type()))
        .getResult();
  };
  return {stackBuffer(rowsPerItem * req.getKeyBlock()),
          stackBuffer(rowsPerItem * req.getValueWidth()),
          stackBuffer(rowsPerItem), stackBuffer(rowsPerItem)};
}

void CpuAttentionKernel::emitItem(const AttentionBuffers &bufs,
                                  const ItemState &state, Value item) {
  int64_t W = req.getLanes(), dk = req.getKeyWidth(), ds = req.getSharedWidth(),
          dv = req.getValueWidth(), lq = req.getQLen(), hq = req.getQHeads(),
          hkv = req.getKvHeads(), nRep = hq / hkv, qBlock = req.getQBlock(),
          kb = req.getKeyBlock(), splits = req.getSplits();
  int64_t qBlocks = lq / qBlock, rowsPerItem = nRep * qBlock;
  Value ninf = f32(-kInf);

  // item = ((b * Hkv + g) * qBlocks + qb) * splits + split
  Value split = remui(item, splits);
  Value rest = divui(item, splits);
  Value qb = remui(rest, qBlocks);
  rest = divui(rest, qBlocks);
  Value g = remui(rest, hkv);
  Value batch = divui(rest, hkv);

  Value scores = state.scores, acc = state.acc, runMax = state.runMax,
        runSum = state.runSum;

  // r = rep * qBlock + qi: head h = g * nRep + rep, query row i = qb * qBlock + qi.
  struct RowIds {
    Value row, h, i;
  };
  auto rowOf = [&](Value r) {
    Value rep = divui(r, qBlock);
    Value i = add(mul(qb, index(qBlock)), remui(r, qBlock));
    Value h = add(mul(g, index(nRep)), rep);
    Value row = add(mul(add(mul(batch, index(hq)), h), index(lq)), i);
    return RowIds{row, h, i};
  };

  Value zeroVec = splat(f32(0.0));
  forLoop(b, loc, index(0), index(rowsPerItem), index(1), {},
          [&](Value r, ValueRange) -> SmallVector<Value> {
            store(ninf, runMax, r);
            store(f32(0.0), runSum, r);
            for (int64_t c = 0; c < dv; c += W)
              vstore(zeroVec, acc, add(mul(r, index(dv)), index(c)));
            return {};
          });

  // The window's arithmetic is the GPU schedules' (AttentionEmitter).
  AttentionEmitter shared(b, loc, req, sig, scale, softcap);
  Value end = keyEnd(bufs, batch);
  // A window: the item's key blocks start at its smallest query row's
  // first key (keys before it are hidden from every row of the item).
  auto [chunkBegin, chunkEnd] = shared.chunkBounds(split, end);
  Value begin = shared.windowStart(chunkBegin, mul(qb, index(qBlock)));

  forLoop(b, loc, begin, chunkEnd, index(kb), {},
          [&](Value k0, ValueRange) -> SmallVector<Value> {
    Value n = arith::MinSIOp::create(
        b, loc, index(kb), arith::SubIOp::create(b, loc, chunkEnd, k0));
    forLoop(b, loc, index(0), index(rowsPerItem), index(1), {},
            [&](Value r, ValueRange) -> SmallVector<Value> {
      RowIds ids = rowOf(r);
      Value row = ids.row, h = ids.h, i = ids.i;
      Value sRow = mul(r, index(kb));
      // The row's query, in vectors, for the whole block.
      Value qBase = mul(row, index(dk + ds));
      SmallVector<Value> qv, qs;
      for (int64_t c = 0; c < dk; c += W)
        qv.push_back(vload(bufs.query, add(qBase, index(c))));
      for (int64_t c = 0; c < ds; c += W)
        qs.push_back(vload(bufs.query, add(qBase, index(dk + c))));
      Value maskBase;
      if (sig.mask) {
        Value mb = sig.maskBatch == 1 ? index(0) : batch;
        Value mh = sig.maskHeads == 1 ? index(0) : h;
        Value mi = sig.maskRows == 1 ? index(0) : i;
        maskBase = mul(add(mul(add(mul(mb, index(sig.maskHeads)), mh),
                               index(sig.maskRows)),
                           mi),
                       index(req.getKeyLen()));
      }

      // The causal kind: row i sees keys t <= i + (Lk - Lq), so its part of
      // the block is [k0, min(k0 + n, i + Lk - Lq + 1)); a block wholly
      // above the diagonal is skipped and no mask is read.
      bool causal = req.getMask() == MaskKind::Causal;
      Value rowN =
          causal ? arith::MinSIOp::create(
                       b, loc, n,
                       arith::SubIOp::create(
                           b, loc, add(i, index(req.getKeyLen() - lq + 1)), k0))
                       .getResult()
                 : n;
      // With a window the row's part starts at max(0, windowBegin(i) - k0):
      // the keys [0, rowStart) of the block score -inf and are not read.
      Value rowStart = index(0);
      if (Value first = shared.windowBegin(i))
        rowStart = arith::MaxSIOp::create(
            b, loc, index(0), arith::SubIOp::create(b, loc, first, k0));
      auto blockBody = [&]() {
      // Scores of the block's keys.
      forLoop(b, loc, index(0), rowStart, index(1), {},
              [&](Value j, ValueRange) -> SmallVector<Value> {
        store(ninf, scores, add(sRow, j));
        return {};
      });
      // In groups of W keys [j0, j0 + W) from the group holding rowStart:
      // one dot-product vector per key (W lanes over the head width), the
      // W vectors reduced together by a transpose tree into one vector of
      // W scores (sumAcrossLanes), then the transform, the mask and the
      // row's visibility as vector ops. A lane past the block reads the
      // block's last key (a real row: the paged map and the length are
      // never read out of range) and is hidden.
      Value groupStart = mul(divui(rowStart, W), index(W));
      Value laneIds = arith::ConstantOp::create(
          b, loc, b.getIndexVectorAttr(llvm::to_vector(llvm::seq<int64_t>(0, W))));
      forLoop(b, loc, groupStart, rowN, index(W), {},
              [&](Value j0, ValueRange) -> SmallVector<Value> {
        Value lastKey = arith::SubIOp::create(b, loc, n, index(1));
        SmallVector<Value> dots;
        for (int64_t l = 0; l < W; ++l) {
          Value t = add(k0, arith::MinSIOp::create(b, loc, add(j0, index(l)),
                                                   lastKey));
          Value kBase = keyRowBase(bufs, batch, g, t, dk);
          Value dot = zeroVec;
          for (int64_t c = 0; c < dk; c += W)
            dot = vector::FMAOp::create(
                b, loc, qv[c / W], vload(bufs.key, add(kBase, index(c))), dot);
          if (ds) {
            Value sBase =
                mul(add(mul(batch, index(req.getKeyLen())), t), index(ds));
            for (int64_t c = 0; c < ds; c += W)
              dot = vector::FMAOp::create(
                  b, loc, qs[c / W],
                  vload(bufs.keyShared, add(sBase, index(c))), dot);
          }
          dots.push_back(dot);
        }
        Value s = mul(sumAcrossLanes(dots), splat(f32(scale)));
        if (softcap) {
          Value cap = splat(f32(*softcap));
          s = mul(cap, math::TanhOp::create(
                           b, loc, arith::DivFOp::create(b, loc, s, cap)));
        }
        if (sig.mask) {
          // Lanes past the mask buffer read 0 (they are hidden below).
          Type maskElement =
              cast<MemRefType>(bufs.mask.getType()).getElementType();
          Value zero = arith::ConstantOp::create(
              b, loc, b.getFloatAttr(maskElement, 0.0));
          s = add(s, widen(vector::TransferReadOp::create(
                         b, loc, vecOf(bufs.mask, W), bufs.mask,
                         ValueRange{add(maskBase, add(k0, j0))}, zero,
                         ArrayRef<bool>{false})));
        }
        // Visible lanes: rowStart <= j0 + l < rowN.
        Value lanes = arith::AddIOp::create(
            b, loc, laneIds,
            vector::BroadcastOp::create(b, loc, laneIds.getType(), j0));
        auto bound = [&](arith::CmpIPredicate pred, Value limit) {
          return arith::CmpIOp::create(
              b, loc, pred, lanes,
              vector::BroadcastOp::create(b, loc, laneIds.getType(), limit));
        };
        Value visible = arith::AndIOp::create(
            b, loc, bound(arith::CmpIPredicate::sge, rowStart),
            bound(arith::CmpIPredicate::slt, rowN));
        vstore(arith::SelectOp::create(b, loc, visible, s, splat(ninf)),
               scores, add(sRow, j0));
        return {};
      });
      // A short last block: the missing keys score -inf (weight 0).
      forLoop(b, loc, rowN, index(kb), index(1), {},
              [&](Value j, ValueRange) -> SmallVector<Value> {
        store(ninf, scores, add(sRow, j));
        return {};
      });

      // Online softmax over the block, in vectors of keys.
      Value blockMax = splat(ninf);
      for (int64_t j = 0; j < kb; j += W)
        blockMax = arith::MaximumFOp::create(
            b, loc, blockMax, vload(scores, add(sRow, index(j))));
      Value mOld = load(runMax, r);
      Value mNew = arith::MaximumFOp::create(
          b, loc, mOld,
          vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF,
                                      blockMax));
      Value mSafe = select(isNegInf(mNew), f32(0.0), mNew);
      Value alpha = exp(arith::SubFOp::create(b, loc, mOld, mSafe));
      Value mVec = splat(mSafe);
      Value sum = zeroVec;
      for (int64_t j = 0; j < kb; j += W) {
        Value idx = add(sRow, index(j));
        Value p = exp(arith::SubFOp::create(b, loc, vload(scores, idx), mVec));
        vstore(p, scores, idx);
        sum = add(sum, p);
      }
      store(add(mul(load(runSum, r), alpha),
                vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            sum)),
            runSum, r);
      store(mNew, runMax, r);

      // o = o * alpha + sum_j p[j] * v[t], the row's o in registers.
      Value oBase = mul(r, index(dv));
      Value alphaVec = splat(alpha);
      SmallVector<Value> o;
      for (int64_t c = 0; c < dv; c += W)
        o.push_back(mul(vload(acc, add(oBase, index(c))), alphaVec));
      scf::ForOp pv = forLoop(
          b, loc, rowStart, rowN, index(1), o,
          [&](Value j, ValueRange carried) -> SmallVector<Value> {
            Value p = splat(load(scores, add(sRow, j)));
            Value vBase = keyRowBase(bufs, batch, g, add(k0, j), dv);
            SmallVector<Value> next;
            for (int64_t c = 0; c < dv; c += W)
              next.push_back(vector::FMAOp::create(
                  b, loc, p, vload(bufs.value, add(vBase, index(c))),
                  carried[c / W]));
            return next;
          });
      for (int64_t c = 0; c < dv; c += W)
        vstore(pv.getResult(c / W), acc, add(oBase, index(c)));
      };
      if (causal) {
        Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                          rowN, rowStart);
        auto ifAny = scf::IfOp::create(b, loc, any, /*withElse=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifAny.getThenRegion().front());
        blockBody();
        return {};
      }
      if (!sig.mask) {
        blockBody();
        return {};
      }
      // A block whose mask is -inf for every key of this row (the upper
      // triangle of a causal prefill) adds exactly nothing: skip it. Reads
      // past the row end only see other rows' mask (at worst no skip).
      Value maskMax = splat(ninf);
      for (int64_t c = 0; c < kb; c += W)
        maskMax = arith::MaximumFOp::create(
            b, loc, maskMax,
            widen(vector::TransferReadOp::create(
                b, loc, vecOf(bufs.mask, W), bufs.mask,
                ValueRange{add(maskBase, add(k0, index(c)))},
                arith::ConstantOp::create(
                    b, loc,
                    b.getFloatAttr(vecOf(bufs.mask, W).getElementType(), -kInf)),
                ArrayRef<bool>{false})));
      Value visible = arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::UNE,
          vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF,
                                      maskMax),
          ninf);
      auto ifVisible = scf::IfOp::create(b, loc, visible, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifVisible.getThenRegion().front());
      blockBody();
      return {};
    });
    return {};
  });

  // Publish: the normalised row, or the split's (o, m, l) partial.
  forLoop(b, loc, index(0), index(rowsPerItem), index(1), {},
          [&](Value r, ValueRange) -> SmallVector<Value> {
    Value row = rowOf(r).row;
    Value oBase = mul(r, index(dv));
    if (splits == 1) {
      Value l = splat(load(runSum, r));
      for (int64_t c = 0; c < dv; c += W)
        vstore(arith::DivFOp::create(b, loc, vload(acc, add(oBase, index(c))), l),
               bufs.out, add(mul(row, index(dv)), index(c)));
      return {};
    }
    Value base = mul(add(mul(row, index(splits)), split), index(dv + 2));
    for (int64_t c = 0; c < dv; c += W)
      vstore(vload(acc, add(oBase, index(c))), bufs.scratch,
             add(base, index(c)));
    store(load(runMax, r), bufs.scratch, add(base, index(dv)));
    store(load(runSum, r), bufs.scratch, add(base, index(dv + 1)));
    return {};
  });
}

void CpuAttentionKernel::emitCombine(const AttentionBuffers &bufs, Value row) {
  int64_t W = req.getLanes(), dv = req.getValueWidth(), stride = dv + 2,
          splits = req.getSplits();
  Value rowBase = mul(mul(row, index(splits)), index(stride));
  auto overSplits = [&](ValueRange inits,
                        function_ref<SmallVector<Value>(Value, ValueRange)> step) {
    return forLoop(b, loc, index(0), index(splits), index(1), inits,
                   [&](Value s, ValueRange carried) {
                     return step(add(rowBase, mul(s, index(stride))), carried);
                   });
  };
  Value maxM = overSplits({f32(-kInf)}, [&](Value sb, ValueRange carried) {
                 return SmallVector<Value>{arith::MaximumFOp::create(
                     b, loc, carried[0], load(bufs.scratch, add(sb, index(dv))))};
               }).getResult(0);
  SmallVector<Value> inits{f32(0.0)};
  for (int64_t c = 0; c < dv; c += W)
    inits.push_back(splat(f32(0.0)));
  scf::ForOp sums = overSplits(inits, [&](Value sb, ValueRange carried) {
    Value w = weight(load(bufs.scratch, add(sb, index(dv))), maxM);
    SmallVector<Value> next{
        add(carried[0], mul(load(bufs.scratch, add(sb, index(dv + 1))), w))};
    Value wv = splat(w);
    for (int64_t c = 0; c < dv; c += W)
      next.push_back(vector::FMAOp::create(
          b, loc, vload(bufs.scratch, add(sb, index(c))), wv,
          carried[1 + c / W]));
    return next;
  });
  Value den = splat(sums.getResult(0));
  for (int64_t c = 0; c < dv; c += W)
    vstore(arith::DivFOp::create(b, loc, sums.getResult(1 + c / W), den),
           bufs.out, add(mul(row, index(dv)), index(c)));
}
