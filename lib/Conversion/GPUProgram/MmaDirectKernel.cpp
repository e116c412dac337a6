//===- MmaDirectKernel.cpp - the tensor-core matmul for few rows ----------===//
//
// The direct kernel (MmaKernel.h): a workgroup owns 64 columns (8 tiles of
// 8) of one batch index and the rows of MmaWorkgroupShape. With few rows
// (decode) its 4 warps each stream a quarter of the reduction of that
// weight slice once for all the rows (16-64) in 16-byte loads, and combine
// their sums through workgroup memory in a fixed order (4x fewer partial
// sums than a split over workgroups would write); with 128-255 rows 2 or
// 4 warps take 64-row tiles of their own, over half or all of the
// reduction, loading the same weight fragments (L1 serves all but the
// first).
//
// The reduction index is permuted consistently between the two operands
// (a sum does not care in which order its products are taken), so that a
// thread's fragments come from whole 16-byte vectors: with g = lane / 4
// and c = lane % 4,
//  - a weight contiguous along the reduction ([N, K], torch's Linear): the
//    thread loads k = 8c .. 8c + 7 of column 8j + g for tile j, and mma
//    step s of a 32-wide chunk takes words 2s, 2s + 1 (logical k
//    2c + 8r + e is actual 8c + 4s + 2r + e); the lhs rows g, g + 8 load
//    the same 8 k as one vector;
//  - a weight contiguous along the columns ([K, N]): the thread loads rows
//    k = 4c .. 4c + 3 at columns 8g .. 8g + 7, tile j being the columns
//    8g' + j, and packs the k pairs of column j into words (logical k
//    2c + 8r + e is actual 4c + 2r + e); the lhs rows load 4 k.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/MmaKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

class MmaDirectKernel : public MmaKernelBase {
public:
  using MmaKernelBase::MmaKernelBase;

  void emit(gpu::GPUFuncOp func);

private:
  /// `count` elements at `idx` of a two-byte buffer as count / 2 words.
  SmallVector<Value> words(Value mem, Value idx, int64_t count) {
    auto vec = VectorType::get({count}, element);
    Value v = vector::LoadOp::create(b, loc, vec, mem, ValueRange{idx},
                                     /*nontemporal=*/false,
                                     llvm::MaybeAlign(count * 2));
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({count / 2}, b.getI32Type()), v);
    SmallVector<Value> out;
    for (int64_t i = 0; i < count / 2; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, w, i));
    return out;
  }
  /// Words of `count` consecutive k from `k` of one lhs row (zero words for
  /// a row past the end).
  SmallVector<Value> lhsWords(Value rowBase, Value valid, Value k,
                              int64_t count) {
    SmallVector<Value> w = words(lhsMem, add(rowBase, k), count);
    Value zero = i32(0);
    for (Value &word : w)
      word = select(valid, word, zero);
    return w;
  }
  /// Column of accumulator element i of tile j.
  Value column(int64_t j, int64_t i) {
    if (mm.weightAlongReduction)
      return add(n0, add(index(8 * j + i % 2), mul(c, index(2))));
    return add(n0, add(index(8 * (i % 2) + j), mul(c, index(16))));
  }
  /// Two words of the k pairs (k, k + 1) of column j from rows x = k and
  /// y = k + 1 of a [K, N] weight (4 words = 8 columns each).
  Value pairWord(ArrayRef<Value> x, ArrayRef<Value> y, int64_t j) {
    Value lo16 = i32(0xFFFF), hi16 = i32(static_cast<int32_t>(0xFFFF0000u));
    Value sixteen = i32(16);
    Value xw = x[j / 2], yw = y[j / 2];
    if (j % 2 == 0)
      return arith::OrIOp::create(
          b, loc, arith::AndIOp::create(b, loc, xw, lo16),
          arith::ShLIOp::create(b, loc, yw, sixteen));
    return arith::OrIOp::create(b, loc,
                                arith::ShRUIOp::create(b, loc, xw, sixteen),
                                arith::AndIOp::create(b, loc, yw, hi16));
  }

  Value g, c, n0;
};

