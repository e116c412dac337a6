//===- MmaMatmuls.cpp - poot-gpu-mma-matmuls -------------------------------===//
//
// A marked two-byte matmul (MmaContraction.h; marked, and split over the
// reduction where that fills the GPU, by poot-gpu-split-reductions) becomes
// one launch of a generated kernel on mma.sync m16n8k16 with f32
// accumulators: a workgroup owns 64 columns (8 tiles of 8) of one batch
// index and the rows of MmaWorkgroupShape. With few rows (decode) its 4
// warps each stream a quarter of the reduction of that weight slice once
// for all the rows (16-64) in 16-byte loads, and combine their sums
// through workgroup memory in a fixed order (4x fewer partial sums than a
// split over workgroups would write); with many (a prefill chunk) 2 or 4
// warps take 64-row tiles of their own, over half or all of the reduction,
// loading the same weight fragments (L1 serves all but the first).
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
// The lhs is loaded as vectors too: an input read directly, contiguous
// along k, or else (a fused prologue: an RMSNorm's scaling, SiLU(gate) * up)
// the prologue is computed once into a two-byte buffer of its own by an
// elementwise op over the matmul's loops but the columns, run before the
// kernel (recomputing it in the kernel would redo each element for every
// 64 columns).
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/AttentionKernels/MmaFragments.h"
#include "lib/Conversion/GPUProgram/BufferViews.h"
#include "lib/Conversion/GPUProgram/MmaContraction.h"
#include "lib/Conversion/GPUProgram/MmaEpilogue.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::poot {
#define GEN_PASS_DEF_POOTGPUMMAMATMULS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::poot

using namespace mlir;
using namespace mlir::poot;

namespace {

/// Warps of one workgroup: they share the workgroup's 64 columns.
constexpr int64_t kWarps = kMmaWarpsPerColumns;

/// What the kernel of one op is generated from.
struct MmaPlan {
  MmaContraction mm;
  LinearAccess out, weight;
  /// The two-byte lhs buffer the kernel loads as vectors (an input read
  /// directly, or the materialized prologue) and its access.
  Value lhs;
  LinearAccess lhsAccess;
  /// The init's value when a constant fill the kernel folds; else the
  /// kernel accumulates onto the output.
  std::optional<double> fill;
  /// The elementwise consumer of the sums run on them in the kernel
  /// (MmaEpilogue.h): the kernel's first buffer is then its result, its
  /// other inputs come after the lhs.
  std::optional<MmaEpilogue> epilogue;
  int64_t rows = 0, tiles = 0, steps = 0;
  /// Row tiles and reduction parts of the workgroup's warps.
  MmaWorkgroupShape shape;

  int64_t chunk() const { return mm.weightAlongReduction ? 8 : 4; }
};

/// Whether `v` covers every element of the buffer it views.
bool wholeBuffer(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  auto base = dyn_cast<MemRefType>(viewedBuffer(v).getType());
  return type && base && type.hasStaticShape() && base.hasStaticShape() &&
         type.getNumElements() == base.getNumElements();
}

/// The constant a `linalg.fill` of `out`'s buffer (or of a view of all of
/// it, `out` covering all of it too) just before `op` writes (nothing
/// between them but views touches the buffer), and the fill; nothing
/// otherwise.
std::pair<std::optional<double>, linalg::FillOp>
foldableFill(linalg::LinalgOp op, Value out) {
  Value buffer = viewedBuffer(out);
  auto touches = [&](Operation *prev) {
    return llvm::any_of(prev->getOperands(),
                        [&](Value v) { return viewedBuffer(v) == buffer; });
  };
  Operation *prev = op->getPrevNode();
  for (; prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev);
        fill && viewedBuffer(fill.getOutputs()[0]) == buffer) {
      FloatAttr value;
      if (!matchPattern(fill.getInputs()[0], m_Constant(&value)) ||
          !wholeBuffer(fill.getOutputs()[0]) || !wholeBuffer(out))
        return {};
      return {value.getValueAsDouble(), fill};
    }
    if (isa<ViewLikeOpInterface>(prev) && isPure(prev))
      continue;
    if (touches(prev))
      return {};
  }
  return {};
}

class MmaKernelEmitter : public MmaBuilder {
public:
  MmaKernelEmitter(OpBuilder &b, Location loc, const MmaPlan &plan)
      : MmaBuilder(b, loc, plan.mm.element), plan(plan), mm(plan.mm) {}

