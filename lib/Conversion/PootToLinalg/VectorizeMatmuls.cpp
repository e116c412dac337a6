//===- VectorizeMatmuls.cpp - poot-cpu-vectorize-matmuls ------------------===//
//
// The step's linear layers (linalg.matmul, f32, static shapes) as vector
// code, with upstream's tiling and vectorization, on buffers (after
// bufferization: tiled tensor IR made one-shot bufferization's analysis of a
// decoder step ~3x slower). Each TM x TN x TK tile is vectorized to one
// vector.contract (the accumulator tile is re-read per K step from L1:
// upstream's hoistRedundantVectorTransfers did not hoist it here, measured
// cost ~8 memory ops per 64 FMAs), which lowers to outer products, i.e.
// FMAs of a broadcast lhs element with a row of the rhs. The loops around
// the tiles depend on the rows: a decode matmul (few rows) is a stream of
// its weight, so an scf.parallel over column chunks (an even share per
// thread) runs K in steps of TK outside the chunk's tiles: contiguous runs
// of each weight row, the weight read once for all rows (with more rows
// than one tile, K in L2-sized bands whose tiles keep their output tile in
// registers through their own K loop). A prefill matmul
// (many rows) gets an scf.parallel over output tiles, each with its own K
// loop. The parallel loops become OpenMP loops downstream (big matmuls
// only: a tiny one is not worth a parallel region).
//
// A weight stored [N, K] (a torch Linear's `x @ W.T`: the map (n, k) on the
// rhs) has contiguous rows of K, not of N, so the outer-product form would
// read it with a stride of K elements. Each output y[m, n] is instead a dot
// product of two contiguous rows, x[m, :] and W[n, :]: a register tile of
// TM rows x TN columns keeps TM*TN vector accumulators over K (contiguous
// vector loads of TN weight rows in flight, one FMA per lane, no horizontal
// work in the loop), each reduced horizontally once at the end. Upstream's
// vector.contract lowerings for this form (dot, or outer products after a
// transpose) reduce horizontally at every K step or shuffle the weight
// tile, so the tile is written here with vector.load / vector.fma /
// vector.reduction, inside the same scf.parallel over column tiles as the
// [K, N] path (OpenMP downstream).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"
#include "lib/Transforms/DeviceDescription.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTCPUVECTORIZEMATMULS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// The largest divisor of `n` that is <= `cap`.
int64_t divisorAtMost(int64_t n, int64_t cap) {
  for (int64_t t = std::min(n, cap); t > 1; --t)
    if (n % t == 0)
      return t;
  return 1;
}

/// The widest of 4, 2, 1 vectors (then halves of one) that divides `n`.
int64_t vectorTile(int64_t n, int64_t width) {
  for (int64_t t = 4 * width; t >= 1; t /= 2)
    if (n % t == 0)
      return t;
  return 1;
}

/// A float type the tiles read and widen exactly to f32.
bool isWidenableToF32(Type type) {
  return type.isF32() || type.isBF16() || type.isF16();
}

/// A [K, N] matmul (the default maps) on static memrefs: f32 accumulators,
/// f32/bf16/f16 operands.
bool isStaticKN(linalg::MatmulOp op) {
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape())
      return false;
  }
  auto elementOf = [](Value v) {
    return cast<MemRefType>(v.getType()).getElementType();
  };
  // Default indexing maps only (no transposed/broadcast variants).
  return op.hasPureBufferSemantics() &&
         op.getIndexingMapsArray() ==
             linalg::MatmulOp::getDefaultIndexingMaps(op.getContext()) &&
         elementOf(op.getOutputs()[0]).isF32() &&
         isWidenableToF32(elementOf(op.getInputs()[0])) &&
         isWidenableToF32(elementOf(op.getInputs()[1]));
}

/// The maps of `x @ W.T` with W [N, K]: (m, n, k) -> (m, k), (n, k), (m, n).
SmallVector<AffineMap> transposedRhsMaps(MLIRContext *ctx) {
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  return {AffineMap::get(3, 0, {m, k}, ctx), AffineMap::get(3, 0, {n, k}, ctx),
          AffineMap::get(3, 0, {m, n}, ctx)};
}

/// A contraction on static memrefs with the [N, K] rhs maps (a
/// `linalg.matmul` with those maps or a `linalg.generic` with the same maps
/// and a multiply-add body): f32 accumulators, f32/bf16/f16 operands whose
/// rows are contiguous (vector loads along K).
bool isStaticTransposedRhs(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 ||
      op.getIndexingMapsArray() != transposedRhsMaps(op->getContext()) ||
      !linalg::isaContractionOpInterface(op))
    return false;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape() || !type.isLastDimUnitStride())
      return false;
  }
  auto elementOf = [](Value v) {
    return cast<MemRefType>(v.getType()).getElementType();
  };
  return elementOf(op.getDpsInits()[0]).isF32() &&
         isWidenableToF32(elementOf(op.getDpsInputs()[0])) &&
         isWidenableToF32(elementOf(op.getDpsInputs()[1]));
}