void MmaDirectKernel::emit(gpu::GPUFuncOp func) {
  b.setInsertionPointToStart(&func.getBody().front());
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // Grid x runs over the row blocks, y over the column slices: the
  // workgroups that read one weight slice (a prefill's row blocks) run
  // together, so it comes from DRAM once and from L2 for the rest.
  Value rowBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value columnSlice = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value bz = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value warp = divui(tid, kWarp), lane = remui(tid, kWarp);
  // Warp w takes row tile w % rowWarps and reduction part w / rowWarps.
  Value rowWarp = remui(warp, plan.shape.rowWarps);
  Value kPart = divui(warp, plan.shape.rowWarps);
  g = divui(lane, 4);
  c = remui(lane, 4);
  n0 = mul(columnSlice, index(kMmaWarpColumns));

  // The batch index (the last batch loop fastest) and each operand's base.
  LoopValues batch = batchLoops(bz);
  Value outBase = offset(plan.out, batch, index(plan.out.offset));
  Value weightBase = offset(plan.weight, batch, index(plan.weight.offset));
  Value lhsBase = offset(plan.lhsAccess, batch, index(plan.lhsAccess.offset));

  // The thread's rows: g + 8h of each of the warp's m16 tiles.
  struct Row {
    Value valid;
    Value outBase, lhsBase;
  };
  SmallVector<std::array<Row, 2>> rows(plan.tiles);
  Value firstRow = add(mul(rowBlock, index(plan.shape.rows())),
                       mul(rowWarp, index(plan.shape.warpRows)));
  for (int64_t t = 0; t < plan.tiles; ++t)
    for (int h = 0; h < 2; ++h) {
      Value row = add(firstRow, add(g, index(16 * t + 8 * h)));
      Row &r = rows[t][h];
      r.valid = ult(row, index(plan.rows));
      LoopValues loops = rowLoops(row);
      r.outBase = offset(plan.out, loops, outBase);
      r.lhsBase = offset(plan.lhsAccess, loops, lhsBase);
    }

  // Accumulators [tile][j][i], flat: reduction part 0's start from the
  // fill's value, or the output's; the other parts' from 0 (their sums
  // join part 0's).
  int64_t outColumnCoefficient = plan.out.coefficients[mm.columns];
  auto accIndex = [&](int64_t t, int64_t j, int64_t i) {
    return (t * 8 + j) * 4 + i;
  };
  SmallVector<Value> init(plan.tiles * 32);
  for (int64_t t = 0; t < plan.tiles; ++t)
    for (int64_t j = 0; j < 8; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        if (plan.fill) {
          init[accIndex(t, j, i)] = f32(*plan.fill);
          continue;
        }
        const Row &r = rows[t][i / 2];
        Value idx = add(r.outBase, mul(column(j, i), index(outColumnCoefficient)));
        init[accIndex(t, j, i)] = select(r.valid, raw(outMem, idx), f32(0.0));
      }

  // This warp's part of the reduction.
  int64_t parts = plan.shape.reductionWarps();
  int64_t part = mm.reductionCount() / parts;
  Value kBegin = mul(kPart, index(part));
  Value firstWarp =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kPart, index(0));
  for (Value &v : init)
    v = select(firstWarp, v, f32(0.0));
  auto loop = scf::ForOp::create(b, loc, kBegin, add(kBegin, index(part)),
                                 index(plan.steps * (mm.weightAlongReduction ? 32 : 16)),
                                 init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kk = loop.getInductionVar();
    SmallVector<Value> acc(loop.getRegionIterArgs());
    auto step = [&](int64_t t, int64_t j, ArrayRef<Value> a,
                    ArrayRef<Value> bw) {
      MmaAcc in{acc[accIndex(t, j, 0)], acc[accIndex(t, j, 1)],
                acc[accIndex(t, j, 2)], acc[accIndex(t, j, 3)]};
      MmaAcc d = mma(a, bw, in);
      for (int64_t i = 0; i < 4; ++i)
        acc[accIndex(t, j, i)] = d[i];
    };
    int64_t wk = plan.weight.coefficients[mm.reduction];
    int64_t wn = plan.weight.coefficients[mm.columns];
    // All loads of the trip first (in flight together), then the mmas.
    struct Chunk {
      SmallVector<SmallVector<Value>> weight;              // [j] or [q]
      SmallVector<std::array<SmallVector<Value>, 2>> lhs;  // [t][h]
    };
    SmallVector<Chunk> chunks(plan.steps);
    for (int64_t s = 0; s < plan.steps; ++s) {
      Chunk &ch = chunks[s];
      if (mm.weightAlongReduction) {
        // 32 k: words of k = kk + 32 s + 8c .. + 7.
        Value k = add(kk, add(index(32 * s), mul(c, index(8))));
        for (int64_t j = 0; j < 8; ++j) {
          Value col = add(n0, add(g, index(8 * j)));
          ch.weight.push_back(words(
              weightMem, add(weightBase, add(mul(col, index(wn)), k)), 8));
        }
        for (int64_t t = 0; t < plan.tiles; ++t) {
          ch.lhs.emplace_back();
          for (int h = 0; h < 2; ++h)
            ch.lhs[t][h] = lhsWords(rows[t][h].lhsBase, rows[t][h].valid, k, 8);
        }
      } else {
        // 16 k: rows k = kk + 16 s + 4c + q at columns 8g .. 8g + 7.
        Value k = add(kk, add(index(16 * s), mul(c, index(4))));
        Value col = add(n0, mul(g, index(8)));
        for (int64_t q = 0; q < 4; ++q)
          ch.weight.push_back(words(
              weightMem,
              add(weightBase, add(mul(add(k, index(q)), index(wk)), col)), 8));
        for (int64_t t = 0; t < plan.tiles; ++t) {
          ch.lhs.emplace_back();
          for (int h = 0; h < 2; ++h)
            ch.lhs[t][h] = lhsWords(rows[t][h].lhsBase, rows[t][h].valid, k, 4);
        }
      }
    }
    for (const Chunk &ch : chunks) {
      if (mm.weightAlongReduction) {
        for (int64_t s2 = 0; s2 < 2; ++s2)
          for (int64_t t = 0; t < plan.tiles; ++t) {
            const auto &l = ch.lhs[t];
            Value a[4] = {l[0][2 * s2], l[1][2 * s2], l[0][2 * s2 + 1],
                          l[1][2 * s2 + 1]};
            for (int64_t j = 0; j < 8; ++j)
              step(t, j, a, {ch.weight[j][2 * s2], ch.weight[j][2 * s2 + 1]});
          }
      } else {
        SmallVector<std::array<Value, 2>> bw(8);
        for (int64_t j = 0; j < 8; ++j)
          bw[j] = {pairWord(ch.weight[0], ch.weight[1], j),
                   pairWord(ch.weight[2], ch.weight[3], j)};
        for (int64_t t = 0; t < plan.tiles; ++t) {
          const auto &l = ch.lhs[t];
          Value a[4] = {l[0][0], l[1][0], l[0][1], l[1][1]};
          for (int64_t j = 0; j < 8; ++j)
            step(t, j, a, bw[j]);
        }
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }

  // The parts' sums combined in a fixed order (the last part first, part
  // 0 last) through workgroup memory: element i of lane l of row warp r at
  // (i * rowWarps + r) * 32 + l.
  SmallVector<Value> sum(loop.getResults());
  if (parts > 1) {
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    int64_t rowWarps = plan.shape.rowWarps;
    Value shared = func.addWorkgroupAttribution(
        MemRefType::get({static_cast<int64_t>(sum.size()) * rowWarps * kWarp},
                        b.getF32Type(), AffineMap(), space),
        loc);
    Value own = add(mul(rowWarp, index(kWarp)), lane);
    auto slot = [&](int64_t i) { return add(index(i * rowWarps * kWarp), own); };
    for (int64_t w = parts - 1; w >= 0; --w) {
      auto mine = scf::IfOp::create(
          b, loc, ValueRange(sum).getTypes(),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kPart,
                                index(w)),
          /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(mine.thenBlock());
        SmallVector<Value> mineSum(sum);
        for (auto [i, v] : llvm::enumerate(mineSum)) {
          if (w != parts - 1)
            v = add(v, memref::LoadOp::create(b, loc, shared, ValueRange{slot(i)}));
          if (w != 0)
            memref::StoreOp::create(b, loc, v, shared, ValueRange{slot(i)});
        }
        scf::YieldOp::create(b, loc, mineSum);
        b.setInsertionPointToStart(mine.elseBlock());
        scf::YieldOp::create(b, loc, sum);
      }
      sum.assign(mine.getResults().begin(), mine.getResults().end());
      if (w != 0)
        gpu::BarrierOp::create(b, loc);
    }
  }

  // The sums, part 0's warps storing: one guarded store per valid row.
  auto first = scf::IfOp::create(b, loc, firstWarp, /*withElseRegion=*/false);
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPoint(first.thenBlock()->getTerminator());
  for (int64_t t = 0; t < plan.tiles; ++t)
    for (int h = 0; h < 2; ++h) {
      const Row &r = rows[t][h];
      auto store = scf::IfOp::create(b, loc, r.valid, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(store.thenBlock()->getTerminator());
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t i = 2 * h; i < 2 * h + 2; ++i) {
          Value idx = add(r.outBase, mul(column(j, i), index(outColumnCoefficient)));
          storeSum(idx, sum[accIndex(t, j, i)]);
        }
    }
}

} // namespace

void mlir::poot::emitMmaDirectKernel(OpBuilder &b, Location loc,
                                     const MmaPlan &plan,
                                     gpu::GPUFuncOp func) {
  MmaDirectKernel(b, loc, plan, func).emit(func);
}