  void emit(gpu::GPUFuncOp func);

private:
  using LoopValues = SmallVector<std::pair<unsigned, Value>>;

  /// sum(coefficient x value) over `loops`, plus `base`.
  Value offset(const LinearAccess &access, const LoopValues &loops,
               Value base) {
    for (auto [d, v] : loops)
      if (int64_t coefficient = access.coefficients[d])
        base = add(base, coefficient == 1 ? v : mul(v, index(coefficient)));
    return base;
  }
  /// The loops of the (clamped) linear row `row`, the last row loop fastest.
  LoopValues rowLoops(Value row) {
    LoopValues loops;
    for (unsigned d : llvm::reverse(mm.rows)) {
      loops.push_back({d, remui(row, mm.ranges[d])});
      row = divui(row, mm.ranges[d]);
    }
    return loops;
  }
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

  /// Store the sum of linear output element `linear`: as it is, or through
  /// the epilogue.
  void storeSum(Value linear, Value sum);

  const MmaPlan &plan;
  const MmaContraction &mm;
  Value outMem, weightMem, lhsMem;
  SmallVector<Value> epilogueInputs;
  Value g, c, n0;
};

void MmaKernelEmitter::emit(gpu::GPUFuncOp func) {
  outMem = func.getArgument(0);
  weightMem = func.getArgument(1);
  lhsMem = func.getArgument(2);
  for (unsigned i = 3; i < func.getNumArguments(); ++i)
    epilogueInputs.push_back(func.getArgument(i));
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
  LoopValues batch;
  Value rest = bz;
  for (unsigned d : llvm::reverse(mm.batch)) {
    batch.push_back({d, remui(rest, mm.ranges[d])});
    rest = divui(rest, mm.ranges[d]);
  }
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
      LoopValues loops = rowLoops(minui(row, index(plan.rows - 1)));
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

void MmaKernelEmitter::storeSum(Value linear, Value sum) {
  if (!plan.epilogue) {
    memref::StoreOp::create(b, loc, sum, outMem, ValueRange{linear});
    return;
  }
  const MmaEpilogue &e = *plan.epilogue;
  // The consumer's iteration that reads this sum: `linear` in row-major
  // order over its loops.
  SmallVector<Value> at(e.ranges.size());
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(e.ranges.size()) - 1; d >= 0; --d) {
    at[d] = remui(rest, e.ranges[d]);
    rest = divui(rest, e.ranges[d]);
  }
  auto address = [&](const LinearAccess &access) {
    Value v = index(access.offset);
    for (auto [d, coefficient] : llvm::enumerate(access.coefficients))
      if (coefficient)
        v = add(v, coefficient == 1 ? at[d] : mul(at[d], index(coefficient)));
    return v;
  };
  linalg::GenericOp consumer = e.op;
  Region &payload = consumer.getRegion();
  Block &body = payload.front();
  IRMapping map;
  map.map(body.getArgument(e.sums->getOperandNumber()), sum);
  for (auto [i, in] : llvm::enumerate(e.inputs))
    map.map(body.getArgument(in->getOperandNumber()),
            memref::LoadOp::create(b, loc, epilogueInputs[i],
                                   ValueRange{address(e.inputAccess[i])}));
  for (Operation &inner : body) {
    // Constants from outside the payload: cloned into the kernel.
    for (Value v : inner.getOperands())
      if (!map.contains(v) && v.getParentRegion() != &payload)
        map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
    if (&inner != body.getTerminator())
      b.clone(inner, map);
  }
  Value result = map.lookupOrDefault(body.getTerminator()->getOperand(0));
  memref::StoreOp::create(b, loc, result, outMem,
                          ValueRange{address(e.resultAccess)});
}

/// `v` as a 1-D buffer of its elements (a view of the same buffer).
Value flatten(OpBuilder &b, Location loc, Value v) {
  auto type = cast<MemRefType>(v.getType());
  if (type.getRank() == 1)
    return v;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::CollapseShapeOp::create(b, loc, v,
                                         ArrayRef<ReassociationIndices>{all});
}