/// The register tile of the dot-product form: TM rows x TN columns x TU
/// consecutive vectors of K, TM*TN*TU vector accumulators, `accumulators`
/// of them at most (half the host's vector registers: the loaded vectors
/// need the rest).
struct DotTile {
  int64_t tm, tn, tu;
};

/// One or two lhs rows that fit in L1 beside the weight stream (K *
/// element bytes * TM <= 8 KiB): one weight row at a time, TU = 8 vectors
/// of it per step (accumulators for the FMA latency), so a thread reads its
/// rows of W as one sequential stream (consecutive rows are adjacent).
/// Otherwise TN = 2..8 weight rows at a time share each lhs load (a long
/// lhs row is read once per TN weight rows, not once per weight row; TM
/// rows share each weight load). Measured on the 2-core EPYC, one row, F32,
/// interleaved (bench/NOTES.md, 2026-12-07): on a quiet machine every tile
/// reads 25-29 GB/s at K 512-8192; with another process busy on the
/// machine, K 512 read 11.9 GB/s one row at a time against 7.2 with 8 rows,
/// and K 8192 11.6 with 8 rows against 8.2 one row at a time.
DotTile dotTile(int64_t m, int64_t n, int64_t k, int64_t lhsBytes,
                int64_t accumulators) {
  int64_t tm = std::min<int64_t>(m, 4);
  if (tm <= 2 && tm * k * lhsBytes <= 8 * 1024)
    return {tm, 1, std::min<int64_t>(accumulators / tm, 8)};
  int64_t tn = std::clamp<int64_t>(accumulators / tm, 2, 8);
  return {tm, std::min(tn, n), 1};
}

/// The operands of one [N, K]-rhs contraction and the host's vector.
struct DotOperands {
  Value lhs, rhs, out;
  int64_t k;
  int64_t width;
  /// The host has AVX512-BF16 (`bf16-dot`).
  bool bf16Dot = false;
};

