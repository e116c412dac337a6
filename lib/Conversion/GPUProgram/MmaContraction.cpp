//===- MmaContraction.cpp - two-byte matmuls that run on tensor cores ------===//
#include "lib/Conversion/GPUProgram/MmaContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::poot;

namespace {

/// Adds `scale` x `expr` to `acc`; false when `expr` is not linear in the
/// loops (a mod, a division, a product of two loops, a symbol).
bool addLinear(AffineExpr expr, int64_t scale, LinearAccess &acc) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    acc.coefficients[dim.getPosition()] += scale;
    return true;
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    acc.offset += scale * constant.getValue();
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (expr.getKind() == AffineExprKind::Add)
    return addLinear(binary.getLHS(), scale, acc) &&
           addLinear(binary.getRHS(), scale, acc);
  if (expr.getKind() == AffineExprKind::Mul) {
    if (auto c = dyn_cast<AffineConstantExpr>(binary.getRHS()))
      return addLinear(binary.getLHS(), scale * c.getValue(), acc);
    if (auto c = dyn_cast<AffineConstantExpr>(binary.getLHS()))
      return addLinear(binary.getRHS(), scale * c.getValue(), acc);
  }
  return false;
}

/// The 16-bit source of `v` when `v` is `arith.extf` of a bf16/f16 value to
/// f32; null otherwise.
Value widenedSource(Value v) {
  auto ext = v.getDefiningOp<arith::ExtFOp>();
  if (!ext || !ext.getType().isF32())
    return {};
  Type source = ext.getIn().getType();
  return source.isBF16() || source.isF16() ? ext.getIn() : Value();
}

/// What the lhs expression reads: the inputs (in operand order) and the
/// loops it reads through `linalg.index` (a gather fused into the matmul:
/// each row's last token picked out of the hidden states).
struct LhsReads {
  SmallVector<OpOperand *> inputs;
  SmallVector<unsigned> indexLoops;
  SmallVector<Operation *> ops; // in payload order
};

/// What `value` is computed from inside `op`'s payload, when that is scalar
/// code without side effects: pure ops, `linalg.index`, loads of buffers
/// other than the output, values from outside the payload (they dominate
/// the op) -- never the output's own element.
std::optional<LhsReads> scalarInputsOf(linalg::LinalgOp op, Value value) {
  Block *body = op.getBlock();
  Value outBuffer = op.getDpsInitOperand(0)->get();
  llvm::SetVector<Value> seen;
  SmallVector<Value> work{value};
  LhsReads reads;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v))
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != body)
        continue; // defined outside the op: it dominates the op
      OpOperand *operand = op.getMatchingOpOperand(arg);
      if (!op.isDpsInput(operand))
        return std::nullopt;
      reads.inputs.push_back(operand);
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!body->getParentOp()->isAncestor(def))
      continue; // defined outside the op
    if (def->getBlock() != body || def->getNumRegions() != 0)
      return std::nullopt;
    if (!llvm::is_contained(reads.ops, def)) // (one entry per op)
      reads.ops.push_back(def);
    if (auto index = dyn_cast<linalg::IndexOp>(def)) {
      if (!llvm::is_contained(reads.indexLoops, index.getDim()))
        reads.indexLoops.push_back(index.getDim());
      continue;
    }
    auto load = dyn_cast<memref::LoadOp>(def);
    if (!(load ? load.getMemRef() != outBuffer : isPure(def)))
      return std::nullopt;
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  // In operand order: the kernel's arguments do not follow the walk.
  llvm::sort(reads.inputs, [](OpOperand *a, OpOperand *b) {
    return a->getOperandNumber() < b->getOperandNumber();
  });
  llvm::sort(reads.ops, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return reads;
}

} // namespace

bool mlir::poot::alignedChunks(const LinearAccess &access, unsigned unit,
                               int64_t chunk) {
  if (access.coefficients[unit] != 1 || access.offset % chunk)
    return false;
  for (auto [d, coefficient] : llvm::enumerate(access.coefficients))
    if (d != unit && coefficient % chunk)
      return false;
  return true;
}

std::optional<LinearAccess> mlir::poot::linearAccess(linalg::LinalgOp op,
                                                     OpOperand *operand) {
  auto type = dyn_cast<ShapedType>(operand->get().getType());
  if (!type || !type.hasStaticShape() || type.getRank() == 0)
    return std::nullopt;
  if (auto memref = dyn_cast<MemRefType>(type);
      memref && !memref.getLayout().isIdentity())
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(operand);
  if (map.getNumSymbols() != 0 ||
      map.getNumResults() != static_cast<unsigned>(type.getRank()))
    return std::nullopt;
  LinearAccess access;
  access.coefficients.assign(map.getNumDims(), 0);
  int64_t stride = 1;
  for (int64_t i = type.getRank() - 1; i >= 0; --i) {
    if (!addLinear(map.getResult(i), stride, access))
      return std::nullopt;
    stride *= type.getDimSize(i);
  }
  return access;
}

int64_t mlir::poot::mmaWarpRows(int64_t rows) {
  return rows <= 16 ? 16 : rows <= 32 ? 32 : 64;
}