/// The lhs expression of `mm` computed once, before `op`, into a new
/// two-byte buffer over the op's loops but the columns (the reduction loop
/// last, so the kernel reads it in vectors along k): an elementwise
/// linalg.generic running the payload's own lhs ops. Returns the buffer and
/// its access over `op`'s loops (0 along the columns).
std::pair<Value, LinearAccess> materializeLhs(OpBuilder &b,
                                              linalg::LinalgOp op,
                                              const MmaContraction &mm) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  unsigned loops = op.getNumLoops();
  SmallVector<unsigned> kept; // buffer dims, as loops of `op`
  for (unsigned d = 0; d < loops; ++d)
    if (d != mm.reduction && !llvm::is_contained(mm.columnLoops, d))
      kept.push_back(d);
  kept.push_back(mm.reduction);
  SmallVector<int64_t> shape;
  for (unsigned d : kept)
    shape.push_back(mm.ranges[d]);
  Value buffer = memref::AllocOp::create(
      b, loc, MemRefType::get(shape, mm.element));
  // The generic's loop i is op's loop kept[i]; op's column loops are not
  // loops of it (no lhs input reads them).
  SmallVector<AffineExpr> toNew(loops, getAffineConstantExpr(0, ctx));
  for (auto [i, d] : llvm::enumerate(kept))
    toNew[d] = getAffineDimExpr(i, ctx);
  SmallVector<AffineMap> maps;
  SmallVector<Value> inputs;
  for (OpOperand *in : mm.lhsInputs) {
    inputs.push_back(in->get());
    maps.push_back(op.getMatchingIndexingMap(in).replaceDimsAndSymbols(
        toNew, {}, kept.size(), 0));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(kept.size(), ctx));
  SmallVector<utils::IteratorType> parallel(kept.size(),
                                            utils::IteratorType::parallel);
  Block *payload = op.getBlock();
  linalg::GenericOp::create(
      b, loc, inputs, ValueRange{buffer}, maps, parallel,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping map;
        for (auto [i, in] : llvm::enumerate(mm.lhsInputs))
          map.map(payload->getArgument(in->getOperandNumber()), args[i]);
        // The payload's lhs ops (values from outside the payload dominate
        // the new op: used as they are).
        for (Operation *inner : mm.lhsOps) {
          // A loop index is the same loop's index in the generic.
          if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
            unsigned at = llvm::find(kept, index.getDim()) - kept.begin();
            map.map(index.getResult(),
                    linalg::IndexOp::create(nb, nloc, at).getResult());
            continue;
          }
          nb.clone(*inner, map);
        }
        linalg::YieldOp::create(nb, nloc, map.lookupOrDefault(mm.lhs));
      });
  LinearAccess access;
  access.coefficients.assign(loops, 0);
  int64_t stride = 1;
  for (int64_t i = kept.size() - 1; i >= 0; --i) {
    access.coefficients[kept[i]] = stride;
    stride *= shape[i];
  }
  return {buffer, access};
}

struct MmaMatmuls : poot::impl::PootGPUMmaMatmulsBase<MmaMatmuls> {
  void getDependentDialects(DialectRegistry &registry) const override {
    PootGPUMmaMatmulsBase::getDependentDialects(registry);
    registry.insert<vector::VectorDialect, LLVM::LLVMDialect,
                    NVVM::NVVMDialect>();
  }