/// `out[i0 + r, j0 + c] += sum_k lhs[i0 + r, k] * rhs[j0 + c, k]` for r < tm,
/// c < tn: vector accumulators over the K loop (tu of them per output, on
/// consecutive vectors of K), one horizontal reduction each at the end, a
/// one-vector loop and then a scalar loop for K's remainders.
void emitDotTile(OpBuilder &b, Location loc, const DotOperands &o, Value i0,
                 Value j0, int64_t tm, int64_t tn, int64_t tu) {
  Type f32 = b.getF32Type();
  auto accType = VectorType::get({o.width}, f32);
  Type lhsElement = cast<MemRefType>(o.lhs.getType()).getElementType();
  Type rhsElement = cast<MemRefType>(o.rhs.getType()).getElementType();
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  SmallVector<Value> rows, cols;
  for (int64_t r = 0; r < tm; ++r)
    rows.push_back(r ? arith::AddIOp::create(b, loc, i0, index(r)).getResult()
                     : i0);
  for (int64_t c = 0; c < tn; ++c)
    cols.push_back(c ? arith::AddIOp::create(b, loc, j0, index(c)).getResult()
                     : j0);
  // 16-bit operands are loaded as such (half the bytes) and widened exactly
  // in registers: f32 accumulation, as linalg.matmul's body does.
  auto widen = [&](OpBuilder &nb, Location l, Value v) -> Value {
    Type element = getElementTypeOrSelf(v.getType());
    if (element.isF32())
      return v;
    Type to = isa<VectorType>(v.getType()) ? Type(accType) : f32;
    return arith::ExtFOp::create(nb, l, to, v);
  };
  int64_t outputs = tm * tn;
  // bf16 x bf16 on a host with AVX512-BF16: each vector step takes 2 * 16
  // elements of K as they are (no widening) into one vdpbf16ps per output,
  // which adds the exact f32 products of each pair to its f32 lane (bf16
  // subnormal inputs read as zero: the instruction's DAZ).
  bool pairs = o.bf16Dot && o.width == 16 && lhsElement.isBF16() &&
               rhsElement.isBF16();
  int64_t step = pairs ? 2 * o.width : o.width;
  // Each of `lines` (lhs rows, or rows of the [N, K] rhs) of `mem` at
  // reduction index `k`: a `step`-vector of `element`s (widened to f32
  // unless `pairs`), or one widened element when `element` is null (the
  // scalar tail).
  auto loadLines = [&](OpBuilder &nb, Location l, Value mem,
                       ArrayRef<Value> lines, Value k, Type element) {
    SmallVector<Value> loaded;
    for (Value line : lines) {
      Value v =
          element
              ? vector::LoadOp::create(nb, l, VectorType::get({step}, element),
                                       mem, ValueRange{line, k})
                    .getResult()
              : memref::LoadOp::create(nb, l, mem, ValueRange{line, k})
                    .getResult();
      loaded.push_back(element && pairs ? v : widen(nb, l, v));
    }
    return loaded;
  };
  // One loop over [lo, hi) in steps of `unroll` vectors: acc[(r*tn+c)*unroll
  // + u] += lhs[row r, k + u*step] * rhs[col c, k + u*step].
  auto vectorLoop = [&](int64_t lo, int64_t hi, int64_t unroll,
                        ValueRange init) {
    return scf::ForOp::create(
               b, loc, index(lo), index(hi), index(unroll * step), init,
               [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
                 SmallVector<Value> next(acc.begin(), acc.end());
                 for (int64_t u = 0; u < unroll; ++u) {
                   Value ku = u ? arith::AddIOp::create(
                                      nb, l, k,
                                      arith::ConstantIndexOp::create(
                                          nb, l, u * step))
                                      .getResult()
                                : k;
                   SmallVector<Value> xs =
                       loadLines(nb, l, o.lhs, rows, ku, lhsElement);
                   SmallVector<Value> ws =
                       loadLines(nb, l, o.rhs, cols, ku, rhsElement);
                   for (int64_t r = 0; r < tm; ++r)
                     for (int64_t c = 0; c < tn; ++c) {
                       int64_t a = (r * tn + c) * unroll + u;
                       next[a] =
                           pairs ? x86vector::DotBF16Op::create(
                                       nb, l, accType, next[a], xs[r], ws[c])
                                       .getResult()
                                 : vector::FMAOp::create(nb, l, xs[r], ws[c],
                                                         next[a])
                                       .getResult();
                     }
                 }
                 scf::YieldOp::create(nb, l, next);
               })
        .getResults();
  };

  Value zero =
      arith::ConstantOp::create(b, loc, accType, b.getZeroAttr(accType));
  SmallVector<Value> accs(outputs, zero);
  int64_t kUnrolled = o.k / (tu * step) * (tu * step);
  if (kUnrolled > 0) {
    SmallVector<Value> init(outputs * tu, zero);
    ValueRange wide = vectorLoop(0, kUnrolled, tu, init);
    // The tu partial sums of each output added as vectors.
    for (int64_t a = 0; a < outputs; ++a) {
      Value sum = wide[a * tu];
      for (int64_t u = 1; u < tu; ++u)
        sum = arith::AddFOp::create(b, loc, sum, wide[a * tu + u]);
      accs[a] = sum;
    }
  }
  int64_t kMain = o.k / step * step;
  if (kMain > kUnrolled) {
    ValueRange rest = vectorLoop(kUnrolled, kMain, 1, accs);
    accs.assign(rest.begin(), rest.end());
  }
  SmallVector<Value> sums;
  if (kMain > 0) {
    for (Value acc : accs)
      sums.push_back(vector::ReductionOp::create(
          b, loc, vector::CombiningKind::ADD, acc));
  } else {
    Value zero = arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0));
    sums.assign(outputs, zero);
  }
  if (kMain < o.k) {
    auto tail = scf::ForOp::create(
        b, loc, index(kMain), index(o.k), index(1), sums,
        [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
          SmallVector<Value> xs = loadLines(nb, l, o.lhs, rows, k, Type());
          SmallVector<Value> ws = loadLines(nb, l, o.rhs, cols, k, Type());
          SmallVector<Value> next;
          for (int64_t r = 0; r < tm; ++r)
            for (int64_t c = 0; c < tn; ++c)
              next.push_back(math::FmaOp::create(nb, l, xs[r], ws[c],
                                                 acc[r * tn + c]));
          scf::YieldOp::create(nb, l, next);
        });
    sums.assign(tail.getResults().begin(), tail.getResults().end());
  }
  // The matmul accumulates into its output (its init, a fill of zeros).
  for (int64_t r = 0; r < tm; ++r)
    for (int64_t c = 0; c < tn; ++c) {
      ValueRange at{rows[r], cols[c]};
      Value old = memref::LoadOp::create(b, loc, o.out, at);
      Value sum = arith::AddFOp::create(b, loc, old, sums[r * tn + c]);
      memref::StoreOp::create(b, loc, sum, o.out, at);
    }
}

/// The operands of one bf16 x bf16 [K, N] matmul on AVX512-BF16 (16 f32
/// lanes), and its register tile: TN columns (TN / 16 vectors) of TM rows.
struct PairOperands {
  Value lhs, rhs, out;
  int64_t tn;
  /// Columns of one strip (a multiple of tn): the band buffer's width.
  int64_t strip;
};

/// One vdpbf16ps operand per 16 columns: W[k, j..j+15] and W[k+1, j..j+15]
/// interleaved, so lane i holds the pair (W[k, j+i], W[k+1, j+i]).
Value weightPairs(OpBuilder &b, Location loc, Value rhs, Value k, Value k1,
                  Value j) {
  Type bf16 = b.getBF16Type();
  auto half = VectorType::get({16}, bf16);
  Value lo = vector::LoadOp::create(b, loc, half, rhs, ValueRange{k, j});
  Value hi = vector::LoadOp::create(b, loc, half, rhs, ValueRange{k1, j});
  SmallVector<int64_t> mask;
  for (int64_t i = 0; i < 16; ++i)
    mask.append({i, 16 + i});
  return vector::ShuffleOp::create(b, loc, lo, hi, mask);
}