MmaWorkgroupShape mlir::poot::mmaWorkgroupShape(int64_t rows,
                                                int64_t columns,
                                                int64_t stagedRows) {
  MmaWorkgroupShape shape;
  if (stagedRows > 0 && rows >= stagedRows &&
      columns % kMmaStagedColumns == 0) {
    shape.staged = true;
    bool wide = rows > 64;
    shape.warpRows = wide ? 64 : mmaWarpRows(rows);
    shape.rowWarps = wide ? 2 : 1;
    return shape;
  }
  shape.warpRows = mmaWarpRows(rows);
  // Whole 64-row tiles for every row warp: 2 from 128 rows, 4 from 256.
  int64_t tiles = rows / 64;
  shape.rowWarps = tiles >= 4 ? 4 : tiles >= 2 ? 2 : 1;
  return shape;
}

std::optional<MmaContraction>
mlir::poot::matchMmaContraction(linalg::LinalgOp op, int64_t minRows) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1 ||
      op.getNumLoops() == 0 || !op.getBlock())
    return std::nullopt;
  if (!op.hasPureTensorSemantics() && !op.hasPureBufferSemantics())
    return std::nullopt;
  MmaContraction mm;
  mm.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(mm.ranges, ShapedType::isDynamic))
    return std::nullopt;

  // The payload: yield(out + extf(a) * extf(b)).
  Block *body = op.getBlock();
  OpOperand *init = op.getDpsInitOperand(0);
  BlockArgument out = op.getMatchingBlockArgument(init);
  auto initType = dyn_cast<ShapedType>(init->get().getType());
  if (!initType || !initType.getElementType().isF32() || !out.hasOneUse())
    return std::nullopt;
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || yield->getNumOperands() != 1)
    return std::nullopt;
  auto add = yield->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != body)
    return std::nullopt;
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || mul->getBlock() != body)
    return std::nullopt;

  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  mm.reduction = reductions[0];
  SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
  AffineMap outMap = op.getMatchingIndexingMap(init);
  if (!outMap.isProjectedPermutation() || outMap.isFunctionOfDim(mm.reduction))
    return std::nullopt;

  for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())}) {
    Value lhs = widenedSource(x), rhs = widenedSource(y);
    auto weightArg = dyn_cast_or_null<BlockArgument>(rhs);
    if (!lhs || !weightArg || weightArg.getOwner() != body ||
        lhs.getType() != rhs.getType())
      continue;
    OpOperand *weight = op.getMatchingOpOperand(weightArg);
    if (!op.isDpsInput(weight))
      continue;
    std::optional<LhsReads> reads = scalarInputsOf(op, lhs);
    if (!reads)
      continue;
    // The weight itself is never read by the lhs.
    if (llvm::is_contained(reads->inputs, weight))
      continue;

    AffineMap weightMap = op.getMatchingIndexingMap(weight);
    auto lhsReads = [&](unsigned d) {
      return llvm::is_contained(reads->indexLoops, d) ||
             llvm::any_of(reads->inputs, [&](OpOperand *in) {
               return op.getMatchingIndexingMap(in).isFunctionOfDim(d);
             });
    };
    if (!weightMap.isFunctionOfDim(mm.reduction) || !lhsReads(mm.reduction))
      continue;
    SmallVector<unsigned> columns, rows, batch;
    for (auto [d, kind] : llvm::enumerate(kinds)) {
      if (kind != utils::IteratorType::parallel)
        continue;
      // Every output element is written once: each parallel loop indexes it.
      if (!outMap.isFunctionOfDim(d))
        return std::nullopt;
      bool inWeight = weightMap.isFunctionOfDim(d);
      if (!inWeight)
        rows.push_back(d);
      else if (lhsReads(d))
        batch.push_back(d);
      else
        columns.push_back(d);
    }
    if (columns.empty() || rows.empty())
      continue;
    mm.columnLoops = columns;
    mm.columns = columns.back();
    mm.rows = rows;
    mm.batch = batch;
    mm.weight = weight;
    mm.lhsInputs = reads->inputs;
    mm.lhsOps = reads->ops;
    mm.lhs = lhs;
    mm.element = lhs.getType();
    break;
  }
  if (!mm.weight)
    return std::nullopt;

  // Shapes the kernel tiles exactly, a grid it can launch.
  if (mm.rowCount() < std::max<int64_t>(minRows, 1) ||
      mm.columnCount() % kMmaWarpColumns ||
      mm.reductionCount() % kMmaReductionChunk || mm.batchCount() > 65535 ||
      mm.columnCount() / kMmaWarpColumns > 65535)
    return std::nullopt;
  // Every operand addressed linearly; the weight in aligned 16-byte vectors
  // (8 elements) along its contiguous loop.
  for (OpOperand *in : mm.lhsInputs)
    if (!linearAccess(op, in))
      return std::nullopt;
  std::optional<LinearAccess> weight = linearAccess(op, mm.weight);
  std::optional<LinearAccess> output = linearAccess(op, init);
  if (!weight || !output)
    return std::nullopt;
  // Several column loops are one flattened run in the weight and the
  // output: each outer loop steps over the whole of the next.
  for (const LinearAccess &a : {*weight, *output})
    for (size_t i = 0; i + 1 < mm.columnLoops.size(); ++i) {
      unsigned outer = mm.columnLoops[i], inner = mm.columnLoops[i + 1];
      if (a.coefficients[outer] != a.coefficients[inner] * mm.ranges[inner])
        return std::nullopt;
    }
  if (alignedChunks(*weight, mm.reduction, 8))
    mm.weightAlongReduction = true;
  else if (!alignedChunks(*weight, mm.columns, 8))
    return std::nullopt;
  return mm;
}