  /// The plan of a marked op, or nothing when it cannot run as the kernel
  /// (it then stays on the CUDA-core path).
  std::optional<MmaPlan> planFor(linalg::LinalgOp op) {
    std::optional<MmaContraction> mm = matchMmaContraction(op, 1);
    if (!mm || !op.hasPureBufferSemantics())
      return std::nullopt;
    MmaPlan plan;
    plan.mm = *mm;
    plan.out = *linearAccess(op, op.getDpsInitOperand(0));
    plan.weight = *linearAccess(op, mm->weight);
    // The lhs as the kernel reads it: the input itself where that is
    // contiguous along k in aligned vectors, else materialized.
    if (isa<BlockArgument>(mm->lhs) && mm->lhsInputs.size() == 1) {
      LinearAccess a = *linearAccess(op, mm->lhsInputs[0]);
      if (alignedChunks(a, mm->reduction, plan.chunk())) {
        plan.lhs = mm->lhsInputs[0]->get();
        plan.lhsAccess = a;
      }
    }
    plan.rows = mm->rowCount();
    plan.shape = mmaWorkgroupShape(plan.rows);
    plan.tiles = plan.shape.warpRows / 16;
    // Loads in flight a trip: 64 weight words a thread (16 KB a warp),
    // fewer trips' worth with more lhs tiles (registers).
    if (mm->weightAlongReduction)
      plan.steps = plan.tiles <= 2 ? 2 : 1;
    else
      plan.steps = plan.tiles <= 2 ? 4 : 2;
    return plan;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> marked;
    module.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kMmaMatmulAttr))
        marked.push_back(op);
    });
    if (marked.empty())
      return;
    OpBuilder mb(module.getBodyRegion());
    mb.setInsertionPointToEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    mb.getUnitAttr());
    auto kernels = gpu::GPUModuleOp::create(mb, module.getLoc(), "poot_mma_matmuls");
    int64_t count = 0;
    // Every plan first, its prologue materialized before its op: an
    // op's epilogue may then be the next op's prologue (SiLU(gate) * up
    // computed in up's kernel, gate's sums an input of it).
    SmallVector<std::pair<linalg::LinalgOp, MmaPlan>, 4> plans;
    SmallVector<Operation *> materialized;
    for (linalg::LinalgOp op : marked) {
      std::optional<MmaPlan> plan = planFor(op);
      op->removeAttr(kMmaMatmulAttr);
      if (!plan)
        continue;
      if (!plan->lhs) {
        OpBuilder b(op);
        std::tie(plan->lhs, plan->lhsAccess) = materializeLhs(b, op, plan->mm);
        materialized.push_back(op);
      }
      plans.push_back({op, std::move(*plan)});
    }
    for (auto &[op, planValue] : plans) {
      MmaPlan *plan = &planValue;
      Location loc = op.getLoc();
      Value out = op.getDpsInitOperand(0)->get();
      auto [fillValue, fill] = foldableFill(op, out);
      plan->fill = fillValue;
      if (plan->fill) {
        // Its consumer in the kernel (the kernel writes every sum once, so
        // a folded fill is the whole initial value).
        SmallVector<Value> reads{plan->mm.weight->get(), plan->lhs};
        for (OpOperand *in : plan->mm.lhsInputs)
          reads.push_back(in->get());
        int64_t sums = plan->mm.rowCount() * plan->mm.columnCount() *
                       plan->mm.batchCount();
        plan->epilogue = matchMmaEpilogue(op, out, sums, reads, materialized);
        if (plan->epilogue)
          for (Operation *moved : plan->epilogue->between)
            moved->moveBefore(op);
      }

      // The kernel.
      SmallVector<Value> operands{out, plan->mm.weight->get(), plan->lhs};
      if (plan->epilogue) {
        operands[0] = plan->epilogue->op.getDpsInitOperand(0)->get();
        for (OpOperand *in : plan->epilogue->inputs)
          operands.push_back(in->get());
      }
      SmallVector<Type> argTypes;
      for (Value v : operands) {
        auto type = cast<MemRefType>(v.getType());
        argTypes.push_back(MemRefType::get({type.getNumElements()},
                                           type.getElementType()));
      }
      OpBuilder kb(kernels.getBodyRegion());
      kb.setInsertionPointToEnd(kernels.getBody());
      std::string name = "mma_matmul_" + std::to_string(count++);
      auto func = gpu::GPUFuncOp::create(kb, loc, name,
                                         kb.getFunctionType(argTypes, {}));
      func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
      int64_t lanes = kWarps * MmaBuilder::kWarp;
      func.setKnownBlockSizeAttr(
          kb.getDenseI32ArrayAttr({static_cast<int32_t>(lanes), 1, 1}));
      MmaKernelEmitter(kb, loc, *plan).emit(func);

      // The launch.
      OpBuilder b(op);
      SmallVector<Value> args;
      for (Value v : operands)
        args.push_back(flatten(b, loc, v));
      auto cst = [&](int64_t v) {
        return arith::ConstantIndexOp::create(b, loc, v).getResult();
      };
      int64_t units = plan->mm.columnCount() / kMmaWarpColumns;
      int64_t workgroupRows = plan->shape.rows();
      gpu::KernelDim3 grid{cst((plan->rows + workgroupRows - 1) / workgroupRows),
                           cst(units), cst(plan->mm.batchCount())};
      gpu::KernelDim3 block{cst(lanes), cst(1), cst(1)};
      gpu::LaunchFuncOp::create(b, loc, func, grid, block, Value(), args);
      op->erase();
      if (fill)
        fill->erase();
      if (plan->epilogue) {
        plan->epilogue->op->erase();
        eraseIfUnused(out);
      }
    }
    if (count == 0)
      kernels->erase();
  }
};

} // namespace
