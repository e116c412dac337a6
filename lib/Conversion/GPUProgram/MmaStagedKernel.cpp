//===- MmaStagedKernel.cpp - the tensor-core matmul for prefill sizes -----===//
//
// The staged kernel (MmaKernel.h): a workgroup of 4 warps owns a tile of
// TM rows x 128 columns of the output (grid x the row blocks, fastest, y
// the column blocks, z the batch). TM = 128 (prefill): warp w owns the
// 64 x 64 quarter at rows 64 (w % 2), columns 64 (w / 2): 4 m16 tiles x 8
// n8 tiles, 128 f32 accumulators a thread. TM = 16-64 (decode rows): warp
// w owns all TM rows of columns 32 w .. 32 w + 31 (4 n8 tiles). The
// reduction is walked 32 at a time; each step's lhs tile (TM rows x 32)
// and weight tile (128 columns x 32) are copied into workgroup memory by
// cp.async, S - 1 steps ahead of the one the warps compute on (S buffers:
// 3 of 16 KB for TM = 128, 4 of at most 12 KB below), so every operand
// byte crosses L2 once per workgroup, many bytes are in flight without
// holding registers, and the warps read fragments by ldmatrix (one
// instruction for four 8 x 8 fragments) instead of a load per fragment.
//
// Workgroup memory of one buffer: the lhs tile at bytes [0, 64 TM) as rows
// of 64 bytes (4 chunks of 16), the weight tile after it -- rows of 64
// bytes per column when the weight is contiguous along the reduction
// ([N, K]), else rows of 256 bytes per k ([K, N]). A chunk's position in
// its row is XOR-swizzled by the row ((row / 2) % 4 for 64-byte rows, row %
// 8 for 256-byte rows) so that the 8 row addresses of one ldmatrix matrix
// fall on distinct banks.
//
// Fragments are the PTX ISA's (MmaFragments.h): the lhs by ldmatrix, the
// weight by ldmatrix ([N, K]: a row per column is B's column-major layout)
// or ldmatrix.trans ([K, N]). Rows past the end are copied as zeros (a
// cp.async of 0 bytes) and not stored.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/GPUProgram/MmaKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

constexpr int64_t kColumns = kMmaStagedColumns;
constexpr int64_t kDepth = kMmaStagedDepth; // reduction a step
constexpr int64_t kChunk = 8;               // elements, 16 bytes
constexpr int64_t kRowBytes = kDepth * 2;   // an lhs row of one step
constexpr int64_t kThreads = kMmaWarpsPerColumns * MmaBuilder::kWarp;
constexpr int64_t kWeightBytes = kColumns * kRowBytes; // 8 KB
/// Chunks of the weight tile each thread copies a step.
constexpr int64_t kWeightCopies = kColumns * kDepth / kChunk / kThreads;
static_assert(kWeightCopies * kThreads * kChunk == kColumns * kDepth,
              "the threads copy the weight tile in whole chunks");

class MmaStagedKernel : public MmaKernelBase {
public:
  using MmaKernelBase::MmaKernelBase;

  void emit(gpu::GPUFuncOp func);

private:
  Value xori(Value x, Value y) {
    return arith::XOrIOp::create(b, loc, x, y);
  }
};