/// The other operand: the pair (x[i, k], x[i, k+1]) as one 32-bit word in
/// every lane (a broadcast of 4 bytes).
Value lhsPairs(OpBuilder &b, Location loc, Value lhs, Value i, Value k) {
  Type bf16 = b.getBF16Type(), i32 = b.getI32Type();
  Value pair = vector::LoadOp::create(b, loc, VectorType::get({2}, bf16), lhs,
                                      ValueRange{i, k});
  Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, i32),
                                         pair);
  Value scalar = vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
  Value splat = vector::BroadcastOp::create(b, loc, VectorType::get({16}, i32),
                                            scalar);
  return vector::BitCastOp::create(b, loc, VectorType::get({32}, bf16), splat);
}

/// The band's weight pairs, once for every row tile of the strip:
/// `pairs[p, c]` = weightPairs of rows k0 + 2p, k0 + 2p + 1 and columns
/// j0 + 16c.. (kb / 2 x TN / 16 vectors of 32 bf16: 16 KiB at kb = 128,
/// TN = 64, in L1 while the row tiles pass over it).
void interleaveBand(OpBuilder &b, Location loc, const PairOperands &o,
                    Value pairs, Value j0, Value k0, int64_t kb) {
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  scf::ForOp::create(
      b, loc, index(b, 0), index(b, kb / 2), index(b, 1), ValueRange{},
      [&](OpBuilder &nb, Location l, Value p, ValueRange) {
        Value k = arith::AddIOp::create(
            nb, l, k0, arith::MulIOp::create(nb, l, p, index(nb, 2)));
        Value kNext = arith::AddIOp::create(nb, l, k, index(nb, 1));
        for (int64_t c = 0; c < o.strip / 16; ++c) {
          Value j = arith::AddIOp::create(nb, l, j0, index(nb, 16 * c));
          Value w = weightPairs(nb, l, o.rhs, k, kNext, j);
          vector::StoreOp::create(nb, l, w, pairs,
                                  ValueRange{p, index(nb, c), index(nb, 0)});
        }
        scf::YieldOp::create(nb, l);
      });
}

/// `out[i0 + r, j0 + c] += sum_{k in [k0, k0 + kb)} lhs[i0 + r, k] *
/// rhs[k, j0 + c]` for r < tm, c < o.tn, the weight read from the band's
/// `pairs` (interleaveBand): the output tile in tm * tn / 16 registers
/// through the band's K loop, two K rows a step.
void emitPairTile(OpBuilder &b, Location loc, const PairOperands &o,
                  Value pairs, Value i0, Value j0, Value c0, Value k0,
                  int64_t kb, int64_t tm) {
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  auto add = [&](OpBuilder &nb, Value a, int64_t v) -> Value {
    return v ? arith::AddIOp::create(nb, loc, a, index(nb, v)).getResult() : a;
  };
  auto accType = VectorType::get({16}, b.getF32Type());
  auto pairType = VectorType::get({32}, b.getBF16Type());
  int64_t vectors = o.tn / 16;
  SmallVector<Value> rows, cols, accs;
  for (int64_t r = 0; r < tm; ++r)
    rows.push_back(add(b, i0, r));
  // c0: the tile's first column within the strip.
  Value first = arith::AddIOp::create(b, loc, j0, c0);
  Value firstVector = arith::DivUIOp::create(b, loc, c0, index(b, 16));
  SmallVector<Value> vectorAt;
  for (int64_t c = 0; c < vectors; ++c) {
    cols.push_back(add(b, first, 16 * c));
    vectorAt.push_back(add(b, firstVector, c));
  }
  for (Value row : rows)
    for (Value col : cols)
      accs.push_back(vector::LoadOp::create(b, loc, accType, o.out,
                                            ValueRange{row, col}));
  auto loop = scf::ForOp::create(
      b, loc, index(b, 0), index(b, kb / 2), index(b, 1), accs,
      [&](OpBuilder &nb, Location l, Value p, ValueRange acc) {
        Value k = arith::AddIOp::create(
            nb, l, k0, arith::MulIOp::create(nb, l, p, index(nb, 2)));
        SmallVector<Value> ws, xs, next;
        for (int64_t c = 0; c < vectors; ++c)
          ws.push_back(vector::LoadOp::create(
              nb, l, pairType, pairs, ValueRange{p, vectorAt[c], index(nb, 0)}));
        for (Value row : rows)
          xs.push_back(lhsPairs(nb, l, o.lhs, row, k));
        for (int64_t r = 0; r < tm; ++r)
          for (int64_t c = 0; c < vectors; ++c)
            next.push_back(x86vector::DotBF16Op::create(
                               nb, l, accType, acc[r * vectors + c], xs[r],
                               ws[c])
                               .getResult());
        scf::YieldOp::create(nb, l, next);
      });
  for (int64_t r = 0; r < tm; ++r)
    for (int64_t c = 0; c < vectors; ++c)
      vector::StoreOp::create(b, loc, loop.getResult(r * vectors + c), o.out,
                              ValueRange{rows[r], cols[c]});
}