void MmaStagedKernel::emit(gpu::GPUFuncOp func) {
  b.setInsertionPointToStart(&func.getBody().front());
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value rowBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value columnBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value bz = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  const MmaWorkgroupShape &shape = plan.shape;
  const int64_t tileRows = shape.rows(), stages = shape.stages();
  const int64_t mTiles = shape.warpRows / 16;
  const int64_t nTiles = kColumns / shape.columnWarps() / 8;
  const int64_t lhsBytes = tileRows * kRowBytes;
  const int64_t bufferBytes = lhsBytes + kWeightBytes;
  Value warp = divui(tid, kWarp), lane = remui(tid, kWarp);
  Value warpRow = mul(remui(warp, shape.rowWarps), index(shape.warpRows));
  Value warpColumn = mul(divui(warp, shape.rowWarps), index(8 * nTiles));
  Value g = divui(lane, 4), c = remui(lane, 4);
  Value m0 = mul(rowBlock, index(tileRows));
  Value n0 = mul(columnBlock, index(kColumns));

  LoopValues batch = batchLoops(bz);
  Value outBase = offset(plan.out, batch, index(plan.out.offset));
  Value weightBase = offset(plan.weight, batch, index(plan.weight.offset));
  Value lhsBase = offset(plan.lhsAccess, batch, index(plan.lhsAccess.offset));
  int64_t wk = plan.weight.coefficients[mm.reduction];
  int64_t wn = plan.weight.coefficients[mm.columns];
  bool alongReduction = mm.weightAlongReduction;

  auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                          gpu::AddressSpace::Workgroup);
  Value shared = func.addWorkgroupAttribution(
      MemRefType::get({stages * bufferBytes / 4}, b.getI32Type(),
                      AffineMap(), space),
      loc);
  Value ldsBase = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, shared);
  Value lhsAddress =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, lhsMem);
  Value weightAddress =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, weightMem);

  // This thread's copies of a step: chunk e = tid + kThreads i of each
  // tile. A 64-byte row (lhs; [N, K] weight) is 4 chunks: row tid / 4 + 32 i,
  // chunk tid % 4, swizzled by (row / 2) % 4 = (tid / 8) % 4. A 256-byte row
  // ([K, N] weight) is 16 chunks: k = tid / 16 + 8 i, chunk tid % 16,
  // swizzled by k % 8 = tid / 16. An lhs tile of 16 rows is 64 chunks:
  // threads 0-63 copy it.
  struct Copy {
    Value from;   // element offset at reduction step 0
    Value to;     // byte offset in a buffer
    Value bytes;  // 16, or 0 for a row past the end (null: always 16)
  };
  SmallVector<Copy> lhsCopies, weightCopies;
  int64_t lhsChunks = tileRows * kRowBytes / 16;
  Value copiesLhs = lhsChunks < kThreads ? ult(tid, index(lhsChunks)) : Value();
  {
    Value rowOf4 = divui(tid, 4), chunkOf4 = remui(tid, 4);
    Value swizzled4 = xori(chunkOf4, remui(divui(tid, 8), 4));
    Value zero = i32(0), sixteen = i32(16);
    // Row rowOf4 + 32 i of a tile of 64-byte rows, and its chunk's byte
    // offset in the tile.
    auto row64 = [&](int64_t i) {
      Value r = add(rowOf4, index(32 * i));
      return std::pair(r, add(mul(r, index(kRowBytes)), mul(swizzled4, index(16))));
    };
    for (int64_t i = 0; i * kThreads < lhsChunks; ++i) {
      auto [r, to] = row64(i);
      // The lhs: rows past the end read the last row's address, 0 bytes.
      Value row = add(m0, r);
      Value lhsRow = offset(plan.lhsAccess,
                            rowLoops(row), lhsBase);
      Copy lhs{add(lhsRow, mul(chunkOf4, index(kChunk))), to, Value()};
      if (plan.rows % tileRows)
        lhs.bytes = select(ult(row, index(plan.rows)), sixteen, zero);
      lhsCopies.push_back(lhs);
    }
    Value kOf16 = divui(tid, 16), chunkOf16 = remui(tid, 16);
    Value swizzled16 = xori(chunkOf16, kOf16);
    for (int64_t i = 0; i < kWeightCopies; ++i) {
      Copy w;
      if (alongReduction) {
        auto [r, to] = row64(i);
        w.from = add(weightBase, add(mul(add(n0, r), index(wn)),
                                     mul(chunkOf4, index(kChunk))));
        w.to = to;
      } else {
        Value k = add(kOf16, index(8 * i));
        w.from = add(weightBase, add(mul(k, index(wk)),
                                     add(n0, mul(chunkOf16, index(kChunk)))));
        w.to = add(mul(k, index(2 * kColumns)), mul(swizzled16, index(16)));
      }
      weightCopies.push_back(w);
    }
  }
  // Step `step`'s tiles into buffer `slot`.
  auto issue = [&](Value step, Value slot) {
    Value bufferAt = add(ldsBase, mul(slot, index(bufferBytes)));
    Value lhsStep = mul(step, index(kDepth));
    Value weightStep = mul(step, index(alongReduction ? kDepth : kDepth * wk));
    {
      OpBuilder::InsertionGuard guard(b);
      if (copiesLhs) {
        auto some = scf::IfOp::create(b, loc, copiesLhs, /*withElse=*/false);
        b.setInsertionPointToStart(&some.getThenRegion().front());
      }
      for (const Copy &copy : lhsCopies)
        copyAsync(sharedPtr(bufferAt, copy.to),
                  globalPtr(lhsAddress, add(copy.from, lhsStep)), copy.bytes);
    }
    Value weightAt = add(bufferAt, index(lhsBytes));
    for (const Copy &copy : weightCopies)
      copyAsync(sharedPtr(weightAt, copy.to),
                globalPtr(weightAddress, add(copy.from, weightStep)),
                copy.bytes);
  };

  // This lane's ldmatrix row addresses (bytes in a buffer).
  //  - lhs, m16 tile t, k16 step s: matrix q = lane / 8 is rows
  //    8 (q % 2) .. + 7 at chunk 2 s + q / 2; row (lane % 8) + 8 (q % 2),
  //    swizzled by (lane % 8) / 2.
  //  - [N, K] weight, n8 tile j: matrix q is chunk q of columns
  //    8 j .. 8 j + 7 of the warp's (words 2 s, 2 s + 1: step s's two B
  //    registers).
  //  - [K, N] weight, n8 tile j: matrix q is k = 8 q .. 8 q + 7 (lane l
  //    addresses k = l), transposed; chunk (warpColumn + 8 j) / 8 swizzled
  //    by l % 8.
  Value lane8 = remui(lane, 8), quarter = divui(lane, 8);
  Value swizzle = divui(lane8, 2);
  std::array<Value, 2> lhsLane;
  for (int64_t s = 0; s < 2; ++s) {
    Value row = add(warpRow, add(lane8, mul(remui(quarter, 2), index(8))));
    Value chunk = xori(add(index(2 * s), divui(quarter, 2)), swizzle);
    lhsLane[s] = add(mul(row, index(kRowBytes)), mul(chunk, index(16)));
  }
  SmallVector<Value> weightLane(nTiles);
  for (int64_t j = 0; j < nTiles; ++j) {
    if (alongReduction) {
      Value column = add(warpColumn, add(index(8 * j), lane8));
      weightLane[j] =
          add(index(lhsBytes), add(mul(column, index(kRowBytes)),
                                   mul(xori(quarter, swizzle), index(16))));
    } else {
      Value chunk = xori(add(divui(warpColumn, 8), index(j)), lane8);
      weightLane[j] = add(index(lhsBytes),
                          add(mul(lane, index(2 * kColumns)), mul(chunk, index(16))));
    }
  }

  // The thread's rows: g + 8h of each of the warp's m16 tiles.
  struct Row {
    Value valid, outBase;
  };
  SmallVector<std::array<Row, 2>> rows(mTiles);
  for (int64_t t = 0; t < mTiles; ++t)
    for (int h = 0; h < 2; ++h) {
      Value row = add(m0, add(warpRow, add(g, index(16 * t + 8 * h))));
      rows[t][h].valid = ult(row, index(plan.rows));
      rows[t][h].outBase =
          offset(plan.out, rowLoops(row), outBase);
    }
  int64_t outColumnCoefficient = plan.out.coefficients[mm.columns];
  auto outIndex = [&](int64_t t, int64_t j, int64_t i) {
    Value column =
        add(n0, add(warpColumn, add(mul(c, index(2)), index(8 * j + i % 2))));
    return add(rows[t][i / 2].outBase,
               mul(column, index(outColumnCoefficient)));
  };
  auto accIndex = [&](int64_t t, int64_t j, int64_t i) {
    return (t * nTiles + j) * 4 + i;
  };
  SmallVector<Value> init(mTiles * nTiles * 4);
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t j = 0; j < nTiles; ++j)
      for (int64_t i = 0; i < 4; ++i)
        init[accIndex(t, j, i)] =
            plan.fill ? f32(*plan.fill)
                      : select(rows[t][i / 2].valid,
                               raw(outMem, outIndex(t, j, i)), f32(0.0));

  // The pipeline: steps 0 .. S - 2 in flight before the walk; step
  // kt + S - 1 is issued once every warp is past step kt - 1 (whose buffer
  // it reuses).
  int64_t steps = mm.reductionCount() / kDepth;
  for (int64_t s = 0; s < stages - 1; ++s) {
    issue(index(s), index(s));
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  auto walk = scf::ForOp::create(b, loc, index(0), index(steps), index(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(walk.getBody());
    Value kt = walk.getInductionVar();
    SmallVector<Value> acc(walk.getRegionIterArgs());
    // Step kt's copies done (one newer group may be pending), then the
    // barrier makes every thread's copies visible.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, stages - 2);
    gpu::BarrierOp::create(b, loc);
    Value next = add(kt, index(stages - 1));
    {
      auto ahead = scf::IfOp::create(b, loc, ult(next, index(steps)),
                                     /*withElseRegion=*/false);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&ahead.getThenRegion().front());
      issue(next, remui(next, stages));
    }
    NVVM::CpAsyncCommitGroupOp::create(b, loc);

    Value bufferAt = add(ldsBase, mul(remui(kt, stages), index(bufferBytes)));
    // B registers of both k16 steps, then per step the A fragments and
    // the warp's mmas.
    SmallVector<SmallVector<Value>> weight;
    for (int64_t j = 0; j < nTiles; ++j)
      weight.push_back(ldmatrix(sharedPtr(bufferAt, weightLane[j]), 4,
                                /*trans=*/!alongReduction));
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t t = 0; t < mTiles; ++t) {
        SmallVector<Value> a = ldmatrix(
            sharedPtr(bufferAt, add(lhsLane[s], index(16 * t * kRowBytes))),
            4, /*trans=*/false);
        for (int64_t j = 0; j < nTiles; ++j) {
          MmaAcc in{acc[accIndex(t, j, 0)], acc[accIndex(t, j, 1)],
                    acc[accIndex(t, j, 2)], acc[accIndex(t, j, 3)]};
          MmaAcc d = mma(a, {weight[j][2 * s], weight[j][2 * s + 1]}, in);
          for (int64_t i = 0; i < 4; ++i)
            acc[accIndex(t, j, i)] = d[i];
        }
      }
    scf::YieldOp::create(b, loc, acc);
  }

  // The sums: one guarded store (or epilogue) per valid row.
  SmallVector<Value> sum(walk.getResults());
  for (int64_t t = 0; t < mTiles; ++t)
    for (int h = 0; h < 2; ++h) {
      auto store =
          scf::IfOp::create(b, loc, rows[t][h].valid, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(store.thenBlock()->getTerminator());
      for (int64_t j = 0; j < nTiles; ++j)
        for (int64_t i = 2 * h; i < 2 * h + 2; ++i)
          storeSum(outIndex(t, j, i), sum[accIndex(t, j, i)]);
    }
  gpu::ReturnOp::create(b, loc);
}

} // namespace

void mlir::poot::emitMmaStagedKernel(OpBuilder &b, Location loc,
                                     const MmaPlan &plan,
                                     gpu::GPUFuncOp func) {
  MmaStagedKernel(b, loc, plan, func).emit(func);
}