struct PootCPUVectorizeMatmuls
    : poot::impl::PootCPUVectorizeMatmulsBase<PootCPUVectorizeMatmuls> {
  using PootCPUVectorizeMatmulsBase::PootCPUVectorizeMatmulsBase;

  /// `op` tiled by `sizes` (loops in `interchange` order when given): a
  /// parallel loop or serial loops; the tile op, `op` erased.
  FailureOr<linalg::LinalgOp> tile(IRRewriter &rewriter, linalg::LinalgOp op,
                                   ArrayRef<int64_t> sizes, bool parallel,
                                   ArrayRef<unsigned> interchange = {}) {
    rewriter.setInsertionPoint(op);
    linalg::LinalgTilingOptions options;
    options.setLoopType(parallel ? linalg::LinalgTilingLoopType::ParallelLoops
                                 : linalg::LinalgTilingLoopType::Loops);
    options.setTileSizes(sizes);
    if (!interchange.empty())
      options.setInterchange(interchange);
    FailureOr<linalg::TiledLinalgOp> tiled =
        linalg::tileLinalgOp(rewriter, op, options);
    if (failed(tiled))
      return op->emitError("poot-cpu-vectorize-matmuls: tiling failed");
    rewriter.eraseOp(op);
    return tiled->op;
  }

  /// The columns of one parallel chunk of a few-row [K, N] matmul: a
  /// multiple of `tn` dividing N, N / chunk a multiple of the threads where
  /// possible (an even split of the static schedule), the M x chunk output
  /// at most `kChunkOutputBytes` (it is read and written once per K step:
  /// it stays in L1), the widest such chunk (the longest contiguous run of
  /// each weight row). 0 when even one tile per thread is over the budget.
  int64_t columnChunk(int64_t m, int64_t n, int64_t tn) const {
    constexpr int64_t kChunkOutputBytes = 32 * 1024;
    int64_t tiles = n / tn, threads = std::max<int64_t>(computeUnits, 1);
    int64_t best = 0, bestEven = 0;
    for (int64_t chunks = std::min(threads, tiles); chunks <= tiles; ++chunks) {
      if (tiles % chunks)
        continue;
      int64_t columns = tiles / chunks * tn;
      if (m * columns * 4 > kChunkOutputBytes)
        continue;
      if (!best)
        best = columns;
      if (chunks % threads == 0) {
        bestEven = columns;
        break;
      }
    }
    return bestEven ? bestEven : best;
  }

  /// Whether the [K, N] matmul `op` (more rows than one 4-row tile) runs as pair tiles on
  /// vdpbf16ps: bf16 x bf16 on a host with AVX512-BF16 and 16-lane
  /// vectors, K even, N a multiple of 16, rows of unit stride.
  bool takesPairs(linalg::MatmulOp op) const {
    if (!bf16Dot || vectorWidth != 16)
      return false;
    auto lhs = cast<MemRefType>(op.getInputs()[0].getType());
    auto rhs = cast<MemRefType>(op.getInputs()[1].getType());
    auto out = cast<MemRefType>(op.getOutputs()[0].getType());
    return lhs.getElementType().isBF16() && rhs.getElementType().isBF16() &&
           lhs.getDimSize(0) > 4 && lhs.getDimSize(1) % 2 == 0 &&
           rhs.getDimSize(1) % 16 == 0 && lhs.isLastDimUnitStride() &&
           rhs.isLastDimUnitStride() && out.isLastDimUnitStride();
  }

  /// A bf16 [K, N] matmul of more than one row tile as pair tiles
  /// (takesPairs): the
  /// loops of the f32 prefill path (TN-column strips in parallel, K bands
  /// whose pieces of W stay in L1, the strip's row tiles inside, each
  /// tile's output in registers through its band), with the tile written
  /// here: per two K rows, TN / 16 weight vectors interleaved into pairs
  /// and TM lhs pairs broadcast, TM * TN / 16 vdpbf16ps (32 multiply-adds
  /// each, exact products added in f32; bf16 subnormal inputs read as 0,
  /// the instruction's DAZ). Widened to f32 FMAs instead, every product
  /// costs a conversion of each operand besides its FMA.
  void pairStrips(IRRewriter &rewriter, linalg::MatmulOp op) {
    Location loc = op.getLoc();
    PairOperands o{op.getInputs()[0], op.getInputs()[1], op.getOutputs()[0],
                   0, 0};
    auto lhs = cast<MemRefType>(o.lhs.getType());
    int64_t m = lhs.getDimSize(0), k = lhs.getDimSize(1),
            n = cast<MemRefType>(o.rhs.getType()).getDimSize(1);
    o.tn = vectorTile(n, 16);
    o.strip = o.tn;
    if (m <= maxStreamRows) {
      // Batched decode: few row tiles share each band, and the weight
      // streams from memory: strips of 128 columns (each band reads
      // 256-byte runs of its W rows, not 128 bytes, a new page each), as
      // long as every thread keeps a strip of its own. Measured on
      // 16 x 4096 x 8192 at two threads (bench/NOTES.md): 64 columns
      // 5.6 ms, 128 3.5, 256 4.5, 512 5.3.
      constexpr int64_t kStreamStrip = 128;
      int64_t threads = std::max<int64_t>(computeUnits, 1);
      for (int64_t w = kStreamStrip; w > o.tn; w -= o.tn)
        if (n % w == 0 && n / w >= threads) {
          o.strip = w;
          break;
        }
    }
    // The band's pairs: up to 32 KiB (256 K rows of a 64-column strip,
    // 128 of a 128-column one); 16 KiB measured 10% slower at prefill.
    int64_t kb = 2 * divisorAtMost(k / 2, std::max<int64_t>(8192 / o.strip, 1));
    int64_t tm = std::min<int64_t>(m, 4), mFull = m / tm * tm;
    rewriter.setInsertionPoint(op);
    auto index = [&](OpBuilder &b, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // One strip: its band's weight pairs on the stack (released at the
    // strip's end: the strip is a parallel loop's body, run many times by
    // each thread), then every row tile over them.
    auto pairsType = MemRefType::get({kb / 2, o.strip / 16, 32},
                                     rewriter.getBF16Type());
    // Every row tile of the strip over the band, in column tiles of tn.
    auto rowTile = [&](OpBuilder &b, Value pairs, Value i0, Value j0, Value k0,
                       int64_t rows) {
      if (o.strip == o.tn) {
        emitPairTile(b, loc, o, pairs, i0, j0, index(b, 0), k0, kb, rows);
        return;
      }
      scf::ForOp::create(b, loc, index(b, 0), index(b, o.strip), index(b, o.tn),
                         ValueRange{},
                         [&](OpBuilder &cb, Location, Value c0, ValueRange) {
                           emitPairTile(cb, loc, o, pairs, i0, j0, c0, k0, kb,
                                        rows);
                           scf::YieldOp::create(cb, loc);
                         });
    };
    auto strip = [&](OpBuilder &b, Value j0) {
      auto scope = memref::AllocaScopeOp::create(b, loc, TypeRange{});
      Block *body = new Block();
      scope.getBodyRegion().push_back(body);
      OpBuilder sb = OpBuilder::atBlockBegin(body);
      Value pairs = memref::AllocaOp::create(sb, loc, pairsType,
                                             sb.getI64IntegerAttr(64));
      scf::ForOp::create(
          sb, loc, index(sb, 0), index(sb, k), index(sb, kb), ValueRange{},
          [&](OpBuilder &nb, Location, Value k0, ValueRange) {
            interleaveBand(nb, loc, o, pairs, j0, k0, kb);
            scf::ForOp::create(
                nb, loc, index(nb, 0), index(nb, mFull), index(nb, tm),
                ValueRange{},
                [&](OpBuilder &tb, Location, Value i0, ValueRange) {
                  rowTile(tb, pairs, i0, j0, k0, tm);
                  scf::YieldOp::create(tb, loc);
                });
            if (mFull < m)
              rowTile(nb, pairs, index(nb, mFull), j0, k0, m - mFull);
            scf::YieldOp::create(nb, loc);
          });
      memref::AllocaScopeReturnOp::create(sb, loc, ValueRange{});
    };
    Value lo = index(rewriter, 0), hi = index(rewriter, n),
          step = index(rewriter, o.strip);
    if (m * n * k >= minParallelWork)
      scf::ParallelOp::create(rewriter, loc, ValueRange{lo}, ValueRange{hi},
                              ValueRange{step},
                              [&](OpBuilder &b, Location, ValueRange ivs) {
                                strip(b, ivs[0]);
                              });
    else
      scf::ForOp::create(rewriter, loc, lo, hi, step, ValueRange{},
                         [&](OpBuilder &b, Location, Value j0, ValueRange) {
                           strip(b, j0);
                           scf::YieldOp::create(b, loc);
                         });
    rewriter.eraseOp(op);
  }

  LogicalResult tileAndVectorize(IRRewriter &rewriter, linalg::MatmulOp op) {
    if (takesPairs(op)) {
      pairStrips(rewriter, op);
      return success();
    }
    auto lhs = cast<MemRefType>(op.getInputs()[0].getType());
    auto rhs = cast<MemRefType>(op.getInputs()[1].getType());
    int64_t m = lhs.getDimSize(0), k = lhs.getDimSize(1), n = rhs.getDimSize(1);
    int64_t tn = vectorTile(n, vectorWidth), tm = divisorAtMost(m, 4),
            tk = divisorAtMost(k, 16);
    bool parallel = m * n * k >= minParallelWork;
    bool hoistAccumulator = false;
    FailureOr<linalg::LinalgOp> step = failure();
    int64_t chunk = m <= maxStreamRows ? columnChunk(m, n, tn) : 0;
    if (chunk > 0) {
      // TK rows of W are read side by side, one stream each: 8, not 16
      // (measured, one row, F32: 4096 x 4096 19.5 vs 13.8 GB/s, 512 x 32000
      // 29.0 vs 17.7; 4 rows 17.4 and 23.6).
      tk = divisorAtMost(k, 8);
      // Few rows (decode): the weight streamed row by row. A parallel loop
      // over column chunks (one or a few per thread: every row of all M
      // inputs in each), then K in steps of TK, then the chunk's TN-wide
      // tiles for every TM-row tile. Each K step reads TK contiguous runs
      // of `chunk` columns of W once (all M rows use them from L1), and the
      // M x chunk outputs stay in L1. (Tiles over the whole of K instead
      // walk W down a column strip: one 256-byte piece per row, a new page
      // each, which the prefetchers do not follow; and with M > TM every
      // row tile read all of W again from memory.)
      FailureOr<linalg::LinalgOp> chunks =
          tile(rewriter, op, {0, chunk, 0}, parallel);
      if (failed(chunks))
        return failure();
      if (m > tm) {
        // More rows than one tile (batched decode: compute-bound here, 8
        // FLOP per weight byte at M = 16): K bands of up to 16 * TK rows
        // (W's band of the chunk stays in L2), the tiles inside, and in
        // each tile a K loop whose output tile stays in registers (hoisted
        // below) instead of a round trip through L1 every TK rows.
        FailureOr<linalg::LinalgOp> band = tile(
            rewriter, *chunks, {0, 0, tk * divisorAtMost(k / tk, 16)}, false);
        if (failed(band))
          return failure();
        FailureOr<linalg::LinalgOp> tiles =
            tile(rewriter, *band, {tm, tn, 0}, false, {1, 0, 2});
        if (failed(tiles))
          return failure();
        step = tile(rewriter, *tiles, {0, 0, tk}, false);
        hoistAccumulator = true;
      } else {
        FailureOr<linalg::LinalgOp> band =
            tile(rewriter, *chunks, {0, 0, tk}, false);
        if (failed(band))
          return failure();
        step = tile(rewriter, *band, {tm, tn, 0}, false, {1, 0, 2});
      }
    } else {
      // Many rows (prefill): a parallel loop over TN-column strips, each
      // walked in K bands of up to 16 * TK rows (the band's TK x TN pieces
      // of W, 16 KiB of f32 at TN = 64, stay in L1 while every row tile of
      // the strip passes over them), each row tile's TM x TN output in
      // registers through the band's K loop (hoisted below). Tiles over
      // the whole of K instead read their K x TN strip of W (512 KiB at
      // K = 2048) from L3 once per row tile: 1 FLOP per byte, measured
      // 29-40 GFLOP/s against torch's 125 (2-core EPYC, bench/NOTES.md).
      FailureOr<linalg::LinalgOp> strips =
          tile(rewriter, op, {0, tn, 0}, parallel);
      if (failed(strips))
        return failure();
      FailureOr<linalg::LinalgOp> band = tile(
          rewriter, *strips, {0, 0, tk * divisorAtMost(k / tk, 16)}, false);
      if (failed(band))
        return failure();
      FailureOr<linalg::LinalgOp> tiles =
          tile(rewriter, *band, {tm, tn, 0}, false, {1, 0, 2});
      if (failed(tiles))
        return failure();
      step = tile(rewriter, *tiles, {0, 0, tk}, false);
      hoistAccumulator = true;
    }
    if (failed(step))
      return failure();
    auto kLoop = (*step)->getParentOfType<scf::ForOp>();
    rewriter.setInsertionPoint(*step);
    // As a vector.contract (not a broadcast-multiply-reduce), which lowers
    // to outer products: FMAs along contiguous rhs rows.
    if (failed(linalg::vectorize(
            rewriter, *step, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
            /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
            /*assumeDynamicDimsMatchVecSizes=*/false,
            /*createNamedContraction=*/true)))
      return (*step)->emitError(
          "poot-cpu-vectorize-matmuls: vectorization failed");
    rewriter.eraseOp(*step);
    if (hoistAccumulator) {
      // The output tile's transfer_read/write pair out of the K loop, as
      // loop-carried registers: upstream's hoisting takes no transfer of a
      // subview (it could alias), so the tile's subviews are folded into
      // the transfers' indices on the function's buffers first, and the
      // index arithmetic moved out of the loop.
      SmallVector<Operation *> transfers;
      kLoop.walk([&](Operation *o) {
        if (isa<vector::TransferReadOp, vector::TransferWriteOp>(o))
          transfers.push_back(o);
      });
      RewritePatternSet folds(&getContext());
      memref::populateFoldMemRefAliasOpPatterns(folds);
      if (failed(applyOpPatternsGreedily(transfers, std::move(folds))))
        return kLoop->emitError(
            "poot-cpu-vectorize-matmuls: folding the tile's subviews failed");
      // The tiling's subviews left without users go too: upstream's
      // hoisting also refuses a buffer that has a view among its users.
      Operation *nest = kLoop;
      while (!isa<func::FuncOp>(nest->getParentOp()))
        nest = nest->getParentOp();
      for (bool erased = true; erased;) {
        erased = false;
        nest->walk([&](memref::SubViewOp view) {
          if (view->use_empty()) {
            rewriter.eraseOp(view);
            erased = true;
          }
        });
      }
      // (The read's and the write's indices are one value once CSE'd.)
      moveLoopInvariantCode(kLoop);
      DominanceInfo dominance;
      eliminateCommonSubExpressions(rewriter, dominance, kLoop->getParentOp());
      linalg::hoistRedundantVectorTransfers(kLoop);
    }
    return success();
  }

  /// The [N, K]-rhs contraction `op` as dot-product tiles: an scf.parallel
  /// (big contractions) or scf.for over the full column tiles, then the N
  /// remainder as one narrower tile; in each, the row tiles in an scf.for
  /// and the M remainder as one shorter tile.
  void dotProducts(IRRewriter &rewriter, linalg::LinalgOp op) {
    Location loc = op.getLoc();
    DotOperands o{op.getDpsInputs()[0], op.getDpsInputs()[1],
                  op.getDpsInits()[0], 0, vectorWidth, bf16Dot};
    auto lhs = cast<MemRefType>(o.lhs.getType());
    int64_t m = lhs.getDimSize(0), k = lhs.getDimSize(1),
            n = cast<MemRefType>(o.rhs.getType()).getDimSize(0);
    o.k = k;
    // Half the host's vector registers as accumulators: AVX-512 (16 f32
    // lanes) has 32, AVX2 16.
    auto [tm, tn, tu] =
        dotTile(m, n, k, lhs.getElementType().getIntOrFloatBitWidth() / 8,
                vectorWidth >= 16 ? 16 : 8);
    rewriter.setInsertionPoint(op);
    auto index = [&](OpBuilder &b, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // All rows of one column tile: the tn weight rows (tn * K elements)
    // stay in L1/L2 while each row tile of the lhs passes over them.
    auto columnTile = [&](OpBuilder &b, Value j0, int64_t width) {
      int64_t mFull = m / tm * tm;
      if (mFull == tm) {
        emitDotTile(b, loc, o, index(b, 0), j0, tm, width, tu);
      } else if (mFull > 0) {
        scf::ForOp::create(b, loc, index(b, 0), index(b, mFull), index(b, tm),
                           ValueRange{},
                           [&](OpBuilder &nb, Location, Value i0, ValueRange) {
                             emitDotTile(nb, loc, o, i0, j0, tm, width, tu);
                             scf::YieldOp::create(nb, loc);
                           });
      }
      if (mFull < m)
        emitDotTile(b, loc, o, index(b, mFull), j0, m - mFull, width, tu);
    };
    int64_t nFull = n / tn * tn;
    if (nFull > 0) {
      Value lo = index(rewriter, 0), hi = index(rewriter, nFull),
            step = index(rewriter, tn);
      if (m * n * k >= minParallelWork) {
        scf::ParallelOp::create(
            rewriter, loc, ValueRange{lo}, ValueRange{hi}, ValueRange{step},
            [&](OpBuilder &b, Location, ValueRange ivs) {
              columnTile(b, ivs[0], tn);
            });
      } else {
        scf::ForOp::create(rewriter, loc, lo, hi, step, ValueRange{},
                           [&](OpBuilder &b, Location, Value j0, ValueRange) {
                             columnTile(b, j0, tn);
                             scf::YieldOp::create(b, loc);
                           });
      }
    }
    if (nFull < n)
      columnTile(rewriter, index(rewriter, nFull), n - nFull);
    rewriter.eraseOp(op);
  }

  LogicalResult initialize(MLIRContext *context) override {
    if (!validVectorWidth(vectorWidth))
      return emitError(UnknownLoc::get(context))
             << "poot-cpu-vectorize-matmuls: vector-width must be in [0, "
             << kMaxVectorWidth << "], got " << vectorWidth.getValue();
    return success();
  }

  void runOnOperation() override {
    if (vectorWidth <= 0)
      return;
    SmallVector<linalg::MatmulOp> matmuls;
    SmallVector<linalg::LinalgOp> transposed;
    getOperation().walk([&](linalg::LinalgOp op) {
      auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
      if (matmul && isStaticKN(matmul))
        matmuls.push_back(matmul);
      else if ((matmul || isa<linalg::GenericOp>(op.getOperation())) &&
               isStaticTransposedRhs(op))
        transposed.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::MatmulOp op : matmuls)
      if (failed(tileAndVectorize(rewriter, op)))
        return signalPassFailure();
    for (linalg::LinalgOp op : transposed)
      dotProducts(rewriter, op);

  }
};

} // namespace
